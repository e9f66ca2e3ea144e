/**
 * The writing side of the snapshot ConfigMaps (svc-operator's; reader.ts is svc-auth's, objects.ts the names and
 * labels both use). Writes a compiled snapshot as ConfigMaps: immutable content-addressed shards first, the snapshot
 * index (naming the generation and each shard's digest) last, so a reader that follows the snapshot index always finds
 * every shard it names. Writes nothing that is already there (a restart with no change writes nothing new). Shards no
 * snapshot index names any more are deleted after a grace period, so a reader still loading the previous generation finds
 * its shards; owner references are not relied on (no garbage collector in the test control plane).
 */
import type { Shard, SnapshotIndex } from '../../core/index.js';
import type { ConfigMapClient, ConfigMapObject } from '../configmaps.js';
import {
  DIGEST_ANNOTATION,
  GENERATION_ANNOTATION,
  SNAPSHOT_INDEX_KEY,
  ROLE_LABEL,
  SHARD_KEY,
  SNAPSHOT_LABEL,
  shardConfigMapName,
  snapshotLabels,
} from './objects.js';

export class NotLeaderError extends Error {
  constructor() {
    super('not the leader: write skipped');
  }
}

interface SnapshotWriterOptions {
  readonly snapshotName: string;
  readonly client: ConfigMapClient;
  /** The ConfigMaps labelled for this snapshot, from an informer. */
  readonly cache: () => readonly ConfigMapObject[];
  readonly staleGraceMs: number;
  readonly canWrite: () => boolean;
  readonly now?: () => number;
  readonly concurrency?: number;
  readonly onWrite?: (kind: 'shard' | 'index' | 'delete', name: string) => void;
}

interface WriteOutcome {
  readonly shardsWritten: number;
  readonly snapshotIndexWritten: boolean;
  readonly deleted: number;
  /** When the next stale shard's grace period ends. */
  readonly nextCleanupAtMs?: number;
}

export class SnapshotWriter {
  /** Shards written by us that the informer may not have shown yet: name → digest. */
  private readonly written = new Map<string, string>();
  private readonly staleSince = new Map<string, number>();
  private lastSnapshotIndexText: string | undefined;
  private wanted = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly opts: SnapshotWriterOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The snapshot index text last written or found current; the operator ignores the informer's echo of it. */
  get currentSnapshotIndexText(): string | undefined {
    return this.lastSnapshotIndexText;
  }

  /** Whether a shard name is part of the snapshot last written. */
  isWanted(name: string): boolean {
    return this.wanted.has(name);
  }

  /** The informer saw one of our ConfigMaps deleted: the next write must not assume it exists. */
  noteDeleted(name: string): void {
    this.written.delete(name);
    if (name === this.opts.snapshotName) this.lastSnapshotIndexText = undefined;
  }

  /** Writes what differs, in the order that keeps readers whole: shards, then the snapshot index, then stale shards go. */
  async write(snapshotIndex: SnapshotIndex, shards: readonly Shard[]): Promise<WriteOutcome> {
    const cached = new Map(this.opts.cache().map((cm) => [cm.metadata.name, cm]));
    this.wanted = new Set(shards.map((s) => shardConfigMapName(this.opts.snapshotName, s.digest)));
    const shardsWritten = await this.writeShards(snapshotIndex, shards, cached);
    const snapshotIndexWritten = await this.writeSnapshotIndex(snapshotIndex, cached.get(this.opts.snapshotName));
    const { deleted, nextCleanupAtMs } = await this.deleteStaleShards(cached);
    for (const name of [...this.written.keys()]) if (!this.wanted.has(name)) this.written.delete(name);
    return { shardsWritten, snapshotIndexWritten, deleted, ...(nextCleanupAtMs !== undefined ? { nextCleanupAtMs } : {}) };
  }

  /** Only the leader writes, and it checks before every single write. */
  private guard(): void {
    if (!this.opts.canWrite()) throw new NotLeaderError();
  }

  /** 1. Shards, a few at a time (each up to ~700 KiB); only those missing or not as written. */
  private async writeShards(snapshotIndex: SnapshotIndex, shards: readonly Shard[], cached: ReadonlyMap<string, ConfigMapObject>): Promise<number> {
    const { snapshotName, client } = this.opts;
    const todo: { name: string; shard: Shard; replace?: ConfigMapObject }[] = [];
    for (const shard of shards) {
      const name = shardConfigMapName(snapshotName, shard.digest);
      const existing = cached.get(name);
      if (existing) {
        this.written.delete(name);
        if (existing.data?.[SHARD_KEY] === shard.text) continue;
        todo.push({ name, shard, replace: existing }); // same name, other bytes: never ours as written
      } else if (this.written.get(name) !== shard.digest) {
        todo.push({ name, shard });
      }
    }
    let shardsWritten = 0;
    await pool(todo, this.opts.concurrency ?? 3, async ({ name, shard, replace }) => {
      this.guard();
      // Immutable data cannot be corrected in place: delete that incarnation, then create.
      if (replace) await client.delete(name, replace.metadata.uid);
      this.guard();
      await client.apply({
        metadata: {
          name,
          labels: snapshotLabels(snapshotName, 'shard'),
          annotations: { [DIGEST_ANNOTATION]: shard.digest, [GENERATION_ANNOTATION]: snapshotIndex.generation },
        },
        immutable: true,
        data: { [SHARD_KEY]: shard.text },
      });
      this.written.set(name, shard.digest);
      shardsWritten++;
      this.opts.onWrite?.('shard', name);
    });
    return shardsWritten;
  }

  /** 2. The snapshot index, last, unless the one in place already says the same. */
  private async writeSnapshotIndex(snapshotIndex: SnapshotIndex, current: ConfigMapObject | undefined): Promise<boolean> {
    const { snapshotName } = this.opts;
    const snapshotIndexText = JSON.stringify(snapshotIndex);
    const labels = snapshotLabels(snapshotName, 'index');
    const upToDate =
      current?.data?.[SNAPSHOT_INDEX_KEY] === snapshotIndexText &&
      Object.entries(labels).every(([k, v]) => current.metadata.labels?.[k] === v) &&
      current.metadata.annotations?.[GENERATION_ANNOTATION] === snapshotIndex.generation;
    const written = !upToDate && !(this.lastSnapshotIndexText === snapshotIndexText && current === undefined);
    if (written) {
      this.guard();
      await this.opts.client.apply({
        metadata: { name: snapshotName, labels, annotations: { [GENERATION_ANNOTATION]: snapshotIndex.generation } },
        data: { [SNAPSHOT_INDEX_KEY]: snapshotIndexText },
      });
      this.opts.onWrite?.('index', snapshotName);
    }
    this.lastSnapshotIndexText = snapshotIndexText;
    return written;
  }

  /** 3. Stale shards: labelled for this snapshot, named by no snapshot index we wrote; deleted after the grace period. */
  private async deleteStaleShards(cached: ReadonlyMap<string, ConfigMapObject>): Promise<{ deleted: number; nextCleanupAtMs?: number }> {
    const { snapshotName, staleGraceMs } = this.opts;
    const now = this.now();
    let deleted = 0;
    let nextCleanupAtMs: number | undefined;
    const present = new Set<string>();
    for (const cm of cached.values()) {
      const name = cm.metadata.name;
      if (cm.metadata.labels?.[SNAPSHOT_LABEL] !== snapshotName || cm.metadata.labels?.[ROLE_LABEL] !== 'shard') continue;
      if (this.wanted.has(name)) continue;
      present.add(name);
      const since = this.staleSince.get(name) ?? now;
      this.staleSince.set(name, since);
      if (now - since >= staleGraceMs) {
        this.guard();
        await this.opts.client.delete(name, cm.metadata.uid);
        this.staleSince.delete(name);
        present.delete(name);
        deleted++;
        this.opts.onWrite?.('delete', name);
      } else {
        const at = since + staleGraceMs;
        if (nextCleanupAtMs === undefined || at < nextCleanupAtMs) nextCleanupAtMs = at;
      }
    }
    for (const name of [...this.staleSince.keys()]) if (!present.has(name)) this.staleSince.delete(name);
    return { deleted, ...(nextCleanupAtMs !== undefined ? { nextCleanupAtMs } : {}) };
  }
}

/** Runs fn over items with at most `limit` at once; rejects with the first error after all have settled. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (e) {
        if (!failed) {
          failed = true;
          firstError = e;
        }
        if (e instanceof NotLeaderError) next = items.length;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw firstError;
}
