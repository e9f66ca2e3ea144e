/**
 * Where svc-auth gets its snapshot from. A source watches something (a manifest directory, a snapshot
 * file, and later the operator's snapshot ConfigMaps), verifies every new generation completely, builds
 * its decision index in slices, and only then hands the finished index to the sink, which swaps one
 * reference. A source never emits half a snapshot; anything it cannot verify is reported as a failure
 * and the sink keeps what it had.
 */
import { AccessIndexBuilder, err, ok, type AccessIndex, type Result } from '../../core/index.js';
import { SliceClock } from '../../lib/time-slice.js';

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
 * The default time budget of one slice of reload work between two turns of the event loop. 0.5 ms: a
 * 100,000-token reload takes about as long as with 1 ms slices under load (~0.4 s), and the requests that
 * wait for a slice wait half as long (bench:auth: p99 during reloads ~1.8x steady state, against ~2.4x).
 */
export const DEFAULT_SLICE_MS = 0.5;

/**
 * A decision index built from snapshot lines handed over in batches (as a file is read and verified), a
 * slice at a time: add() yields to the event loop whenever the slice's budget is spent, so a 100,000-token
 * build never holds the event loop for more than about a millisecond. The first bad line stops the build
 * and is what finish() reports.
 */
export class SlicedIndexBuild {
  private readonly builder: AccessIndexBuilder;
  private readonly maxLines: number;
  private added = 0;
  private sincePause = 0;
  private error: LineError | undefined;

  constructor(
    private readonly options: IndexBuildOptions = {},
    /** The reload's clock, when other sliced work (reading, verifying) shares its budget. */
    readonly clock: SliceClock = new SliceClock(options.sliceMs ?? DEFAULT_SLICE_MS),
  ) {
    this.builder = new AccessIndexBuilder(options.expectedTokens);
    this.maxLines = options.maxLines ?? 2000;
  }

  /** Adds lines (after a bad one, only counts them); resolves false if cancelled between slices. */
  async add(lines: readonly string[]): Promise<boolean> {
    for (const line of lines) {
      if (this.error !== undefined) return true;
      const r = this.builder.addLine(line);
      this.added++;
      this.sincePause++;
      if (!r.ok) {
        this.error = { line: this.added, message: r.error };
        return true;
      }
      // Look at the clock every 16 lines: a line is a few microseconds to a few hundred (1,000 tokens).
      if (this.sincePause >= this.maxLines || ((this.added & 15) === 0 && this.clock.spent)) {
        if (!(await this.pause(true))) return false;
      }
    }
    return true;
  }

  /** Yields to the event loop if the slice is spent (or `now`); resolves false if cancelled. */
  async pause(now = false): Promise<boolean> {
    if (!now && !this.clock.spent) return true;
    await this.clock.yieldNow();
    this.sincePause = 0;
    return !this.options.cancelled?.();
  }

  /** The index of every line added, or the first bad line. */
  finish(generation: string): Result<AccessIndex, LineError> {
    return this.error !== undefined ? err(this.error) : ok(this.builder.build(generation));
  }
}

/**
 * Builds the decision index from verified snapshot lines a slice at a time (see SlicedIndexBuild). Any bad
 * line refuses the whole snapshot.
 */
export async function buildIndexInSlices(lines: readonly string[], generation: string, options: IndexBuildOptions = {}): Promise<Result<AccessIndex, LineError>> {
  const build = new SlicedIndexBuild(options);
  if (!(await build.add(lines))) return err({ line: 0, message: 'cancelled' });
  return build.finish(generation);
}
