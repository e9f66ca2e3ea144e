import { describe, expect, it } from '@jest/globals';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { tempDirsPerTest } from '../../test/support/temp-dirs.js';
import { sleep } from '../../test/support/wait.js';
import { CliError } from '../errors.js';
import { LOCK_FILE, lockDirectory } from './directory-lock.js';

const fresh = tempDirsPerTest('svc-cli-');
const noCheck = () => undefined;
const lock = (dir: string, timeoutMs = 300, checkDirectory: () => void = noCheck) => lockDirectory(dir, { timeoutMs, checkDirectory });
const holdBy = (dir: string, pid: number, host = hostname()) => writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, host, since: '2026-11-21T10:00:00Z' }));
const age = (path: string, ms: number) => {
  const then = (Date.now() - ms) / 1000;
  utimesSync(path, then, then);
};

describe('lockDirectory', () => {
  it('takes the lock (a file naming this process), and the release removes it', async () => {
    const dir = fresh();
    const release = await lock(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    release();
    expect(readdirSync(dir)).toEqual([]);
    release(); // twice: nothing left to release, no error
  });

  it('one holder at a time: the second waits until the first lets go', async () => {
    const dir = fresh();
    const first = await lock(dir);
    let second: (() => void) | undefined;
    const waiting = lock(dir, 60_000).then((r) => (second = r));
    await sleep(100);
    expect(second).toBeUndefined();
    first();
    await waiting;
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    second!();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('a release never removes a lock that is not its own any more (broken as stale and taken by another)', async () => {
    const dir = fresh();
    const release = await lock(dir);
    holdBy(dir, 1, 'elsewhere');
    release();
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ host: 'elsewhere' });
  });

  it('waits for a live holder, then gives up naming it and the file to remove', async () => {
    const dir = fresh();
    holdBy(dir, process.pid);
    await expect(lock(dir)).rejects.toThrow(new RegExp(`is locked by pid ${process.pid} on ${hostname()} \\(since 2026-11-21T10:00:00Z\\) for more than 0 s; if no svc is running there, remove .*\\.svc\\.lock \\(nothing was changed\\)`));
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('a holder that lets go while it waits: the lock is taken then (it waited, it did not give up)', async () => {
    const dir = fresh();
    holdBy(dir, process.pid);
    let settled = false;
    const taking = lock(dir, 60_000).finally(() => (settled = true));
    await sleep(200);
    expect(settled).toBe(false);
    unlinkSync(join(dir, LOCK_FILE));
    (await taking)();
  });

  it('breaks a lock whose process is gone (same host)', async () => {
    const dir = fresh();
    holdBy(dir, 2 ** 22 + 12345);
    (await lock(dir))();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('breaks an empty lock only once it is old (a holder between create and write is not broken)', async () => {
    const dir = fresh();
    const path = join(dir, LOCK_FILE);
    writeFileSync(path, '');
    await expect(lock(dir, 200)).rejects.toThrow(/is locked by pid \? on \?/);
    age(path, 60_000);
    (await lock(dir, 200))();
    expect(existsSync(path)).toBe(false);
  });

  it('respects a lock from another host until it is very old', async () => {
    const dir = fresh();
    holdBy(dir, 1, 'elsewhere');
    await expect(lock(dir, 100)).rejects.toThrow(/locked by pid 1 on elsewhere/);
    age(join(dir, LOCK_FILE), 11 * 60_000);
    (await lock(dir, 100))();
  });

  it('a lock path that is not a lock file (a directory) ends in a clear timeout, not a spin', async () => {
    const dir = fresh();
    mkdirSync(join(dir, LOCK_FILE));
    await expect(lock(dir, 200)).rejects.toThrow(/is locked by something else for more than 0 s; if no svc is running there, remove/);
  });

  it('a missing directory is the store\'s error (checkDirectory); an unwritable one says edits need write access', async () => {
    const dir = fresh();
    const missing = () => {
      throw new CliError('no such directory');
    };
    await expect(lock(join(dir, 'nope'), 200, missing)).rejects.toThrow('no such directory');
    await expect(lock(join(dir, 'nope'), 200)).rejects.toThrow(/^cannot create the lock .*nope.*\.svc\.lock: ENOENT/);
    if (process.getuid?.() === 0) return; // root writes anywhere
    const readOnly = join(dir, 'ro');
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    await expect(lock(readOnly, 200)).rejects.toThrow(/cannot write to .*ro \(permission denied\): edits need write access to the directory/);
  });
});
