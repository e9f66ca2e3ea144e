import { describe, expect, it } from '@jest/globals';
import { sleep, until, waitUntil } from './wait.js';

describe('waitUntil', () => {
  it('returns the first value that is neither undefined nor false', async () => {
    let n = 0;
    await expect(waitUntil(() => (++n >= 3 ? `after ${n}` : undefined), { what: 'three tries', intervalMs: 1 })).resolves.toBe('after 3');
    await expect(waitUntil(() => 0, { what: 'a zero' })).resolves.toBe(0);
  });

  it('counts a throwing attempt as not yet', async () => {
    let n = 0;
    const v = await waitUntil(async () => {
      if (++n < 3) throw new Error('refused');
      return true;
    }, { what: 'a server', intervalMs: 1 });
    expect(v).toBe(true);
  });

  it('says what it waited for, what it saw last and the last error when time runs out', async () => {
    await expect(waitUntil(() => {
      throw new Error('ECONNREFUSED');
    }, { what: 'svc-auth /readyz', timeoutMs: 30, intervalMs: 5, describe: () => 'status 503' }))
      .rejects.toThrow('timed out after 30 ms waiting for svc-auth /readyz (last seen: status 503) (last error: ECONNREFUSED)');
  });

  it('stops at once when abortIf gives a reason', async () => {
    const started = Date.now();
    await expect(waitUntil(() => false, { what: 'port 1', timeoutMs: 10_000, abortIf: () => 'nginx exited (exit 1)' }))
      .rejects.toThrow('nginx exited (exit 1) while waiting for port 1');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('backs off up to maxIntervalMs', async () => {
    const at: number[] = [];
    await expect(waitUntil(() => void at.push(Date.now()), { what: 'never', timeoutMs: 300, intervalMs: 10, maxIntervalMs: 80 })).rejects.toThrow('never');
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(70);
    expect(gaps[0]).toBeLessThan(60);
  });
});

describe('until', () => {
  it('is waitUntil with the name first', async () => {
    await expect(until('nothing', () => undefined, 20)).rejects.toThrow('timed out after 20 ms waiting for nothing');
    await expect(until('something', () => 'x')).resolves.toBe('x');
  });
});

describe('sleep', () => {
  it('waits about as long as asked', async () => {
    const t = Date.now();
    await sleep(30);
    expect(Date.now() - t).toBeGreaterThanOrEqual(25);
  });
});
