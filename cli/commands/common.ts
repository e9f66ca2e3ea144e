import { mergeSubjects, networksOf, parseScopeUnder, SCOPE_FIELD, subjectsOf, type PathPrefixes, type ProtectedScope, type Scope, type ScopeConfig, type ScopeKind } from '../../core/index.js';
import type { ScopeStore } from '../backends/backend.js';
import { usageError } from '../errors.js';
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
