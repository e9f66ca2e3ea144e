import { describe, it, expect, jest } from '@jest/globals';
import { WorkQueue } from './queue.js';
import { sleep, poll as until } from '../test/support/wait.js';

describe('WorkQueue', () => {
  it('deduplicates keys waiting to run and batches a debounce window', async () => {
    const runs: string[] = [];
    const q = new WorkQueue<string>({ process: async (k) => void runs.push(k) });
    for (let i = 0; i < 50; i++) q.add('ns', 30);
    q.add('other', 30);
    expect(q.delayedCount).toBe(2);
    expect(q.depth).toBe(0);
    await until(() => runs.length === 2);
    await sleep(50);
    expect(runs.sort()).toEqual(['ns', 'other']);
  });

  it('moves a delayed key earlier, never later (on a fake clock)', async () => {
    jest.useFakeTimers({ now: 0 });
    try {
      const runs: number[] = [];
      const q = new WorkQueue<string>({ process: async () => void runs.push(Date.now()) });
      q.add('k', 1000);
      q.add('k', 20);
      q.add('k', 500);
      expect(q.dueAt('k')).toBe(20);
      await jest.advanceTimersByTimeAsync(2000);
      expect(runs).toEqual([20]);
      await q.shutdown();
    } finally {
      jest.useRealTimers();
    }
  });

  it('never runs a key twice at once; a key added while in flight runs once more after', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const q = new WorkQueue<string>({
      concurrency: 4,
      process: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        runs++;
        await sleep(20);
        active--;
      },
    });
    q.add('k');
    await sleep(5);
    q.add('k');
    q.add('k');
    await until(() => runs === 2 && active === 0);
    await sleep(40);
    expect(runs).toBe(2);
    expect(maxActive).toBe(1);
  });

  it('retries failures with growing backoff, then forgets them after a success', async () => {
    const times: number[] = [];
    const errors: number[] = [];
    let n = 0;
    const q = new WorkQueue<string>({
      backoffBaseMs: 10,
      process: async () => {
        times.push(Date.now());
        if (++n <= 3) throw new Error('API down');
      },
      onError: (_k, _e, failures) => errors.push(failures),
    });
    q.add('k');
    await until(() => times.length === 4);
    expect(errors).toEqual([1, 2, 3]);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(9);
    expect(gaps[2]).toBeGreaterThanOrEqual(38);
    await q.shutdown();
  });

  it('runs a key again at its requested requeueAfter', async () => {
    const times: number[] = [];
    const q = new WorkQueue<string>({
      process: async () => {
        times.push(Date.now());
        return times.length === 1 ? { requeueAfterMs: 50 } : {};
      },
    });
    q.add('k');
    await until(() => times.length === 2);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(45);
    await q.shutdown();
  });

  it('reports depth and waits for in-flight work on shutdown', async () => {
    const depths: number[] = [];
    let done = false;
    const q = new WorkQueue<string>({
      process: async () => {
        await sleep(30);
        done = true;
      },
      onDepth: (d) => depths.push(d),
    });
    q.add('a');
    q.add('b', 1000);
    await sleep(5);
    expect(q.inFlight).toBe(1);
    expect(q.delayedCount).toBe(1);
    await q.shutdown();
    expect(done).toBe(true);
    expect(q.depth).toBe(0);
    q.add('c');
    expect(q.depth).toBe(0);
    expect(depths).toContain(1);
  });

  it('clamps huge delays instead of firing at once', async () => {
    let ran = false;
    const q = new WorkQueue<string>({ process: async () => void (ran = true) });
    q.add('k', 2 ** 40);
    await sleep(20);
    expect(ran).toBe(false);
    expect(q.dueAt('k')).toBeGreaterThan(Date.now() + 3600_000);
    await q.shutdown();
  });
});
