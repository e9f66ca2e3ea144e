/**
 * The decision index of a sharded snapshot (svc-auth's ConfigMap source), updated by difference. Building a
 * 100,000-token index from scratch with AccessIndexBuilder costs far more than a change to one scope, which touches
 * one shard: the next index is the previous one with that shard's changed lines replaced. Nothing is edited in
 * place: the new index shares the unchanged parts (IndexedScope objects, untouched trie nodes) and copies every map
 * it changes, so the index in service is never seen half-updated and the swap stays one assignment. The token table
 * (which has no deletion) is the exception: every new index gets a new one, made of the previous table's records
 * minus the removed scopes' (copied as bytes) plus the added scopes' tokens, in slices. The result is structurally
 * what AccessIndexBuilder would build from the same lines (a property test holds the two equal).
 *
 * It takes verified lines (k8s/snapshot/reader.ts verifies them) and parses each line once, when it adds it: a line
 * that only moved between shards (their boundaries shifted) is no change and is not parsed again, and no parsed
 * scope is kept once added. Of each shard it keeps the lines (the reader's strings, not a copy), to tell a line that
 * moved from one that changed, and the entry each line made, to take a removed line out. Scopes that differ only
 * in case share one entry: a change that touches one is built whole, as is anything unexpected (a scope twice).
 */
import { AccessIndexBuilder, addScopeTokens, entryOf, indexedScopeOf, type AccessIndex, type IndexedScope, type TopicNode } from './access-index.js';
import { err, ok, type Result } from './result.js';
import { foldCase, isPrefixPath, scopeKey, scopeLevels, type Scope } from './scope.js';
import { parseScopeLine, type SnapshotScope } from './snapshot/lines.js';
import { TokenTableBuilder } from './token-table.js';

/** A verified shard of the generation to index: its digest and its scope lines, in index order. */
export interface ShardLines {
  readonly digest: string;
  readonly lines: readonly string[];
}

/** A shard of the index in service: its lines, and the entry each line made (a case variant's is the shared one). */
interface HeldShard extends ShardLines {
  readonly entries: readonly IndexedScope[];
}

interface State {
  readonly index: AccessIndex;
  readonly shards: readonly HeldShard[];
}

/** Awaited now and then, so a long build yields to requests. */
type Tick = () => Promise<void>;

const noTick: Tick = async () => undefined;

/** Tokens added to a table between two ticks. */
const TOKENS_PER_TICK = 4096;

interface IndexUpdate {
  readonly index: AccessIndex;
  /** Derived from the previous index (false: built whole). */
  readonly incremental: boolean;
  readonly parsedLines: number;
  commit(): void;
}

export class IncrementalIndex {
  private state: State | undefined;

  get current(): AccessIndex | undefined {
    return this.state?.index;
  }

  /**
   * The index for `shards` (in index order), or the first line that is no scope line (`scope line N: ...`, N in the
   * whole snapshot) or a scope twice. `expectedTokens` (the snapshot index's count, unverified) sizes a full build's
   * token table. The returned index is only remembered as the base for the next update once `commit()` is called
   * with it (the caller commits after a successful swap). `parsedLines`: how many lines this update parsed.
   */
  async update(generation: string, shards: readonly ShardLines[], tick: Tick = noTick, expectedTokens = 0): Promise<Result<IndexUpdate>> {
    const prev = this.state;
    let parsed: ReadonlyMap<string, SnapshotScope> = new Map();
    if (prev) {
      const changes = await changesBetween(prev.shards, shards, tick);
      if (!changes.ok) return changes;
      if (applicable(prev.index, changes.value, shards)) {
        const next = await byDifference(prev, generation, shards, changes.value, tick);
        const commit = () => {
          if (this.state !== prev) return; // superseded: a difference from another base never becomes the base
          this.state = next;
        };
        return ok({ index: next.index, incremental: true, parsedLines: changes.value.added.length, commit });
      }
      parsed = new Map(changes.value.added);
    }
    const full = await fullBuild(generation, shards, tick, expectedTokens, parsed);
    if (!full.ok) return full;
    // Every line, once (those parsed for the difference that could not be applied are taken from `parsed`).
    const parsedLines = shards.reduce((n, s) => n + s.lines.length, 0);
    return ok({ index: full.value.index, incremental: false, parsedLines, commit: () => (this.state = full.value) });
  }
}

async function byDifference(prev: State, generation: string, shards: readonly ShardLines[], changes: Changes, tick: Tick): Promise<State> {
  const p = prev.index;
  const edited = await applyScopes(p, changes, tick);
  const { tokens, imported } = await nextTokenTable(p, changes, edited.fresh, tick);
  const index: AccessIndex = {
    generation, scopeCount: edited.scopeCount, tokenCount: tokens.size + imported,
    topics: edited.topics.root, datasets: edited.datasets, paths: edited.paths,
    ...(edited.prefixes.root.size > 0 ? { prefixes: edited.prefixes.root } : {}), tokens,
  };
  return { index, shards: await heldShards(prev.shards, shards, changes, edited.fresh, tick) };
}

/** The lines a new shard list removes (by the entry they made) and adds (parsed), relative to the previous one. */
interface Changes {
  readonly removed: ReadonlySet<IndexedScope>;
  readonly added: readonly (readonly [line: string, scope: SnapshotScope])[];
  /** Lines that only moved between shards (boundaries shifted), with the entry they keep. */
  readonly moved: ReadonlyMap<string, IndexedScope>;
}

/** The changes, the added lines parsed; or the first added line that is no scope line. */
async function changesBetween(previous: readonly HeldShard[], shards: readonly ShardLines[], tick: Tick): Promise<Result<Changes>> {
  const before = new Set(previous.map((s) => s.digest));
  const after = new Set(shards.map((s) => s.digest));
  const comeLines = new Set<string>();
  for (const s of shards) {
    if (before.has(s.digest)) continue;
    for (const l of s.lines) comeLines.add(l);
    await tick();
  }
  const removed = new Set<IndexedScope>();
  const moved = new Map<string, IndexedScope>();
  for (const s of previous) {
    if (after.has(s.digest)) continue;
    s.lines.forEach((l, i) => (comeLines.has(l) ? moved.set(l, s.entries[i]!) : removed.add(s.entries[i]!)));
    await tick();
  }
  const added: [string, SnapshotScope][] = [];
  let n = 0;
  for (const s of shards) {
    if (before.has(s.digest)) {
      n += s.lines.length;
      continue;
    }
    for (const line of s.lines) {
      n++;
      if (moved.has(line)) continue;
      const scope = parseScopeLine(line);
      if (!scope.ok) return err(`scope line ${n}: ${scope.error}`);
      added.push([line, scope.value]);
      if ((added.length & 15) === 0) await tick();
    }
  }
  return ok({ removed, added, moved });
}

/** Whether the changes can be applied by difference; anything unusual or suspect is left to the full build. */
function applicable(p: AccessIndex, { removed, added }: Changes, shards: readonly ShardLines[]): boolean {
  // Every line of the new snapshot is one scope of the next index (a line twice would not be).
  const lines = shards.reduce((n, s) => n + s.lines.length, 0);
  if (p.scopeCount - removed.size + added.length !== lines) return false;
  // Scopes that differ only in case share one entry (AccessIndexBuilder folds them: caseFolded): any change that
  // touches such an entry is left to the full build, as is a duplicate key and its error.
  for (const entry of removed) if (entry.caseFolded) return false;
  const addedKeys = new Set<string>();
  const addedFolded = new Set<string>();
  for (const [, s] of added) {
    const key = scopeKey(s);
    const folded = foldCase(key);
    if (addedKeys.has(key) || addedFolded.has(folded)) return false;
    addedKeys.add(key);
    addedFolded.add(folded);
    const held = entryOf(p, s);
    if (held && (!removed.has(held) || held.caseFolded)) return false;
  }
  return true;
}

/** The shards of the next state: unchanged ones as they were; new ones with the entries their lines kept or made. */
async function heldShards(previous: readonly HeldShard[], shards: readonly ShardLines[], { moved }: Changes, fresh: readonly FreshScope[], tick: Tick): Promise<HeldShard[]> {
  const held = new Map(previous.map((s) => [s.digest, s]));
  const made = new Map(fresh.map(({ line, entry }) => [line, entry]));
  const next: HeldShard[] = [];
  for (const s of shards) {
    const kept = held.get(s.digest);
    if (kept) next.push(kept);
    else {
      next.push({ digest: s.digest, lines: s.lines, entries: s.lines.map((l) => moved.get(l) ?? made.get(l)!) });
      await tick();
    }
  }
  return next;
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

async function applyScopes(p: AccessIndex, { removed, added }: Changes, tick: Tick): Promise<EditedScopes> {
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
async function nextTokenTable(p: AccessIndex, { removed }: Changes, fresh: readonly FreshScope[], tick: Tick): Promise<{ tokens: AccessIndex['tokens']; imported: number }> {
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

/**
 * The index built whole, a line at a time: each parsed (unless `parsed` has it already) and added, so no more than
 * a few parsed scopes are alive at once; then the entry each line made.
 */
async function fullBuild(generation: string, shards: readonly ShardLines[], tick: Tick, expectedTokens: number, parsed: ReadonlyMap<string, SnapshotScope>): Promise<Result<State>> {
  // The snapshot index's count is not covered by the generation: believed only up to what the lines could hold
  // (a token record takes more than 80 bytes of a line).
  let chars = 0;
  for (const shard of shards) for (const line of shard.lines) chars += line.length;
  const builder = new AccessIndexBuilder(Math.min(expectedTokens, Math.floor(chars / 80)));
  const keys: Scope[][] = [];
  let n = 0;
  for (const shard of shards) {
    const shardKeys: Scope[] = [];
    for (const line of shard.lines) {
      n++;
      const known = parsed.get(line);
      const scope = known ? ok(known) : parseScopeLine(line);
      if (!scope.ok) return err(`scope line ${n}: ${scope.error}`);
      const added = builder.add(scope.value);
      if (!added.ok) return err(`scope ${n}: ${added.error}`);
      shardKeys.push({ kind: scope.value.kind, value: scope.value.value });
      if ((n & 15) === 0) await tick();
    }
    keys.push(shardKeys);
  }
  const index = builder.build(generation);
  const held: HeldShard[] = [];
  for (const [i, shard] of shards.entries()) {
    held.push({ digest: shard.digest, lines: shard.lines, entries: keys[i]!.map((key) => entryOf(index, key)!) });
    await tick();
  }
  return ok({ index, shards: held });
}
