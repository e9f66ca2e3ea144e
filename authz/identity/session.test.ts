import { describe, it, expect } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompactEncrypt, EncryptJWT, SignJWT } from 'jose';
import {
  cookieFits, MAX_COOKIE_BYTES, openSession, parseSessionKeys, readSessionKeyFile, seal, sealSession, sealSessionCookie, SESSION_COOKIE,
  SESSION_COOKIE_INSECURE, SESSION_TYP, SessionKeyError, sessionCookieName, setCookieValue, unseal, type SessionKeys,
} from './session.js';

const keyLine = () => randomBytes(32).toString('base64url');
const NOW = Date.parse('2026-11-21T12:00:00Z');
const HOUR = 3600_000;
/** The --session-max-age the sessions below are opened under (the default). */
const MAX_AGE = 8 * HOUR;
const ALICE = { issuer: 'https://idp.example.org', user: 'https://idp.example.org#alice', groups: ['staff', 'wis2-ops'] };

describe('the session key file', () => {
  it('one key per line, base64url or base64 of 32 bytes; blank lines and comments skipped; the first seals', () => {
    const a = keyLine();
    const b = randomBytes(32).toString('base64');
    const keys = parseSessionKeys(`# rotated 2026-11-21\n\n${a}\n  ${b}  \r\n`);
    expect(keys.keys).toHaveLength(2);
    expect(keys.keys[0].kid).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(keys.keys[0].kid).not.toBe(keys.keys[1]!.kid);
    expect(parseSessionKeys(a).keys[0].kid).toBe(keys.keys[0].kid);
  });

  it.each([
    ['a short key', randomBytes(16).toString('base64url'), 'line 1 is not a key'],
    ['a long key', randomBytes(48).toString('base64url'), 'line 1 is not a key'],
    ['hex', randomBytes(32).toString('hex'), 'line 1 is not a key'],
    ['a passphrase', 'correct horse battery staple, correct horse', 'line 1 is not a key'],
    ['nothing', '# only a comment\n\n', 'no key'],
  ])('refuses %s, naming the line and never its content', (_what, text, message) => {
    expect(() => parseSessionKeys(text)).toThrow(SessionKeyError);
    expect(() => parseSessionKeys(text)).toThrow(message);
    try {
      parseSessionKeys(text);
    } catch (e) {
      if (text.trim().length > 0 && !text.startsWith('#')) expect((e as Error).message).not.toContain(text.trim());
    }
  });

  it('refuses a key given twice', () => {
    const a = keyLine();
    expect(() => parseSessionKeys(`${a}\n${keyLine()}\n${a}`)).toThrow('line 3 repeats a key given above it');
  });

  it('reads a file, and says why one cannot be read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-session-keys-'));
    try {
      writeFileSync(join(dir, 'keys'), `${keyLine()}\n`);
      expect(readSessionKeyFile(join(dir, 'keys')).keys).toHaveLength(1);
      expect(() => readSessionKeyFile(join(dir, 'missing'))).toThrow('cannot read the file (ENOENT)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sealing and opening a session', () => {
  const keys = parseSessionKeys(keyLine());

  it('round-trips the identity, with the expiry at most max-age away', async () => {
    const value = await sealSession(keys, ALICE, { maxAgeMs: 8 * HOUR, now: NOW });
    expect(value.split('.')).toHaveLength(5);
    expect(value).not.toContain('alice');
    const s = await openSession(keys, value, { now: NOW + HOUR, maxAgeMs: MAX_AGE });
    expect(s).toEqual({ ...ALICE, issuedAt: NOW, expiresAt: NOW + 8 * HOUR });
  });

  it('an expired session is none', async () => {
    const value = await sealSession(keys, ALICE, { maxAgeMs: HOUR, now: NOW });
    expect(await openSession(keys, value, { now: NOW + HOUR - 1000, maxAgeMs: MAX_AGE })).toBeDefined();
    expect(await openSession(keys, value, { now: NOW + HOUR, maxAgeMs: MAX_AGE })).toBeUndefined();
  });

  it('--session-max-age lowered after issue: a session issued longer ago than the max age now in force has expired', async () => {
    // Issued under 8h; opened by a server now running with 1h.
    const value = await sealSession(keys, ALICE, { maxAgeMs: 8 * HOUR, now: NOW });
    expect(await openSession(keys, value, { now: NOW + 2 * HOUR, maxAgeMs: HOUR })).toBeUndefined();
    expect(await openSession(keys, value, { now: NOW + HOUR, maxAgeMs: HOUR })).toBeUndefined();
    // Within 1h: accepted, and it says when it ends under the max age in force.
    expect(await openSession(keys, value, { now: NOW + HOUR - 1000, maxAgeMs: HOUR })).toEqual({ ...ALICE, issuedAt: NOW, expiresAt: NOW + HOUR });
    expect(await openSession(keys, value, { now: NOW + 30 * 60_000, maxAgeMs: HOUR })).toBeDefined();
    // Raising the max age never lengthens a session past its sealed expiry.
    const short = await sealSession(keys, ALICE, { maxAgeMs: HOUR, now: NOW });
    expect(await openSession(keys, short, { now: NOW + 2 * HOUR, maxAgeMs: 8 * HOUR })).toBeUndefined();
    expect((await openSession(keys, short, { now: NOW, maxAgeMs: 8 * HOUR }))!.expiresAt).toBe(NOW + HOUR);
  });

  it('a tampered value is none: every part, every position', async () => {
    const value = await sealSession(keys, ALICE, { maxAgeMs: HOUR, now: NOW });
    const parts = value.split('.');
    for (const i of [0, 2, 3, 4]) {
      const p = parts[i]!;
      const flipped = `${p.slice(0, 5)}${p[5] === 'A' ? 'B' : 'A'}${p.slice(6)}`;
      const tampered = parts.map((x, j) => (j === i ? flipped : x)).join('.');
      expect(await openSession(keys, tampered, { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
    }
    expect(await openSession(keys, `${value}x`, { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
    expect(await openSession(keys, '', { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
    expect(await openSession(keys, 'svc_not-a-session', { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
  });

  it('a session sealed with another key is none; after rotation the old key still opens its sessions', async () => {
    const other = parseSessionKeys(keyLine());
    const old = await sealSession(keys, ALICE, { maxAgeMs: HOUR, now: NOW });
    expect(await openSession(other, old, { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
    const rotated: SessionKeys = { keys: [other.keys[0], keys.keys[0]] };
    expect(await openSession(rotated, old, { now: NOW, maxAgeMs: MAX_AGE })).toMatchObject({ user: ALICE.user });
    const fresh = await sealSession(rotated, ALICE, { maxAgeMs: HOUR, now: NOW });
    expect(await openSession(other, fresh, { now: NOW, maxAgeMs: MAX_AGE })).toBeDefined();
    expect(await openSession(keys, fresh, { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
  });

  it('another type sealed with the same key (a sign-in transaction) is never a session', async () => {
    const t = await seal(keys, 'svc-sign-in', { iss: ALICE.issuer, user: ALICE.user, groups: [] }, NOW + HOUR, NOW);
    expect(await openSession(keys, t, { now: NOW, maxAgeMs: MAX_AGE })).toBeUndefined();
    expect(await unseal(keys, 'svc-sign-in', t, NOW)).toMatchObject({ user: ALICE.user });
  });

  it('only dir + A256GCM under a known kid; a JWS, or a JWE without typ or kid, is none', async () => {
    const { kid, key } = keys.keys[0];
    const noTyp = await new EncryptJWT({ iss: 'x', user: 'u', groups: [] }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid }).setIssuedAt().setExpirationTime('1h').encrypt(key);
    expect(await openSession(keys, noTyp, { maxAgeMs: MAX_AGE })).toBeUndefined();
    const noKid = await new EncryptJWT({ iss: 'x', user: 'u', groups: [] }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ: SESSION_TYP }).setIssuedAt().setExpirationTime('1h').encrypt(key);
    expect(await openSession(keys, noKid, { maxAgeMs: MAX_AGE })).toBeUndefined();
    const cbc = await new EncryptJWT({ iss: 'x', user: 'u', groups: [] }).setProtectedHeader({ alg: 'dir', enc: 'A128CBC-HS256', typ: SESSION_TYP, kid }).setIssuedAt().setExpirationTime('1h').encrypt(key);
    expect(await openSession(keys, cbc, { maxAgeMs: MAX_AGE })).toBeUndefined();
    const signed = await new SignJWT({ iss: 'x', user: 'u', groups: [] }).setProtectedHeader({ alg: 'HS256', typ: SESSION_TYP, kid }).setIssuedAt().setExpirationTime('1h').sign(key);
    expect(await openSession(keys, signed, { maxAgeMs: MAX_AGE })).toBeUndefined();
  });

  it('a payload without the identity is none, however well sealed', async () => {
    const { kid, key } = keys.keys[0];
    const bad = async (claims: Record<string, unknown>) =>
      openSession(keys, await new EncryptJWT(claims).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ: SESSION_TYP, kid }).setIssuedAt().setExpirationTime('1h').encrypt(key), { maxAgeMs: MAX_AGE });
    expect(await bad({ iss: 'x', groups: [] })).toBeUndefined();
    expect(await bad({ iss: 'x', user: '', groups: [] })).toBeUndefined();
    expect(await bad({ iss: 'x', user: 'u', groups: 'staff' })).toBeUndefined();
    expect(await bad({ iss: 'x', user: 'u', groups: [1] })).toBeUndefined();
    expect(await bad({ user: 'u', groups: [] })).toBeUndefined();
    expect(await bad({ iss: 'x', user: 'u', groups: [] })).toMatchObject({ user: 'u' });
    const raw = await new CompactEncrypt(new TextEncoder().encode('not json')).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ: SESSION_TYP, kid }).encrypt(key);
    expect(await openSession(keys, raw, { maxAgeMs: MAX_AGE })).toBeUndefined();
  });
});

describe('the session cookie', () => {
  const keys = parseSessionKeys(keyLine());

  it('HttpOnly, SameSite=Lax, host-only, Path=/, Secure with the __Host- name unless insecure', () => {
    expect(sessionCookieName(true)).toBe(SESSION_COOKIE);
    expect(SESSION_COOKIE.startsWith('__Host-')).toBe(true);
    expect(sessionCookieName(false)).toBe(SESSION_COOKIE_INSECURE);
    expect(setCookieValue(SESSION_COOKIE, 'v', { secure: true, maxAgeSeconds: 28800 })).toBe('__Host-svc-session=v; Path=/; Max-Age=28800; HttpOnly; SameSite=Lax; Secure');
    expect(setCookieValue(SESSION_COOKIE_INSECURE, 'v', { secure: false, maxAgeSeconds: 0 })).toBe('svc-session=v; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect(setCookieValue('x', 'v', { secure: true, maxAgeSeconds: 1 })).not.toMatch(/Domain/i);
  });

  it('a user with 300 groups keeps the groups the snapshot can use; with too many of those, no cookie at all', async () => {
    const many = { ...ALICE, groups: Array.from({ length: 300 }, (_, i) => `cn=group-${i},ou=groups,dc=example,dc=org`) };
    const usable = (gs: readonly string[]) => gs.filter((g) => g.includes('group-7,') || g.includes('group-42,'));
    const o = { maxAgeMs: HOUR, secure: true, now: NOW };
    const sealed = await sealSessionCookie(keys, many, { ...o, usable });
    expect(sealed).toBeDefined();
    expect(sealed!.droppedGroups).toBe(298);
    expect(cookieFits(SESSION_COOKIE, sealed!.value)).toBe(true);
    expect((await openSession(keys, sealed!.value, { now: NOW, maxAgeMs: MAX_AGE }))!.groups).toEqual(['cn=group-7,ou=groups,dc=example,dc=org', 'cn=group-42,ou=groups,dc=example,dc=org']);
    expect(await sealSessionCookie(keys, many, { ...o, usable: (gs) => gs })).toBeUndefined();
    const few = await sealSessionCookie(keys, ALICE, { ...o, usable: () => [] });
    expect(few!.droppedGroups).toBe(0);
    expect((await openSession(keys, few!.value, { now: NOW, maxAgeMs: MAX_AGE }))!.groups).toEqual(ALICE.groups);
  });

  it('the bound is on name and value together', () => {
    expect(cookieFits('n', 'v'.repeat(MAX_COOKIE_BYTES - 2))).toBe(true);
    expect(cookieFits('n', 'v'.repeat(MAX_COOKIE_BYTES - 1))).toBe(false);
  });
});
