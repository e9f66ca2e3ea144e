import { AccessIndexBuilder, err, ok, type AccessIndex, type Result } from '../../core/index.js';

/**
 * Where svc-auth gets its snapshot from. A source watches something (a manifest directory, a snapshot
 * file, and later the operator's snapshot ConfigMaps), verifies every new generation completely, builds
 * its decision index in slices, and only then hands the finished index to the sink, which swaps one
 * reference. A source never emits half a snapshot; anything it cannot verify is reported as a failure
 * and the sink keeps what it had.
 */
export interface LoadedSnapshot {
  readonly index: AccessIndex;
  /** What was loaded, for logs: a directory, a file, a ConfigMap. */
  readonly origin: string;
  /** Wall time from noticing the change to the finished index, yields included. */
  readonly loadMs: number;
}

/** One reason a reload was refused; `file` and `field` say where, as precisely as the source can. */
export interface SourceProblem {
  readonly file?: string;
  readonly field?: string;
  readonly message: string;
}

export interface SourceFailure {
  readonly origin: string;
  readonly problems: readonly SourceProblem[];
}

export interface SnapshotSink {
  loaded(snapshot: LoadedSnapshot): void;
  failed(failure: SourceFailure): void;
}

export interface SnapshotSource {
  /** Short and stable: the `source` label of the metrics (`scopes-dir`, `snapshot-file`, `configmap`). */
  readonly kind: string;
  /** Human-readable: what it watches. */
  readonly origin: string;
  /** Starts watching; resolves once the first load attempt has finished, whatever its outcome. */
  start(sink: SnapshotSink): Promise<void>;
  /** Stops watching; resolves once no load is running any more. Nothing is emitted after it resolves. */
  stop(): Promise<void>;
}

export interface SliceOptions {
  /** Time budget of one slice before yielding to the event loop (requests waiting in it). */
  readonly sliceMs?: number;
  /** Upper bound of lines per slice, whatever the budget. */
  readonly maxLines?: number;
  /** Checked between slices; a cancelled build resolves with an error. */
  readonly cancelled?: () => boolean;
}

export interface IndexBuildOptions extends SliceOptions {
  /**
   * How many token records the index will hold, when known: the table is sized for them once, instead of
   * growing by doubling, which rehashes and copies megabytes in single steps of up to ~25 ms.
   */
  readonly expectedTokens?: number;
}

export interface LineError {
  /** 1-based index of the offending scope line. */
  readonly line: number;
  readonly message: string;
}

/**
 * The default time budget of one slice of reload work between two turns of the event loop. 1 ms: the
 * bench's 100,000-token index builds no slower than with 2 ms slices, and waiting requests wait half as long.
 */
export const DEFAULT_SLICE_MS = 1;

/** Lets everything waiting in the event loop (requests, timers, I/O callbacks) run before continuing. */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The time budget of a loop of small synchronous steps: `await clock.pause()` between steps yields to the
 * event loop once the budget is spent, and starts a new one.
 */
export class SliceClock {
  private deadline: number;

  constructor(private readonly sliceMs: number = DEFAULT_SLICE_MS) {
    this.deadline = performance.now() + sliceMs;
  }

  /** A fresh budget: the event loop has just turned anyway (after awaiting I/O). */
  restart(): void {
    this.deadline = performance.now() + this.sliceMs;
  }

  get spent(): boolean {
    return performance.now() >= this.deadline;
  }

  async pause(): Promise<void> {
    if (!this.spent) return;
    await yieldToEventLoop();
    this.restart();
  }
}

/**
 * Runs a generator of small synchronous steps (it pauses with a bare `yield` between them) to its
 * result, yielding to the event loop whenever a slice's budget is spent.
 */
export async function runInSlices<T>(steps: Generator<void, T, void>, options: SliceOptions = {}): Promise<Result<T, 'cancelled'>> {
  const clock = new SliceClock(options.sliceMs);
  for (;;) {
    const step = steps.next();
    if (step.done) return ok(step.value);
    if (clock.spent) {
      await clock.pause();
      if (options.cancelled?.()) return err('cancelled');
    }
  }
}

export interface ChunkOptions extends SliceOptions {
  /**
   * Bytes handed to `feed` at a time; a slice feeds chunks while its budget lasts. The default, 256 KiB
   * (~0.4 ms of SHA-256 and UTF-8 decoding here), keeps the strings decoded from a chunk above V8's 128 KiB
   * large-object threshold, so the scavenger never copies them: with 64 KiB chunks, verifying the 9 MB
   * bench snapshot cost three times the GC pause time.
   */
  readonly chunkBytes?: number;
}

/**
 * Feeds bytes to `feed` a chunk at a time (subarrays, no copies), yielding to the event loop with
 * setImmediate before a slice's time budget would be overrun (or after a single chunk that overran it), so
 * that hashing or decoding megabytes never holds the event loop for much more than a slice. Resolves false
 * if cancelled between slices.
 */
export async function feedInSlices(bytes: Uint8Array, feed: (chunk: Uint8Array) => void, options: ChunkOptions = {}): Promise<boolean> {
  const sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  const chunkBytes = Math.max(1, options.chunkBytes ?? 256 * 1024);
  let at = 0;
  while (at < bytes.length) {
    const deadline = performance.now() + sliceMs;
    // At least one chunk a slice, and no further one once the last one's cost says it would overrun the budget.
    for (;;) {
      const before = performance.now();
      feed(bytes.subarray(at, at + chunkBytes));
      at += chunkBytes;
      const now = performance.now();
      if (at >= bytes.length || now + (now - before) > deadline) break;
    }
    if (at < bytes.length) {
      await yieldToEventLoop();
      if (options.cancelled?.()) return false;
    }
  }
  return true;
}

/**
 * Builds the decision index from verified snapshot lines a slice at a time, yielding with setImmediate
 * between slices, so that a 100,000-token reload never holds the event loop for more than a few
 * milliseconds. Any bad line refuses the whole snapshot.
 */
export async function buildIndexInSlices(lines: readonly string[], generation: string, options: IndexBuildOptions = {}): Promise<Result<AccessIndex, LineError>> {
  const sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  const maxLines = options.maxLines ?? 2000;
  const builder = new AccessIndexBuilder(options.expectedTokens);
  let i = 0;
  while (i < lines.length) {
    const deadline = performance.now() + sliceMs;
    const stop = Math.min(lines.length, i + maxLines);
    // Look at the clock every 16 lines: a line is a few microseconds to a few hundred (1,000 tokens).
    while (i < stop) {
      const r = builder.addLine(lines[i]!);
      i++;
      if (!r.ok) return err({ line: i, message: r.error });
      if ((i & 15) === 0 && performance.now() >= deadline) break;
    }
    if (i < lines.length) {
      await yieldToEventLoop();
      if (options.cancelled?.()) return err({ line: i, message: 'cancelled' });
    }
  }
  return ok(builder.build(generation));
}

/**
 * Runs one reload at a time; a trigger during a run schedules exactly one more run after it, so a burst
 * of file events costs at most two reloads and the last state is always the one loaded.
 */
export class SerialRunner {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly run: () => Promise<void>) {}

  trigger(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.run();
    } while (this.again && !this.stopped);
  }

  /** No new runs; resolves when the current one (if any) has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}
