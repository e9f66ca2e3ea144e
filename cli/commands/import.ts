/**
 * `svc auth import FILE`: carries a wis2box-auth store over. wis2box-auth keeps one row per token,
 * `auth(salt, key, topic)`, with key = PBKDF2-HMAC-SHA256(token, salt, 100,000 iterations, 32 bytes). The
 * plaintext is unknown, so each row becomes a token record whose hash is `pbkdf2-sha256:100000:<salt>:<key>`
 * (core/imported-hash.ts), in the ProtectedScope of the scope its topic maps to. A topic that maps to no scope is
 * reported and skipped; a row already imported is left as it is, so running the import twice changes nothing.
 *
 * SQLite is read with sql.js (SQLite compiled to WebAssembly, installed from npm with the package's own files):
 * Node 20 has no node:sqlite, and native bindings download a prebuilt binary at install, which fails here.
 */
import { readFile } from 'node:fs/promises';
import {
  importedHashOfRow,
  MAX_TOKENS_PER_OBJECT,
  newProtectedScope,
  scopeKey,
  scopeObjectName,
  scopeOfWis2boxTopic,
  tokenIdOf,
  tokensOf,
  type ProtectedScope,
  type Scope,
  type TokenRecord,
} from '../../core/index.js';
import type { Mutate, ScopeStore } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { isoSeconds, structured } from '../output.js';
import { scopeJson, scopeLabel, type CommandContext } from './common.js';

export interface ImportOptions {
  readonly dryRun?: boolean;
  readonly output: 'text' | 'json' | 'yaml';
}

export const IMPORTED_DESCRIPTION = 'imported from wis2box-auth';

interface Row {
  readonly salt: unknown;
  readonly key: unknown;
  readonly topic: unknown;
}

/** What the store holds, grouped by scope, with the topics that map to none. */
export interface ImportPlan {
  readonly scopes: Map<string, { scope: Scope; topic: string; records: TokenRecord[] }>;
  readonly skipped: { topic: string; rows: number; reason: string }[];
}

/** Reads every row of the `auth` table; a file that is not such a store is a usage error. */
export async function readWis2boxStore(file: string): Promise<Row[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    throw usageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { default: initSqlJs } = await import('sql.js');
  const SQL = await initSqlJs();
  let db: InstanceType<typeof SQL.Database> | undefined;
  try {
    db = new SQL.Database(bytes);
    const rows: Row[] = [];
    const stmt = db.prepare('SELECT salt, key, topic FROM auth');
    while (stmt.step()) rows.push(stmt.getAsObject() as unknown as Row);
    stmt.free();
    return rows;
  } catch (e) {
    throw usageError(`${file} is not a wis2box-auth store (an SQLite file with a table auth(salt, key, topic)): ${(e as Error).message}`);
  } finally {
    db?.close();
  }
}

/** Maps rows to scopes and records; pure, so a dry run and a real one plan the same. */
export function planImport(rows: readonly Row[], createdAt: string): ImportPlan {
  const scopes: ImportPlan['scopes'] = new Map();
  const skipped = new Map<string, { rows: number; reason: string }>();
  for (const row of rows) {
    const topic = typeof row.topic === 'string' ? row.topic : String(row.topic);
    const scope = scopeOfWis2boxTopic(topic);
    const hash = importedHashOfRow(row.salt, row.key);
    const reason = !scope.ok ? scope.error : !hash.ok ? hash.error : undefined;
    if (reason !== undefined || !scope.ok || !hash.ok) {
      const s = skipped.get(topic) ?? { rows: 0, reason: reason ?? '' };
      s.rows++;
      skipped.set(topic, s);
      continue;
    }
    const key = scopeKey(scope.value);
    const entry = scopes.get(key) ?? { scope: scope.value, topic, records: [] };
    if (!entry.records.some((r) => r.hash === hash.value)) entry.records.push({ id: tokenIdOf(hash.value), hash: hash.value, description: IMPORTED_DESCRIPTION, createdAt });
    scopes.set(key, entry);
  }
  return { scopes, skipped: [...skipped].map(([topic, s]) => ({ topic, ...s })) };
}

/** Adds the records the scope does not hold yet to its own object; nothing when all are there (idempotent). */
export function importMutation(scope: Scope, records: readonly TokenRecord[], namespace: string | undefined): Mutate {
  const name = scopeObjectName(scope);
  return (current) => {
    const held = new Set(current.flatMap((o) => tokensOf(o).map((t) => t.hash)));
    const ids = new Set(current.flatMap((o) => tokensOf(o).map((t) => t.id)));
    const fresh = records.filter((r) => !held.has(r.hash));
    if (fresh.length === 0) return [];
    for (const r of fresh) if (ids.has(r.id)) throw failure(`${scopeKey(scope)} already has another token with id ${r.id}; nothing was changed for this scope`);
    if (current.some((o) => o.spec.public === true)) throw failure(`${scopeKey(scope)} is public: take that back first (public --off), then import again`);
    const target = current.find((o) => o.metadata.name === name) ?? newProtectedScope(scope, name, namespace, []);
    const tokens = [...tokensOf(target), ...fresh];
    if (tokens.length > MAX_TOKENS_PER_OBJECT) throw failure(`${name} would hold more than ${MAX_TOKENS_PER_OBJECT} tokens`);
    return [{ ...target, spec: { ...target.spec, tokens } as ProtectedScope['spec'] }];
  };
}

interface ScopeOutcome {
  readonly scope: Scope;
  readonly topic: string;
  readonly imported: number;
  readonly alreadyThere: number;
  readonly objects: readonly string[];
}

async function importScope(store: ScopeStore, s: { scope: Scope; topic: string; records: TokenRecord[] }, dryRun: boolean): Promise<ScopeOutcome> {
  const before = new Set((await store.get(s.scope)).flatMap((o) => tokensOf(o.object).map((t) => t.hash)));
  const result = await store.update(s.scope, importMutation(s.scope, s.records, store.namespace), { dryRun });
  const imported = s.records.filter((r) => !before.has(r.hash)).length;
  return { scope: s.scope, topic: s.topic, imported: result.written.length === 0 ? 0 : imported, alreadyThere: s.records.length - imported, objects: result.written };
}

export async function importStore(ctx: CommandContext, file: string, options: ImportOptions): Promise<number> {
  const plan = planImport(await readWis2boxStore(file), isoSeconds(ctx.io.now()));
  const store = await ctx.openStore();
  const dryRun = options.dryRun === true;
  const outcomes: ScopeOutcome[] = [];
  for (const s of plan.scopes.values()) outcomes.push(await importScope(store, s, dryRun));
  if (options.output !== 'text') {
    ctx.io.out(structured(options.output, {
      store: store.where, file, ...(dryRun ? { dryRun: true } : {}),
      scopes: outcomes.map((o) => ({ scope: scopeJson(o.scope), topic: o.topic, imported: o.imported, alreadyThere: o.alreadyThere, written: o.objects })),
      skipped: plan.skipped,
    }));
  } else {
    for (const o of outcomes) {
      const what = o.imported > 0 ? `${o.imported} token${o.imported === 1 ? '' : 's'} ${dryRun ? 'would be imported' : 'imported'}` : 'nothing to import';
      ctx.io.out(`${scopeLabel(o.scope)} (topic ${o.topic}): ${what}${o.alreadyThere > 0 ? `, ${o.alreadyThere} already there` : ''}${o.objects.length > 0 ? ` (${o.objects.join(', ')})` : ''}\n`);
    }
    for (const s of plan.skipped) ctx.io.err(`skipped topic ${JSON.stringify(s.topic)} (${s.rows} row${s.rows === 1 ? '' : 's'}): ${s.reason}\n`);
    ctx.io.out(`${dryRun ? 'Dry run: nothing was written. ' : ''}${outcomes.length} scope${outcomes.length === 1 ? '' : 's'} from ${file} into ${store.where}; imported tokens keep their PBKDF2 hash (show marks them): replace them one partner at a time.\n`);
  }
  return 0;
}
