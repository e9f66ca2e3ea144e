/**
 * The snapshot's line grammar: a snapshot is one canonical JSON line per closed scope, and its generation is the
 * SHA-256 of those lines, each followed by a newline. Both directions live here — `scopeLine` writes a line,
 * `parseScopeLine` reads and checks one — so a new field of a scope line is added in this file alone; the
 * compiler (compile.ts), the single-file form (file.ts) and the shards (shards.ts) carry lines without looking in.
 */
import { createHash } from 'node:crypto';
import { isDateTime } from '../protected-scope.js';
import { checkSubject, compareSubjects, subjectKey, type Subject } from '../subject.js';
import { checkScope, scopeKey, SCOPE_KINDS, type Scope, type ScopeKind } from '../scope.js';
import { compareNetworks, parseNetwork, type Network } from '../network.js';
import { excessiveIterationsOf, HASH_PATTERN, MAX_IMPORTED_ITERATIONS, type TokenHash } from '../token.js';
import { err, ok, type Result } from '../result.js';

export interface SnapshotToken {
  readonly hash: TokenHash;
  readonly expiresAt?: string;
}

export interface SnapshotScope extends Scope {
  readonly tokens: readonly SnapshotToken[];
  /** An object of the scope says `closed: true`: in the snapshot even with no token. */
  readonly closed?: true;
  /** Identities granted besides the tokens, sorted users first (absent when none: the line keeps its old bytes). */
  readonly subjects?: readonly Subject[];
  /** A public path scope: every method open, even where paths are closed by default. Never with tokens, subjects, networks or closed. */
  readonly public?: true;
  /**
   * Networks granted by client address, each once, in canonical text order (absent when none: the line keeps its old
   * bytes). The line carries their canonical texts only, never their descriptions.
   */
  readonly networks?: readonly Network[];
}

export interface Snapshot {
  readonly generation: string;
  readonly scopeCount: number;
  readonly tokenCount: number;
  /** Canonical scope lines, each without its trailing newline. */
  readonly lines: readonly string[];
}

/**
 * A scope's canonical line. Key order is fixed here so the bytes are canonical; `closed`, `public`, `subjects` and
 * `networks` only when set, so a snapshot of scopes without them keeps the bytes (and generation) it had. Networks
 * are their canonical texts, sorted: `"networks":["198.51.100.0/24","2001:db8::/32"]`.
 */
export function scopeLine(s: SnapshotScope): string {
  const tokens = s.tokens.map((t) => (t.expiresAt === undefined ? { hash: t.hash } : { hash: t.hash, expiresAt: t.expiresAt }));
  return JSON.stringify({
    kind: s.kind, value: s.value, ...(s.closed ? { closed: true } : {}), ...(s.public ? { public: true } : {}), tokens,
    ...(s.subjects?.length ? { subjects: s.subjects.map((x) => ({ kind: x.kind, name: x.name })) } : {}),
    ...(s.networks?.length ? { networks: [...s.networks].sort(compareNetworks).map((n) => n.cidr) } : {}),
  });
}

/** The generation of lines added one at a time (a writer that yields between lines keeps no second list). */
export class GenerationHash {
  private readonly hash = createHash('sha256');

  add(line: string): this {
    this.hash.update(line).update('\n');
    return this;
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

export function generationOf(lines: readonly string[]): string {
  const h = new GenerationHash();
  for (const line of lines) h.add(line);
  return h.digest();
}

/** Parses and checks one scope line; a snapshot with any bad line is refused whole. */
export function parseScopeLine(line: string): Result<SnapshotScope> {
  let raw: { kind?: unknown; value?: unknown; tokens?: unknown; closed?: unknown; subjects?: unknown; public?: unknown; networks?: unknown };
  try {
    raw = JSON.parse(line) as typeof raw;
  } catch {
    return err('not JSON');
  }
  if (typeof raw !== 'object' || raw === null || !SCOPE_KINDS.includes(raw.kind as ScopeKind) || typeof raw.value !== 'string') {
    return err('not a scope line');
  }
  const scope = checkScope({ kind: raw.kind as ScopeKind, value: raw.value });
  if (!scope.ok) return scope;
  if (raw.closed !== undefined && raw.closed !== true) return err(`${scopeKey(scope.value)}: closed must be true when present`);
  const subjects = parseSubjects(raw.subjects);
  if (!subjects.ok) return err(`${scopeKey(scope.value)}: ${subjects.error}`);
  const networks = parseNetworks(raw.networks);
  if (!networks.ok) return err(`${scopeKey(scope.value)}: ${networks.error}`);
  if (raw.public !== undefined) return parsePublicLine(scope.value, raw);
  if (!Array.isArray(raw.tokens) || (raw.tokens.length === 0 && raw.closed !== true && subjects.value.length === 0 && networks.value.length === 0)) {
    return err(`${scopeKey(scope.value)}: a snapshot scope needs at least one token, subject or network, or closed: true`);
  }
  for (const t of raw.tokens as { hash?: unknown; expiresAt?: unknown }[]) {
    if (typeof t !== 'object' || t === null || typeof t.hash !== 'string' || !HASH_PATTERN.test(t.hash)) return err(`${scopeKey(scope.value)}: ${badHash(t)}`);
    if (t.expiresAt !== undefined && !isDateTime(t.expiresAt)) return err(`${scopeKey(scope.value)}: bad expiresAt`);
  }
  return ok({
    ...scope.value, tokens: raw.tokens as SnapshotToken[], ...(raw.closed === true ? { closed: true as const } : {}),
    ...(subjects.value.length > 0 ? { subjects: subjects.value } : {}), ...(networks.value.length > 0 ? { networks: networks.value } : {}),
  });
}

/** A public scope's line: a path scope with `public: true`, an empty token list and nothing that closes it. */
function parsePublicLine(scope: Scope, raw: { tokens?: unknown; closed?: unknown; subjects?: unknown; public?: unknown; networks?: unknown }): Result<SnapshotScope> {
  if (raw.public !== true || scope.kind !== 'path') return err(`${scopeKey(scope)}: public must be true, and only on a path scope`);
  if (!Array.isArray(raw.tokens) || raw.tokens.length > 0 || raw.closed !== undefined || raw.subjects !== undefined || raw.networks !== undefined) {
    return err(`${scopeKey(scope)}: a public scope has no tokens, no subjects, no networks and no closed`);
  }
  return ok({ ...scope, tokens: [], public: true });
}

/** A line's subjects: absent, or a non-empty list of valid, distinct subjects in canonical order. */
function parseSubjects(raw: unknown): Result<readonly Subject[]> {
  if (raw === undefined) return ok([]);
  if (!Array.isArray(raw) || raw.length === 0) return err('subjects must be a non-empty list when present');
  const out: Subject[] = [];
  for (const x of raw as { kind?: unknown; name?: unknown }[]) {
    const checked = typeof x === 'object' && x !== null ? checkSubject(x.kind, x.name) : err('not a subject');
    if (!checked.ok) return err(`bad subject: ${checked.error}`);
    const prev = out.at(-1);
    if (prev && compareSubjects(prev, checked.value) >= 0) return err(`subjects out of order or repeated at ${subjectKey(checked.value)}`);
    out.push(checked.value);
  }
  return ok(out);
}

/** A line's networks: absent, or a non-empty list of canonical network texts in ascending order, each once. */
function parseNetworks(raw: unknown): Result<readonly Network[]> {
  if (raw === undefined) return ok([]);
  if (!Array.isArray(raw) || raw.length === 0) return err('networks must be a non-empty list when present');
  const out: Network[] = [];
  for (const x of raw as unknown[]) {
    const parsed = typeof x === 'string' ? parseNetwork(x) : err('not a string');
    if (!parsed.ok) return err(`bad network: ${parsed.error}`);
    const prev = out.at(-1);
    if (prev && compareNetworks(prev, parsed.value) >= 0) return err(`networks out of order or repeated at ${parsed.value.cidr}`);
    out.push(parsed.value);
  }
  return ok(out);
}

/** Why a snapshot line's token hash is refused: an imported hash above the iteration bound says so. */
function badHash(t: unknown): string {
  const hash = typeof t === 'object' && t !== null ? (t as { hash?: unknown }).hash : undefined;
  const costly = typeof hash === 'string' ? excessiveIterationsOf(hash) : undefined;
  return costly === undefined ? 'bad token hash' : `bad token hash: an imported hash asks for ${costly} PBKDF2 iterations (at most ${MAX_IMPORTED_ITERATIONS})`;
}
