import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { parseSnapshotFile } from '../../core/index.js';
import { buildIndexInSlices, SerialRunner, type SnapshotSink, type SnapshotSource, type SourceProblem } from './source.js';
import { DirectoryWatch } from './watch.js';

export interface SnapshotFileOptions {
  readonly debounceMs?: number;
  readonly rescanMs?: number;
  readonly sliceMs?: number;
}

/**
 * `--snapshot-file FILE`: the single-file snapshot of core (header line + scope lines), typically a key
 * of a mounted ConfigMap. The containing directory is watched, so kubelet's atomic update (a new
 * timestamped directory, then the `..data` symlink renamed over the old one) is seen as well as an
 * in-place write. A file that does not verify (truncated, half-written, corrupt) is refused whole.
 */
export class SnapshotFileSource implements SnapshotSource {
  readonly kind = 'snapshot-file';
  readonly origin: string;
  private sink: SnapshotSink | null = null;
  private watch: DirectoryWatch | null = null;
  private readonly runner = new SerialRunner(() => this.reload());
  private forced = true;
  private lastSignature: string | null = null;
  private lastGeneration: string | null = null;

  constructor(
    private readonly file: string,
    private readonly options: SnapshotFileOptions = {},
  ) {
    this.origin = file;
  }

  async start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
    const name = basename(this.file);
    this.watch = new DirectoryWatch(dirname(this.file), (reason) => this.changed(reason), {
      debounceMs: this.options.debounceMs ?? 100,
      rescanMs: this.options.rescanMs ?? 10_000,
      // The file itself, and kubelet's `..data` / `..data_tmp` / `..<timestamp>` entries of a ConfigMap volume.
      relevant: (entry) => entry === name || entry.startsWith('..'),
    });
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

  private async reload(): Promise<void> {
    const started = performance.now();
    const forced = this.forced;
    this.forced = false;
    const name = basename(this.file);
    let text: string;
    try {
      // Resolve the symlinks first (FILE → ..data/FILE → ..<timestamp>/FILE): a swap changes the real path.
      const real = await realpath(this.file);
      const s = await stat(real);
      const signature = `${real}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
      if (!forced && signature === this.lastSignature) return;
      this.lastSignature = signature;
      text = await readFile(real, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'error';
      const signature = `error:${code}`;
      if (signature !== this.lastSignature) {
        this.lastSignature = signature;
        this.fail([{ file: name, message: code === 'ENOENT' ? 'the snapshot file does not exist (yet)' : `cannot read the snapshot file: ${(e as Error).message}` }]);
      }
      return;
    }
    if (this.runner.isStopped) return;
    const parsed = parseSnapshotFile(text);
    if (!parsed.ok) {
      const m = /^line (\d+): (.*)$/.exec(parsed.error);
      this.fail([m ? { file: name, field: `line ${m[1]}`, message: m[2]! } : { file: name, field: 'header', message: parsed.error }]);
      return;
    }
    const { header, lines } = parsed.value;
    // The generation in service (the file was rewritten or re-linked with the same content): nothing to build.
    if (header.generation === this.lastGeneration) return;
    const built = await buildIndexInSlices(lines, header.generation, { sliceMs: this.options.sliceMs, cancelled: () => this.runner.isStopped });
    if (this.runner.isStopped) return;
    if (!built.ok) {
      // Scope line n is line n + 1 of the file (the header is line 1).
      this.fail([{ file: name, field: `line ${built.error.line + 1}`, message: built.error.message }]);
      return;
    }
    if (built.value.tokenCount !== header.tokens || built.value.scopeCount !== header.scopes) {
      this.fail([{ file: name, field: 'header.tokens', message: `the header announces ${header.scopes} scopes and ${header.tokens} tokens, the file has ${built.value.scopeCount} and ${built.value.tokenCount}` }]);
      return;
    }
    this.lastGeneration = header.generation;
    this.sink?.loaded({ index: built.value, origin: this.file, loadMs: performance.now() - started });
  }

  private fail(problems: SourceProblem[]): void {
    this.sink?.failed({ origin: this.file, problems });
  }
}
