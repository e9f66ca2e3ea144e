/**
 * The snapshot is what the operator hands svc-auth: every closed scope of a namespace with its token
 * hashes and expiry, nothing else. Its canonical text is one JSON line per scope, sorted, so the same
 * input always gives the same bytes and the same generation id (the SHA-256 of those lines). Shards are
 * runs of whole lines, so they can be verified one by one and concatenated back into the same bytes.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_PREFIXES, publicRefusal, type PathPrefixes } from './path-scope.js';
import { API_GROUP_VERSION, closedByFlag, isDateTime, publicByFlag, scopeOf, subjectsOf, tokensOf, type ProtectedScope } from './protected-scope.js';
import { checkSubject, compareSubjects, mergeSubjects, subjectKey, type Subject } from './subject.js';
import { checkScope, compareScopes, compareStrings, scopeKey, SCOPE_KINDS, type Scope, type ScopeKind } from './scope.js';
import { excessiveIterationsOf, HASH_PATTERN, MAX_IMPORTED_ITERATIONS, type TokenHash } from './token.js';
import { err, ok, type Result } from './result.js';

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
  /** A public path scope: every method open, even where paths are closed by default. Never with tokens, subjects or closed. */
  readonly public?: true;
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
 * Compiles validated ProtectedScopes into a snapshot. Objects for the same scope merge (union of tokens and
 * of subjects); a hash listed twice keeps the later expiry, or none if either has none; any object saying
 * `closed: true` closes the scope. Scopes without tokens or subjects and not closed by flag are open and left out.
 */
export function compileSnapshot(objects: readonly ProtectedScope[], prefixes: PathPrefixes = DEFAULT_PREFIXES): Snapshot {
  const steps = compileSnapshotSteps(objects, Infinity, prefixes);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * compileSnapshot a step at a time, for a caller that yields to its event loop between steps (10,000
 * scopes of 10 tokens take ~150 ms in all): the generator pauses after every `every` steps (a scope's
 * objects merged, or a line written and hashed) and returns the snapshot. Only grouping the objects by
 * scope and sorting the scopes are done in one go (a few milliseconds for 10,000).
 */
export function* compileSnapshotSteps(objects: readonly ProtectedScope[], every = 32, prefixes: PathPrefixes = DEFAULT_PREFIXES): Generator<void, Snapshot, void> {
  let work = 0;
  const scopes: SnapshotScope[] = [];
  for (const group of groupByScope(objects).values()) {
    if (++work % every === 0) yield;
    const expiry = new Map<TokenHash, number>();
    const closed = group.some(closedByFlag);
    for (const o of group) {
      for (const t of tokensOf(o)) {
        const at = t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
        expiry.set(t.hash, Math.max(expiry.get(t.hash) ?? -Infinity, at));
      }
    }
    const subjects = mergeSubjects(group.map(subjectsOf));
    if (expiry.size === 0 && subjects.length === 0 && !closed) {
      // Public only while no object of the scope closes it: two objects that disagree fail closed. A path in a
      // refused form or at or above a prefix is never public (path-scope.ts): it is left out as any open scope.
      const scope = scopeOf(group[0]!.spec);
      if (group.some(publicByFlag) && publicRefusal(scope.value, prefixes) === undefined) scopes.push({ ...scope, tokens: [], public: true });
      continue;
    }
    const tokens = [...expiry]
      .sort(([a], [b]) => compareStrings(a, b))
      .map(([hash, at]): SnapshotToken => (at === Infinity ? { hash } : { hash, expiresAt: new Date(at).toISOString() }));
    scopes.push({ ...scopeOf(group[0]!.spec), tokens, ...(closed ? { closed: true as const } : {}), ...(subjects.length > 0 ? { subjects } : {}) });
  }
  scopes.sort(compareScopes);
  // Key order is fixed here so the bytes are canonical; the generation is generationOf(lines).
  const lines: string[] = [];
  const h = createHash('sha256');
  let tokenCount = 0;
  for (const s of scopes) {
    if (++work % every === 0) yield;
    const tokens = s.tokens.map((t) => (t.expiresAt === undefined ? { hash: t.hash } : { hash: t.hash, expiresAt: t.expiresAt }));
    // `closed` and `subjects` only when set, so a snapshot of scopes without them keeps the bytes (and generation) it had.
    const line = JSON.stringify({
      kind: s.kind, value: s.value, ...(s.closed ? { closed: true } : {}), ...(s.public ? { public: true } : {}), tokens,
      ...(s.subjects?.length ? { subjects: s.subjects.map((x) => ({ kind: x.kind, name: x.name })) } : {}),
    });
    lines.push(line);
    h.update(line).update('\n');
    tokenCount += s.tokens.length;
  }
  return { generation: h.digest('hex'), scopeCount: scopes.length, tokenCount, lines };
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

/** Parses and checks the header line of the single-file form; errors name `line 1`. */
export function parseSnapshotHeader(line: string): Result<SnapshotHeader> {
  let header: SnapshotHeader;
  try {
    header = JSON.parse(line) as SnapshotHeader;
  } catch {
    return err('line 1: the snapshot header is not JSON');
  }
  if (header?.kind !== 'Snapshot' || header.apiVersion !== API_GROUP_VERSION || typeof header.generation !== 'string') {
    return err(`line 1: not a ${API_GROUP_VERSION} Snapshot header`);
  }
  return ok(header);
}

const NOT_NEWLINE_TERMINATED = 'the snapshot file does not end with a newline (truncated?)';
const EMPTY = 'empty snapshot file';
const lineCountMismatch = (announced: number, found: number) => `the header announces ${announced} scopes but the file has ${found} (truncated?)`;
const GENERATION_MISMATCH = 'the content does not match the header generation (corrupt or half-written)';

/**
 * Parses and verifies the single-file form: header, line count, token count and generation must agree,
 * or the whole file is refused (a half-written file never loads).
 */
export function parseSnapshotFile(text: string): Result<{ header: SnapshotHeader; lines: string[] }> {
  const all = text.split('\n');
  // serializeSnapshot always ends with a newline; without it the file was cut short (maybe only by that
  // newline, but a writer that stopped there may not have finished either).
  if (all.pop() !== '') return err(NOT_NEWLINE_TERMINATED);
  const [first, ...lines] = all;
  if (first === undefined) return err(EMPTY);
  const parsed = parseSnapshotHeader(first);
  if (!parsed.ok) return parsed;
  const header = parsed.value;
  if (lines.length !== header.scopes) return err(lineCountMismatch(header.scopes, lines.length));
  if (generationOf(lines) !== header.generation) return err(GENERATION_MISMATCH);
  // Each line's validity and the header's token count are checked by whoever builds the index from these
  // lines (AccessIndexBuilder refuses a bad line; compare header.tokens with the built index's tokenCount):
  // parsing 100,000 tokens twice, once here in one synchronous block, stalled requests during reloads.
  return ok({ header, lines });
}

const NEWLINE = 0x0a;

/**
 * parseSnapshotFile for the file's bytes, fed in chunks of any size by a caller that may yield to the
 * event loop between them, so a large file is never verified in one synchronous block. The generation is
 * the SHA-256 of every scope line plus its newline, i.e. of exactly the bytes after the header's newline,
 * so it is hashed over the bytes as they come; complete lines are decoded as they come too (a chunk's
 * lines at once, a line cut by a chunk boundary once its end arrives, so a multi-byte character may be
 * split anywhere). `finish()` refuses exactly what parseSnapshotFile refuses for the same text, with the
 * same messages, and also bytes that are not UTF-8 (`line N: not valid UTF-8`), which no writer produces
 * and which parseSnapshotFile, given text, never sees (its caller decoded them with replacement characters).
 * The chunks are not retained: a caller may reuse its buffer.
 */
export class SnapshotFileVerifier {
  private readonly hash = createHash('sha256');
  // fatal: refuse invalid UTF-8 rather than replace it; ignoreBOM: keep a U+FEFF as Buffer#toString does.
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  /** The bytes of the line under way (after the last newline seen), copied. */
  private partial: Uint8Array[] = [];
  private bytes = 0;
  private lastByte = -1;
  /** Complete lines seen, the header included. */
  private lineCount = 0;
  private parsedHeader: Result<SnapshotHeader> | undefined;
  private readonly lines: string[] = [];
  /** The first (1-based, header = 1) line that is not valid UTF-8; lines are no longer decoded after it. */
  private badLine = 0;
  private done = false;

  /** Feeds the next bytes of the file. */
  update(chunk: Uint8Array): this {
    if (this.done) throw new Error('SnapshotFileVerifier: update() after finish()');
    if (chunk.length === 0) return this;
    this.bytes += chunk.length;
    this.lastByte = chunk[chunk.length - 1]!;
    let body = chunk;
    if (this.parsedHeader === undefined) {
      const nl = chunk.indexOf(NEWLINE);
      if (nl < 0) {
        this.partial.push(new Uint8Array(chunk)); // a copy (Buffer#slice would not be one)
        return this;
      }
      const line = this.decode(this.completeLine(chunk.subarray(0, nl)));
      this.lineCount = 1;
      this.parsedHeader = line === undefined ? err('line 1: the snapshot header is not valid UTF-8') : parseSnapshotHeader(line);
      body = chunk.subarray(nl + 1);
    }
    // The generation covers exactly the bytes after the header's newline.
    this.hash.update(body);
    this.addLines(body);
    return this;
  }

  /**
   * The scope lines decoded since the last call, which the verifier then forgets (finish() returns only
   * the lines never taken). They are unverified until finish() says the whole file is good: a caller may
   * start building from them, but must not use what it built before that.
   */
  takeLines(): string[] {
    return this.lines.splice(0);
  }

  /** The header, once its line has been fed and parsed; unverified until finish() (the generation does not cover it). */
  get header(): SnapshotHeader | undefined {
    return this.parsedHeader?.ok ? this.parsedHeader.value : undefined;
  }

  /** The verdict, once every byte has been fed; the verifier cannot be fed after it. */
  finish(): Result<{ header: SnapshotHeader; lines: string[] }> {
    this.done = true;
    // In parseSnapshotFile's order, with its messages.
    if (this.bytes === 0) return err(EMPTY);
    if (this.lastByte !== NEWLINE) return err(NOT_NEWLINE_TERMINATED);
    const parsed = this.parsedHeader!; // the file ends with a newline, so its first line is complete
    if (!parsed.ok) return parsed;
    const header = parsed.value;
    const scopes = this.lineCount - 1;
    if (scopes !== header.scopes) return err(lineCountMismatch(header.scopes, scopes));
    if (this.badLine > 0) return err(`line ${this.badLine}: not valid UTF-8`);
    if (this.hash.digest('hex') !== header.generation) return err(GENERATION_MISMATCH);
    return ok({ header, lines: this.lines });
  }

  /** Counts and decodes the complete scope lines in body bytes; keeps the unfinished last one for later. */
  private addLines(bytes: Uint8Array): void {
    const first = bytes.indexOf(NEWLINE);
    if (first < 0) {
      if (bytes.length > 0) this.partial.push(new Uint8Array(bytes));
      return;
    }
    const last = bytes.lastIndexOf(NEWLINE);
    // The end of the line that earlier chunks began (or a whole line).
    this.addLine(this.completeLine(bytes.subarray(0, first)));
    if (last > first) {
      // The whole lines after it: one decode and one split. A newline byte never occurs inside a
      // multi-byte sequence, so a run of whole lines decodes on its own.
      const run = bytes.subarray(first + 1, last + 1);
      const text = this.badLine > 0 ? undefined : this.decode(run);
      if (text !== undefined) {
        const lines = text.split('\n');
        lines.pop();
        for (const line of lines) this.lines.push(line);
        this.lineCount += lines.length;
      } else {
        // Not UTF-8 somewhere (here, or an earlier line already): line by line, to count them and name the first bad one.
        let start = 0;
        for (let nl = run.indexOf(NEWLINE); nl >= 0; nl = run.indexOf(NEWLINE, start)) {
          this.addLine(run.subarray(start, nl));
          start = nl + 1;
        }
      }
    }
    if (last + 1 < bytes.length) this.partial.push(new Uint8Array(bytes.subarray(last + 1)));
  }

  /** The unfinished line's bytes followed by `end`; the next line starts empty. */
  private completeLine(end: Uint8Array): Uint8Array {
    if (this.partial.length === 0) return end;
    const parts = [...this.partial, end];
    this.partial = [];
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    return bytes;
  }

  private addLine(bytes: Uint8Array): void {
    this.lineCount++;
    if (this.badLine > 0) return; // refused anyway: only counting
    const line = this.decode(bytes);
    if (line === undefined) this.badLine = this.lineCount;
    else this.lines.push(line);
  }

  private decode(bytes: Uint8Array): string | undefined {
    try {
      return this.decoder.decode(bytes);
    } catch {
      return undefined;
    }
  }
}

/** A verifier for the single-file form's bytes (see SnapshotFileVerifier). */
export function snapshotFileVerifier(): SnapshotFileVerifier {
  return new SnapshotFileVerifier();
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
  let raw: { kind?: unknown; value?: unknown; tokens?: unknown; closed?: unknown; subjects?: unknown; public?: unknown };
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
  if (raw.public !== undefined) return parsePublicLine(scope.value, raw);
  if (!Array.isArray(raw.tokens) || (raw.tokens.length === 0 && raw.closed !== true && subjects.value.length === 0)) {
    return err(`${scopeKey(scope.value)}: a snapshot scope needs at least one token or subject, or closed: true`);
  }
  for (const t of raw.tokens as { hash?: unknown; expiresAt?: unknown }[]) {
    if (typeof t !== 'object' || t === null || typeof t.hash !== 'string' || !HASH_PATTERN.test(t.hash)) return err(`${scopeKey(scope.value)}: ${badHash(t)}`);
    if (t.expiresAt !== undefined && !isDateTime(t.expiresAt)) return err(`${scopeKey(scope.value)}: bad expiresAt`);
  }
  return ok({
    ...scope.value, tokens: raw.tokens as SnapshotToken[], ...(raw.closed === true ? { closed: true as const } : {}),
    ...(subjects.value.length > 0 ? { subjects: subjects.value } : {}),
  });
}

/** Why a snapshot line's token hash is refused: an imported hash above the iteration bound says so. */
function badHash(t: unknown): string {
  const hash = typeof t === 'object' && t !== null ? (t as { hash?: unknown }).hash : undefined;
  const costly = typeof hash === 'string' ? excessiveIterationsOf(hash) : undefined;
  return costly === undefined ? 'bad token hash' : `bad token hash: an imported hash asks for ${costly} PBKDF2 iterations (at most ${MAX_IMPORTED_ITERATIONS})`;
}

/** A public scope's line: a path scope with `public: true`, an empty token list and nothing that closes it. */
function parsePublicLine(scope: Scope, raw: { tokens?: unknown; closed?: unknown; subjects?: unknown; public?: unknown }): Result<SnapshotScope> {
  if (raw.public !== true || scope.kind !== 'path') return err(`${scopeKey(scope)}: public must be true, and only on a path scope`);
  if (!Array.isArray(raw.tokens) || raw.tokens.length > 0 || raw.closed !== undefined || raw.subjects !== undefined) {
    return err(`${scopeKey(scope)}: a public scope has no tokens, no subjects and no closed`);
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
