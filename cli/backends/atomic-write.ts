/**
 * Replacing files so that a reader never sees half of one: each file is written to a temp file in the same
 * directory, fsynced and renamed over the target; a set of files is written all or none (when one fails, the
 * ones written before it get their old bytes back and the created ones go).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, openSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { failure } from '../errors.js';

/** Replaces one file; the store's default is writeAtomically, tests put in one that fails. */
export type ReplaceFile = (dir: string, path: string, text: string, mode: number) => void;

export interface FileWrite {
  readonly path: string;
  readonly text: string;
  readonly mode: number;
  /** The file's text before (undefined: the file is new). */
  readonly before?: string;
}

/** Temp file in the same directory, fsync, rename over the target: readers see the old or the new file, never half. */
export function writeAtomically(dir: string, path: string, text: string, mode: number): void {
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
  syncDirectory(dir);
}

/** Makes the rename durable; best effort (not every file system supports a directory fsync). */
function syncDirectory(dir: string): void {
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

/** Permission bits to keep when a file is replaced (0644 for a new one). */
export function modeOf(path: string): number {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return 0o644;
  }
}

/** Writes the files in turn; when one fails, those already written get their old bytes back (created ones go). */
export function writeAllOrNone(dir: string, writes: readonly FileWrite[], replaceFile: ReplaceFile = writeAtomically): void {
  const done: FileWrite[] = [];
  try {
    for (const w of writes) {
      replaceFile(dir, w.path, w.text, w.mode);
      done.push(w);
    }
  } catch (e) {
    const left = done.reverse().filter((w) => !undo(dir, w, replaceFile));
    const message = e instanceof Error ? e.message : String(e);
    if (left.length === 0) throw failure(`${message} (nothing was changed: ${done.length === 0 ? 'no file had been written' : `the ${done.length} file${done.length === 1 ? '' : 's'} written before it got their old contents back`})`);
    throw failure(`${message}; and ${left.map((w) => w.path).join(', ')} could not be put back: restore ${left.length === 1 ? 'it' : 'them'} from version control`);
  }
}

/** Puts one written file back as it was; false when that failed too. */
function undo(dir: string, w: FileWrite, replaceFile: ReplaceFile): boolean {
  try {
    if (w.before === undefined) unlinkSync(w.path);
    else replaceFile(dir, w.path, w.before, w.mode);
    return true;
  } catch {
    return false;
  }
}
