import { describe, it, expect } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { SessionCache } from './session-cache.js';
import { parseSessionKeys, sealSession } from './session.js';

const ISSUER = 'https://idp.example.org';
const keys = parseSessionKeys(randomBytes(32).toString('base64url'));
const NOW = Date.now();
const HOUR = 3600_000;

describe('SessionCache', () => {
  it('a session opened once is known synchronously after, until it expires', async () => {
    const cache = new SessionCache(keys, ISSUER, HOUR);
    const value = await sealSession(keys, { issuer: ISSUER, user: 'alice', groups: ['ops'] }, { maxAgeMs: 60_000, now: NOW });
    expect(cache.known(value, NOW)).toBeUndefined();
    const opened = await cache.open(value, NOW);
    expect(opened).toEqual({ ok: true, identity: { issuer: ISSUER, user: 'alice', groups: ['ops'] }, carrier: 'session', expiresAt: Math.floor((NOW + 60_000) / 1000) * 1000 });
    expect(cache.known(value, NOW + 1000)).toBe(opened);
    // Compared whole: the same tail with another beginning is not the same session.
    expect(cache.known(`x${value.slice(1)}`, NOW)).toBeUndefined();
    expect(cache.known(value, opened!.expiresAt)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('a kept session is judged against the max age in force: issued under 8h, refused 1h after issue by a 1h server', async () => {
    const cache = new SessionCache(keys, ISSUER, HOUR);
    const value = await sealSession(keys, { issuer: ISSUER, user: 'alice', groups: ['ops'] }, { maxAgeMs: 8 * HOUR, now: NOW });
    const opened = await cache.open(value, NOW + 30 * 60_000);
    expect(opened?.expiresAt).toBe(Math.floor(NOW / 1000) * 1000 + HOUR);
    expect(cache.known(value, NOW + 59 * 60_000)).toBe(opened);
    // Its sealed expiry is 8h away, but it was issued more than the max age in force ago.
    expect(cache.known(value, NOW + 2 * HOUR)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(await cache.open(value, NOW + 2 * HOUR)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('failures are not kept; a session of another issuer is none', async () => {
    const cache = new SessionCache(keys, ISSUER, HOUR);
    expect(await cache.open('not.a.session.at.all', NOW)).toBeUndefined();
    const foreign = await sealSession(keys, { issuer: 'https://other.example.org', user: 'alice', groups: [] }, { maxAgeMs: 60_000, now: NOW });
    expect(await cache.open(foreign, NOW)).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
