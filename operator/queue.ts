/**
 * A keyed, deduplicated work queue in the manner of client-go's workqueue and Pepr's per-key queue:
 *
 * - adding a key that is already waiting does nothing (a delayed add only ever moves it earlier);
 * - a key is never processed twice at once: re-added while in flight, it runs once more afterwards;
 * - a failure re-queues the key with per-key exponential backoff; success forgets the failures and may
 *   ask for a later run (`requeueAfterMs`, the controller-runtime `RequeueAfter`);
 * - handlers that feed the queue only call `add`, which never throws and never blocks.
 */
import { backoffDelay } from '../lib/backoff.js';

export interface ProcessResult {
  readonly requeueAfterMs?: number;
}

export interface WorkQueueOptions<K> {
  readonly process: (key: K) => Promise<ProcessResult | void>;
  readonly concurrency?: number;
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
  readonly onError?: (key: K, err: unknown, failures: number, retryInMs: number) => void;
  readonly onProcessed?: (key: K, ok: boolean, durationMs: number) => void;
  readonly onDepth?: (depth: number) => void;
  readonly now?: () => number;
}

/** setTimeout fires at once for delays past 2^31-1 ms; longer waits are clamped (a relist comes sooner anyway). */
const MAX_DELAY_MS = 24 * 3600_000;

/** Keyed work, each key at most once at a time and coalesced while waiting; failures retried with backoff. */
export class WorkQueue<K> {
  private readonly ready: K[] = [];
  private readonly readySet = new Set<K>();
  private readonly delayed = new Map<K, { at: number; timer: ReturnType<typeof setTimeout> }>();
  private readonly active = new Set<K>();
  private readonly dirty = new Set<K>();
  private readonly failures = new Map<K, number>();
  private readonly now: () => number;
  private shuttingDown = false;
  private drained: (() => void)[] = [];

  constructor(private readonly opts: WorkQueueOptions<K>) {
    this.now = opts.now ?? Date.now;
  }

  /** Keys ready to run, not yet started (as client-go's depth: delayed keys and in-flight ones are not counted). */
  get depth(): number {
    return this.readySet.size + this.dirty.size;
  }

  /** Keys waiting for a delay (debounce, backoff, requeueAfter). */
  get delayedCount(): number {
    return this.delayed.size;
  }

  get inFlight(): number {
    return this.active.size;
  }

  /** When a delayed key is due, or undefined. */
  dueAt(key: K): number | undefined {
    return this.readySet.has(key) ? this.now() : this.delayed.get(key)?.at;
  }

  add(key: K, delayMs = 0): void {
    if (this.shuttingDown) return;
    if (this.readySet.has(key)) return;
    const delay = Math.min(Math.max(0, delayMs), MAX_DELAY_MS);
    if (delay === 0) {
      this.cancelDelayed(key);
      this.enqueue(key);
      return;
    }
    const at = this.now() + delay;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    this.cancelDelayed(key);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.enqueue(key);
    }, delay);
    this.delayed.set(key, { at, timer });
    this.reportDepth();
  }

  /** Stops accepting keys, drops waiting ones, resolves when in-flight work has finished. */
  shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const key of [...this.delayed.keys()]) this.cancelDelayed(key);
    this.ready.length = 0;
    this.readySet.clear();
    this.reportDepth();
    if (this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private cancelDelayed(key: K): void {
    const d = this.delayed.get(key);
    if (d) {
      clearTimeout(d.timer);
      this.delayed.delete(key);
    }
  }

  private enqueue(key: K): void {
    if (this.shuttingDown) return;
    if (this.active.has(key)) {
      this.dirty.add(key);
      this.reportDepth();
      return;
    }
    if (!this.readySet.has(key)) {
      this.readySet.add(key);
      this.ready.push(key);
    }
    this.reportDepth();
    this.pump();
  }

  private pump(): void {
    const limit = this.opts.concurrency ?? 1;
    while (this.active.size < limit && this.ready.length > 0) {
      const key = this.ready.shift()!;
      this.readySet.delete(key);
      this.active.add(key);
      this.reportDepth();
      void this.run(key);
    }
  }

  private async run(key: K): Promise<void> {
    const started = this.now();
    let result: ProcessResult | void = undefined;
    let failed = false;
    try {
      result = await this.opts.process(key);
    } catch (e) {
      failed = true;
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      const retryIn = backoffDelay(n, { initialMs: this.opts.backoffBaseMs ?? 200, maxMs: this.opts.backoffMaxMs ?? 60_000 });
      safe(() => this.opts.onError?.(key, e, n, retryIn));
      this.active.delete(key);
      // Changed while failing: run again now (the change may be the fix), as client-go does; else back off.
      if (this.dirty.delete(key)) this.enqueue(key);
      else this.add(key, retryIn);
    }
    if (!failed) {
      this.failures.delete(key);
      this.active.delete(key);
      if (this.dirty.delete(key)) this.enqueue(key);
      else if (result?.requeueAfterMs !== undefined) this.add(key, result.requeueAfterMs);
      else if (this.dirty.size === 0) this.reportDepth();
      // A dirty key re-runs now; its requeueAfter is moot because the fresh run computes a new one.
    }
    safe(() => this.opts.onProcessed?.(key, !failed, this.now() - started));
    this.pump();
    if (this.active.size === 0 && this.shuttingDown) {
      const waiting = this.drained;
      this.drained = [];
      for (const r of waiting) r();
    }
  }

  private reportDepth(): void {
    safe(() => this.opts.onDepth?.(this.depth));
  }
}

function safe(fn: () => void): void {
  try {
    fn();
  } catch {
    // observers must not break the queue
  }
}
