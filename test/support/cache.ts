// The tool cache the suites share across runs and worktrees: Go builds (etcd, kube-apiserver, helm, Traefik, ...)
// and Python virtual environments (pygeoapi, Envoy), each in a directory named by tool, version and a hash of
// what decides its content, so a changed pin never reuses an old build. Filling an entry happens under a directory
// lock (several jest projects or worktrees may want the same tool at once) and never leaves a half-built entry.
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pidAlive } from './process.js';
import { sleep } from './wait.js';

function log(message: string): void {
  process.stderr.write(`[tool-cache] ${message}\n`);
}

/** ${SVC_ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-access-control} */
export function cacheRoot(): string {
  if (process.env.SVC_ASSETS_CACHE) return resolve(process.env.SVC_ASSETS_CACHE);
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'svc-access-control');
}

/**
 * `<cache root>/<name>-<version>-<12 hex>`, the hex being the sha-256 of `keyParts` fed in order, unseparated
 * (callers put their own separators in, which keeps the keys of existing caches unchanged).
 */
export function cacheEntryDir(name: string, version: string, keyParts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of keyParts) hash.update(part);
  return join(cacheRoot(), `${name}-${version}-${hash.digest('hex').slice(0, 12)}`);
}

/** An executable regular file (a symlink to one counts). */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Runs `fn` holding a directory lock (mkdir is atomic) that records the owner's pid. A lock whose owner died, or
 * one without a pid after 30 s (its owner died between mkdir and writing it), is taken over.
 */
export async function withLock<T>(lockDir: string, what: string, fn: () => Promise<T>): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let owner = NaN;
      try {
        owner = Number(readFileSync(join(lockDir, 'pid'), 'utf8'));
      } catch {
        // the owner has not written its pid yet, or just released the lock
      }
      let age: number;
      try {
        age = Date.now() - statSync(lockDir).mtimeMs;
      } catch {
        continue; // released between our mkdir and stat: try again at once
      }
      if ((Number.isFinite(owner) && owner > 0 && !pidAlive(owner)) || (!Number.isFinite(owner) && age > 30_000)) {
        log(`removing stale lock ${lockDir}`);
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (!announced) {
        log(`waiting for another build of ${what} (pid ${owner}, lock ${lockDir})`);
        announced = true;
      }
      await sleep(1000);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * Fills cache entry `dir` unless `done()` already says it is there: under `<dir>.lock`, `fill` writes into a
 * temporary sibling that is renamed to `dir` only when it succeeded, so a failed or interrupted build is never used.
 */
export async function fillCacheEntry(dir: string, what: string, done: () => boolean, fill: (tmp: string) => Promise<void>): Promise<void> {
  if (done()) return;
  mkdirSync(dirname(dir), { recursive: true });
  await withLock(`${dir}.lock`, what, async () => {
    if (done()) return; // filled by whoever held the lock before us
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      await fill(tmp);
      rmSync(dir, { recursive: true, force: true }); // a broken earlier entry that done() refused
      renameSync(tmp, dir);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
  });
}
