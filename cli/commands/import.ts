/**
 * `svc auth import FILE`: carries a wis2box-auth store over. wis2box-auth keeps one row per token,
 * `auth(salt, key, topic)`, with key = PBKDF2-HMAC-SHA256(token, salt, 100,000 iterations, 32 bytes). The
 * plaintext is unknown, so each row becomes a token record whose hash is `pbkdf2-sha256:100000:<salt>:<key>`
 * (core/imported-hash.ts), in the ProtectedScopes its topic maps to (core/wis2box-import.ts).
 *
 * All or nothing: the store is read within bounds (./wis2box-store.ts), every row is mapped and every scope's edit
 * computed and checked against what the store holds before the first write, and every problem is named, not only
 * the first. A row that maps to no scope, or whose topic would keep a narrower protection than wis2box-auth gave it,
 * refuses the import unless --accept-narrower says to go on without it (reported). Into a directory the edits are
 * written together or not at all; a Kubernetes namespace has no transaction over several objects, so every write is
 * first sent as a server-side dry run (admission and RBAC answer it), and a write that still fails names what was
 * written already. Records already there are left as they are, so running the import again completes it.
 */
import {
  MAX_TOKENS_PER_OBJECT,
  newProtectedScope,
  planWis2boxImport,
  rowList,
  scopeKey,
  scopeObjectName,
  scopeOf,
  tokensOf,
  validateProtectedScope,
  formatFieldErrors,
  withSpec,
  type ImportPlan,
  type PlannedScope,
  type ProtectedScope,
  type Scope,
  type TokenRecord, tokenHashesOf } from '../../core/index.js';
import type { Mutate, ScopeStore, UpdateResult } from '../backends/backend.js';
import { CliError, failure, usageError } from '../errors.js';
import { isoSeconds, structured } from '../output.js';
import { openForWrite, reportInForce, scopeJson, scopeLabel, writtenObjects, type CommandContext, type WriteFlags, type WriteTarget } from './common.js';
import { readWis2boxStore } from './wis2box-store.js';

interface ImportOptions extends WriteFlags {
  readonly dryRun?: boolean;
  /** Go on where the protection becomes narrower than wis2box-auth's (rows of no scope skipped, forms no scope closes). */
  readonly acceptNarrower?: boolean;
  readonly output: 'text' | 'json' | 'yaml';
}

/** Adds the records the scope does not hold yet to its own object; nothing when all are there (idempotent). */
function importMutation(scope: Scope, records: readonly TokenRecord[], namespace: string | undefined): Mutate {
  const name = scopeObjectName(scope);
  return (current) => {
    const held = tokenHashesOf(current);
    const ids = new Set(current.flatMap((o) => tokensOf(o).map((t) => t.id)));
    const fresh = records.filter((r) => !held.has(r.hash));
    if (fresh.length === 0) return [];
    const clash = fresh.find((r) => ids.has(r.id));
    if (clash) throw failure(`${scopeKey(scope)} already has another token with id ${clash.id}`);
    if (current.some((o) => o.spec.public === true)) throw failure(`${scopeKey(scope)} is public: take that back first (svc auth public --off), then import again`);
    const target = current.find((o) => o.metadata.name === name) ?? newProtectedScope(scope, name, namespace, []);
    const tokens = [...tokensOf(target), ...fresh];
    if (tokens.length > MAX_TOKENS_PER_OBJECT) throw failure(`${name} would hold ${tokens.length} tokens (at most ${MAX_TOKENS_PER_OBJECT})`);
    return [withSpec(target, { tokens })];
  };
}

interface ScopeOutcome {
  readonly planned: PlannedScope;
  readonly imported: number;
  readonly alreadyThere: number;
  readonly objects: readonly string[];
}

/** Every planned scope's edit checked against the objects the store holds now: every problem, by scope. */
function scopeProblems(plan: ImportPlan, objects: readonly ProtectedScope[], namespace: string | undefined): string[] {
  const problems: string[] = [];
  for (const p of plan.scopes) {
    const key = scopeKey(p.scope);
    const current = objects.filter((o) => scopeKey(scopeOf(o.spec)) === key);
    try {
      for (const o of importMutation(p.scope, p.records, namespace)(current, 0)) {
        const checked = validateProtectedScope(o);
        if (!checked.ok) problems.push(`${key}: ${o.metadata.name} would be invalid: ${formatFieldErrors(checked.error)}`);
      }
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      problems.push(e.message);
    }
  }
  return problems;
}

/** The rows the import cannot carry over as they protected, one line each (stderr), with what to do. */
function rowReport(plan: ImportPlan, accepted: boolean): string[] {
  const lines = plan.unusable.map((u) => `${rowList(u.rows)} (topic ${u.topic}): ${u.reason}${accepted ? ' - skipped' : ''}`);
  for (const n of plan.narrower) {
    const where = n.scopes.map((s) => (s.kind === 'path' ? `${scopeLabel(s)} closes it at the root` : `${scopeLabel(s)} as a whole segment under /data and a "."-level of a collection id`));
    lines.push(`${rowList(n.rows)} (topic ${n.topic}): wis2box-auth closed every URL containing it; ${where.join(', ')}${accepted ? ' (imported so)' : ''}; no scope closes it:`);
    for (const f of n.forms) lines.push(`    ${f}`);
  }
  return lines;
}

export async function importStore(ctx: CommandContext, file: string, options: ImportOptions): Promise<number> {
  const plan = planWis2boxImport(await readWis2boxStore(file), isoSeconds(ctx.io.now()), ctx.prefixes);
  const accepted = options.acceptNarrower === true;
  const rowsRefused = !accepted && (plan.unusable.length > 0 || plan.narrower.length > 0);
  const report = rowReport(plan, accepted);
  let store: ScopeStore | undefined;
  let target: WriteTarget | undefined;
  let problems: string[];
  try {
    // The served check (and --wait against the store) before the dry runs: refused once, up front.
    target = await openForWrite(ctx, options);
    store = target.store;
    problems = scopeProblems(plan, (await store.list()).map((s) => s.object), store.namespace);
  } catch (e) {
    // Refused for its rows anyway: say so, with why the scopes could not be checked as well.
    if (!rowsRefused || !(e instanceof CliError)) throw e;
    problems = [`the scopes could not be checked: ${e.message}`];
  }
  if (rowsRefused || problems.length > 0 || store === undefined || target === undefined) refuse(ctx, file, plan, report, problems, rowsRefused);
  for (const line of report) ctx.io.err(`${line}\n`);
  const { outcomes, written } = await writeAll(store, plan, options.dryRun === true);
  print(ctx, file, store.where, plan, outcomes, options);
  // New tokens close open scopes: what was open is taken away.
  await reportInForce(ctx, target, written, true, options.dryRun === true);
  return 0;
}

/** Nothing was written: every row problem and every scope problem, then one error (exit 2 for rows, else 1). */
function refuse(ctx: CommandContext, file: string, plan: ImportPlan, report: readonly string[], problems: readonly string[], rowsRefused: boolean): never {
  for (const line of rowsRefused ? report : []) ctx.io.err(`${line}\n`);
  for (const p of problems) ctx.io.err(`${p}\n`);
  const parts = [
    ...(rowsRefused ? [`${plan.unusable.reduce((n, u) => n + u.rows.length, 0) + plan.narrower.reduce((n, x) => n + x.rows.length, 0)} rows of ${file} cannot be imported as they protected (above): pass --accept-narrower to import the rest and keep the narrower protection shown`] : []),
    ...(problems.length > 0 ? [`${problems.length} scope${problems.length === 1 ? '' : 's'} cannot take the import (above)`] : []),
  ];
  const message = `${parts.join('; ')}; nothing was written`;
  throw rowsRefused ? usageError(message) : failure(message);
}

/**
 * The writes. A store that edits several scopes at once (a directory) does so; otherwise (Kubernetes) every write is
 * sent as a dry run first, every refusal named, and a real write that still fails says what was written before it.
 */
async function writeAll(store: ScopeStore, plan: ImportPlan, dryRun: boolean): Promise<{ outcomes: ScopeOutcome[]; written: ProtectedScope[] }> {
  const before = new Map<string, Set<string>>();
  for (const s of await store.list()) {
    const key = scopeKey(scopeOf(s.object.spec));
    const set = before.get(key) ?? new Set<string>();
    for (const t of tokensOf(s.object)) set.add(t.hash);
    before.set(key, set);
  }
  const edits = plan.scopes.map((p) => ({ scope: p.scope, mutate: importMutation(p.scope, p.records, store.namespace) }));
  let results: UpdateResult[];
  if (store.updateAll) results = await store.updateAll(edits, { dryRun });
  else {
    const tried = await dryRunEach(store, plan);
    results = dryRun ? tried : await writeEach(store, plan);
  }
  const outcomes = plan.scopes.map((p, i) => {
    const held = before.get(scopeKey(p.scope)) ?? new Set<string>();
    const imported = p.records.filter((r) => !held.has(r.hash)).length;
    const written = results[i]!.written;
    return { planned: p, imported: written.length === 0 ? 0 : imported, alreadyThere: p.records.length - imported, objects: written };
  });
  return { outcomes, written: results.flatMap(writtenObjects) };
}

/** Every scope's write as a server-side dry run: every refusal (admission, RBAC, validation) named, nothing written. */
async function dryRunEach(store: ScopeStore, plan: ImportPlan): Promise<UpdateResult[]> {
  const refused: string[] = [];
  const results: UpdateResult[] = [];
  for (const p of plan.scopes) {
    try {
      results.push(await store.update(p.scope, importMutation(p.scope, p.records, store.namespace), { dryRun: true }));
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      refused.push(`${scopeKey(p.scope)}: ${e.message}`);
    }
  }
  if (refused.length > 0) throw failure(`${refused.length} scope${refused.length === 1 ? '' : 's'} refused by ${store.where} (a dry run; nothing was written): ${refused.join('; ')}`);
  return results;
}

/** The real writes, scope by scope; a failure names what was written before it and how to complete the import. */
async function writeEach(store: ScopeStore, plan: ImportPlan): Promise<UpdateResult[]> {
  const results: UpdateResult[] = [];
  for (const p of plan.scopes) {
    try {
      results.push(await store.update(p.scope, importMutation(p.scope, p.records, store.namespace)));
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      const done = results.flatMap((r, i) => r.written.map((name) => `${scopeKey(plan.scopes[i]!.scope)} (${name})`));
      const rest = plan.scopes.slice(results.length + 1).map((x) => scopeKey(x.scope));
      throw failure(`writing ${scopeKey(p.scope)} failed: ${e.message}. Written before it: ${done.length > 0 ? done.join(', ') : 'nothing'}; not written: ${[scopeKey(p.scope), ...rest].join(', ')}. Run the same import again once the cause is fixed: it adds only what is missing`);
    }
  }
  return results;
}

function print(ctx: CommandContext, file: string, where: string, plan: ImportPlan, outcomes: readonly ScopeOutcome[], options: ImportOptions): void {
  const dryRun = options.dryRun === true;
  if (options.output !== 'text') {
    ctx.io.out(structured(options.output, {
      store: where, file, ...(dryRun ? { dryRun: true } : {}),
      scopes: outcomes.map((o) => ({ scope: scopeJson(o.planned.scope), topic: o.planned.topic, imported: o.imported, alreadyThere: o.alreadyThere, written: o.objects })),
      skipped: plan.unusable.map((u) => ({ topic: u.topic, rows: u.rows, reason: u.reason })),
      narrower: plan.narrower.map((n) => ({ topic: n.topic, rows: n.rows, scopes: n.scopes.map(scopeJson), notClosed: n.forms })),
    }));
    return;
  }
  for (const o of outcomes) {
    const what = o.imported > 0 ? `${o.imported} token${o.imported === 1 ? '' : 's'} ${dryRun ? 'would be imported' : 'imported'}` : 'nothing to import';
    ctx.io.out(`${scopeLabel(o.planned.scope)} (topic ${o.planned.topic}): ${what}${o.alreadyThere > 0 ? `, ${o.alreadyThere} already there` : ''}${o.objects.length > 0 ? ` (${o.objects.join(', ')})` : ''}\n`);
  }
  const n = outcomes.length;
  ctx.io.out(`${dryRun ? 'Dry run: nothing was written. ' : ''}${n} scope${n === 1 ? '' : 's'} from ${file} into ${where}; imported tokens keep their PBKDF2 hash (show marks them): replace them one partner at a time.\n`);
}
