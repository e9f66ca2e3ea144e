/**
 * The decision index of the ConfigMap source, updated by difference. Parsing and indexing a 100,000-token
 * snapshot from scratch with core's AccessIndexBuilder costs far more than a change to one scope, which
 * touches one shard: the next index is the previous one with that shard's scopes replaced. Nothing is edited
 * in place: the new index shares the unchanged parts (IndexedScope objects, untouched trie nodes) and copies
 * every map it changes, so the index in service is never seen half-updated and the swap stays one
 * assignment. The token table (which has no deletion) is the exception: every new index gets a new one,
 * made of the previous table's records minus the removed scopes' (copied as bytes, no parsing) plus the
 * added scopes' tokens, in slices. The result is structurally what AccessIndexBuilder would build from
 * the same lines (a property test holds the two equal); anything unexpected (a duplicate scope) falls back
 * to a full build.
 */
import {
  AccessIndexBuilder,
  addScopeTokens,
  entryOf,
  foldCase,
  isPrefixPath,
  indexedScopeOf,
  scopeKey,
  scopeLevels,
  TokenTableBuilder,
  type AccessIndex,
  type IndexedScope,
  type Result,
  type Scope,
  type SnapshotScope,
  type TopicNode,
} from '../../core/index.js';

export interface IndexedShard {
  readonly digest: string;
  readonly lines: readonly string[];
  readonly scopes: readonly SnapshotScope[];
}

interface State {
  readonly index: AccessIndex;
  readonly shards: readonly IndexedShard[];
}

export type Yield = () => Promise<void>;

const noYield: Yield = async () => undefined;

/** Tokens added to a table between two ticks. */
const TOKENS_PER_TICK = 4096;

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
          if (this.state !== prev) return; // superseded: a difference from another base never becomes the base
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
    // Prefix paths (`wis2downloader`) live in a trie of their own too; they are few and change rarely.
    if ([...removed.values(), ...added].some((s) => s.kind === 'path' && isPrefixPath(s.value))) return undefined;

    const p = prev.index;
    const datasets = new Map(p.datasets);
    const paths = new Map(p.paths);
    const topics = new Map(p.topics);
    const cloned = new Set<TopicNode>();
    let scopeCount = p.scopeCount;

    // Checks first (a duplicate key means something is off: leave it to the full build and its error).
    const addedKeys = new Set<string>();
    // Scopes that differ only in case share one entry (AccessIndexBuilder merges them): any change that
    // touches such a key is left to the full build too.
    const addedFolded = new Set<string>();
    for (const s of added) {
      const key = scopeKey(s);
      const folded = foldCase(key);
      if (addedKeys.has(key) || addedFolded.has(folded)) return undefined;
      addedKeys.add(key);
      addedFolded.add(folded);
      const held = entryOf(p, s);
      if (held && (!removed.has(held.key) || held.merged)) return undefined;
    }
    for (const [key, scope] of removed) {
      const held = entryOf(p, scope);
      if (!held || held.key !== key || held.merged) return undefined;
    }

    // Trie edits, copy-on-write along the path.
    const writableChild = (parent: Map<string, TopicNode>, raw: string, create: boolean): TopicNode | undefined => {
      const level = foldCase(raw);
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
        path.push([children, foldCase(level), node]);
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

    let n = 0;
    for (const scope of removed.values()) {
      scopeCount--;
      if (scope.kind === 'dataset') datasets.delete(foldCase(scope.value));
      else if (scope.kind === 'path') paths.delete(foldCase(scope.value));
      else setTopic(scopeLevels(scope), undefined);
      if ((++n & 63) === 0) await tick();
    }
    const fresh: [IndexedScope, SnapshotScope][] = [];
    let freshTokens = 0;
    for (const s of added) {
      const entry = indexedScopeOf(s);
      const levels = scopeLevels(entry.scope);
      fresh.push([entry, s]);
      freshTokens += s.tokens.length;
      scopeCount++;
      if (s.kind === 'dataset') datasets.set(foldCase(s.value), entry);
      else if (s.kind === 'path') paths.set(foldCase(s.value), entry);
      else setTopic(levels, entry);
      if ((++n & 63) === 0) await tick();
    }

    // The next token table: the previous one's records minus the removed scopes' (copied as bytes, in
    // slices), plus the added scopes' tokens. Unchanged scopes are the same IndexedScope objects in both
    // indexes; the new table holds its owners in its own array, so the previous table is never touched.
    const dropped = new Set<IndexedScope>();
    for (const scope of removed.values()) dropped.add(entryOf(p, scope)!);
    const keep = (owner: IndexedScope) => !dropped.has(owner);
    const table = new TokenTableBuilder<IndexedScope>(p.tokens.size + freshTokens);
    for (let r = 0; r < p.tokens.size; r += TOKENS_PER_TICK) {
      p.tokens.copyInto(table, keep, r, r + TOKENS_PER_TICK);
      await tick();
    }
    let sinceTick = 0;
    for (const [entry, s] of fresh) {
      addScopeTokens(table, entry, s);
      sinceTick += s.tokens.length;
      if (sinceTick >= TOKENS_PER_TICK) {
        sinceTick = 0;
        await tick();
      }
    }
    const tokens = table.build();
    // Imported (PBKDF2) records are counted in tokenCount but live on their entries, not in the table: carry the
    // previous count over, less the dropped entries' and plus the fresh ones', as a full build would count them.
    let imported = p.tokenCount - p.tokens.size;
    for (const owner of dropped) imported -= owner.imported?.length ?? 0;
    for (const [entry] of fresh) imported += entry.imported?.length ?? 0;
    const index: AccessIndex = { generation, scopeCount, tokenCount: tokens.size + imported, topics, datasets, paths, ...(p.prefixes ? { prefixes: p.prefixes } : {}), tokens };
    return { index, shards };
  }
}

async function fullBuild(generation: string, shards: readonly IndexedShard[], tick: Yield): Promise<Result<State>> {
  let tokens = 0;
  for (const shard of shards) for (const scope of shard.scopes) tokens += scope.tokens.length;
  const builder = new AccessIndexBuilder(tokens);
  let n = 0;
  for (const shard of shards) {
    for (const scope of shard.scopes) {
      const r = builder.add(scope);
      if (!r.ok) return { ok: false, error: `scope ${n + 1}: ${r.error}` };
      if ((++n & 15) === 0) await tick();
    }
  }
  return { ok: true, value: { index: builder.build(generation), shards } };
}
