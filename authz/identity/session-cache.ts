/**
 * Sessions opened before, kept for their next requests: a browser sends the same cookie on every request, and
 * opening it (an AES-GCM decryption through WebCrypto) is asynchronous, so a session seen before is decided in the
 * same synchronous pass as a token. Only what the cookie holds is kept (the identity and its expiry, which is
 * checked on every request), never a decision: grants are read from the index in service each time. The expiry kept
 * is the one openSession gave under the max age in force (the sooner of the sealed expiry and issued-at plus
 * `--session-max-age`, which is fixed for the cache's life), so a kept session ends when one opened afresh would.
 * Keyed by a few of the value's last characters (./tail-key.ts) and compared whole; bounded in entries and
 * characters, and cleared when full, like the JWT verifications of ./oidc.ts. Failures are not kept.
 */
import type { VerifiedJwt } from '../../core/index.js';
import { openSession, type SessionKeys } from './session.js';
import { tailKey } from './tail-key.js';

const MAX_ENTRIES = 10_000;
const MAX_CHARS = 8 * 1024 * 1024;

/** A session as decide takes it: an identity with carrier `session`. */
export type SessionCredential = Extract<VerifiedJwt, { ok: true }>;

interface Entry {
  readonly value: string;
  readonly credential: SessionCredential;
}

export class SessionCache {
  private readonly opened = new Map<number, Entry>();
  private chars = 0;

  /**
   * `issuer`: the sign-in issuer; a session of another issuer (the configuration changed) is none. `maxAgeMs`: the
   * `--session-max-age` in force; a session issued longer ago is none, whatever max age it was sealed under.
   */
  constructor(
    private readonly keys: SessionKeys,
    private readonly issuer: string,
    private readonly maxAgeMs: number,
  ) {}

  /** A session opened before and not expired at `now`, synchronously; undefined otherwise (open it). */
  known(value: string, now: number): SessionCredential | undefined {
    if (this.opened.size === 0) return undefined;
    const key = tailKey(value);
    const hit = this.opened.get(key);
    if (hit === undefined || hit.value !== value) return undefined;
    if (hit.credential.expiresAt > now) return hit.credential;
    this.opened.delete(key);
    this.chars -= value.length;
    return undefined;
  }

  /** The session the value holds (kept for its next requests), or undefined: no session. */
  async open(value: string, now: number): Promise<SessionCredential | undefined> {
    const s = await openSession(this.keys, value, { now, maxAgeMs: this.maxAgeMs });
    if (s === undefined || s.issuer !== this.issuer) return undefined;
    const credential: SessionCredential = { ok: true, identity: { issuer: s.issuer, user: s.user, groups: s.groups }, carrier: 'session', expiresAt: s.expiresAt };
    if (this.opened.size >= MAX_ENTRIES || this.chars + value.length > MAX_CHARS) {
      this.opened.clear();
      this.chars = 0;
    }
    const key = tailKey(value);
    const previous = this.opened.get(key);
    if (previous !== undefined) this.chars -= previous.value.length;
    this.opened.set(key, { value, credential });
    this.chars += value.length;
    return credential;
  }

  get size(): number {
    return this.opened.size;
  }
}
