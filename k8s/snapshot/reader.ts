/**
 * The reading side of the snapshot ConfigMaps (svc-auth's ConfigMap source): watches the snapshot index ConfigMap,
 * fetches every shard it names by its content-addressed name and verifies it against its digest as it arrives,
 * verifies the whole against the generation, and only then hands the shards' lines over (core's IncrementalIndex
 * parses them, each line once, as it adds it).
 *
 * One cache, by digest, holds each verified shard's lines once: the shards of the generation delivered (every
 * later generation that keeps a shard is verified over its lines) and those fetched since. So a change that touches
 * one shard fetches and verifies one shard. Nothing half-loaded is ever delivered; on any failure (API server away,
 * shard missing, corrupt, refused by `deliver`) the reader reports it, keeps the last delivered generation, and
 * retries with backoff. The generation is hashed in time slices, yielding to the event loop between them. No
 * client-node import here: the caller passes the transport in.
 */
import { err, ok, parseSnapshotIndex, verifyAssembledSteps, verifyShard, type Result, type ShardLines, type ShardRef, type SnapshotIndex } from '../../core/index.js';
import { backoffDelay } from '../../lib/backoff.js';
import { SerialRunner } from '../../lib/serial-runner.js';
import { SliceClock } from '../../lib/time-slice.js';
import type { ConfigMapObject } from '../configmaps.js';
import { describeError } from '../errors.js';
import { ResilientInformer, type InformerOptions, type ListWatch } from '../informer.js';
import { SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName } from './objects.js';

export interface VerifiedSnapshot {
  readonly snapshotIndex: SnapshotIndex;
  /** Each shard's verified lines, in the snapshot index's order (snapshotIndex.shards[i] ↔ shards[i]). */
  readonly shards: readonly ShardLines[];
  /** Shards fetched for this generation (the rest came from the cache). */
  readonly fetched: number;
  readonly cached: number;
}

interface SnapshotReaderOptions {
  readonly snapshotName: string;
  /** A list-watch of the snapshot index ConfigMap (a field selector on its name). */
  readonly snapshotIndexWatch: ListWatch<ConfigMapObject>;
  readonly getConfigMap: (name: string) => Promise<ConfigMapObject | undefined>;
  /** Builds and swaps; a throw counts as a failed load (the reader retries). */
  readonly deliver: (snapshot: VerifiedSnapshot, startedMs: number) => Promise<void> | void;
  readonly onFailure: (message: string) => void;
  readonly onWatchError?: (err: unknown) => void;
  /** After each successful (re)list of the snapshot index: the API server is reachable. */
  readonly onSynced?: () => void;
  readonly concurrency?: number;
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /** Time budget of one slice of hashing before yielding to the event loop (default 0.5 ms). */
  readonly sliceMs?: number;
  readonly informer?: InformerOptions;
}

export class SnapshotReader {
  private readonly informer: ResilientInformer<ConfigMapObject>;
  /** The one cache: verified shards by digest, those of the generation delivered and those fetched since. */
  private readonly shards = new Map<string, ShardLines>();
  private delivered: string | undefined;
  private readonly runner = new SerialRunner(() => this.loadOnce());
  private stopped = false;
  private failures = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private firstAttempt: (() => void) | undefined;

  constructor(private readonly opts: SnapshotReaderOptions) {
    this.informer = new ResilientInformer<ConfigMapObject>(
      opts.snapshotIndexWatch,
      {
        onAdd: () => this.trigger(),
        onUpdate: () => this.trigger(),
        onSynced: () => {
          opts.onSynced?.();
          this.trigger();
        },
        onDelete: () => {
          // Keep serving what we have: a deleted snapshot index is an operator problem, never a reason to open up.
          if (!this.informer.list().some((cm) => cm.metadata.name === opts.snapshotName)) opts.onFailure(`snapshot index ConfigMap ${opts.snapshotName} was deleted; keeping generation ${short(this.delivered)}`);
        },
        onError: (e) => {
          opts.onWatchError?.(e);
          // The first attempt is over if the API server cannot even be listed.
          if (!this.informer.synced) this.endFirstAttempt();
        },
      },
      opts.informer ?? {},
    );
  }

  /** The generation last delivered, if any. */
  get generation(): string | undefined {
    return this.delivered;
  }

  get cachedShards(): number {
    return this.shards.size;
  }

  /** Starts watching; resolves once the first load attempt has finished, whatever its outcome. */
  start(): Promise<void> {
    const first = new Promise<void>((resolve) => (this.firstAttempt = resolve));
    this.informer.start();
    return first;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const runnerStopped = this.runner.stop();
    await this.informer.stop();
    await runnerStopped;
    this.endFirstAttempt();
  }

  /** Runs a load now (one at a time; a trigger during a load runs exactly one more after it). */
  trigger(): void {
    if (this.stopped) return;
    void this.runner.trigger().finally(() => this.endFirstAttempt());
  }

  private endFirstAttempt(): void {
    const r = this.firstAttempt;
    this.firstAttempt = undefined;
    r?.();
  }

  private fail(message: string, retry: boolean): void {
    this.opts.onFailure(message);
    if (!retry || this.stopped) return;
    this.failures++;
    const delay = backoffDelay(this.failures, { initialMs: this.opts.retryInitialMs ?? 250, maxMs: this.opts.retryMaxMs ?? 10_000 });
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.trigger(), delay);
  }

  /** One load: read the snapshot index, fetch and verify the shards it lacks, verify the whole, deliver it. */
  private async loadOnce(): Promise<void> {
    const started = performance.now();
    if (!this.informer.synced) return;
    const read = this.readSnapshotIndex();
    if (!read.ok) return this.fail(read.error, false);
    const snapshotIndex = read.value;
    if (snapshotIndex.generation === this.delivered) {
      this.failures = 0;
      return;
    }
    const clock = new SliceClock(this.opts.sliceMs ?? 0.5);
    const missing = snapshotIndex.shards.filter((ref) => !this.shards.has(ref.digest));
    const problem = (await this.fetchShards(snapshotIndex, missing)) ?? (await this.verifyWhole(snapshotIndex, clock));
    if (this.stopped) return;
    if (problem) return this.fail(`${problem}; keeping generation ${short(this.delivered)}`, true);
    const shards = snapshotIndex.shards.map((ref) => this.shards.get(ref.digest)!);
    try {
      await this.opts.deliver({ snapshotIndex, shards, fetched: missing.length, cached: snapshotIndex.shards.length - missing.length }, started);
    } catch (e) {
      return this.fail(`generation ${short(snapshotIndex.generation)}: ${describeError(e)}; keeping generation ${short(this.delivered)}`, true);
    }
    this.delivered = snapshotIndex.generation;
    this.failures = 0;
    // Keep only the shards of the generation now served.
    this.shards.clear();
    for (const shard of shards) this.shards.set(shard.digest, shard);
  }

  /** The snapshot index from the informer's cache, or why there is none to load. */
  private readSnapshotIndex(): Result<SnapshotIndex> {
    const { snapshotName } = this.opts;
    const cm = this.informer.list().find((c) => c.metadata.name === snapshotName);
    if (!cm) return err(`snapshot index ConfigMap ${snapshotName} not found${this.delivered ? `; keeping generation ${short(this.delivered)}` : ' (has svc-operator written it yet?)'}`);
    const text = cm.data?.[SNAPSHOT_INDEX_KEY];
    if (text === undefined) return err(`snapshot index ConfigMap ${snapshotName} has no ${SNAPSHOT_INDEX_KEY}`);
    const parsed = parseSnapshotIndex(text);
    return parsed.ok ? parsed : err(`snapshot index ConfigMap ${snapshotName}: ${parsed.error}`);
  }

  /**
   * Fetches the shards the cache lacks, a few at a time, verifying each as it arrives; the first problem, if any.
   * A missing shard is retried later: the operator writes shards before the snapshot index, or one was deleted too
   * early.
   */
  private async fetchShards(snapshotIndex: SnapshotIndex, missing: readonly ShardRef[]): Promise<string | undefined> {
    let next = 0;
    let problem: string | undefined;
    const worker = async () => {
      while (next < missing.length && !problem && !this.stopped) {
        const ref = missing[next++]!;
        const shard = await this.fetchShard(snapshotIndex, ref);
        if (!shard.ok) {
          problem ??= shard.error;
          return;
        }
        this.shards.set(ref.digest, shard.value);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.concurrency ?? 4, missing.length) }, worker));
    return problem;
  }

  /** One shard: fetched by its name, verified against its digest. */
  private async fetchShard(snapshotIndex: SnapshotIndex, ref: ShardRef): Promise<Result<ShardLines>> {
    const name = shardConfigMapName(this.opts.snapshotName, ref.digest);
    let shard: ConfigMapObject | undefined;
    try {
      shard = await this.opts.getConfigMap(name);
    } catch (e) {
      return err(`shard ConfigMap ${name}: ${describeError(e)}`);
    }
    if (!shard) return err(`shard ConfigMap ${name} of generation ${short(snapshotIndex.generation)} not found`);
    const lines = verifyShard(ref, shard.data?.[SHARD_KEY] ?? '');
    return lines.ok ? ok({ digest: ref.digest, lines: lines.value }) : err(`shard ConfigMap ${name}: ${lines.error}`);
  }

  /** The generation over every shard's lines in the snapshot index's order, a slice at a time; the problem, if any. */
  private async verifyWhole(snapshotIndex: SnapshotIndex, clock: SliceClock): Promise<string | undefined> {
    const steps = verifyAssembledSteps(snapshotIndex, snapshotIndex.shards.map((ref) => this.shards.get(ref.digest)!.lines));
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value.ok ? undefined : `generation ${short(snapshotIndex.generation)}: ${step.value.error}`;
      await clock.pause();
      if (this.stopped) return 'stopped';
    }
  }
}

function short(generation: string | undefined): string {
  return generation ? generation.slice(0, 12) : '(none)';
}
