/**
 * The manifest directory's lock: `DIR/.svc.lock`, created with O_EXCL and holding who took it (pid, host, since),
 * so concurrent invocations of the CLI serialize their read-modify-write. A lock whose process is gone (same
 * host), that was never written, or that is far older than any edit takes is broken; a live holder is waited
 * for, with backoff, up to a timeout that names it.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { backoffDelay } from '../../lib/backoff.js';
import { failure } from '../errors.js';

export const LOCK_FILE = '.svc.lock';
/** A lock file still empty after this long was left by a process that died between create and write. */
const EMPTY_LOCK_GRACE_MS = 10_000;
/** No legitimate edit holds the lock this long; a lock this old is stale whatever its pid says. */
const MAX_LOCK_AGE_MS = 10 * 60_000;
/** Short waits first (an edit holds the lock for milliseconds), spread so waiting invocations do not collide again. */
const LOCK_BACKOFF = { initialMs: 2, maxMs: 100, jitter: [1, 2] } as const;

interface LockOptions {
  /** How long to wait for another invocation's lock before giving up. */
  readonly timeoutMs: number;
  /** Called when the lock cannot be created because the path is missing: throws the store's error for its directory. */
  readonly checkDirectory: () => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Takes the directory's lock; returns its release. Waits (bounded, with backoff) while another invocation holds it. */
export async function lockDirectory(dir: string, options: LockOptions): Promise<() => void> {
  const path = join(dir, LOCK_FILE);
  const mine = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString(), nonce: randomBytes(6).toString('hex') })}\n`;
  const deadline = Date.now() + options.timeoutMs;
  let waits = 0;
  for (;;) {
    if (tryCreate(dir, path, mine, options)) return () => release(path, mine);
    const holder = breakIfStale(path);
    if (Date.now() >= deadline) {
      const by = holder === 'gone' ? 'something else' : holder;
      throw failure(`${dir} is locked by ${by} for more than ${Math.round(options.timeoutMs / 1000)} s; if no svc is running there, remove ${path} (nothing was changed)`);
    }
    if (holder === 'gone') continue;
    await sleep(backoffDelay(++waits, LOCK_BACKOFF));
  }
}

/** Creates the lock file with our text; false when it exists already. Any other failure is the caller's error. */
function tryCreate(dir: string, path: string, mine: string, options: LockOptions): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
    writeSync(fd, mine);
    closeSync(fd);
    return true;
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw failure(`cannot write to ${dir} (${code === 'EROFS' ? 'read-only file system' : 'permission denied'}): edits need write access to the directory`);
    }
    if (code === 'ENOENT') options.checkDirectory();
    if (code !== 'EEXIST') throw failure(`cannot create the lock ${path}: ${(e as Error).message}`);
    return false;
  }
}

/** Removes the lock if it is still ours (a lock broken as stale and taken by another is theirs). */
function release(path: string, mine: string): void {
  try {
    if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
  } catch {
    // already gone: nothing to release
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
  moveAside(path, text);
  return 'gone';
}

/** Moves a stale lock aside atomically; if what moved is not what was judged (a new holder got in), puts it back. */
function moveAside(path: string, judged: string): void {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch {
    return;
  }
  try {
    if (readFileSync(aside, 'utf8') !== judged) {
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
}
