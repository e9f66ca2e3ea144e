// What every command shares: the scope flags, the store to write to and when a write is in force (--wait), new-scope
// and typo warnings, and the refusal of a scope no object holds.
import { mergeSubjects, networksOf, parseScopeUnder, SCOPE_FIELD, scopeKey, scopeOf, subjectsOf, type PathPrefixes, type ProtectedScope, type Scope, type ScopeConfig, type ScopeKind } from '../../core/index.js';
import { nearScopes, topicLikePath, wis2TopicMisfit, WIS2_TOPIC_SHAPE } from '../../core/scope-typos.js';
import { parseDuration } from '../../lib/duration.js';
import type { Mutate, ScopeStore, UpdateResult } from '../backends/backend.js';
import { CliError, failure, usageError } from '../errors.js';
import type { Io } from '../io.js';

/** What every command gets: its I/O, a way to open the store (after its own checks), and its name for hints. */
export interface CommandContext {
  readonly io: Io;
  /** e.g. "svc auth add-token", for "(see ... --help)". */
  readonly commandPath: string;
  openStore(): Promise<ScopeStore>;
  /** svc-auth's --open-paths-by-default (`--open-paths-by-default` or SVC_OPEN_PATHS_BY_DEFAULT=true): how states are told. */
  readonly openPathsByDefault: boolean;
  /**
   * The store flags given on the command line (`--kubeconfig K --context C -n NS`, `--dir D`), shell-quoted, or "":
   * a command printed for the user to run next works on the same store.
   */
  readonly storeFlags: string;
  /**
   * svc-auth's --waf-prefix and --api-prefix (`--waf-prefix`/`--api-prefix`, or SVC_WAF_PREFIX/SVC_API_PREFIX), as
   * case-folded segments: a path scope below the API prefix's processes/ or collections/ is read as the special form.
   */
  readonly prefixes: PathPrefixes;
}

/** The command to run next on the same store: `svc --dir D auth remove-token` (as the user invoked us). */
export function followUp(ctx: Pick<CommandContext, 'io' | 'storeFlags'>, verb: string): string {
  return [ctx.io.programName, ctx.storeFlags, 'auth', verb].filter((w) => w !== '').join(' ');
}

/** What deciding for a scope needs of the context: svc-auth's prefixes and --open-paths-by-default. */
export function scopeConfigOf(ctx: Pick<CommandContext, 'prefixes' | 'openPathsByDefault'>): ScopeConfig {
  return { ...ctx.prefixes, openPathsByDefault: ctx.openPathsByDefault };
}

export interface ScopeFlags {
  readonly topicHierarchy?: string;
  readonly metadataId?: string;
  readonly path?: string;
}

const FLAG_OF_KIND: Record<ScopeKind, string> = { topic: '--topic-hierarchy', dataset: '--metadata-id', path: '--path' };
const KIND_OF_OPTION: Record<keyof ScopeFlags, ScopeKind> = { topicHierarchy: 'topic', metadataId: 'dataset', path: 'path' };

/**
 * Exactly one of --topic-hierarchy, --metadata-id, --path, parsed to a canonical scope (slash topics become dotted; a
 * path below the API prefix's processes/ or collections/ becomes the special form, or is refused). A path stored
 * otherwise than typed (`/processes/svc/`, `oapi/processes/svc`) is said on stderr.
 */
export function scopeFromFlags(flags: ScopeFlags, ctx: Pick<CommandContext, 'commandPath' | 'prefixes' | 'io'>): Scope {
  const { commandPath } = ctx;
  const given = (Object.keys(KIND_OF_OPTION) as (keyof ScopeFlags)[]).filter((k) => flags[k] !== undefined);
  if (given.length === 0) {
    throw usageError(`a scope is needed: give one of --topic-hierarchy T, --metadata-id M or --path P (see ${commandPath} --help)`);
  }
  if (given.length > 1) {
    throw usageError(`give exactly one scope, not ${given.map((k) => FLAG_OF_KIND[KIND_OF_OPTION[k]]).join(' and ')} (see ${commandPath} --help)`);
  }
  const kind = KIND_OF_OPTION[given[0]!];
  const raw = flags[given[0]!]!;
  const parsed = parseScopeUnder(kind, raw, ctx.prefixes);
  if (!parsed.ok) throw usageError(`${FLAG_OF_KIND[kind]}: ${parsed.error}`);
  if (parsed.value.rewritten) ctx.io.err(`${FLAG_OF_KIND[kind]} ${raw.trim()} is read as ${parsed.value.scope.value}\n`);
  return parsed.value.scope;
}

/** `--topic-hierarchy a.b`, for hints that show the command to run next. */
export function scopeArgs(scope: Scope): string {
  return `${FLAG_OF_KIND[scope.kind]} ${scope.value}`;
}

/** `topic origin.a.b` in prose. */
export function scopeLabel(scope: Scope): string {
  return `${scope.kind} ${scope.value}`;
}

export function scopeJson(scope: Scope): { kind: ScopeKind; field: string; value: string } {
  return { kind: scope.kind, field: SCOPE_FIELD[scope.kind], value: scope.value };
}

/** A token argument; "-" reads it from stdin (keeps it out of shell history and the process list). */
export async function tokenArgument(raw: string, io: Io): Promise<string> {
  if (raw !== '-') return raw;
  const text = await io.readStdin();
  const token = text.replace(/\r?\n$/, '');
  if (token.includes('\n')) throw usageError('stdin must hold exactly one token (one line)');
  return token;
}

/** The distinct subjects of a scope's objects (they close it as tokens do). */
export function subjectCount(objects: readonly ProtectedScope[]): number {
  return mergeSubjects(objects.map(subjectsOf)).length;
}

/** The distinct networks of a scope's objects (they close it as tokens do). */
export function networkCount(objects: readonly ProtectedScope[]): number {
  return new Set(objects.flatMap((o) => networksOf(o).map((n) => n.cidr))).size;
}

/** --wait and --wait-timeout, on every command that writes (and --dry-run where it has one). */
export interface WriteFlags {
  readonly wait?: boolean;
  readonly waitTimeout?: string;
  readonly dryRun?: boolean;
}

/** How long --wait waits by default: svc-operator compiles within a second; 30 s covers a busy one. */
export const DEFAULT_WAIT_MS = 30_000;
const MAX_WAIT_MS = 3_600_000;
/** svc-auth's --cache-max-age and the chart's auth.cacheMaxAge, unless the chart's record says otherwise. */
export const DEFAULT_CACHE_MAX_AGE_S = 30;

/** The store of a command that writes, and how long to wait for the operator (undefined: no --wait). */
export interface WriteTarget {
  readonly store: ScopeStore;
  readonly waitMs?: number;
}

/** --wait-timeout implies --wait; both are checked before the store is opened, and against it once it is. */
function waitMsOf(ctx: Pick<CommandContext, 'commandPath'>, flags: WriteFlags): number | undefined {
  if (flags.wait !== true && flags.waitTimeout === undefined) return undefined;
  if (flags.dryRun === true) throw usageError(`--wait waits for a written change to be in force, and --dry-run writes nothing: give one of them (see ${ctx.commandPath} --help)`);
  if (flags.waitTimeout === undefined) return DEFAULT_WAIT_MS;
  try {
    return parseDuration(flags.waitTimeout, { positive: true, maxMs: MAX_WAIT_MS });
  } catch (e) {
    throw usageError(`--wait-timeout: ${(e as Error).message}`);
  }
}

/**
 * Opens the store for a command that writes: --wait refused where no operator compiles the store (a directory: svc-auth
 * reads it directly), and the served check (KubernetesStore.ensureServed) made before anything is written.
 */
export async function openForWrite(ctx: CommandContext, flags: WriteFlags): Promise<WriteTarget> {
  const waitMs = waitMsOf(ctx, flags);
  const store = await ctx.openStore();
  if (waitMs !== undefined && store.waitForCompiled === undefined) {
    throw usageError(
      `--wait waits for svc-operator, and ${store.where} has none: an svc-auth serving it (--scopes-dir) loads a change within about a second of the write; leave --wait out (nothing was changed)`,
    );
  }
  await store.ensureServed?.();
  return { store, ...(waitMs !== undefined ? { waitMs } : {}) };
}

/** The objects an update wrote, as written (on Kubernetes with the generation the API server gave them). */
export function writtenObjects(result: UpdateResult): ProtectedScope[] {
  const names = new Set(result.written);
  return result.objects.filter((o) => names.has(o.metadata.name));
}

/**
 * After a write: when it is in force, on stderr; with --wait, waiting until svc-operator says it is (exit 1 on time
 * out or when the operator reports the object not ready: the change stays written, and the message says so).
 * `takesAway`: the change removes access someone had (a credential revoked, a scope closed), which a proxy's auth
 * cache may keep allowing for its age.
 */
export async function reportInForce(ctx: CommandContext, target: WriteTarget, written: readonly ProtectedScope[], takesAway: boolean, dryRun = false): Promise<void> {
  if (dryRun || written.length === 0) return;
  const { store } = target;
  const recorded = store.cacheMaxAge?.();
  const age = recorded ?? DEFAULT_CACHE_MAX_AGE_S;
  const cached = takesAway && age > 0
    ? ` A proxy caching svc-auth's answers may allow what this takes away for up to ${age} s more (${recorded !== undefined ? "auth.cacheMaxAge, from the chart's record" : 'auth.cacheMaxAge, 30 s by default'}).`
    : '';
  if (store.waitForCompiled === undefined) {
    ctx.io.err(`Not in force yet: an svc-auth serving this directory (--scopes-dir) loads it within about a second (150 ms after the files settle, at worst at its 30 s rescan); a GitOps repository's copy, once synced and compiled.${cached}\n`);
    return;
  }
  if (target.waitMs === undefined) {
    ctx.io.err(`Not in force yet: svc-operator compiles it into the snapshot and svc-auth loads that, usually within a second or two (--wait waits for it).${cached}\n`);
    return;
  }
  const outcome = await store.waitForCompiled(written, target.waitMs);
  if (!outcome.ok) {
    throw failure(`${outcome.message}: the change is written in ${store.where} and stays there, but is not in force until svc-operator compiles it (kubectl get ps ${written.map((o) => o.metadata.name).join(' ')} -o wide; is svc-operator running and serving this namespace?)`);
  }
  ctx.io.err(`In force: svc-operator has compiled it into the snapshot (Ready, ${(outcome.waitedMs / 1000).toFixed(1)} s); svc-auth loads the snapshot within about a second.${cached}\n`);
}

/** A mutation that also tells whether the scope had an object before it (the last attempt's view). */
export function noticingNew(mutate: Mutate, seen: (existed: boolean) => void): Mutate {
  return (current, attempt) => {
    seen(current.length > 0);
    return mutate(current, attempt);
  };
}

/**
 * An add created the scope: say so, and warn (stderr, not an error) when it looks like a typo: a small edit from an
 * existing scope of the same kind, a topic that does not fit the WIS2 topic hierarchy, a path that is a WIS2 topic
 * written with slashes. `undo`: the command that takes this add back.
 */
export async function reportNewScope(ctx: CommandContext, store: ScopeStore, scope: Scope, undo: string, dryRun = false): Promise<void> {
  ctx.io.err(`${dryRun ? 'Would create' : 'New scope'}: ${scopeLabel(scope)} (no object in ${store.where} held it before)\n`);
  const others = new Map<string, Scope>();
  for (const s of await store.list()) {
    const other = scopeOf(s.object.spec);
    if (scopeKey(other) !== scopeKey(scope)) others.set(scopeKey(other), other);
  }
  const near = nearScopes(scope, others.values());
  const takeBack = dryRun ? '' : ` take this back with ${undo} and`;
  if (near.length > 0) {
    const n = near[0]!;
    const also = near.length > 1 ? ` (also near: ${near.slice(1, 4).map((x) => x.scope.value).join(', ')})` : '';
    ctx.io.err(`warning: ${scopeLabel(scope)} is ${n.distance} edit${n.distance === 1 ? '' : 's'} from the existing ${scopeLabel(n.scope)}${also}: if you meant that one,${takeBack} run the command with ${scopeArgs(n.scope)}\n`);
  }
  if (scope.kind === 'topic') {
    const misfit = wis2TopicMisfit(scope.value);
    if (misfit !== undefined) ctx.io.err(`warning: topic ${scope.value} does not fit the WIS2 topic hierarchy (${WIS2_TOPIC_SHAPE}): ${misfit}; if it is not meant as a WIS2 topic, ignore this\n`);
  }
  if (scope.kind === 'path') {
    const topic = topicLikePath(scope.value);
    if (topic !== undefined) ctx.io.err(`warning: --path ${scope.value} names a path of the host, but reads like a WIS2 topic written with slashes: a topic is --topic-hierarchy ${topic}\n`);
  }
}

/** Thrown by a mutation that takes something away from a scope no object holds: the command names scopes near it. */
export class MissingScope extends CliError {
  constructor(readonly scope: Scope, readonly what: string) {
    super(`no object holds ${scopeKey(scope)}`, 1);
  }
}

/** A mutation that refuses, on its first look, a scope no object holds (nothing to take away from it). */
export function requireScope(scope: Scope, what: string, mutate: Mutate): Mutate {
  return (current, attempt) => {
    if (current.length === 0 && attempt === 0) throw new MissingScope(scope, what);
    return mutate(current, attempt);
  };
}

/** Runs an update whose mutation may throw MissingScope, and turns that into an error that names the scopes near it. */
export async function updateExisting<T>(ctx: CommandContext, store: ScopeStore, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof MissingScope)) throw e;
    const others = new Map<string, Scope>();
    for (const s of await store.list()) others.set(scopeKey(scopeOf(s.object.spec)), scopeOf(s.object.spec));
    const near = nearScopes(e.scope, others.values());
    const meant = near.length > 0 ? `Did you mean ${scopeArgs(near[0]!.scope)}? ` : '';
    throw failure(`${scopeKey(e.scope)} is not a scope of ${store.where} (no object holds it): there is ${e.what} to remove. ${meant}${followUp(ctx, 'show')} lists the scopes (nothing was changed)`);
  }
}
