import { describe, expect, it } from '@jest/globals';
import { backoffDelay, jitter } from './backoff.js';

describe('backoffDelay', () => {
  const policy = { initialMs: 250, maxMs: 10_000 };

  it('doubles from the initial delay with each failure, up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, policy))).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000]);
  });

  it('treats attempts below 1 as the first, and stays finite for huge ones', () => {
    expect(backoffDelay(0, policy)).toBe(250);
    expect(backoffDelay(1e9, { initialMs: 1, maxMs: Number.MAX_SAFE_INTEGER })).toBe(2 ** 30);
  });

  it('spreads the capped delay over the jitter range', () => {
    const jittered = { ...policy, jitter: [0.5, 1] as const };
    expect(backoffDelay(7, jittered, () => 0)).toBe(5000);
    expect(backoffDelay(7, jittered, () => 0.5)).toBe(7500);
    expect(backoffDelay(1, { initialMs: 2, maxMs: 100, jitter: [1, 2] }, () => 0.5)).toBe(3);
  });
});

describe('jitter', () => {
  it('scales by a factor drawn from [low, high)', () => {
    expect(jitter(1000, [1, 1.2], () => 0)).toBe(1000);
    expect(jitter(1000, [1, 1.2], () => 0.5)).toBeCloseTo(1100);
    expect(jitter(500, [0, 1], () => 0.25)).toBe(125);
  });
});
