import { scopeKey, scopeLevels, type Scope } from './scope.js';
import { parseScopeLine, type SnapshotScope } from './snapshot.js';
import { err, ok, type Result } from './result.js';

/** A closed scope as the decision sees it: token hash hex → expiry in ms (Infinity when none). */
export interface IndexedScope {
  readonly scope: Scope;
  readonly key: string;
  readonly depth: number;
  readonly tokens: ReadonlyMap<string, number>;
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
  /** Every token hash → its latest expiry over all scopes; tells "another scope's token" from "unknown". */
  readonly allTokens: ReadonlyMap<string, number>;
}

export type { TopicNode };

/** Builds an index scope by scope, so a large snapshot can be loaded in slices between requests. */
export class AccessIndexBuilder {
  private readonly topics = new Map<string, TopicNode>();
  private readonly datasets = new Map<string, IndexedScope>();
  private readonly paths = new Map<string, IndexedScope>();
  private readonly allTokens = new Map<string, number>();
  private readonly seen = new Set<string>();
  private tokenCount = 0;

  addLine(line: string): Result<true> {
    const parsed = parseScopeLine(line);
    return parsed.ok ? this.add(parsed.value) : parsed;
  }

  add(s: SnapshotScope): Result<true> {
    const scope: Scope = { kind: s.kind, value: s.value };
    const key = scopeKey(scope);
    if (this.seen.has(key)) return err(`${key} appears twice`);
    this.seen.add(key);
    const tokens = new Map<string, number>();
    for (const t of s.tokens) {
      const hex = t.hash.slice(7);
      const at = t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
      tokens.set(hex, at);
      this.allTokens.set(hex, Math.max(this.allTokens.get(hex) ?? -Infinity, at));
    }
    this.tokenCount += tokens.size;
    const levels = scopeLevels(scope);
    const entry: IndexedScope = { scope, key, depth: levels.length, tokens };
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
      allTokens: this.allTokens,
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
