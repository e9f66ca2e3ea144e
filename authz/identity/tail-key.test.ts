import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { tailKey } from './tail-key.js';

describe('tailKey', () => {
  it('is a small integer (a Map key V8 keeps unboxed) from the characters before the last', () => {
    const v = `eyJhbGciOi.${randomBytes(200).toString('base64url')}`;
    const k = tailKey(v);
    expect(Number.isInteger(k) && k >= 0 && k < 2 ** 30).toBe(true);
    expect(tailKey(`${v.slice(0, -1)}${v.at(-1) === 'A' ? 'B' : 'A'}`)).toBe(k);
    expect(tailKey(`${v.slice(0, -2)}${v.at(-2) === 'A' ? 'B' : 'A'}${v.at(-1)!}`)).not.toBe(k);
  });

  it('tells apart nearly all of 10,000 random signatures (a shared key only costs a cache entry)', () => {
    const keys = new Set(Array.from({ length: 10_000 }, () => tailKey(randomBytes(32).toString('base64url'))));
    expect(keys.size).toBeGreaterThan(9_900);
  });

  it('takes short values too', () => {
    expect(tailKey('')).toBe(0);
    expect(tailKey('ab')).toBe(tailKey('ab'));
  });
});
