import { createHash } from 'node:crypto';
import { API_GROUP_VERSION, isDateTime, scopeOf, tokensOf, type ProtectedScope } from './protected-scope.js';
import { checkScope, compareScopes, compareStrings, scopeKey, SCOPE_KINDS, type Scope, type ScopeKind } from './scope.js';
import { HASH_PATTERN, type TokenHash } from './token.js';
import { err, ok, type Result } from './result.js';

/**
 * The snapshot is what the operator hands svc-auth: every closed scope of a namespace with its token
 * hashes and expiry, nothing else. Its canonical text is one JSON line per scope, sorted, so the same
 * input always gives the same bytes and the same generation id (the SHA-256 of those lines). Shards are
 * runs of whole lines, so they can be verified one by one and concatenated back into the same bytes.
 */
export interface SnapshotToken {
  readonly hash: TokenHash;
  readonly expiresAt?: string;
}

export interface SnapshotScope extends Scope {
  readonly tokens: readonly SnapshotToken[];
}

export interface Snapshot {
  readonly generation: string;
  readonly scopeCount: number;
  readonly tokenCount: number;
  /** Canonical scope lines, each without its trailing newline. */
  readonly lines: readonly string[];
}

export interface SnapshotHeader {
  readonly apiVersion: typeof API_GROUP_VERSION;
  readonly kind: 'Snapshot';
  readonly generation: string;
  readonly scopes: number;
  readonly tokens: number;
}

export interface ShardRef {
  readonly digest: string;
  readonly scopes: number;
  readonly bytes: number;
}

export interface SnapshotIndex {
  readonly apiVersion: typeof API_GROUP_VERSION;
  readonly kind: 'SnapshotIndex';
  readonly generation: string;
  readonly scopes: number;
  readonly tokens: number;
  readonly shards: readonly ShardRef[];
}

export interface Shard extends ShardRef {
  readonly text: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Groups objects by the scope they protect; more than one object for a scope is a merge. */
export function groupByScope(objects: readonly ProtectedScope[]): Map<string, ProtectedScope[]> {
  const groups = new Map<string, ProtectedScope[]>();
  for (const o of objects) {
    const key = scopeKey(scopeOf(o.spec));
    const group = groups.get(key);
    if (group) group.push(o);
    else groups.set(key, [o]);
  }
  return groups;
}

/**
 * Compiles validated ProtectedScopes into a snapshot. Objects for the same scope merge (union of tokens);
 * a hash listed twice keeps the later expiry, or none if either has none. Scopes without tokens are open
 * and left out.
 */
export function compileSnapshot(objects: readonly ProtectedScope[]): Snapshot {
  const scopes: SnapshotScope[] = [];
  for (const group of groupByScope(objects).values()) {
    const expiry = new Map<TokenHash, number>();
    for (const o of group) {
      for (const t of tokensOf(o)) {
        const at = t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
        expiry.set(t.hash, Math.max(expiry.get(t.hash) ?? -Infinity, at));
      }
    }
    if (expiry.size === 0) continue;
    const tokens = [...expiry]
      .sort(([a], [b]) => compareStrings(a, b))
      .map(([hash, at]): SnapshotToken => (at === Infinity ? { hash } : { hash, expiresAt: new Date(at).toISOString() }));
    scopes.push({ ...scopeOf(group[0]!.spec), tokens });
  }
  scopes.sort(compareScopes);
  return fromScopes(scopes);
}

function fromScopes(scopes: readonly SnapshotScope[]): Snapshot {
  // Key order is fixed here so the bytes are canonical.
  const lines = scopes.map((s) =>
    JSON.stringify({ kind: s.kind, value: s.value, tokens: s.tokens.map((t) => (t.expiresAt === undefined ? { hash: t.hash } : { hash: t.hash, expiresAt: t.expiresAt })) }),
  );
  const tokenCount = scopes.reduce((n, s) => n + s.tokens.length, 0);
  return { generation: generationOf(lines), scopeCount: scopes.length, tokenCount, lines };
}

export function generationOf(lines: readonly string[]): string {
  const h = createHash('sha256');
  for (const line of lines) h.update(line).update('\n');
  return h.digest('hex');
}

export function snapshotHeader(s: Snapshot): SnapshotHeader {
  return { apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: s.generation, scopes: s.scopeCount, tokens: s.tokenCount };
}

/** The single-file form (`svc-auth --snapshot-file`): a header line, then the scope lines. */
export function serializeSnapshot(s: Snapshot): string {
  return [JSON.stringify(snapshotHeader(s)), ...s.lines].join('\n') + '\n';
}

/**
 * Parses and verifies the single-file form: header, line count, token count and generation must agree,
 * or the whole file is refused (a half-written file never loads).
 */
export function parseSnapshotFile(text: string): Result<{ header: SnapshotHeader; lines: string[] }> {
  const all = text.split('\n');
  // serializeSnapshot always ends with a newline; without it the file was cut short (maybe only by that
  // newline, but a writer that stopped there may not have finished either).
  if (all.pop() !== '') return err('the snapshot file does not end with a newline (truncated?)');
  const [first, ...lines] = all;
  if (first === undefined) return err('empty snapshot file');
  let header: SnapshotHeader;
  try {
    header = JSON.parse(first) as SnapshotHeader;
  } catch {
    return err('line 1: the snapshot header is not JSON');
  }
  if (header?.kind !== 'Snapshot' || header.apiVersion !== API_GROUP_VERSION || typeof header.generation !== 'string') {
    return err(`line 1: not a ${API_GROUP_VERSION} Snapshot header`);
  }
  if (lines.length !== header.scopes) return err(`the header announces ${header.scopes} scopes but the file has ${lines.length} (truncated?)`);
  if (generationOf(lines) !== header.generation) return err('the content does not match the header generation (corrupt or half-written)');
  // Each line's validity and the header's token count are checked by whoever builds the index from these
  // lines (AccessIndexBuilder refuses a bad line; compare header.tokens with the built index's tokenCount):
  // parsing 100,000 tokens twice, once here in one synchronous block, stalled requests during reloads.
  return ok({ header, lines });
}

/** Splits a snapshot into shards of whole lines, each at most maxBytes (a single larger line gets its own shard). */
export function shardSnapshot(s: Snapshot, maxBytes: number): { index: SnapshotIndex; shards: Shard[] } {
  const shards: Shard[] = [];
  let current: string[] = [];
  let size = 0;
  const flush = () => {
    if (current.length === 0) return;
    const text = current.join('');
    shards.push({ digest: sha256(text), scopes: current.length, bytes: Buffer.byteLength(text), text });
    current = [];
    size = 0;
  };
  for (const line of s.lines) {
    const entry = `${line}\n`;
    const bytes = Buffer.byteLength(entry);
    if (size > 0 && size + bytes > maxBytes) flush();
    current.push(entry);
    size += bytes;
  }
  flush();
  const index: SnapshotIndex = {
    apiVersion: API_GROUP_VERSION,
    kind: 'SnapshotIndex',
    generation: s.generation,
    scopes: s.scopeCount,
    tokens: s.tokenCount,
    shards: shards.map(({ digest, scopes, bytes }) => ({ digest, scopes, bytes })),
  };
  return { index, shards };
}

export function parseSnapshotIndex(text: string): Result<SnapshotIndex> {
  let index: SnapshotIndex;
  try {
    index = JSON.parse(text) as SnapshotIndex;
  } catch {
    return err('the snapshot index is not JSON');
  }
  if (index?.kind !== 'SnapshotIndex' || index.apiVersion !== API_GROUP_VERSION || !Array.isArray(index.shards) || typeof index.generation !== 'string') {
    return err(`not a ${API_GROUP_VERSION} SnapshotIndex`);
  }
  return ok(index);
}

/** Verifies a shard's bytes against the digest the index names for it; returns its lines. */
export function verifyShard(ref: ShardRef, text: string): Result<string[]> {
  if (sha256(text) !== ref.digest) return err(`shard ${ref.digest.slice(0, 16)} does not match its digest`);
  const lines = text.split('\n');
  if (lines.pop() !== '') return err(`shard ${ref.digest.slice(0, 16)} does not end with a newline`);
  if (lines.length !== ref.scopes) return err(`shard ${ref.digest.slice(0, 16)} has ${lines.length} scopes, the index says ${ref.scopes}`);
  return ok(lines);
}

/** Verifies the assembled shards against the index's generation (the shards in index order). */
export function verifyAssembled(index: SnapshotIndex, lines: readonly string[]): Result<true> {
  if (lines.length !== index.scopes) return err(`the shards hold ${lines.length} scopes, the index says ${index.scopes}`);
  if (generationOf(lines) !== index.generation) return err('the shards do not add up to the index generation');
  return ok(true);
}

/** Parses and checks one scope line; a snapshot with any bad line is refused whole. */
export function parseScopeLine(line: string): Result<SnapshotScope> {
  let raw: { kind?: unknown; value?: unknown; tokens?: unknown };
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
  if (!Array.isArray(raw.tokens) || raw.tokens.length === 0) return err(`${scopeKey(scope.value)}: a snapshot scope needs at least one token`);
  for (const t of raw.tokens as { hash?: unknown; expiresAt?: unknown }[]) {
    if (typeof t !== 'object' || t === null || typeof t.hash !== 'string' || !HASH_PATTERN.test(t.hash)) return err(`${scopeKey(scope.value)}: bad token hash`);
    if (t.expiresAt !== undefined && !isDateTime(t.expiresAt)) return err(`${scopeKey(scope.value)}: bad expiresAt`);
  }
  return ok({ ...scope.value, tokens: raw.tokens as SnapshotToken[] });
}
