import { describe, expect, it } from '@jest/globals';
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, newProtectedScope, parseScopeLine, readManifestFile, scopeObjectName, validateProtectedScope, type Scope, type TokenRecord } from './index.js';
import {
  decideForScope, decideImportedSync, formatImportedHash, importedCandidates, matchesImported, parseImportedHash, presentedImported, triesImported,
} from './index.js';
import { HASH_PATTERN, hashToken, tokenIdOf } from './token.js';
import { IMPORTED_SCOPE, importedRecord, ODD_TOKENS, oddTokensIndex } from '../test/support/odd-tokens.js';

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
  it('at most 600000 iterations (OWASP for PBKDF2-SHA256): above is refused by every reader of manifests, the scope named', () => {
    const at = (n: number) => `pbkdf2-sha256:${n}:${'00'.repeat(24)}:${'ab'.repeat(32)}`;
    for (const n of [1, 99_999, 100_000, 599_999, 600_000]) expect([n, HASH_PATTERN.test(at(n)), parseImportedHash(at(n))?.iterations]).toEqual([n, true, n]);
    for (const n of [600_001, 700_000, 999_999, 1_000_000, 9_999_999]) expect([n, HASH_PATTERN.test(at(n)), parseImportedHash(at(n))]).toEqual([n, false, undefined]);
    const object = newProtectedScope({ kind: 'path', value: 'wis2downloader' }, 'dl', undefined, [{ id: 'abababababab', hash: at(600_001) as TokenRecord['hash'], createdAt: '2026-01-01T00:00:00Z' }]);
    const checked = validateProtectedScope(object);
    expect(checked.ok ? [] : checked.error).toEqual([{ field: 'spec.tokens[0].hash', message: 'an imported hash of "path:wis2downloader" asks for 600001 PBKDF2 iterations: at most 600000 (each wrong token would cost that much per record)' }]);
    const read = readManifestFile(JSON.stringify(object));
    expect(read.ok).toBe(false);
    // A snapshot line carrying one (written by anything but this operator) is refused with its scope named.
    const line = JSON.stringify({ kind: 'path', value: 'wis2downloader', tokens: [{ hash: at(600_001) }] });
    const parsed = parseScopeLine(line);
    expect(parsed.ok ? '' : parsed.error).toBe('path:wis2downloader: bad token hash: an imported hash asks for 600001 PBKDF2 iterations (at most 600000)');
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
  it('presentedImported reads the credential from where decide does', () => {
    expect(presentedImported(DEFAULT_CONFIG, { target: '/x?token=abc', authorization: 'Bearer zzz' })).toEqual({ value: Buffer.from('abc'), carrier: 'query' });
    expect(presentedImported(DEFAULT_CONFIG, { target: '/x', authorization: 'Bearer zzz' })).toEqual({ value: Buffer.from('zzz'), carrier: 'bearer' });
    expect(presentedImported(DEFAULT_CONFIG, { target: '/x', authorization: undefined })).toBeUndefined();
  });
});

describe('every value wis2box-auth accepted is tried against imported records (and only where a governing scope has some)', () => {
  const scope = IMPORTED_SCOPE;
  const index = oddTokensIndex();
  const ask = (target: string, authorization?: string) => decide(index, DEFAULT_CONFIG, { method: 'GET', target, authorization }, 0);
  const q = (t: string) => `/wis2downloader/x?token=${encodeURIComponent(t)}`;

  it.each(Object.entries(ODD_TOKENS))('%s: decide marks it importable; the value read is what wis2box-auth hashed; it matches its record', (_name, token) => {
    const d = ask(q(token));
    expect(d).toMatchObject({ outcome: 'invalid-token', why: 'malformed', importable: true });
    const presented = presentedImported(DEFAULT_CONFIG, { target: q(token), authorization: undefined });
    expect(presented?.value.equals(Buffer.from(token, 'utf8'))).toBe(true);
    const candidates = importedCandidates(index, triesImported(d) ? d.governing : [], 0);
    expect(candidates.filter((c) => matchesImported(presented!.value, c.record)).map((c) => c.record.id)).toEqual([importedRecord(token).id]);
    // Bearer: the header's bytes as sent (node:http hands them over as latin1), inner spaces kept.
    const header = `Bearer ${Buffer.from(token, 'utf8').toString('latin1')}`;
    expect(triesImported(ask('/wis2downloader/x', header))).toBe(true);
    expect(presentedImported(DEFAULT_CONFIG, { target: '/wis2downloader/x', authorization: header })).toEqual({ value: Buffer.from(token, 'utf8'), carrier: 'bearer' });
    // The CLI's has-access-topic grants it too.
    expect(decideImportedSync(index, decideForScope(index, scope, token, 0), token, 0)).toMatchObject({ outcome: 'granted', imported: true, tokenId: importedRecord(token).id });
  });
  it('the query argument is a form value as werkzeug decodes it: "+" is a space', () => {
    expect(presentedImported(DEFAULT_CONFIG, { target: '/wis2downloader/x?token=a+partner+token+with+spaces', authorization: undefined })?.value.toString()).toBe(ODD_TOKENS.spaces);
  });
  it('over 4,096 bytes, or not decodable: not tried (the answer stays malformed)', () => {
    const over = 'M'.repeat(4097);
    expect(presentedImported(DEFAULT_CONFIG, { target: q(over), authorization: undefined })).toBeUndefined();
    expect(presentedImported(DEFAULT_CONFIG, { target: '/x', authorization: `Bearer ${over}` })).toBeUndefined();
    expect(presentedImported(DEFAULT_CONFIG, { target: '/x?token=%E0%A4%A', authorization: undefined })).toBeUndefined();
    expect(decideImportedSync(index, decideForScope(index, scope, over, 0), over, 0)).toMatchObject({ outcome: 'invalid-token', why: 'malformed' });
  });
  it('where no governing scope holds imported records, such a value is malformed and never tried', () => {
    for (const token of Object.values(ODD_TOKENS)) {
      const d = decide(index, DEFAULT_CONFIG, { method: 'GET', target: `/other/x?token=${encodeURIComponent(token)}`, authorization: undefined }, 0);
      expect([d.outcome, d.outcome === 'invalid-token' && d.why, triesImported(d)]).toEqual(['invalid-token', 'malformed', false]);
    }
    // A plausible svc token stays "unknown" (tried against imported records of a governing scope, as before).
    expect(ask(q('a-plausible-but-unknown-token'))).toMatchObject({ outcome: 'invalid-token', why: 'unknown' });
    expect(ask(q('a-plausible-but-unknown-token'))).not.toHaveProperty('importable');
  });
});
