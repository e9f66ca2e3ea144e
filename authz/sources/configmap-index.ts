/**
 * The decision index of the ConfigMap source, updated by difference. Building a 100,000-token index from scratch
 * with core's AccessIndexBuilder costs far more than a change to one scope, which touches one shard: the next
 * index is the previous one with that shard's scopes replaced. Nothing is edited in place: the new index shares
 * the unchanged parts (IndexedScope objects, untouched trie nodes) and copies every map it changes, so the index
 * in service is never seen half-updated and the swap stays one assignment. The token table (which has no
 * deletion) is the exception: every new index gets a new one, made of the previous table's records minus the
 * removed scopes' (copied as bytes, no parsing) plus the added scopes' tokens, in slices. The result is
 * structurally what AccessIndexBuilder would build from the same lines (a property test holds the two equal).
 *
 * Of each shard it keeps what the next difference needs and nothing more: the reader's lines (the same strings,
 * not a copy), to tell a line that moved between shards from one that changed, and the index entry each line
 * made, to take a removed line out. A shard's parsed scopes are only read while they are added (the reader
 * parses each new shard once and keeps none). Scopes that differ only in case share one entry and are rebuilt
 * whole, as is anything unexpected (a scope twice); a full build parses the lines of the shards whose scopes
 * were not handed over.
 */
import {
  AccessIndexBuilder,
  addScopeTokens,
  entryOf,
  foldCase,
  isPrefixPath,
  indexedScopeOf,
  parseScopeLine,
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

/** A shard of the generation to index, in index order: its lines, and its scopes when it is new to the index. */
export interface IndexedShard {
  readonly digest: string;
  readonly lines: readonly string[];
  /** Parsed once by the reader when the shard arrived; absent for shards the index has held before. */
  readonly scopes?: readonly SnapshotScope[];
}

/** A shard of the index in service: its lines, and the entry each line made (a case variant's is the shared one). */
interface HeldShard {
  readonly digest: string;
  readonly lines: readonly string[];
  readonly entries: readonly IndexedScope[];
}

interface State {
  readonly index: AccessIndex;
  readonly shards: readonly HeldShard[];
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
      const r = await byDifference(prev, generation, shards, tick);
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
}

/** The next state from `prev` by difference, or undefined when the difference cannot be applied (a full build then). */
async function byDifference(prev: State, generation: string, shards: readonly IndexedShard[], tick: Yield): Promise<State | undefined> {
  const changes = changesBetween(prev.shards, shards);
  if (!changes || !applicable(prev.index, changes, shards)) return undefined;
  const p = prev.index;
  const edited = await applyScopes(p, changes, tick);
  const { tokens, imported } = await nextTokenTable(p, changes, edited.fresh, tick);
  const index: AccessIndex = {
    generation, scopeCount: edited.scopeCount, tokenCount: tokens.size + imported,
    topics: edited.topics.root, datasets: edited.datasets, paths: edited.paths,
    ...(edited.prefixes.root.size > 0 ? { prefixes: edited.prefixes.root } : {}), tokens,
  };
  return { index, shards: heldShards(prev.shards, shards, changes, edited.fresh) };
}

/** The lines a new shard list removes (by the entry they made) and adds (with their scopes), relative to the previous one. */
interface Changes {
  readonly removed: ReadonlySet<IndexedScope>;
  readonly added: readonly (readonly [line: string, scope: SnapshotScope])[];
  /** Lines that only moved between shards (boundaries shifted), with the entry they keep. */
  readonly moved: ReadonlyMap<string, IndexedScope>;
}

/** The changes, or undefined when a new shard came without its scopes (then only a full build has them all). */
function changesBetween(previous: readonly HeldShard[], shards: readonly IndexedShard[]): Changes | undefined {
  const before = new Set(previous.map((s) => s.digest));
  const after = new Set(shards.map((s) => s.digest));
  const come = shards.filter((s) => !before.has(s.digest));
  if (come.some((s) => s.scopes === undefined)) return undefined;
  const comeLines = new Set<string>();
  for (const s of come) for (const l of s.lines) comeLines.add(l);
  const removed = new Set<IndexedScope>();
  const moved = new Map<string, IndexedScope>();
  for (const s of previous) {
    if (after.has(s.digest)) continue;
    s.lines.forEach((l, i) => (comeLines.has(l) ? moved.set(l, s.entries[i]!) : removed.add(s.entries[i]!)));
  }
  const added: [string, SnapshotScope][] = [];
  for (const s of come) s.lines.forEach((l, i) => !moved.has(l) && added.push([l, s.scopes![i]!]));
  return { removed, added, moved };
}

/** Whether the changes can be applied by difference; anything unusual or suspect is left to the full build. */
function applicable(p: AccessIndex, { removed, added }: Changes, shards: readonly IndexedShard[]): boolean {
  // Every line of the new snapshot is one scope of the next index (a line twice would not be).
  const lines = shards.reduce((n, s) => n + s.lines.length, 0);
  if (p.scopeCount - removed.size + added.length !== lines) return false;
  // Scopes that differ only in case share one entry (AccessIndexBuilder merges them): any change that touches
  // such an entry is left to the full build, as is a duplicate key and its error.
  for (const entry of removed) if (entry.merged) return false;
  const addedKeys = new Set<string>();
  const addedFolded = new Set<string>();
  for (const [, s] of added) {
    const key = scopeKey(s);
    const folded = foldCase(key);
    if (addedKeys.has(key) || addedFolded.has(folded)) return false;
    addedKeys.add(key);
    addedFolded.add(folded);
    const held = entryOf(p, s);
    if (held && (!removed.has(held) || held.merged)) return false;
  }
  return true;
}

/** The shards of the next state: unchanged ones as they were; new ones with the entries their lines kept or made. */
function heldShards(previous: readonly HeldShard[], shards: readonly IndexedShard[], { moved }: Changes, fresh: readonly FreshScope[]): HeldShard[] {
  const held = new Map(previous.map((s) => [s.digest, s]));
  const made = new Map(fresh.map(({ line, entry }) => [line, entry]));
  return shards.map((s) => held.get(s.digest) ?? { digest: s.digest, lines: s.lines, entries: s.lines.map((l) => moved.get(l) ?? made.get(l)!) });
}

/** A trie of the next index (topics, prefix paths): copy-on-write along each edited path, the previous trie untouched. */
class CopyOnWriteTrie {
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

/** An added line's new entry, with the scope it was made of. */
interface FreshScope {
  readonly line: string;
  readonly entry: IndexedScope;
  readonly scope: SnapshotScope;
}

/** The next index's lookup structures, with the removed scopes out and the added ones (`fresh`) in. */
interface EditedScopes {
  readonly datasets: Map<string, IndexedScope>;
  readonly paths: Map<string, IndexedScope>;
  readonly topics: CopyOnWriteTrie;
  readonly prefixes: CopyOnWriteTrie;
  readonly scopeCount: number;
  readonly fresh: readonly FreshScope[];
}

async function applyScopes(p: AccessIndex, { removed, added }: Changes, tick: Yield): Promise<EditedScopes> {
  const edited = {
    datasets: new Map(p.datasets), paths: new Map(p.paths), topics: new CopyOnWriteTrie(p.topics), prefixes: new CopyOnWriteTrie(p.prefixes ?? new Map()),
  };
  let n = 0;
  for (const { scope } of removed) {
    place(edited, scope, undefined);
    if ((++n & 63) === 0) await tick();
  }
  const fresh: FreshScope[] = [];
  for (const [line, scope] of added) {
    const entry = indexedScopeOf(scope);
    fresh.push({ line, entry, scope });
    place(edited, entry.scope, entry);
    if ((++n & 63) === 0) await tick();
  }
  return { ...edited, scopeCount: p.scopeCount - removed.size + added.length, fresh };
}

/** Puts an entry where AccessIndexBuilder puts it (undefined: takes it out), under its case-folded key. */
function place(edited: Omit<EditedScopes, 'scopeCount' | 'fresh'>, scope: Scope, entry: IndexedScope | undefined): void {
  if (scope.kind === 'topic') return edited.topics.set(scopeLevels(scope), entry);
  const map = scope.kind === 'dataset' ? edited.datasets : edited.paths;
  if (entry) map.set(foldCase(scope.value), entry);
  else map.delete(foldCase(scope.value));
  if (scope.kind === 'path' && isPrefixPath(scope.value)) edited.prefixes.set(scopeLevels(scope), entry);
}

/**
 * The next token table: the previous one's records minus the removed scopes' (copied as bytes, in slices),
 * plus the added scopes' tokens. Unchanged scopes are the same IndexedScope objects in both indexes; the new
 * table holds its owners in its own array, so the previous table is never touched. `imported`: the PBKDF2
 * records, counted in tokenCount but kept on their entries rather than in the table.
 */
async function nextTokenTable(p: AccessIndex, { removed }: Changes, fresh: readonly FreshScope[], tick: Yield): Promise<{ tokens: AccessIndex['tokens']; imported: number }> {
  const keep = (owner: IndexedScope) => !removed.has(owner);
  let freshTokens = 0;
  for (const { scope } of fresh) freshTokens += scope.tokens.length;
  const table = new TokenTableBuilder<IndexedScope>(p.tokens.size + freshTokens);
  for (let r = 0; r < p.tokens.size; r += TOKENS_PER_TICK) {
    p.tokens.copyInto(table, keep, r, r + TOKENS_PER_TICK);
    await tick();
  }
  let sinceTick = 0;
  for (const { entry, scope } of fresh) {
    addScopeTokens(table, entry, scope);
    sinceTick += scope.tokens.length;
    if (sinceTick >= TOKENS_PER_TICK) {
      sinceTick = 0;
      await tick();
    }
  }
  // As a full build would count them: the previous count, less the removed entries' and plus the fresh ones'.
  let imported = p.tokenCount - p.tokens.size;
  for (const owner of removed) imported -= owner.imported?.length ?? 0;
  for (const { entry } of fresh) imported += entry.imported?.length ?? 0;
  return { tokens: table.build(), imported };
}

/** The index built whole from every shard's scopes, and the entry each line made. */
async function fullBuild(generation: string, shards: readonly IndexedShard[], tick: Yield): Promise<Result<State>> {
  const scopes = await scopesOf(shards, tick);
  if (!scopes.ok) return scopes;
  let tokens = 0;
  for (const list of scopes.value) for (const scope of list) tokens += scope.tokens.length;
  const builder = new AccessIndexBuilder(tokens);
  let n = 0;
  for (const list of scopes.value) {
    for (const scope of list) {
      const r = builder.add(scope);
      if (!r.ok) return { ok: false, error: `scope ${n + 1}: ${r.error}` };
      if ((++n & 15) === 0) await tick();
    }
  }
  const index = builder.build(generation);
  const held: HeldShard[] = [];
  for (const [i, shard] of shards.entries()) {
    held.push({ digest: shard.digest, lines: shard.lines, entries: scopes.value[i]!.map((scope) => entryOf(index, scope)!) });
    await tick();
  }
  return { ok: true, value: { index, shards: held } };
}

/**
 * Each shard's scopes: as the reader handed them over, or parsed from its lines for a shard the index held before
 * (a full build after a change to scopes that differ only in case, or to a scope twice).
 */
async function scopesOf(shards: readonly IndexedShard[], tick: Yield): Promise<Result<(readonly SnapshotScope[])[]>> {
  const all: (readonly SnapshotScope[])[] = [];
  let n = 0;
  for (const shard of shards) {
    if (shard.scopes) {
      all.push(shard.scopes);
      n += shard.lines.length;
      continue;
    }
    const parsed: SnapshotScope[] = [];
    for (const line of shard.lines) {
      const r = parseScopeLine(line);
      if (!r.ok) return { ok: false, error: `scope line ${n + 1}: ${r.error}` };
      parsed.push(r.value);
      if ((++n & 15) === 0) await tick();
    }
    all.push(parsed);
  }
  return { ok: true, value: all };
}
