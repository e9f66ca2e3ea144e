// The decision index: closed scopes by kind (topic trie, dataset and path maps), their token table, subjects and networks.
import { foldCase, isPrefixPath, scopeKey, scopeLevels, type Scope } from './scope.js';
import { importedRecordsOf, type ImportedRecord } from './imported-hash.js';
import { isImportedHash, IMPORTED_HASH_PATTERN } from './token.js';
import type { Subject } from './subject.js';
import { NetworkSet } from './network.js';
import { parseScopeLine, type SnapshotScope, type SnapshotToken } from './snapshot/lines.js';
import { err, ok, type Result } from './result.js';
import { isDigestHex, TokenTableBuilder, type TokenTable } from './token-table.js';

/** A closed scope as the decision sees it; its tokens are the records it owns in the index's TokenTable. */
export interface IndexedScope {
  readonly scope: Scope;
  readonly key: string;
  readonly depth: number;
  /**
   * Set when other scopes that differ from this one only in letter case were folded into it: their
   * tokens are records of this entry too, since a request cannot tell the two apart (docs/access-rules.md,
   * case variants). The ConfigMap source rebuilds such entries whole rather than by difference.
   */
  readonly caseFolded?: true;
  /** The identities it grants (snapshot `subjects`); absent when it grants none, as for most scopes. */
  readonly subjects?: SubjectGrants;
  /**
   * A public path scope: it never governs, and it opens a request only where no candidate with a grant or
   * `closed: true` covers it and the request is closed by default for exactly what it names (decide's lifts). A
   * case variant that is not public clears it on the case-folded entry (never more open).
   */
  readonly public?: true;
  /** Its imported (wis2box-auth PBKDF2) records, which are not in the token table; absent when none. */
  readonly imported?: readonly ImportedRecord[];
  /**
   * The networks it grants (snapshot `networks`), compiled for matching a request's address (core/network.ts:
   * parseAddressInto once per request, then `networks.find(family, words)` gives the most specific one holding it);
   * absent when it grants none, as for most scopes.
   */
  readonly networks?: NetworkSet;
}

/** A scope's subjects as the decision looks them up: usernames and group names, exact strings. */
export interface SubjectGrants {
  readonly users: ReadonlySet<string>;
  readonly groups: ReadonlySet<string>;
}

/** The grants of a list of subjects; undefined for none. */
function subjectGrants(subjects: readonly Subject[] | undefined, into?: SubjectGrants): SubjectGrants | undefined {
  if (!subjects || subjects.length === 0) return into;
  const users = new Set(into?.users);
  const groups = new Set(into?.groups);
  for (const x of subjects) (x.kind === 'User' ? users : groups).add(x.name);
  return { users, groups };
}

/** A fresh index entry for a snapshot scope (AccessIndexBuilder and svc-auth's incremental reload share it). */
export function indexedScopeOf(s: SnapshotScope): IndexedScope {
  const scope: Scope = { kind: s.kind, value: s.value };
  const subjects = subjectGrants(s.subjects);
  const imported = importedRecordsOf(s.tokens);
  return {
    scope, key: scopeKey(scope), depth: scopeLevels(scope).length, ...(subjects ? { subjects } : {}),
    ...(s.public ? { public: true as const } : {}), ...(imported ? { imported } : {}),
    ...(s.networks?.length ? { networks: new NetworkSet(s.networks) } : {}),
  };
}

interface TopicNode {
  scope?: IndexedScope;
  readonly children: Map<string, TopicNode>;
}

/**
 * The in-memory decision index built from a snapshot. Only closed scopes are in it: a scope with no
 * tokens is open, which is why adding a token to one scope can never change another's answer.
 * Every key (trie level, dataset id, path) is case-folded (foldCase): the decision looks requests up by
 * their folded segments, so a case variant of a protected path is governed like the path itself.
 */
export interface AccessIndex {
  readonly generation: string;
  readonly scopeCount: number;
  readonly tokenCount: number;
  /** Topic scopes as a trie over levels, so a path's segment runs are matched without building strings. */
  readonly topics: ReadonlyMap<string, TopicNode>;
  readonly datasets: ReadonlyMap<string, IndexedScope>;
  /** Path scopes keyed by their value (`collections/stations`, `processes/svc`, `wis2downloader`). */
  readonly paths: ReadonlyMap<string, IndexedScope>;
  /**
   * The prefix paths among them (isPrefixPath: `wis2downloader`) as a trie over `/` segments from the root, so a
   * request's segments are matched without building strings. Absent in indexes built before prefix paths.
   */
  readonly prefixes?: ReadonlyMap<string, TopicNode>;
  /**
   * Every (token digest, scope, expiry) record: which governing scope holds a token, and whether another
   * scope does ("another scope's token" rather than "unknown"). Owners are the IndexedScope objects above.
   */
  readonly tokens: TokenTable<IndexedScope>;
}

export type { TopicNode };

/** A snapshot token's expiry in ms since the epoch; Infinity when it has none. */
function expiryOf(t: SnapshotToken): number {
  return t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
}

/**
 * Adds a snapshot scope's tokens to a table as records owned by `entry`; returns how many records are new.
 * A hash listed twice in one scope (never in a compiled snapshot; possible in a hand-made line) is one
 * record with the expiry listed last, as the per-scope Map<hex, expiry> of earlier versions had it.
 */
export function addScopeTokens(table: TokenTableBuilder<IndexedScope>, entry: IndexedScope, s: SnapshotScope): number {
  let added = 0;
  for (const t of s.tokens) {
    // Imported hashes are the entry's `imported` list (indexedScopeOf), checked apart from the table.
    if (isImportedHash(t.hash)) continue;
    if (table.add(t.hash, entry, expiryOf(t), 'sha256:'.length)) added++;
  }
  return added;
}

/** Builds an index scope by scope, so a large snapshot can be loaded in slices between requests. */
export class AccessIndexBuilder {
  private readonly topics = new Map<string, TopicNode>();
  private readonly datasets = new Map<string, IndexedScope>();
  private readonly paths = new Map<string, IndexedScope>();
  private readonly prefixes = new Map<string, TopicNode>();
  private readonly tokens: TokenTableBuilder<IndexedScope>;
  private readonly seen = new Set<string>();
  private tokenCount = 0;

  /** `expectedTokens`: the token records to size the table for (a hint; more still fit). */
  constructor(expectedTokens = 0) {
    this.tokens = new TokenTableBuilder<IndexedScope>(expectedTokens);
  }

  addLine(line: string): Result<true> {
    const parsed = parseScopeLine(line);
    // parseScopeLine has checked every hash already.
    return parsed.ok ? this.addChecked(parsed.value) : parsed;
  }

  add(s: SnapshotScope): Result<true> {
    // A bad hash must leave no trace (no record of half the scope's tokens), so all are checked first.
    const good = (h: string) => (h.startsWith('sha256:') && isDigestHex(h, 'sha256:'.length)) || IMPORTED_HASH_PATTERN.test(h);
    if (!s.tokens.every((t) => good(t.hash))) return err(`${scopeKey(s)}: bad token hash`);
    return this.addChecked(s);
  }

  private addChecked(s: SnapshotScope): Result<true> {
    const fresh = indexedScopeOf(s);
    if (this.seen.has(fresh.key)) return err(`${fresh.key} appears twice`);
    this.seen.add(fresh.key);
    const entry = this.place(s.kind, s.value, scopeLevels(fresh.scope), fresh);
    // A case variant folded into an earlier entry: its subjects and imported records grant there too.
    if (entry !== fresh) foldInto(entry, fresh, s.subjects);
    this.tokenCount += addScopeTokens(this.tokens, entry, s) + (fresh.imported?.length ?? 0);
    return ok(true);
  }

  /**
   * Puts `fresh` under its folded key and returns the entry that owns its tokens: `fresh`, or the entry of
   * a scope already there that differs only in case (marked caseFolded).
   */
  private place(kind: Scope['kind'], value: string, levels: readonly string[], fresh: IndexedScope): IndexedScope {
    if (kind !== 'topic') {
      const map = kind === 'dataset' ? this.datasets : this.paths;
      const folded = foldCase(value);
      const held = map.get(folded);
      if (held) return markCaseFolded(held);
      map.set(folded, fresh);
      if (kind === 'path' && isPrefixPath(value)) this.placeInTrie(this.prefixes, levels, fresh);
      return fresh;
    }
    return this.placeInTrie(this.topics, levels, fresh);
  }

  private placeInTrie(root: Map<string, TopicNode>, levels: readonly string[], fresh: IndexedScope): IndexedScope {
    let children = root;
    let node: TopicNode | undefined;
    for (const level of levels) {
      const folded = foldCase(level);
      node = children.get(folded);
      if (!node) {
        node = { children: new Map() };
        children.set(folded, node);
      }
      children = node.children;
    }
    if (node!.scope) return markCaseFolded(node!.scope);
    node!.scope = fresh;
    return fresh;
  }

  build(generation: string): AccessIndex {
    return {
      generation,
      scopeCount: this.seen.size,
      tokenCount: this.tokenCount,
      topics: this.topics,
      datasets: this.datasets,
      paths: this.paths,
      ...(this.prefixes.size > 0 ? { prefixes: this.prefixes } : {}),
      tokens: this.tokens.build(),
    };
  }
}

/**
 * Folds a case variant's grants into the entry that holds its key: subjects, networks and imported records add up,
 * and the entry stays public only if both are (a case variant is never more open than the scope it matches).
 */
function foldInto(entry: IndexedScope, fresh: IndexedScope, subjects: readonly Subject[] | undefined): void {
  const e = entry as { subjects?: SubjectGrants; imported?: readonly ImportedRecord[]; public?: true; networks?: NetworkSet };
  if (subjects?.length) e.subjects = subjectGrants(subjects, e.subjects);
  if (fresh.networks) e.networks = new NetworkSet([...(e.networks?.networks ?? []), ...fresh.networks.networks]);
  if (fresh.imported) e.imported = [...(e.imported ?? []), ...fresh.imported];
  if (!fresh.public) delete e.public;
}

/** The builder owns its entries until build(), so marking one in place is safe. */
function markCaseFolded(entry: IndexedScope): IndexedScope {
  (entry as { caseFolded?: true }).caseFolded = true;
  return entry;
}

/** Builds an index from snapshot lines in one go (the CLI, tests, small snapshots). */
export function buildIndex(generation: string, lines: readonly string[]): Result<AccessIndex> {
  const builder = new AccessIndexBuilder();
  for (const [i, line] of lines.entries()) {
    const r = builder.addLine(line);
    if (!r.ok) return err(`scope line ${i + 1}: ${r.error}`);
  }
  return ok(builder.build(generation));
}

export const EMPTY_INDEX: AccessIndex = new AccessIndexBuilder().build('empty');

/** The index entry of a scope (its own, or that of a scope differing only in case), if it is closed. */
export function entryOf(index: AccessIndex, scope: Scope): IndexedScope | undefined {
  if (scope.kind === 'dataset') return index.datasets.get(foldCase(scope.value));
  if (scope.kind === 'path') return index.paths.get(foldCase(scope.value));
  let children: ReadonlyMap<string, TopicNode> = index.topics;
  let node: TopicNode | undefined;
  for (const level of scopeLevels(scope)) {
    node = children.get(foldCase(level));
    if (!node) return undefined;
    children = node.children;
  }
  return node?.scope;
}

/**
 * Every group name some closed scope of the index grants (its `Group` subjects): the only groups of an identity that
 * can grant anything today. A browser session too large for a cookie keeps only these (authz/identity/session.ts).
 * Walks the whole index: callers keep the answer per index.
 */
export function subjectGroups(index: AccessIndex): ReadonlySet<string> {
  const groups = new Set<string>();
  const take = (e: IndexedScope | undefined) => e?.subjects?.groups.forEach((g) => groups.add(g));
  const walk = (nodes: ReadonlyMap<string, TopicNode> | undefined) => {
    for (const node of nodes?.values() ?? []) {
      take(node.scope);
      walk(node.children);
    }
  };
  index.datasets.forEach(take);
  index.paths.forEach(take);
  walk(index.topics);
  return groups;
}
