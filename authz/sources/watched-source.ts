/**
 * What the file-system sources share: a watched directory, reloads serialized by one runner, an event that
 * always forces a re-read while the periodic rescan only re-reads when the subclass's signature moved, and
 * the bookkeeping of what is in service.
 */
import type { AccessIndex } from '../../core/index.js';
import { SerialRunner } from '../../lib/serial-runner.js';
import type { SnapshotSink, SnapshotSource, SourceProblem } from './source.js';
import { DirectoryWatch, type DirectoryWatchOptions } from './watch.js';

export abstract class WatchedSource implements SnapshotSource {
  abstract readonly kind: string;
  private sink: SnapshotSink | null = null;
  private watch: DirectoryWatch | null = null;
  protected readonly runner = new SerialRunner(() => this.reload());
  private forced = true;
  protected lastSignature: string | null = null;
  protected lastGeneration: string | null = null;

  constructor(readonly origin: string) {}

  /** The directory to watch and which of its entries matter. */
  protected abstract watched(): { readonly dir: string; readonly options: DirectoryWatchOptions };
  protected abstract reload(): Promise<void>;

  async start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
    const { dir, options } = this.watched();
    this.watch = new DirectoryWatch(dir, (reason) => this.changed(reason), options);
    await this.runner.trigger();
  }

  async stop(): Promise<void> {
    this.watch?.close();
    await this.runner.stop();
    this.sink = null;
  }

  private changed(reason: 'event' | 'rescan'): void {
    if (reason === 'event') this.forced = true;
    void this.runner.trigger();
  }

  /** Whether this reload must re-read whatever the signature says; clears the flag. */
  protected takeForced(): boolean {
    const forced = this.forced;
    this.forced = false;
    return forced;
  }

  protected loaded(index: AccessIndex, generation: string, startedMs: number): void {
    this.lastGeneration = generation;
    this.sink?.loaded({ index, origin: this.origin, loadMs: performance.now() - startedMs });
  }

  protected fail(problems: SourceProblem[]): void {
    this.sink?.failed({ origin: this.origin, problems });
  }
}
