import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import {
  checkSuppliedToken,
  claimsGeneratedFormat,
  formatGeneratedToken,
  GENERATED_TOKEN_LENGTH,
  HASH_PATTERN,
  hashToken,
  hashTokenDigest,
  hashTokenDigestInto,
  hashTokenHex,
  hasValidChecksum,
  isPlausibleToken,
  MAX_TOKEN_LENGTH,
  MIN_SUPPLIED_LENGTH,
  tokenIdOf,
  tokenIdOfDigest,
  tokenIdOfHex,
  TOKEN_ID_PATTERN,
} from './token.js';

// docs/architecture.md "Tokens". No assertion below compares a token string directly, so a failure never prints one.

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const fromBase62 = (s: string): bigint => [...s].reduce((n, c) => n * 62n + BigInt(BASE62.indexOf(c)), 0n);
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
const seeded = (seed: string) => formatGeneratedToken(createHash('sha256').update(seed).digest());
const PRINTABLE = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i));

describe('generated token format: svc_ + 43 base62 + 6 base62 CRC32 (53 characters)', () => {
  it('has the documented length and alphabet', () => {
    expect(GENERATED_TOKEN_LENGTH).toBe(53);
    fc.assert(
      fc.property(bytes32, (random) => {
        const t = formatGeneratedToken(random);
        expect(t.length).toBe(53);
        expect(/^svc_[0-9A-Za-z]{49}$/.test(t)).toBe(true);
        expect(claimsGeneratedFormat(t)).toBe(true);
        expect(hasValidChecksum(t)).toBe(true);
        expect(isPlausibleToken(t)).toBe(true);
        expect(checkSuppliedToken(t).ok).toBe(true);
      }),
    );
  });
  it('the 43 characters carry all 256 random bits (they decode back to the bytes)', () => {
    fc.assert(
      fc.property(bytes32, (random) => {
        const t = formatGeneratedToken(random);
        expect(fromBase62(t.slice(4, 47))).toBe(BigInt(`0x${Buffer.from(random).toString('hex')}`));
      }),
    );
  });
  it('boundary values of the random part still fit in 43 characters', () => {
    for (const fill of [0x00, 0xff]) {
      const t = formatGeneratedToken(new Uint8Array(32).fill(fill));
      expect(t.length).toBe(53);
      expect(hasValidChecksum(t)).toBe(true);
    }
  });
  it('the last 6 characters are the base62 CRC32 of everything before them', () => {
    fc.assert(
      fc.property(bytes32, (random) => {
        const t = formatGeneratedToken(random);
        expect(fromBase62(t.slice(-6))).toBe(BigInt(crc32(t.slice(0, -6)) >>> 0));
      }),
    );
  });
  it('refuses anything but exactly 32 random bytes', () => {
    expect(() => formatGeneratedToken(new Uint8Array(31))).toThrow(RangeError);
    expect(() => formatGeneratedToken(new Uint8Array(33))).toThrow(RangeError);
  });
  it('different random bytes give different tokens', () => {
    expect(seeded('a') === seeded('b')).toBe(false);
  });
});

describe('checksum detects every single-character change', () => {
  it('exhaustively, for every position and every other printable character', () => {
    const t = seeded('exhaustive');
    let checked = 0;
    for (let i = 0; i < t.length; i++) {
      for (const c of PRINTABLE) {
        if (c === t[i]) continue;
        const changed = t.slice(0, i) + c + t.slice(i + 1);
        // A change in the prefix stops it claiming our format: then it is a plain (unknown) token, never a valid generated one.
        expect(hasValidChecksum(changed)).toBe(false);
        if (claimsGeneratedFormat(changed)) {
          expect(isPlausibleToken(changed)).toBe(false);
          expect(checkSuppliedToken(changed).ok).toBe(false);
        }
        checked++;
      }
    }
    expect(checked).toBe(53 * (PRINTABLE.length - 1));
  });
  it('property: for random tokens, positions and replacement characters (any UTF-16 unit)', () => {
    fc.assert(
      fc.property(bytes32, fc.nat({ max: 52 }), fc.integer({ min: 0, max: 0xffff }), (random, pos, code) => {
        const t = formatGeneratedToken(random);
        const c = String.fromCharCode(code);
        fc.pre(c !== t[pos]);
        const changed = t.slice(0, pos) + c + t.slice(pos + 1);
        expect(hasValidChecksum(changed)).toBe(false);
        if (pos >= 4) expect(isPlausibleToken(changed)).toBe(false);
      }),
    );
  });
  it('a dropped or added character is refused too', () => {
    const t = seeded('length');
    expect(hasValidChecksum(t.slice(0, -1))).toBe(false);
    expect(hasValidChecksum(`${t}A`)).toBe(false);
    expect(hasValidChecksum(t.slice(0, 10) + t.slice(11))).toBe(false);
  });
});

describe('supplied tokens (operator-chosen): printable ASCII, no whitespace, ≥ 16 characters, svc_ ones must checksum', () => {
  it(`accepts exactly ${MIN_SUPPLIED_LENGTH} characters and refuses ${MIN_SUPPLIED_LENGTH - 1}`, () => {
    expect(MIN_SUPPLIED_LENGTH).toBe(16);
    expect(checkSuppliedToken('A'.repeat(16)).ok).toBe(true);
    const r = checkSuppliedToken('A'.repeat(15));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/at least 16/);
  });
  it('accepts all printable ASCII', () => {
    expect(checkSuppliedToken(PRINTABLE.join('')).ok).toBe(true);
  });
  it.each([
    ['a space', 'abcdefgh ijklmnopq'],
    ['a tab', 'abcdefgh\tijklmnopq'],
    ['a newline', 'abcdefghijklmnopq\n'],
    ['a NUL', 'abcdefghijklmnopq\0'],
    ['DEL', 'abcdefghijklmnopq\x7f'],
    ['non-ASCII', 'abcdefghijklmnopqé'],
    ['a non-breaking space', 'abcdefghijklmnop\u00a0'],
    ['an emoji', 'abcdefghijklmnop\u{1f511}'],
  ])('refuses a token with %s', (_what, token) => {
    const r = checkSuppliedToken(token);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/printable ASCII/);
  });
  it('refuses the empty token', () => {
    expect(checkSuppliedToken('').ok).toBe(false);
  });
  it(`refuses more than ${MAX_TOKEN_LENGTH} characters`, () => {
    expect(checkSuppliedToken('a'.repeat(MAX_TOKEN_LENGTH)).ok).toBe(true);
    expect(checkSuppliedToken('a'.repeat(MAX_TOKEN_LENGTH + 1)).ok).toBe(false);
  });
  it('refuses an svc_-prefixed token whose checksum does not match, without echoing it', () => {
    const bad = `svc_${'A'.repeat(49)}`;
    const r = checkSuppliedToken(bad);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toMatch(/checksum/);
      expect(r.error.includes(bad)).toBe(false);
    }
    expect(checkSuppliedToken('svc_short-but-long-enough').ok).toBe(false);
  });
  it('a token merely containing svc_ later on is a plain supplied token', () => {
    expect(checkSuppliedToken('my-svc_token-0123456').ok).toBe(true);
  });
});

describe('plausible request credentials (refused before hashing)', () => {
  it.each([
    ['empty', false, ''],
    ['short plain', true, 'abc'],
    ['whitespace', false, 'abc def'],
    ['control', false, 'abc\x01'],
    ['non-ASCII', false, 'abcé'],
    ['too long', false, 'a'.repeat(MAX_TOKEN_LENGTH + 1)],
    ['longest allowed', true, 'a'.repeat(MAX_TOKEN_LENGTH)],
    ['svc_ with a bad checksum', false, `svc_${'0'.repeat(49)}`],
  ])('%s → %s', (_what, expected, token) => {
    expect(isPlausibleToken(token)).toBe(expected);
  });
});

describe('hash and id', () => {
  it('stores sha256:<64 lowercase hex> of the token (known vector)', () => {
    expect(hashToken('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashTokenHex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
  it('the id is the first 12 hex of the hash', () => {
    expect(tokenIdOf(hashToken('abc'))).toBe('ba7816bf8f01');
    expect(tokenIdOfHex(hashTokenHex('abc'))).toBe('ba7816bf8f01');
  });
  it('property: hash and id always match their patterns and agree', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 80 }), (token) => {
        const h = hashToken(token);
        expect(HASH_PATTERN.test(h)).toBe(true);
        const id = tokenIdOf(h);
        expect(TOKEN_ID_PATTERN.test(id)).toBe(true);
        expect(h.startsWith(`sha256:${id}`)).toBe(true);
      }),
    );
  });
  it('the digest is the raw SHA-256 (known vector), and its id the same 12 hex', () => {
    const d = hashTokenDigest('abc');
    expect(d).toHaveLength(32);
    expect(d.toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(tokenIdOfDigest(d)).toBe('ba7816bf8f01');
  });
  it('property: digest and hex forms agree, ids included, for any string (UTF-8 hashed alike)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80, unit: 'grapheme' }), (token) => {
        const d = hashTokenDigest(token);
        expect(d.toString('hex')).toBe(hashTokenHex(token));
        const out = Buffer.alloc(32, 0xee);
        expect(hashTokenDigestInto(token, out)).toBe(out);
        expect(out.equals(d)).toBe(true);
        expect(tokenIdOfDigest(d)).toBe(tokenIdOfHex(hashTokenHex(token)));
      }),
    );
  });
  it('the patterns refuse uppercase hex, other algorithms and wrong lengths', () => {
    expect(HASH_PATTERN.test(`sha256:${'A'.repeat(64)}`)).toBe(false);
    expect(HASH_PATTERN.test(`sha512:${'a'.repeat(64)}`)).toBe(false);
    expect(HASH_PATTERN.test(`sha256:${'a'.repeat(63)}`)).toBe(false);
    expect(TOKEN_ID_PATTERN.test('a'.repeat(11))).toBe(false);
    expect(TOKEN_ID_PATTERN.test('A'.repeat(12))).toBe(false);
  });
});
