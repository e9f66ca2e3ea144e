import { describe, expect, it } from '@jest/globals';
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, newProtectedScope, scopeObjectName, validateProtectedScope, type Scope, type TokenRecord } from './index.js';
import {
  formatImportedHash, importedCandidates, importedHashOfRow, matchesImported, parseImportedHash, presentedToken, scopeOfWis2boxTopic,
} from './index.js';
import { HASH_PATTERN, hashToken, tokenIdOf } from './token.js';

// PBKDF2-HMAC-SHA256("mytoken", bytes 0..23, 100000, 32), as Python's hashlib.pbkdf2_hmac computes it.
const SALT = Buffer.from(Array.from({ length: 24 }, (_, i) => i));

describe('imported hash form pbkdf2-sha256:<iterations>:<salt hex>:<key hex>', () => {
  const hash = formatImportedHash(100_000, SALT, Buffer.alloc(32, 0xab));
  it('is a stored hash form, with the id taken from the key', () => {
    expect(HASH_PATTERN.test(hash)).toBe(true);
    expect(tokenIdOf(hash)).toBe('abababababab');
    expect(parseImportedHash(hash)).toEqual({ iterations: 100_000, salt: SALT, key: Buffer.alloc(32, 0xab) });
  });
  it.each([
    'pbkdf2-sha256:0:000102030405060708:' + 'a'.repeat(64),
    'pbkdf2-sha256:100000:0001:' + 'a'.repeat(64),
    'pbkdf2-sha256:100000:' + '0'.repeat(48) + ':' + 'a'.repeat(62),
    'pbkdf2-sha256:100000:' + '0'.repeat(48) + ':' + 'A'.repeat(64),
    'pbkdf2-sha1:100000:' + '0'.repeat(48) + ':' + 'a'.repeat(64),
  ])('refuses %s', (h) => {
    expect(HASH_PATTERN.test(h)).toBe(false);
    expect(parseImportedHash(h)).toBeUndefined();
  });
  it('a row of wis2box-auth: 8 to 64 bytes of salt and a 32-byte key, as blobs', () => {
    expect(importedHashOfRow(SALT, Buffer.alloc(32)).ok).toBe(true);
    expect(importedHashOfRow('text', Buffer.alloc(32)).ok).toBe(false);
    expect(importedHashOfRow(SALT, Buffer.alloc(20)).ok).toBe(false);
    expect(importedHashOfRow(Buffer.alloc(4), Buffer.alloc(32)).ok).toBe(false);
  });
  it('matches the token it was derived from, and only that one', () => {
    const key = pbkdf2Sync('mytoken', SALT, 1000, 32, 'sha256');
    expect(matchesImported('mytoken', { iterations: 1000, salt: SALT, key })).toBe(true);
    expect(matchesImported('mytoken2', { iterations: 1000, salt: SALT, key })).toBe(false);
  });
  it("agrees with Python's hashlib.pbkdf2_hmac('sha256', b'mytoken', bytes(range(24)), 100000)", () => {
    const key = Buffer.from('83d5f2d569bd61d8ab943637dfa5f572e3b1dcc79c58db614e9f15a5f2780829', 'hex');
    expect(matchesImported('mytoken', { iterations: 100_000, salt: SALT, key })).toBe(true);
  });
});

describe('wis2box-auth topics map to scopes', () => {
  it.each<[string, Scope | undefined]>([
    ['urn:wmo:md:mw-met:surface-weather-observations', { kind: 'dataset', value: 'urn:wmo:md:mw-met:surface-weather-observations' }],
    ['mw-met.data.core.weather', { kind: 'topic', value: 'mw-met.data.core.weather' }],
    ['processes/wis2box', { kind: 'path', value: 'processes/wis2box' }],
    ['processes/wis2box-synop2bufr', { kind: 'path', value: 'processes/wis2box-synop2bufr' }],
    ['collections/stations', { kind: 'path', value: 'collections/stations' }],
    ['wis2downloader', { kind: 'path', value: 'wis2downloader' }],
    ['/wis2downloader/', { kind: 'path', value: 'wis2downloader' }],
    ['collections/other', undefined],
    ['a b', undefined],
    ['', undefined],
    ['a..b', undefined],
  ])('%j', (topic, scope) => {
    const r = scopeOfWis2boxTopic(topic);
    expect(r.ok ? r.value : undefined).toEqual(scope);
  });
});

describe('imported records in the index and the decision', () => {
  const scope: Scope = { kind: 'path', value: 'wis2downloader' };
  const imported = formatImportedHash(1000, SALT, Buffer.alloc(32, 1));
  const sha = hashToken('a-sha256-token-of-the-scope');
  const records: TokenRecord[] = [
    { id: tokenIdOf(imported), hash: imported, createdAt: '2026-01-01T00:00:00Z' },
    { id: tokenIdOf(sha), hash: sha, createdAt: '2026-01-01T00:00:00Z' },
  ];
  const object = newProtectedScope(scope, scopeObjectName(scope), undefined, records);
  const index = buildIndex('g', compileSnapshot([object]).lines);
  if (!index.ok) throw new Error(index.error);
  it('validates as a manifest', () => {
    expect(validateProtectedScope(object).ok).toBe(true);
  });
  it('an imported hash closes the scope; an unknown token is "unknown", and the imported record is a candidate', () => {
    const d = decide(index.value, DEFAULT_CONFIG, { method: 'GET', target: '/wis2downloader/x?token=whatever', authorization: undefined }, 0);
    expect(d).toMatchObject({ outcome: 'invalid-token', why: 'unknown' });
    const governing = d.outcome === 'invalid-token' ? d.governing : [];
    expect(importedCandidates(index.value, governing, 0).map((c) => c.record.hash)).toEqual([imported]);
    expect(importedCandidates(index.value, governing, 0)[0]!.entry.key).toBe('path:wis2downloader');
  });
  it('the SHA-256 token of the same scope still grants directly', () => {
    expect(decide(index.value, DEFAULT_CONFIG, { method: 'GET', target: '/wis2downloader/x?token=a-sha256-token-of-the-scope', authorization: undefined }, 0).outcome).toBe('granted');
  });
  it('presentedToken reads the credential as decide does', () => {
    expect(presentedToken(DEFAULT_CONFIG, { target: '/x?token=abc', authorization: 'Bearer zzz' })).toEqual({ token: 'abc', source: 'query' });
    expect(presentedToken(DEFAULT_CONFIG, { target: '/x', authorization: 'Bearer zzz' })).toEqual({ token: 'zzz', source: 'bearer' });
    expect(presentedToken(DEFAULT_CONFIG, { target: '/x', authorization: undefined })).toBeUndefined();
  });
});
