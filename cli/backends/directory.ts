/**
 * The manifest-directory backend: one ProtectedScope per file, `DIR/<scopeObjectName>.yaml`, the layout a
 * GitOps repository holds and `svc-auth --scopes-dir` reads. Hand-written files may hold several
 * documents and other kinds of object; the CLI reads every `*.yaml`, `*.yml` and `*.json` file (not
 * dotfiles, not kustomization files), validates every ProtectedScope with core's rules, and refuses to
 * work on a directory with an invalid one (naming the file and the field) rather than guess.
 *
 * Writes are read-modify-write under an exclusive lock file (`DIR/.svc.lock`, created with O_EXCL; a
 * lock whose process is gone is broken), and each file is replaced atomically (temp file, fsync, rename),
 * so concurrent invocations serialize and a reader never sees half a file.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, linkSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  dumpManifests,
  formatFieldErrors,
  parseManifests,
  readManifestFile,
  scopeKey,
  scopeOf,
  validateProtectedScope,
  type ProtectedScope,
  type Scope,
} from '../../core/index.js';
import { backoffDelay } from '../../lib/backoff.js';
import { failure } from '../errors.js';
import { sameSpec, type Mutate, type ScopeEdit, type ScopeStore, type StoredScope, type UpdateOptions, type UpdateResult } from './backend.js';

interface DirectoryStoreOptions {
  readonly dir: string;
  /** Set on objects the CLI creates (`-n`); a directory otherwise leaves the namespace to kustomize/Argo CD. */
  readonly namespace?: string;
  /** How long to wait for another invocation's lock before giving up; default 60 s. */
  readonly lockTimeoutMs?: number;
  /** Replaces one file (temp file, fsync, rename); tests put in one that fails to see a failed edit undone. */
  readonly replaceFile?: (dir: string, path: string, text: string, mode: number) => void;
}

export const LOCK_FILE = '.svc.lock';
const MANIFEST = /\.(ya?ml|json)$/i;
const KUSTOMIZATION = /^kustomization\.ya?ml$/i;
/** A lock file still empty after this long was left by a process that died between create and write. */
const EMPTY_LOCK_GRACE_MS = 10_000;
/** No legitimate edit holds the lock this long; a lock this old is stale whatever its pid says. */
const MAX_LOCK_AGE_MS = 10 * 60_000;

interface Doc {
  value: unknown;
  object?: ProtectedScope;
}

interface Chunk {
  /** The raw text of this part of the file (a `---` line, comments, one document). */
  text: string;
  /** Index into ManifestFile.docs of the document in this chunk, if any. */
  doc?: number;
}

interface ManifestFile {
  readonly name: string;
  readonly path: string;
  readonly json: boolean;
  readonly docs: Doc[];
  /** The text as read: an edit splits it at `---` lines (only then, so reading 1,000 files stays cheap). */
  readonly text: string;
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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Short waits first (an edit holds the lock for milliseconds), spread so waiting invocations do not collide again. */
const LOCK_BACKOFF = { initialMs: 2, maxMs: 100, jitter: [1, 2] } as const;

export class DirectoryStore implements ScopeStore {
  readonly kind = 'directory' as const;
  readonly where: string;
  readonly namespace: string | undefined;
  private readonly dir: string;
  private readonly lockTimeoutMs: number;
  private readonly replaceFile: (dir: string, path: string, text: string, mode: number) => void;

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
    const release = await this.lock();
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
    if (write) this.writeAll(texts);
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

  /** Writes the files in turn; when one fails, those already written get their old bytes back (created ones go). */
  private writeAll(texts: readonly FileWrite[]): void {
    const done: FileWrite[] = [];
    try {
      for (const t of texts) {
        this.replaceFile(this.dir, t.path, t.text, t.mode);
        done.push(t);
      }
    } catch (e) {
      const left = done.reverse().filter((t) => !this.undo(t));
      const message = e instanceof Error ? e.message : String(e);
      if (left.length === 0) throw failure(`${message} (nothing was changed: ${done.length === 0 ? 'no file had been written' : `the ${done.length} file${done.length === 1 ? '' : 's'} written before it got their old contents back`})`);
      throw failure(`${message}; and ${left.map((t) => t.path).join(', ')} could not be put back: restore ${left.length === 1 ? 'it' : 'them'} from version control`);
    }
  }

  /** Puts one written file back as it was; false when that failed too. */
  private undo(t: FileWrite): boolean {
    try {
      if (t.before === undefined) unlinkSync(t.path);
      else this.replaceFile(this.dir, t.path, t.before, t.mode);
      return true;
    } catch {
      return false;
    }
  }

  /** Takes the directory's lock; returns its release. Waits (bounded, with backoff) while another invocation holds it. */
  private async lock(): Promise<() => void> {
    const path = join(this.dir, LOCK_FILE);
    const mine = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString(), nonce: randomBytes(6).toString('hex') })}\n`;
    const deadline = Date.now() + this.lockTimeoutMs;
    let waits = 0;
    for (;;) {
      let fd: number | undefined;
      try {
        fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
        writeSync(fd, mine);
        closeSync(fd);
        return () => {
          try {
            if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
          } catch {
            // already gone: nothing to release
          }
        };
      } catch (e) {
        if (fd !== undefined) closeSync(fd);
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
          throw failure(`cannot write to ${this.dir} (${code === 'EROFS' ? 'read-only file system' : 'permission denied'}): edits need write access to the directory`);
        }
        if (code === 'ENOENT') this.checkDirectory();
        if (code !== 'EEXIST') throw failure(`cannot create the lock ${path}: ${(e as Error).message}`);
      }
      const holder = breakIfStale(path);
      if (Date.now() >= deadline) {
        const by = holder === 'gone' ? 'something else' : holder;
        throw failure(`${this.dir} is locked by ${by} for more than ${Math.round(this.lockTimeoutMs / 1000)} s; if no svc is running there, remove ${path} (nothing was changed)`);
      }
      if (holder === 'gone') continue;
      await sleep(backoffDelay(++waits, LOCK_BACKOFF));
    }
  }
}

interface FileWrite {
  readonly path: string;
  readonly text: string;
  readonly mode: number;
  /** The file's text before (undefined: the file is new). */
  readonly before?: string;
}

/** Permission bits to keep when a file is replaced. */
function modeOf(path: string): number {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return 0o644;
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

/**
 * Splits a file at `---` lines so an edit can rewrite its own document and keep the others byte for byte.
 * Returns undefined when the split does not reproduce exactly what the whole-file parse gave (directives,
 * `...` markers, odd layouts): the file is then rewritten whole.
 */
function splitChunks(text: string, whole: readonly unknown[]): Chunk[] | undefined {
  const parts: string[] = [];
  let current = '';
  for (const line of text.split(/(?<=\n)/)) {
    if (/^---(\s.*)?$/.test(line.replace(/\r?\n$/, '')) && current !== '') {
      parts.push(current);
      current = line;
    } else {
      current += line;
    }
  }
  if (current !== '') parts.push(current);
  const chunks: Chunk[] = [];
  let doc = 0;
  for (const part of parts) {
    const parsed = parseManifests(part);
    if (!parsed.ok || parsed.value.length > 1) return undefined;
    if (parsed.value.length === 1) {
      if (JSON.stringify(parsed.value[0]) !== JSON.stringify(whole[doc])) return undefined;
      chunks.push({ text: part, doc: doc++ });
    } else {
      chunks.push({ text: part });
    }
  }
  return doc === whole.length ? chunks : undefined;
}

/** The file's new text with some documents replaced; untouched documents keep their bytes where possible. */
function renderFile(file: ManifestFile, edits: ReadonlyMap<number, ProtectedScope>): string {
  if (file.json) {
    if (file.docs.length !== 1) throw failure(`${file.path}: a JSON manifest must hold one object`);
    return `${JSON.stringify(edits.get(0) ?? file.docs[0]!.value, null, 2)}\n`;
  }
  const chunks = splitChunks(file.text, file.docs.map((d) => d.value));
  if (!chunks) return dumpManifests(file.docs.map((d, i) => edits.get(i) ?? d.value));
  return chunks
    .map((chunk) => {
      const edited = chunk.doc === undefined ? undefined : edits.get(chunk.doc);
      if (!edited) return chunk.text.endsWith('\n') || chunk === chunks.at(-1) ? chunk.text : `${chunk.text}\n`;
      return leadingTrivia(chunk.text) + dumpManifests([edited]);
    })
    .join('');
}

/** The `---` line, comments and blank lines before a document's first content line (kept when it is rewritten). */
function leadingTrivia(text: string): string {
  let out = '';
  for (const line of text.split(/(?<=\n)/)) {
    const bare = line.replace(/\r?\n$/, '');
    if (/^---\s*$/.test(bare) || /^\s*(#.*)?$/.test(bare)) out += line.endsWith('\n') ? line : `${line}\n`;
    else break;
  }
  return out;
}

/** Temp file in the same directory, fsync, rename over the target: readers see the old or the new file, never half. */
function writeAtomically(dir: string, path: string, text: string, mode: number): void {
  const tmp = join(dir, `.${path.slice(dir.length).replace(/^[/\\]+/, '')}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode);
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // never created
    }
    throw failure(`cannot write ${path}: ${(e as Error).message}`);
  }
  try {
    const dfd = openSync(dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // directory fsync is best effort (not supported everywhere)
  }
}

interface LockInfo {
  pid?: number;
  host?: string;
  since?: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Breaks the lock if its holder is gone (same host, pid not running), it was never written, or it is far
 * older than any edit takes. Returns 'gone' when the caller should try again at once, else a description
 * of the live holder for the timeout message.
 */
function breakIfStale(path: string): 'gone' | string {
  let text: string;
  let mtimeMs: number;
  try {
    text = readFileSync(path, 'utf8');
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    return 'gone';
  }
  let info: LockInfo = {};
  try {
    info = JSON.parse(text) as LockInfo;
  } catch {
    // empty or torn: judged by age below
  }
  const age = Date.now() - mtimeMs;
  const stale =
    typeof info.pid !== 'number'
      ? age > EMPTY_LOCK_GRACE_MS
      : age > MAX_LOCK_AGE_MS || (info.host === hostname() && !isAlive(info.pid));
  if (!stale) return `pid ${info.pid ?? '?'} on ${info.host ?? '?'} (since ${info.since ?? '?'})`;
  // Move the stale lock aside atomically; if what moved is not what we judged (a new holder got in), put it back.
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch {
    return 'gone';
  }
  try {
    if (readFileSync(aside, 'utf8') !== text) {
      try {
        linkSync(aside, path);
      } catch {
        // someone else holds a newer lock already; theirs stands
      }
    }
  } finally {
    try {
      unlinkSync(aside);
    } catch {
      // already removed
    }
  }
  return 'gone';
}
