import { AccessIndexBuilder, scopeKey, scopeLevels, type AccessIndex, type IndexedScope, type Result, type Scope, type SnapshotScope, type TopicNode } from '../../core/index.js';

/**
 * The decision index of the ConfigMap source, updated by difference. A 100,000-token snapshot takes a few
 * hundred milliseconds to build from scratch with core's AccessIndexBuilder; a change to one scope touches
 * one shard, so the next index is the previous one with that shard's scopes replaced. Nothing is edited in
 * place: the new index shares the unchanged parts (IndexedScope objects, untouched trie nodes) and copies
 * every map it changes, so the index in service is never seen half-updated and the swap stays one
 * assignment. The result is structurally what AccessIndexBuilder would build from the same lines (a property
 * test holds the two equal); anything unexpected (a duplicate scope) falls back to a full build.
 */
export interface IndexedShard {
  readonly digest: string;
  readonly lines: readonly string[];
  readonly scopes: readonly SnapshotScope[];
}

interface State {
  readonly index: AccessIndex;
  readonly shards: readonly IndexedShard[];
  /** Token hash hex → scope key → expiry (ms, Infinity when none): to recompute allTokens after a removal. */
  readonly holders: Map<string, Map<string, number>>;
  /** Brings `holders` up to this state (an update by difference changes them only when committed). */
  readonly apply?: () => void;
}

export type Yield = () => Promise<void>;

const noYield: Yield = async () => undefined;

function expiryOf(t: { expiresAt?: string }): number {
  return t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
}

export class IncrementalIndex {
  private state: State | undefined;

  get current(): AccessIndex | undefined {
    return this.state?.index;
  }

  /**
   * The index for `shards` (in index order). `tick` is awaited now and then so a long build yields to
   * requests. The returned index is only remembered as the base for the next update once `commit()` is called
   * with it (the caller commits after a successful swap).
   */
  async update(generation: string, shards: readonly IndexedShard[], tick: Yield = noYield): Promise<Result<{ index: AccessIndex; incremental: boolean; commit: () => void }>> {
    const prev = this.state;
    if (prev) {
      const r = await this.byDifference(prev, generation, shards, tick);
      if (r) {
        const commit = () => {
          if (this.state !== prev) return; // superseded: never apply a difference to another base
          r.apply?.();
          this.state = r;
        };
        return { ok: true, value: { index: r.index, incremental: true, commit } };
      }
    }
    const full = await fullBuild(generation, shards, tick);
    if (!full.ok) return full;
    return { ok: true, value: { index: full.value.index, incremental: false, commit: () => (this.state = full.value) } };
  }

  private async byDifference(prev: State, generation: string, shards: readonly IndexedShard[], tick: Yield): Promise<State | undefined> {
    const before = new Set(prev.shards.map((s) => s.digest));
    const after = new Set(shards.map((s) => s.digest));
    const gone = prev.shards.filter((s) => !after.has(s.digest));
    const come = shards.filter((s) => !before.has(s.digest));
    // Lines that only moved between shards (boundaries shifted) are not changes.
    const goneLines = new Set<string>();
    for (const s of gone) for (const l of s.lines) goneLines.add(l);
    const comeLines = new Set<string>();
    for (const s of come) for (const l of s.lines) comeLines.add(l);
    const removed = new Map<string, Scope>();
    for (const s of gone) s.lines.forEach((l, i) => !comeLines.has(l) && removed.set(scopeKey(s.scopes[i]!), s.scopes[i]!));
    const added: SnapshotScope[] = [];
    for (const s of come) s.lines.forEach((l, i) => !goneLines.has(l) && added.push(s.scopes[i]!));
    // More than a third of the index changed: a full build is as cheap, and simpler.
    if (removed.size + added.length > prev.index.scopeCount / 3 + 50) return undefined;

    const p = prev.index;
    const datasets = new Map(p.datasets);
    const paths = new Map(p.paths);
    const topics = new Map(p.topics);
    const cloned = new Set<TopicNode>();
    // Holders change only at commit: until then, a pending copy of each affected hash's entry.
    const pending = new Map<string, Map<string, number>>();
    const holdersOf = (hex: string): Map<string, number> => {
      let h = pending.get(hex);
      if (!h) pending.set(hex, (h = new Map(prev.holders.get(hex) ?? [])));
      return h;
    };
    let tokenCount = p.tokenCount;
    let scopeCount = p.scopeCount;

    const find = (scope: Scope): IndexedScope | undefined => {
      if (scope.kind === 'dataset') return p.datasets.get(scope.value);
      if (scope.kind === 'path') return p.paths.get(scope.value);
      let children: ReadonlyMap<string, TopicNode> = p.topics;
      let node: TopicNode | undefined;
      for (const level of scopeLevels(scope)) {
        node = children.get(level);
        if (!node) return undefined;
        children = node.children;
      }
      return node?.scope;
    };

    // Checks first (a duplicate key means something is off: leave it to the full build and its error).
    const addedKeys = new Set<string>();
    for (const s of added) {
      const key = scopeKey(s);
      if (addedKeys.has(key)) return undefined;
      addedKeys.add(key);
      if (find(s) && !removed.has(key)) return undefined;
    }
    for (const [, scope] of removed) if (!find(scope)) return undefined;

    // Trie edits, copy-on-write along the path.
    const writableChild = (parent: Map<string, TopicNode>, level: string, create: boolean): TopicNode | undefined => {
      const node = parent.get(level);
      if (node && cloned.has(node)) return node;
      if (!node && !create) return undefined;
      const copy: TopicNode = node ? { ...(node.scope ? { scope: node.scope } : {}), children: new Map(node.children) } : { children: new Map() };
      cloned.add(copy);
      parent.set(level, copy);
      return copy;
    };
    const setTopic = (levels: readonly string[], entry: IndexedScope | undefined) => {
      const path: [Map<string, TopicNode>, string, TopicNode][] = [];
      let children = topics;
      for (const level of levels) {
        const node = writableChild(children, level, entry !== undefined);
        if (!node) return;
        path.push([children, level, node]);
        children = node.children;
      }
      const last = path.at(-1)![2] as { scope?: IndexedScope };
      if (entry) last.scope = entry;
      else delete last.scope;
      // Prune nodes left with neither a scope nor children, as a fresh build would not have them.
      for (let i = path.length - 1; i >= 0; i--) {
        const [parent, level, node] = path[i]!;
        if (node.scope || node.children.size > 0) break;
        parent.delete(level);
      }
    };

    const affected = new Set<string>();
    let n = 0;
    for (const [key, scope] of removed) {
      const old = find(scope)!;
      scopeCount--;
      tokenCount -= old.tokens.size;
      for (const hex of old.tokens.keys()) {
        affected.add(hex);
        holdersOf(hex).delete(key);
      }
      if (scope.kind === 'dataset') datasets.delete(scope.value);
      else if (scope.kind === 'path') paths.delete(scope.value);
      else setTopic(scopeLevels(scope), undefined);
      if ((++n & 63) === 0) await tick();
    }
    for (const s of added) {
      const scope: Scope = { kind: s.kind, value: s.value };
      const key = scopeKey(scope);
      const tokens = new Map<string, number>();
      for (const t of s.tokens) tokens.set(t.hash.slice(7), expiryOf(t));
      const levels = scopeLevels(scope);
      const entry: IndexedScope = { scope, key, depth: levels.length, tokens };
      scopeCount++;
      tokenCount += tokens.size;
      for (const t of s.tokens) {
        const hex = t.hash.slice(7);
        affected.add(hex);
        const h = holdersOf(hex);
        h.set(key, Math.max(h.get(key) ?? -Infinity, expiryOf(t)));
      }
      if (s.kind === 'dataset') datasets.set(s.value, entry);
      else if (s.kind === 'path') paths.set(s.value, entry);
      else setTopic(levels, entry);
      if ((++n & 63) === 0) await tick();
    }
    const changes = new Map<string, number | undefined>();
    for (const hex of affected) {
      const h = pending.get(hex)!;
      let max = -Infinity;
      for (const at of h.values()) if (at > max) max = at;
      changes.set(hex, h.size === 0 ? undefined : max);
    }
    const allTokens = LayeredMap.over(p.allTokens, changes);
    const index: AccessIndex = { generation, scopeCount, tokenCount, topics, datasets, paths, allTokens };
    const holders = prev.holders;
    return {
      index,
      shards,
      holders,
      apply: () => {
        for (const [hex, h] of pending) {
          if (h.size === 0) holders.delete(hex);
          else holders.set(hex, h);
        }
      },
    };
  }
}

/**
 * An immutable map made of a base map and a layer of changes (undefined: deleted), so an index that changed
 * a few token hashes shares the other 100,000 with its predecessor instead of copying them. Layers are
 * flattened into a plain Map once they get deep or large, which keeps lookups at a few Map probes.
 */
export class LayeredMap implements ReadonlyMap<string, number> {
  readonly size: number;

  private constructor(
    private readonly base: ReadonlyMap<string, number>,
    private readonly layer: ReadonlyMap<string, number | undefined>,
    readonly depth: number,
  ) {
    let size = base.size;
    for (const [k, v] of layer) {
      const had = base.has(k);
      if (v === undefined && had) size--;
      else if (v !== undefined && !had) size++;
    }
    this.size = size;
  }

  static over(base: ReadonlyMap<string, number>, changes: ReadonlyMap<string, number | undefined>): ReadonlyMap<string, number> {
    const depth = base instanceof LayeredMap ? base.depth + 1 : 1;
    const layered = new LayeredMap(base, changes, depth);
    if (depth > 8 || (base instanceof LayeredMap && base.layerSize() + changes.size > 4096)) return new Map(layered);
    return layered;
  }

  private layerSize(): number {
    return this.layer.size + (this.base instanceof LayeredMap ? this.base.layerSize() : 0);
  }

  get(key: string): number | undefined {
    return this.layer.has(key) ? this.layer.get(key) : this.base.get(key);
  }

  has(key: string): boolean {
    return this.layer.has(key) ? this.layer.get(key) !== undefined : this.base.has(key);
  }

  *entries(): MapIterator<[string, number]> {
    for (const [k, v] of this.base) if (!this.layer.has(k)) yield [k, v];
    for (const [k, v] of this.layer) if (v !== undefined) yield [k, v];
  }

  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<number> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[string, number]> {
    return this.entries();
  }

  forEach(fn: (value: number, key: string, map: ReadonlyMap<string, number>) => void): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }
}

async function fullBuild(generation: string, shards: readonly IndexedShard[], tick: Yield): Promise<Result<State>> {
  const builder = new AccessIndexBuilder();
  const holders = new Map<string, Map<string, number>>();
  let n = 0;
  for (const shard of shards) {
    for (const scope of shard.scopes) {
      const r = builder.add(scope);
      if (!r.ok) return { ok: false, error: `scope ${n + 1}: ${r.error}` };
      const key = scopeKey(scope);
      for (const t of scope.tokens) {
        const hex = t.hash.slice(7);
        let h = holders.get(hex);
        if (!h) holders.set(hex, (h = new Map()));
        h.set(key, Math.max(h.get(key) ?? -Infinity, expiryOf(t)));
      }
      if ((++n & 15) === 0) await tick();
    }
  }
  return { ok: true, value: { index: builder.build(generation), shards, holders } };
}
