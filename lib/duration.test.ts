import { describe, expect, it } from '@jest/globals';
import { formatDuration, parseDuration, TIMER_MAX_MS } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1.5h', 5_400_000],
    ['90d', 90 * 86_400_000],
    ['2w', 14 * 86_400_000],
    ['30', 30_000],
    ['0.25', 250],
    [' 1d ', 86_400_000],
    ['0', 0],
    ['0.4ms', 0],
  ])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['soon', '', 'd', '1y', '-1d', '1D', '1 d', '1.d', '.5s', '1e3s', '1h30m'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(new RangeError(`${JSON.stringify(text)} is not a duration such as 250ms, 30s, 5m, 1h or 90d`));
  });

  it('applies the rules a flag adds', () => {
    expect(() => parseDuration('90', { requireUnit: true })).toThrow('"90" is not a duration such as 250ms, 30s, 5m, 1h or 90d: the unit is required');
    expect(parseDuration('90s', { requireUnit: true })).toBe(90_000);
    expect(() => parseDuration('0d', { positive: true })).toThrow('"0d" is not a positive duration');
    expect(() => parseDuration('0.4ms', { positive: true })).toThrow(/not a positive duration/);
    expect(() => parseDuration('36501d', { maxMs: 36_500 * 86_400_000 })).toThrow('"36501d" is longer than 36500d');
    expect(parseDuration('36500d', { maxMs: 36_500 * 86_400_000 })).toBe(36_500 * 86_400_000);
    expect(() => parseDuration('25d', { maxMs: TIMER_MAX_MS })).toThrow('"25d" is longer than 2147483647ms');
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [250, '250ms'],
    [90_000, '90s'],
    [120_000, '2m'],
    [86_400_000, '1d'],
    [14 * 86_400_000, '2w'],
    [36_500 * 86_400_000, '36500d'],
  ])('%d → %s', (ms, text) => expect(formatDuration(ms)).toBe(text));

  it('round-trips through parseDuration', () => {
    for (const ms of [1, 999, 1000, 61_000, 3_600_000, 5 * 86_400_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});
