import { afterEach, describe, expect, it, jest } from '@jest/globals';
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
    // The deadline is an hour away, so only abortIf can end this within the test's own timeout; no check ran.
    let checks = 0;
    await expect(waitUntil(() => void checks++, { what: 'port 1', timeoutMs: 3_600_000, abortIf: () => 'nginx exited (exit 1)' }))
      .rejects.toThrow('nginx exited (exit 1) while waiting for port 1');
    expect(checks).toBe(0);
  });

  describe('on a fake clock', () => {
    afterEach(() => {
      jest.useRealTimers();
    });

    it('backs off from intervalMs, doubling up to maxIntervalMs, until the deadline', async () => {
      jest.useFakeTimers({ now: 0 });
      const at: number[] = [];
      const done = waitUntil(() => void at.push(Date.now()), { what: 'never', timeoutMs: 300, intervalMs: 10, maxIntervalMs: 80 }).catch((e: Error) => e.message);
      await jest.advanceTimersByTimeAsync(400);
      expect(await done).toMatch(/^timed out after 300 ms waiting for never/);
      expect(at.slice(1).map((t, i) => t - at[i]!)).toEqual([10, 20, 40, 80, 80, 80]);
    });
  });
});

describe('until', () => {
  it('is waitUntil with the name first', async () => {
    await expect(until('nothing', () => undefined, 20)).rejects.toThrow('timed out after 20 ms waiting for nothing');
    await expect(until('something', () => 'x')).resolves.toBe('x');
  });
});

describe('sleep', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('resolves once the time asked has passed, not before', async () => {
    jest.useFakeTimers();
    let done = false;
    void sleep(30).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(29);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });
});
