import { scopeKey, scopeLevels, type Scope } from './scope.js';
import { parseScopeLine, type SnapshotScope, type SnapshotToken } from './snapshot.js';
import { err, ok, type Result } from './result.js';
import { isDigestHex, TokenTableBuilder, type TokenTable } from './token-table.js';

/** A closed scope as the decision sees it; its tokens are the records it owns in the index's TokenTable. */
export interface IndexedScope {
  readonly scope: Scope;
  readonly key: string;
  readonly depth: number;
}

interface TopicNode {
  scope?: IndexedScope;
  readonly children: Map<string, TopicNode>;
}

/**
 * The in-memory decision index built from a snapshot. Only closed scopes are in it: a scope with no
 * tokens is open, which is why adding a token to one scope can never change another's answer.
 */
export interface AccessIndex {
  readonly generation: string;
  readonly scopeCount: number;
  readonly tokenCount: number;
  /** Topic scopes as a trie over levels, so a path's segment runs are matched without building strings. */
  readonly topics: ReadonlyMap<string, TopicNode>;
  readonly datasets: ReadonlyMap<string, IndexedScope>;
  /** Path scopes keyed by their value (`collections/stations`, `processes/svc`). */
  readonly paths: ReadonlyMap<string, IndexedScope>;
  /**
   * Every (token digest, scope, expiry) record: which governing scope holds a token, and whether another
   * scope does ("another scope's token" rather than "unknown"). Owners are the IndexedScope objects above.
   */
  readonly tokens: TokenTable<IndexedScope>;
}

export type { TopicNode };

/** A snapshot token's expiry in ms since the epoch; Infinity when it has none. */
export function expiryOf(t: SnapshotToken): number {
  return t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
}

/**
 * Adds a snapshot scope's tokens to a table as records owned by `entry`; returns how many records are new.
 * A hash listed twice in one scope (never in a compiled snapshot; possible in a hand-made line) is one
 * record with the expiry listed last, as the per-scope Map<hex, expiry> of earlier versions had it.
 */
export function addScopeTokens(table: TokenTableBuilder<IndexedScope>, entry: IndexedScope, s: SnapshotScope): number {
  let added = 0;
  for (const t of s.tokens) if (table.add(t.hash, entry, expiryOf(t), 'sha256:'.length)) added++;
  return added;
}

/** Builds an index scope by scope, so a large snapshot can be loaded in slices between requests. */
export class AccessIndexBuilder {
  private readonly topics = new Map<string, TopicNode>();
  private readonly datasets = new Map<string, IndexedScope>();
  private readonly paths = new Map<string, IndexedScope>();
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
    if (!s.tokens.every((t) => t.hash.startsWith('sha256:') && isDigestHex(t.hash, 'sha256:'.length))) return err(`${scopeKey(s)}: bad token hash`);
    return this.addChecked(s);
  }

  private addChecked(s: SnapshotScope): Result<true> {
    const scope: Scope = { kind: s.kind, value: s.value };
    const key = scopeKey(scope);
    if (this.seen.has(key)) return err(`${key} appears twice`);
    this.seen.add(key);
    const levels = scopeLevels(scope);
    const entry: IndexedScope = { scope, key, depth: levels.length };
    this.tokenCount += addScopeTokens(this.tokens, entry, s);
    if (s.kind === 'dataset') this.datasets.set(s.value, entry);
    else if (s.kind === 'path') this.paths.set(s.value, entry);
    else {
      let children = this.topics;
      let node: TopicNode | undefined;
      for (const level of levels) {
        node = children.get(level);
        if (!node) {
          node = { children: new Map() };
          children.set(level, node);
        }
        children = node.children;
      }
      node!.scope = entry;
    }
    return ok(true);
  }

  build(generation: string): AccessIndex {
    return {
      generation,
      scopeCount: this.seen.size,
      tokenCount: this.tokenCount,
      topics: this.topics,
      datasets: this.datasets,
      paths: this.paths,
      tokens: this.tokens.build(),
    };
  }
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
