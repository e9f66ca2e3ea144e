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

export interface LineError {
  /** 1-based index of the offending scope line. */
  readonly line: number;
  readonly message: string;
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Builds the decision index from verified snapshot lines a slice at a time, yielding with setImmediate
 * between slices, so that a 100,000-token reload never holds the event loop for more than a few
 * milliseconds. Any bad line refuses the whole snapshot.
 */
export async function buildIndexInSlices(lines: readonly string[], generation: string, options: SliceOptions = {}): Promise<Result<AccessIndex, LineError>> {
  const sliceMs = options.sliceMs ?? 2;
  const maxLines = options.maxLines ?? 2000;
  const builder = new AccessIndexBuilder();
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
