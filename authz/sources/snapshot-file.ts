// `--snapshot-file`: a compiled snapshot file read in verified chunks, rewatched through kubelet's symlink swaps.
import { open, realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { snapshotFileVerifier } from '../../core/index.js';
import { SliceClock } from '../../lib/time-slice.js';
import { DEFAULT_SLICE_MS, SlicedIndexBuild } from './source.js';
import type { DirectoryWatchOptions } from './watch.js';
import { WatchedSource } from './watched-source.js';

/**
 * Bytes verified at a time: ~0.4 ms of SHA-256 and UTF-8 decoding here, and above V8's 128 KiB
 * large-object threshold for the strings decoded from a chunk, so the scavenger never copies them (with
 * 64 KiB chunks, verifying the 9 MB bench snapshot cost three times the GC pause time).
 */
const CHUNK_BYTES = 256 * 1024;

/** Bytes asked of the file at a time: short reads in the thread pool. */
const READ_BYTES = 512 * 1024;

/**
 * Reads files into one buffer kept from read to read (it grows to the largest file seen). A fresh 9 MB
 * buffer per reload is 9 MB more external memory for the GC to reckon with, and its first touch
 * page-faults in the thread pool while the event loop needs the same memory map: ~20 ms stalls measured
 * here. What read() returns is valid until the next read() (reloads run one at a time).
 */
class ReusedBufferReader {
  private buffer = Buffer.alloc(0);

  async read(path: string): Promise<Buffer> {
    const file = await open(path, 'r');
    try {
      const { size } = await file.stat();
      // One byte more than the size, so a file that grew since is noticed without a second pass.
      if (this.buffer.length < size + 1) this.buffer = Buffer.allocUnsafeSlow(size + 1);
      let length = 0;
      for (;;) {
        if (length === this.buffer.length) {
          const bigger = Buffer.allocUnsafeSlow(this.buffer.length * 2);
          this.buffer.copy(bigger);
          this.buffer = bigger;
        }
        const { bytesRead } = await file.read(this.buffer, length, Math.min(READ_BYTES, this.buffer.length - length), length);
        if (bytesRead === 0) return this.buffer.subarray(0, length);
        length += bytesRead;
      }
    } finally {
      await file.close();
    }
  }
}

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
 *
 * The file is read as bytes into a buffer kept from reload to reload, then verified and decoded a chunk at
 * a time (core's SnapshotFileVerifier), and each chunk's lines go straight into the next index, built a
 * slice at a time, so a reload of a 9 MB snapshot never holds the event loop for more than about a
 * millisecond at a time (garbage collection aside) and keeps neither the file's bytes nor its lines. The
 * index built along the way is used only once the whole file has verified.
 */
export class SnapshotFileSource extends WatchedSource {
  readonly kind = 'snapshot-file';
  private readonly reader = new ReusedBufferReader();

  constructor(
    private readonly file: string,
    private readonly options: SnapshotFileOptions = {},
  ) {
    super(file);
  }

  protected watched(): { readonly dir: string; readonly options: DirectoryWatchOptions } {
    const name = basename(this.file);
    return {
      dir: dirname(this.file),
      options: {
        debounceMs: this.options.debounceMs ?? 100,
        rescanMs: this.options.rescanMs ?? 10_000,
        // The file itself, and kubelet's `..data` / `..data_tmp` / `..<timestamp>` entries of a ConfigMap volume.
        relevant: (entry) => entry === name || entry.startsWith('..'),
      },
    };
  }

  protected async reload(): Promise<void> {
    const started = performance.now();
    const forced = this.takeForced();
    const name = basename(this.file);
    let bytes: Buffer;
    try {
      // Resolve the symlinks first (FILE → ..data/FILE → ..<timestamp>/FILE): a swap changes the real path.
      const real = await realpath(this.file);
      const s = await stat(real);
      const signature = `${real}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
      if (!forced && signature === this.lastSignature) return;
      this.lastSignature = signature;
      // Bytes, not text: decoding 9 MB in one go holds the event loop for ~8 ms; the verifier decodes line runs as it goes.
      bytes = await this.reader.read(real);
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
    await this.verifyAndBuild(bytes, name, started);
  }

  /**
   * Verifies the file's bytes a chunk at a time and builds the next index from each chunk's lines as they
   * come; loads it only once the whole file has verified and every line was good.
   */
  private async verifyAndBuild(bytes: Buffer, name: string, started: number): Promise<void> {
    const cancelled = () => this.runner.isStopped;
    const verifier = snapshotFileVerifier();
    // Created once the header is known, unless its generation is the one in service (then the file is
    // only verified). The header's token count sizes the token table; the generation does not cover the
    // header, so the count is believed only up to what the file could hold (a token record takes more than
    // 80 bytes of a scope line).
    let build: SlicedIndexBuild | null | undefined;
    const clock = new SliceClock(this.options.sliceMs ?? DEFAULT_SLICE_MS);
    for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
      verifier.update(bytes.subarray(at, at + CHUNK_BYTES));
      const header = verifier.header;
      if (build === undefined && header !== undefined) {
        const expectedTokens = Math.min(header.tokens, Math.floor(bytes.length / 80));
        build = header.generation === this.lastGeneration ? null : new SlicedIndexBuild({ sliceMs: this.options.sliceMs, cancelled, expectedTokens }, clock);
      }
      const lines = verifier.takeLines();
      if (build && !(await build.add(lines))) return;
      await clock.pause();
      if (cancelled()) return;
    }
    const parsed = verifier.finish();
    if (!parsed.ok) {
      const m = /^line (\d+): (.*)$/.exec(parsed.error);
      this.fail([m ? { file: name, field: `line ${m[1]}`, message: m[2]! } : { file: name, field: 'header', message: parsed.error }]);
      return;
    }
    const { header, lines } = parsed.value;
    // The generation in service (the file was rewritten or re-linked with the same content): nothing to build.
    if (!build) return;
    if (!(await build.add(lines))) return;
    const built = build.finish(header.generation);
    if (!built.ok) {
      // Scope line n is line n + 1 of the file (the header is line 1).
      this.fail([{ file: name, field: `line ${built.error.line + 1}`, message: built.error.message }]);
      return;
    }
    if (built.value.tokenCount !== header.tokens || built.value.scopeCount !== header.scopes) {
      this.fail([{ file: name, field: 'header.tokens', message: `the header announces ${header.scopes} scopes and ${header.tokens} tokens, the file has ${built.value.scopeCount} and ${built.value.tokenCount}` }]);
      return;
    }
    this.loaded(built.value, header.generation, started);
  }
}
