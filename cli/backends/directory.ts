/**
 * The manifest-directory backend: one ProtectedScope per file, `DIR/<scopeObjectName>.yaml`, the layout a
 * GitOps repository holds and `svc-auth --scopes-dir` reads. Hand-written files may hold several
 * documents and other kinds of object; the CLI reads every `*.yaml`, `*.yml` and `*.json` file (not
 * dotfiles, not kustomization files), validates every ProtectedScope with core's rules, and refuses to
 * work on a directory with an invalid one (naming the file and the field) rather than guess.
 *
 * Writes are read-modify-write under the directory's lock (directory-lock.ts); each edited file keeps its other
 * documents' bytes (manifest-splice.ts) and is replaced atomically, all files or none (atomic-write.ts), so
 * concurrent invocations serialize and a reader never sees half a file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  dumpManifests,
  formatFieldErrors,
  readManifestFile,
  scopeKey,
  scopeOf,
  validateProtectedScope,
  type ProtectedScope,
  type Scope,
} from '../../core/index.js';
import { failure } from '../errors.js';
import { modeOf, writeAllOrNone, writeAtomically, type FileWrite, type ReplaceFile } from './atomic-write.js';
import { sameSpec, type Mutate, type ScopeEdit, type ScopeStore, type StoredScope, type UpdateOptions, type UpdateResult } from './backend.js';
import { lockDirectory } from './directory-lock.js';
import { renderFile, type ManifestText } from './manifest-splice.js';

interface DirectoryStoreOptions {
  readonly dir: string;
  /** Set on objects the CLI creates (`-n`); a directory otherwise leaves the namespace to kustomize/Argo CD. */
  readonly namespace?: string;
  /** How long to wait for another invocation's lock before giving up; default 60 s. */
  readonly lockTimeoutMs?: number;
  /** Replaces one file (temp file, fsync, rename); tests put in one that fails to see a failed edit undone. */
  readonly replaceFile?: ReplaceFile;
}

const MANIFEST = /\.(ya?ml|json)$/i;
const KUSTOMIZATION = /^kustomization\.ya?ml$/i;

interface Doc {
  value: unknown;
  object?: ProtectedScope;
}

/** A file as read: its documents parsed, the text kept for an edit (split at `---` lines only then, so reading 1,000 files stays cheap). */
interface ManifestFile extends ManifestText {
  readonly name: string;
  readonly docs: Doc[];
}

/** The writes one or more scopes' edits come to, composed before any is made. */
interface Pending {
  readonly edits: Map<ManifestFile, Map<number, ProtectedScope>>;
  readonly created: { path: string; object: ProtectedScope }[];
}

interface Loaded {
  readonly files: ManifestFile[];
  /** Object name → where it is. */
  readonly byName: Map<string, { file: ManifestFile; doc: number }>;
}

export class DirectoryStore implements ScopeStore {
  readonly kind = 'directory' as const;
  readonly where: string;
  readonly namespace: string | undefined;
  private readonly dir: string;
  private readonly lockTimeoutMs: number;
  private readonly replaceFile: ReplaceFile;

  constructor(options: DirectoryStoreOptions) {
    this.dir = options.dir;
    this.namespace = options.namespace;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 60_000;
    this.replaceFile = options.replaceFile ?? writeAtomically;
    this.where = `directory ${options.dir}`;
  }

  async list(): Promise<StoredScope[]> {
    return this.stored(this.load());
  }

  async get(scope: Scope): Promise<StoredScope[]> {
    const key = scopeKey(scope);
    return this.stored(this.load()).filter((s) => scopeKey(scopeOf(s.object.spec)) === key);
  }

  async update(scope: Scope, mutate: Mutate, options: UpdateOptions = {}): Promise<UpdateResult> {
    return (await this.updateAll([{ scope, mutate }], options))[0]!;
  }

  async updateAll(edits: readonly ScopeEdit[], options: UpdateOptions = {}): Promise<UpdateResult[]> {
    if (options.dryRun) {
      this.checkDirectory();
      return this.apply(this.load(), edits, false);
    }
    const release = await lockDirectory(this.dir, { timeoutMs: this.lockTimeoutMs, checkDirectory: () => this.checkDirectory() });
    try {
      return this.apply(this.load(), edits, true);
    } finally {
      release();
    }
  }

  private stored(loaded: Loaded): StoredScope[] {
    const out: StoredScope[] = [];
    for (const file of loaded.files) for (const doc of file.docs) if (doc.object) out.push({ object: doc.object, location: file.path });
    return out;
  }

  private checkDirectory(): void {
    let isDir: boolean;
    try {
      isDir = statSync(this.dir).isDirectory();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw failure(`directory ${this.dir} does not exist: create it (mkdir -p ${this.dir}) or check --dir / SVC_SCOPES_DIR`);
      throw failure(`cannot read directory ${this.dir}: ${(e as Error).message}`);
    }
    if (!isDir) throw failure(`${this.dir} is not a directory: --dir / SVC_SCOPES_DIR must name a directory of ProtectedScope manifests`);
  }

  /** Reads and validates every manifest; any problem is an error naming the file (and field). */
  private load(): Loaded {
    this.checkDirectory();
    let names: string[];
    try {
      names = readdirSync(this.dir, { withFileTypes: true })
        .filter((d) => !d.isDirectory() && MANIFEST.test(d.name) && !d.name.startsWith('.') && !KUSTOMIZATION.test(d.name))
        .map((d) => d.name)
        .sort();
    } catch (e) {
      throw failure(`cannot read directory ${this.dir}: ${(e as Error).message}`);
    }
    const files: ManifestFile[] = [];
    const byName = new Map<string, { file: ManifestFile; doc: number }>();
    for (const name of names) {
      const file = this.readFile(name);
      files.push(file);
      file.docs.forEach((doc, i) => {
        if (!doc.object) return;
        const objectName = doc.object.metadata.name;
        const seen = byName.get(objectName);
        if (seen) {
          throw failure(`${seen.file.path} and ${file.path} both define ProtectedScope "${objectName}": object names must be unique in a directory; rename or merge one (nothing was changed)`);
        }
        byName.set(objectName, { file, doc: i });
      });
    }
    return { files, byName };
  }

  private readFile(name: string): ManifestFile {
    const path = join(this.dir, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw failure(`cannot read ${path}: ${(e as Error).message}`);
    }
    const read = readManifestFile(text);
    if (!read.ok) throw failure(`${path}: ${formatFieldErrors(read.error)} (fix the file; nothing was changed)`);
    const docs: Doc[] = read.value.map((d) => (d.object ? { value: d.value, object: d.object } : { value: d.value }));
    return { name, path, json: /\.json$/i.test(name), docs, text };
  }

  /** Every edit computed and checked, every file composed, then (when `write`) written: all of them or none. */
  private apply(loaded: Loaded, edits: readonly ScopeEdit[], write: boolean): UpdateResult[] {
    const pending: Pending = { edits: new Map(), created: [] };
    const results = edits.map((e) => this.compute(loaded, e.scope, e.mutate, pending));
    // Compose every new file text first, so a problem stops the edit before anything is written.
    const texts: FileWrite[] = [];
    for (const [file, fileEdits] of pending.edits) texts.push({ path: file.path, text: renderFile(file, fileEdits), mode: modeOf(file.path), before: file.text });
    for (const c of pending.created) texts.push({ path: c.path, text: dumpManifests([c.object]), mode: 0o644 });
    if (write) writeAllOrNone(this.dir, texts, this.replaceFile);
    return results;
  }

  /** One scope's edit: its objects' new versions added to `pending`, nothing written. */
  private compute(loaded: Loaded, scope: Scope, mutate: Mutate, pending: Pending): UpdateResult {
    const key = scopeKey(scope);
    const current = this.stored(loaded).map((s) => s.object).filter((o) => scopeKey(scopeOf(o.spec)) === key);
    const next = mutate(current, 0);
    const written: string[] = [];
    for (const object of next) {
      const checked = validateProtectedScope(object);
      if (!checked.ok) throw failure(`refusing to write ProtectedScope "${object.metadata.name}": ${formatFieldErrors(checked.error)} (nothing was changed)`);
      if (scopeKey(scopeOf(object.spec)) !== key) throw new Error(`internal: an edit of ${key} changed the scope of ${object.metadata.name}`);
      const at = loaded.byName.get(object.metadata.name);
      if (at) {
        const before = at.file.docs[at.doc]!.object!;
        if (scopeKey(scopeOf(before.spec)) !== key) {
          throw failure(`${at.file.path} holds ProtectedScope "${object.metadata.name}" for ${scopeKey(scopeOf(before.spec))}, not ${key}: rename that object (nothing was changed)`);
        }
        if (sameSpec(before, object)) continue;
        const fileEdits = pending.edits.get(at.file) ?? new Map<number, ProtectedScope>();
        fileEdits.set(at.doc, object);
        pending.edits.set(at.file, fileEdits);
      } else {
        const path = join(this.dir, `${object.metadata.name}.yaml`);
        if (loaded.files.some((f) => f.path === path) || pending.created.some((c) => c.path === path) || exists(path)) {
          throw failure(`${path} exists but does not define ProtectedScope "${object.metadata.name}": rename that file (nothing was changed)`);
        }
        pending.created.push({ path, object });
      }
      written.push(object.metadata.name);
    }
    const byName = new Map(current.map((o) => [o.metadata.name, o]));
    for (const o of next) byName.set(o.metadata.name, o);
    return { objects: [...byName.values()], written };
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
