import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryWatch, type ChangeReason } from './watch.js';
import { sleep } from '../../test/support/wait.js';

const dirs: string[] = [];
const watches: DirectoryWatch[] = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});


describe('DirectoryWatch', () => {
  it('reports changes to relevant entries, debounced, and ignores a busy neighbour', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-watch-'));
    dirs.push(dir);
    const seen: ChangeReason[] = [];
    watches.push(new DirectoryWatch(dir, (r) => seen.push(r), { debounceMs: 30, rescanMs: 60_000, relevant: (name) => name === 'snapshot' }));
    for (let i = 0; i < 10; i++) {
      writeFileSync(join(dir, 'neighbour.log'), `line ${i}\n`, { flag: 'a' });
      await sleep(5);
    }
    await sleep(150);
    expect(seen).toEqual([]);
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, 'snapshot'), `v${i}`);
    await sleep(150);
    expect(seen).toEqual(['event']);
  });

  it('rescans periodically', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-watch-'));
    dirs.push(dir);
    const seen: ChangeReason[] = [];
    watches.push(new DirectoryWatch(dir, (r) => seen.push(r), { debounceMs: 30, rescanMs: 40 }));
    await sleep(200);
    expect(seen.filter((r) => r === 'rescan').length).toBeGreaterThan(1);
  });
});
