/**
 * A list-then-watch cache that does not give up. client-node's `makeInformer` stops for good after any
 * error but 410 and hangs on a silently dead connection; this one:
 *
 * - restarts after any error (list or watch) with jittered exponential backoff, honouring Retry-After;
 * - asks the server to end each watch after `watchTimeoutSeconds` and resumes from the last resourceVersion,
 *   so a quiet watch is renewed regularly, and a watchdog aborts a watch that outlives that by `watchdogSlackMs`
 *   without a byte (a half-open TCP connection);
 * - relists every `relistIntervalMs`, diffing against the cache, so a missed event cannot persist;
 * - keeps the cache (and whatever was built from it) through outages: `synced` stays true once reached;
 * - calls handlers synchronously and swallows what they throw (a handler should only enqueue; an exception
 *   escaping into client-node's stream would become an unhandled rejection, which kills Node 20).
 *
 * The transport is a `ListWatch`, so this logic is unit-tested without a server.
 */
import { backoffDelay } from '../lib/backoff.js';
import { describeError, isGone, retryAfterMs } from './errors.js';

export interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
}

export interface ListResult<T> {
  readonly items: readonly T[];
  readonly resourceVersion: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchHandle {
  abort(): void;
}

export interface ListWatch<T> {
  list(): Promise<ListResult<T>>;
  /**
   * Starts a watch from resourceVersion; events go to onEvent; onDone is called once when the stream ends
   * (err undefined/null for a clean close, e.g. the server's timeout). May reject if the request fails to start.
   */
  watch(resourceVersion: string, timeoutSeconds: number, onEvent: (type: WatchEventType, obj: unknown) => void, onDone: (err?: unknown) => void): Promise<WatchHandle>;
}

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, obj: T): void;
  onDelete?(obj: T): void;
  /** After each successful (re)list has been applied to the cache. */
  onSynced?(): void;
  /** Every failure, before backing off. */
  onError?(err: unknown, attempt: number): void;
}

export interface InformerOptions {
  readonly relistIntervalMs?: number;
  readonly watchTimeoutSeconds?: number;
  readonly watchdogSlackMs?: number;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** Injected for tests. */
  readonly random?: () => number;
  readonly now?: () => number;
}

const INFORMER_DEFAULTS = {
  relistIntervalMs: 5 * 60_000,
  watchTimeoutSeconds: 240,
  watchdogSlackMs: 30_000,
  backoffInitialMs: 250,
  backoffMaxMs: 10_000,
} as const;

function keyOf(obj: ObjectWithMeta): string {
  const m = obj.metadata;
  return m?.namespace ? `${m.namespace}/${m.name ?? ''}` : (m?.name ?? '');
}

class GoneError extends Error {
  readonly code = 410;
  constructor() {
    super('watch: resourceVersion too old (410 Gone)');
  }
}

class WatchdogError extends Error {
  constructor(ms: number) {
    super(`watch: no data for ${Math.round(ms / 1000)} s; reopening`);
  }
}

export class ResilientInformer<T extends ObjectWithMeta> {
  private readonly cache = new Map<string, T>();
  private readonly opts: Required<Omit<InformerOptions, 'random' | 'now'>> & { random: () => number; now: () => number };
  private stopped = true;
  private running: Promise<void> | undefined;
  private handle: WatchHandle | undefined;
  private cancelWatch: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private resourceVersion = '';
  private _synced = false;
  private _restarts = 0;
  private readonly syncWaiters = new Set<(outcome: Error | undefined) => void>();

  constructor(
    private readonly listWatch: ListWatch<T>,
    private readonly handlers: InformerHandlers<T> = {},
    options: InformerOptions = {},
  ) {
    this.opts = {
      ...INFORMER_DEFAULTS,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
      random: options.random ?? Math.random,
      now: options.now ?? Date.now,
    } as typeof this.opts;
  }

  /** True once the first list has been applied; stays true through later outages (the cache is kept). */
  get synced(): boolean {
    return this._synced;
  }

  /** Times the list/watch loop has recovered from an error. */
  get restarts(): number {
    return this._restarts;
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  get size(): number {
    return this.cache.size;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.running = this.loop();
  }

  /**
   * Resolves as soon as the first list is in the cache; rejects when the informer is stopped (or not started)
   * first, or after timeoutMs.
   */
  waitForSync(timeoutMs = 60_000): Promise<void> {
    if (this._synced) return Promise.resolve();
    if (this.stopped) return Promise.reject(new Error('informer stopped'));
    return new Promise((resolve, reject) => {
      const waiter = (outcome: Error | undefined) => {
        clearTimeout(timer);
        this.syncWaiters.delete(waiter);
        if (outcome) reject(outcome);
        else resolve();
      };
      const timer = setTimeout(() => waiter(new Error(`informer not synced after ${timeoutMs} ms`)), timeoutMs);
      this.syncWaiters.add(waiter);
    });
  }

  /** Settles every waitForSync() under way: resolved once synced, rejected with `outcome` otherwise. */
  private settleSyncWaiters(outcome?: Error): void {
    for (const waiter of [...this.syncWaiters]) waiter(outcome);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.settleSyncWaiters(new Error('informer stopped'));
    this.cancelWatch?.();
    this.wake?.();
    await this.running;
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      try {
        await this.listOnce();
        attempt = 0;
        const relistAt = this.opts.now() + this.opts.relistIntervalMs;
        let short = 0;
        while (!this.stopped && this.opts.now() < relistAt) {
          const started = this.opts.now();
          const events = await this.watchOnce(Math.min(this.opts.watchTimeoutSeconds, Math.max(1, Math.ceil((relistAt - this.opts.now()) / 1000))), relistAt);
          // A watch the server ends at once, again and again, must not become a busy loop.
          short = events === 0 && this.opts.now() - started < 1000 ? short + 1 : 0;
          if (short > 0 && !this.stopped) await this.sleep(this.backoff(short, undefined));
        }
      } catch (e) {
        if (this.stopped) break;
        if (e instanceof GoneError || isGone(e)) {
          // Expected now and then: the resourceVersion fell out of the server's window. Relist at once.
          this.resourceVersion = '';
          continue;
        }
        attempt++;
        this._restarts++;
        this.safe(() => this.handlers.onError?.(e, attempt));
        await this.sleep(this.backoff(attempt, retryAfterMs(e)));
      }
    }
  }

  private backoff(attempt: number, retryAfter: number | undefined): number {
    const policy = { initialMs: this.opts.backoffInitialMs, maxMs: this.opts.backoffMaxMs, jitter: [0.5, 1] as const };
    return Math.max(backoffDelay(attempt, policy, this.opts.random), retryAfter ?? 0);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private async listOnce(): Promise<void> {
    const { items, resourceVersion } = await this.listWatch.list();
    if (this.stopped) return;
    const seen = new Set<string>();
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      this.upsert(key, obj);
    }
    for (const [key, old] of [...this.cache]) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.safe(() => this.handlers.onDelete?.(old));
      }
    }
    this.resourceVersion = resourceVersion;
    this._synced = true;
    this.settleSyncWaiters();
    this.safe(() => this.handlers.onSynced?.());
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key);
    this.cache.set(key, obj);
    if (!old) this.safe(() => this.handlers.onAdd?.(obj));
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.safe(() => this.handlers.onUpdate?.(old, obj));
  }

  /** One watch, resolving with the number of events seen when it ends cleanly. */
  private watchOnce(timeoutSeconds: number, endAtMs: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let finished = false;
      let events = 0;
      // Time to relist: end this watch cleanly even if the server has not.
      const relistTimer = setTimeout(() => finish(), Math.max(0, endAtMs - this.opts.now()));
      let watchdog: ReturnType<typeof setTimeout> | undefined;
      const limitMs = timeoutSeconds * 1000 + this.opts.watchdogSlackMs;
      const finish = (err?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(watchdog);
        clearTimeout(relistTimer);
        this.cancelWatch = undefined;
        this.handle?.abort();
        this.handle = undefined;
        if (err) reject(err);
        else resolve(events);
      };
      this.cancelWatch = () => finish();
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => finish(new WatchdogError(limitMs)), limitMs);
      };
      arm();
      const onEvent = (type: WatchEventType, raw: unknown) => {
        if (finished) return;
        arm();
        events++;
        const error = this.apply(type, raw as T);
        if (error) finish(error);
      };
      this.listWatch
        .watch(this.resourceVersion, timeoutSeconds, onEvent, (err) => finish(err ?? undefined))
        .then((h) => {
          if (finished) h.abort();
          else this.handle = h;
        })
        .catch((e: unknown) => finish(e ?? new Error('watch failed to start')));
      if (this.stopped) finish();
    });
  }

  /** One watch event into the cache (and the handlers); an ERROR event is returned as the error ending the watch. */
  private apply(type: WatchEventType, obj: T): Error | undefined {
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
        this.upsert(keyOf(obj), obj);
        break;
      case 'DELETED': {
        const key = keyOf(obj);
        const old = this.cache.get(key);
        this.cache.delete(key);
        this.safe(() => this.handlers.onDelete?.(old ?? obj));
        break;
      }
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const status = obj as unknown as { code?: number; message?: string };
        return status?.code === 410 ? new GoneError() : Object.assign(new Error(`watch error: ${status?.message ?? 'unknown'}`), { code: status?.code });
      }
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    return undefined;
  }

  private safe(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      // A handler must not break the stream; report it through onError if that one does not throw too.
      try {
        this.handlers.onError?.(new Error(`informer handler threw: ${describeError(e)}`), 0);
      } catch {
        // nothing more to do
      }
    }
  }
}
