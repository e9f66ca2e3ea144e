import type { AccessIndex } from '../../core/index.js';
import type { SnapshotSink, SnapshotSource } from '../../authz/sources/source.js';

/** For svc-auth's server tests: a snapshot source that hands over a fixed index at start (or nothing: never ready). */
export class StaticSource implements SnapshotSource {
  readonly kind = 'static';
  readonly origin = 'test';
  started = false;
  constructor(private readonly index: AccessIndex | null) {}
  start(sink: SnapshotSink): Promise<void> {
    this.started = true;
    if (this.index) sink.loaded({ index: this.index, origin: this.origin, loadMs: 0 });
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}
