import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheEntryDir, cacheRoot, fillCacheEntry, isExecutable, withLock } from './cache.js';
import { sleep } from './wait.js';

const saved = { SVC_ASSETS_CACHE: process.env.SVC_ASSETS_CACHE, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME };
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-cache-test-'));
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('cacheRoot', () => {
  it('is SVC_ASSETS_CACHE, else $XDG_CACHE_HOME/svc-access-control, else ~/.cache/svc-access-control', () => {
    process.env.SVC_ASSETS_CACHE = join(dir, 'explicit');
    process.env.XDG_CACHE_HOME = join(dir, 'xdg');
    expect(cacheRoot()).toBe(join(dir, 'explicit'));
    delete process.env.SVC_ASSETS_CACHE;
    expect(cacheRoot()).toBe(join(dir, 'xdg', 'svc-access-control'));
    process.env.XDG_CACHE_HOME = '';
    expect(cacheRoot()).toBe(join(homedir(), '.cache', 'svc-access-control'));
  });

  it('names an entry by tool, version and 12 hex of the key parts fed in order', () => {
    process.env.SVC_ASSETS_CACHE = dir;
    const expected = createHash('sha256').update('3.11\0pygeoapi==0.21.0').digest('hex').slice(0, 12);
    expect(cacheEntryDir('pygeoapi', '0.21.0', ['3.11\0', 'pygeoapi==0.21.0'])).toBe(join(dir, `pygeoapi-0.21.0-${expected}`));
  });
});

describe('withLock', () => {
  it('runs one holder at a time and removes the lock afterwards', async () => {
    const lock = join(dir, 'x.lock');
    const events: string[] = [];
    const hold = (name: string) => withLock(lock, name, async () => {
      events.push(`${name} in`);
      await sleep(50);
      events.push(`${name} out`);
    });
    await Promise.all([hold('a'), hold('b')]);
    expect(events).toEqual(['a in', 'a out', 'b in', 'b out']);
    expect(existsSync(lock)).toBe(false);
  });

  it('takes over the lock of a process that died', async () => {
    const lock = join(dir, 'y.lock');
    mkdirSync(lock);
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    writeFileSync(join(lock, 'pid'), dead);
    await expect(withLock(lock, 'y', async () => 'taken')).resolves.toBe('taken');
  });
});

describe('fillCacheEntry', () => {
  it('fills an entry once, atomically', async () => {
    const entry = join(dir, 'tool-1-abc');
    const done = () => isExecutable(join(entry, 'tool'));
    let fills = 0;
    const fill = async (tmp: string) => {
      fills++;
      writeFileSync(join(tmp, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    };
    await fillCacheEntry(entry, 'tool 1', done, fill);
    await fillCacheEntry(entry, 'tool 1', done, fill);
    expect(fills).toBe(1);
    expect(readFileSync(join(entry, 'tool'), 'utf8')).toBe('#!/bin/sh\n');
    expect(readdirSync(dir)).toEqual(['tool-1-abc']);
  });

  it('leaves nothing behind when filling fails', async () => {
    const entry = join(dir, 'tool-2-abc');
    await expect(fillCacheEntry(entry, 'tool 2', () => false, async (tmp) => {
      writeFileSync(join(tmp, 'half'), '');
      throw new Error('go build failed');
    })).rejects.toThrow('go build failed');
    expect(readdirSync(dir)).toEqual([]);
  });
});
