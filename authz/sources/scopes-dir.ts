// `--scopes-dir`: a directory of ProtectedScope manifests compiled into snapshots, rewatched as it changes (no cluster).
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { checkManifestDocument, compileSnapshotSteps, readManifestDocuments, type PathPrefixes, type ProtectedScope } from '../../core/index.js';
import { runInSlices, SliceClock } from '../../lib/time-slice.js';
import { buildIndexInSlices, DEFAULT_SLICE_MS, type SourceProblem } from './source.js';
import type { DirectoryWatchOptions } from './watch.js';
import { WatchedSource } from './watched-source.js';

export interface ScopesDirOptions {
  /** svc-auth's prefixes, which the compile reads path scopes against (a refused form is never public). */
  readonly prefixes?: PathPrefixes;
  readonly debounceMs?: number;
  readonly rescanMs?: number;
  readonly sliceMs?: number;
}

/**
 * The files read, as the CLI's directory backend reads them: YAML or JSON, one or several documents each;
 * not hidden files (kubelet's `..data`, editor swap files), not kustomization files, not subdirectories.
 */
export const MANIFEST_FILE = /^[^.].*\.(ya?ml|json)$/i;
const KUSTOMIZATION = /^kustomization\.ya?ml$/i;

interface Entry {
  readonly name: string;
  readonly signature: string;
}

/**
 * `--scopes-dir DIR`: every ProtectedScope in the directory's manifest files must be valid; they are
 * compiled in-process into a snapshot exactly as the operator would. One invalid file refuses the whole
 * reload, so a broken edit can never drop the tokens of the scope it protected.
 */
export class ScopesDirSource extends WatchedSource {
  readonly kind = 'scopes-dir';

  constructor(
    private readonly dir: string,
    private readonly options: ScopesDirOptions = {},
  ) {
    super(dir);
  }

  protected watched(): { readonly dir: string; readonly options: DirectoryWatchOptions } {
    return {
      dir: this.dir,
      options: {
        debounceMs: this.options.debounceMs ?? 150,
        rescanMs: this.options.rescanMs ?? 30_000,
        // Manifest files, and kubelet's `..data` entries when the directory is a mounted ConfigMap; not the
        // CLI's lock file or an editor's swap files.
        relevant: (entry) => MANIFEST_FILE.test(entry) || entry.startsWith('..'),
      },
    };
  }

  /** Re-reads the directory when it changed (or a reload was forced), then compiles and indexes it whole. */
  protected async reload(): Promise<void> {
    const started = performance.now();
    const forced = this.takeForced();
    const entries = await this.changedEntries(forced);
    if (entries === undefined) return;
    const read = await this.readObjects(entries);
    if (read === undefined || this.runner.isStopped) return;
    if (read.problems.length > 0) {
      this.fail(read.problems);
      return;
    }
    // Compiled in slices too: 10,000 scopes take ~150 ms.
    const compiled = await runInSlices(compileSnapshotSteps(read.objects, 32, this.options.prefixes), { sliceMs: this.options.sliceMs ?? DEFAULT_SLICE_MS, cancelled: () => this.runner.isStopped });
    if (!compiled.ok || this.runner.isStopped) return;
    const snapshot = compiled.value;
    if (snapshot.generation === this.lastGeneration) return;
    const built = await buildIndexInSlices(snapshot.lines, snapshot.generation, {
      sliceMs: this.options.sliceMs,
      cancelled: () => this.runner.isStopped,
      expectedTokens: snapshot.tokenCount,
    });
    if (this.runner.isStopped) return;
    if (!built.ok) {
      this.fail([{ field: `scope ${built.error.line}`, message: built.error.message }]);
      return;
    }
    this.loaded(built.value, snapshot.generation, started);
  }

  /** The directory's manifest files when their signature moved (or `forced`), else undefined; a read error is reported once. */
  private async changedEntries(forced: boolean): Promise<Entry[] | undefined> {
    let entries: Entry[];
    try {
      entries = await this.list();
    } catch (e) {
      const signature = `error:${(e as NodeJS.ErrnoException).code ?? ''}`;
      if (forced || signature !== this.lastSignature) {
        this.lastSignature = signature;
        this.fail([{ message: `cannot read the directory: ${(e as Error).message}` }]);
      }
      return undefined;
    }
    const signature = entries.map((e) => e.signature).join('\n');
    if (!forced && signature === this.lastSignature) return undefined;
    this.lastSignature = signature;
    return entries;
  }

  /**
   * Every ProtectedScope of the files, and every problem with them (any problem keeps the snapshot in service).
   * Between requests: awaiting each file lets the event loop turn, and a file of many documents is validated a
   * slice at a time (parsing one file's YAML is the one step that cannot be cut). Undefined once stopped.
   */
  private async readObjects(entries: readonly Entry[]): Promise<{ objects: ProtectedScope[]; problems: SourceProblem[] } | undefined> {
    const objects: ProtectedScope[] = [];
    const problems: SourceProblem[] = [];
    const names = new Map<string, string>();
    const clock = new SliceClock(this.options.sliceMs ?? DEFAULT_SLICE_MS);
    for (const entry of entries) {
      let text: string;
      try {
        text = await readFile(join(this.dir, entry.name), 'utf8');
      } catch (e) {
        problems.push({ file: entry.name, message: `cannot read the file: ${(e as Error).message}` });
        continue;
      }
      clock.restart();
      if (this.runner.isStopped) return undefined;
      const docs = readManifestDocuments(text);
      if (!docs.ok) {
        for (const e of docs.error) problems.push({ file: entry.name, ...(e.field ? { field: e.field } : {}), message: e.message });
        continue;
      }
      for (const [i, value] of docs.value.entries()) {
        await clock.pause();
        const doc = checkManifestDocument(value, i, docs.value.length);
        if (!doc.ok) {
          for (const e of doc.error) problems.push({ file: entry.name, field: e.field, message: e.message });
          continue;
        }
        if (!doc.value.object) continue;
        const name = doc.value.object.metadata.name;
        const seen = names.get(name);
        if (seen !== undefined) {
          const where = docs.value.length > 1 ? `documents[${i}].metadata.name` : 'metadata.name';
          problems.push({ file: entry.name, field: where, message: `ProtectedScope "${name}" is also defined in ${seen}: object names must be unique in a directory` });
        } else {
          names.set(name, entry.name);
          objects.push(doc.value.object);
        }
      }
    }
    return { objects, problems };
  }

  /** The manifest files, sorted, each with a signature that changes whenever its content may have. */
  private async list(): Promise<Entry[]> {
    const dirents = await readdir(this.dir, { withFileTypes: true });
    const names = dirents
      .filter((d) => (d.isFile() || d.isSymbolicLink()) && MANIFEST_FILE.test(d.name) && !KUSTOMIZATION.test(d.name))
      .map((d) => d.name)
      .sort();
    const entries: Entry[] = [];
    for (const name of names) {
      try {
        const s = await stat(join(this.dir, name)); // follows symlinks (a mounted ConfigMap's keys are symlinks)
        if (!s.isFile()) continue;
        entries.push({ name, signature: `${name}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}` });
      } catch {
        entries.push({ name, signature: `${name}:unreadable` });
      }
    }
    return entries;
  }
}
