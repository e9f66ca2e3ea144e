import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { snapshotFileVerifier } from '../../core/index.js';
import { buildIndexInSlices, feedInSlices } from './source.js';
import type { DirectoryWatchOptions } from './watch.js';
import { WatchedSource } from './watched-source.js';

export interface SnapshotFileOptions {
  readonly debounceMs?: number;
  readonly rescanMs?: number;
  readonly sliceMs?: number;
}

/**
 * `--snapshot-file FILE`: the single-file snapshot of core (header line + scope lines), typically a key
 * of a mounted ConfigMap. The containing directory is watched, so kubelet's atomic update (a new
 * timestamped directory, then the `..data` symlink renamed over the old one) is seen as well as an
 * in-place write. A file that does not verify (truncated, half-written, corrupt) is refused whole. The file
 * is read as bytes and verified and decoded a chunk at a time (core's SnapshotFileVerifier), then the index
 * is built a slice at a time, so a reload of a 9 MB snapshot never holds the event loop for more than about
 * a millisecond at a time (garbage collection aside).
 */
export class SnapshotFileSource extends WatchedSource {
  readonly kind = 'snapshot-file';

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
      bytes = await readFile(real);
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
    // Verified (header, line count, generation) and decoded a chunk at a time between requests: decoding,
    // splitting and hashing the whole file in one go held the event loop for ~15-20 ms on every reload.
    const verifier = snapshotFileVerifier();
    const fed = await feedInSlices(bytes, (chunk) => verifier.update(chunk), { sliceMs: this.options.sliceMs, cancelled: () => this.runner.isStopped });
    if (!fed || this.runner.isStopped) return;
    const parsed = verifier.finish();
    if (!parsed.ok) {
      const m = /^line (\d+): (.*)$/.exec(parsed.error);
      this.fail([m ? { file: name, field: `line ${m[1]}`, message: m[2]! } : { file: name, field: 'header', message: parsed.error }]);
      return;
    }
    const { header, lines } = parsed.value;
    // The generation in service (the file was rewritten or re-linked with the same content): nothing to build.
    if (header.generation === this.lastGeneration) return;
    // The header's count sizes the token table. It is not covered by the generation, so it is believed only
    // up to what the file could hold: a token record takes more than 80 bytes of a scope line.
    const expectedTokens = Math.min(header.tokens, Math.floor(bytes.length / 80));
    const built = await buildIndexInSlices(lines, header.generation, { sliceMs: this.options.sliceMs, cancelled: () => this.runner.isStopped, expectedTokens });
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
    this.loaded(built.value, header.generation, started);
  }

}
