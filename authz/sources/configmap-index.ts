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
    const changes = changesBetween(prev.shards, shards);
    if (!worthApplying(prev.index, changes)) return undefined;
    const p = prev.index;
    const edited = await applyScopes(p, changes, tick);
    const { tokens, imported } = await nextTokenTable(p, changes, edited.fresh, tick);
    const index: AccessIndex = {
      generation, scopeCount: edited.scopeCount, tokenCount: tokens.size + imported,
      topics: edited.topics.root, datasets: edited.datasets, paths: edited.paths, ...(p.prefixes ? { prefixes: p.prefixes } : {}), tokens,
    };
    return { index, shards };
  }
}

/** The scopes a new shard list removes (by key) and adds, relative to the previous one. */
interface Changes {
  readonly removed: ReadonlyMap<string, Scope>;
  readonly added: readonly SnapshotScope[];
}

function changesBetween(previous: readonly IndexedShard[], shards: readonly IndexedShard[]): Changes {
  const before = new Set(previous.map((s) => s.digest));
  const after = new Set(shards.map((s) => s.digest));
  const gone = previous.filter((s) => !after.has(s.digest));
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
  return { removed, added };
}

/** Whether the changes are applied by difference; anything large, unusual or suspect is left to the full build. */
function worthApplying(p: AccessIndex, { removed, added }: Changes): boolean {
  // More than a third of the index changed: a full build is as cheap, and simpler.
  if (removed.size + added.length > p.scopeCount / 3 + 50) return false;
  // Prefix paths (`wis2downloader`) live in a trie of their own too; they are few and change rarely.
  if ([...removed.values(), ...added].some((s) => s.kind === 'path' && isPrefixPath(s.value))) return false;
  // A duplicate key means something is off: leave it to the full build and its error. Scopes that differ only
  // in case share one entry (AccessIndexBuilder merges them): any change that touches such a key too.
  const addedKeys = new Set<string>();
  const addedFolded = new Set<string>();
  for (const s of added) {
    const key = scopeKey(s);
    const folded = foldCase(key);
    if (addedKeys.has(key) || addedFolded.has(folded)) return false;
    addedKeys.add(key);
    addedFolded.add(folded);
    const held = entryOf(p, s);
    if (held && (!removed.has(held.key) || held.merged)) return false;
  }
  for (const [key, scope] of removed) {
    const held = entryOf(p, scope);
    if (!held || held.key !== key || held.merged) return false;
  }
  return true;
}

/** The topic trie of the next index: copy-on-write along each edited path, the previous trie untouched. */
class CopyOnWriteTopics {
  readonly root: Map<string, TopicNode>;
  private readonly cloned = new Set<TopicNode>();

  constructor(previous: ReadonlyMap<string, TopicNode>) {
    this.root = new Map(previous);
  }

  /** Sets (or, with undefined, removes) the scope at `levels`, pruning nodes left empty as a fresh build would. */
  set(levels: readonly string[], entry: IndexedScope | undefined): void {
    const path: [Map<string, TopicNode>, string, TopicNode][] = [];
    let children = this.root;
    for (const level of levels) {
      const node = this.writableChild(children, level, entry !== undefined);
      if (!node) return;
      path.push([children, foldCase(level), node]);
      children = node.children;
    }
    const last = path.at(-1)![2] as { scope?: IndexedScope };
    if (entry) last.scope = entry;
    else delete last.scope;
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, level, node] = path[i]!;
      if (node.scope || node.children.size > 0) break;
      parent.delete(level);
    }
  }

  private writableChild(parent: Map<string, TopicNode>, raw: string, create: boolean): TopicNode | undefined {
    const level = foldCase(raw);
    const node = parent.get(level);
    if (node && this.cloned.has(node)) return node;
    if (!node && !create) return undefined;
    const copy: TopicNode = node ? { ...(node.scope ? { scope: node.scope } : {}), children: new Map(node.children) } : { children: new Map() };
    this.cloned.add(copy);
    parent.set(level, copy);
    return copy;
  }
}

/** The next index's lookup structures, with the removed scopes out and the added ones (`fresh`) in. */
interface EditedScopes {
  readonly datasets: Map<string, IndexedScope>;
  readonly paths: Map<string, IndexedScope>;
  readonly topics: CopyOnWriteTopics;
  readonly scopeCount: number;
  readonly fresh: readonly [IndexedScope, SnapshotScope][];
}

async function applyScopes(p: AccessIndex, { removed, added }: Changes, tick: Yield): Promise<EditedScopes> {
  const datasets = new Map(p.datasets);
  const paths = new Map(p.paths);
  const topics = new CopyOnWriteTopics(p.topics);
  let scopeCount = p.scopeCount;
  let n = 0;
  for (const scope of removed.values()) {
    scopeCount--;
    if (scope.kind === 'dataset') datasets.delete(foldCase(scope.value));
    else if (scope.kind === 'path') paths.delete(foldCase(scope.value));
    else topics.set(scopeLevels(scope), undefined);
    if ((++n & 63) === 0) await tick();
  }
  const fresh: [IndexedScope, SnapshotScope][] = [];
  for (const s of added) {
    const entry = indexedScopeOf(s);
    fresh.push([entry, s]);
    scopeCount++;
    if (s.kind === 'dataset') datasets.set(foldCase(s.value), entry);
    else if (s.kind === 'path') paths.set(foldCase(s.value), entry);
    else topics.set(scopeLevels(entry.scope), entry);
    if ((++n & 63) === 0) await tick();
  }
  return { datasets, paths, topics, scopeCount, fresh };
}

/**
 * The next token table: the previous one's records minus the removed scopes' (copied as bytes, in slices),
 * plus the added scopes' tokens. Unchanged scopes are the same IndexedScope objects in both indexes; the new
 * table holds its owners in its own array, so the previous table is never touched. `imported`: the PBKDF2
 * records, counted in tokenCount but kept on their entries rather than in the table.
 */
async function nextTokenTable(p: AccessIndex, { removed }: Changes, fresh: readonly [IndexedScope, SnapshotScope][], tick: Yield): Promise<{ tokens: AccessIndex['tokens']; imported: number }> {
  const dropped = new Set<IndexedScope>();
  for (const scope of removed.values()) dropped.add(entryOf(p, scope)!);
  const keep = (owner: IndexedScope) => !dropped.has(owner);
  let freshTokens = 0;
  for (const [, s] of fresh) freshTokens += s.tokens.length;
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
  // As a full build would count them: the previous count, less the dropped entries' and plus the fresh ones'.
  let imported = p.tokenCount - p.tokens.size;
  for (const owner of dropped) imported -= owner.imported?.length ?? 0;
  for (const [entry] of fresh) imported += entry.imported?.length ?? 0;
  return { tokens: table.build(), imported };
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
