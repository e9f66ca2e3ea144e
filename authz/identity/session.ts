/**
 * Browser sessions (docs/access-rules.md "Browser sessions"): the identity a person signed in with, sealed into a
 * cookie as a jose compact JWE (`dir` + A256GCM, so encrypted and authenticated by one key), with no server-side
 * store: any replica holding the keys opens any session. A session holds the identity only (issuer, user and groups
 * as a bearer JWT of that issuer would name them, issued-at, expiry), never a grant: grants are read from the index
 * in service on every request.
 *
 * Keys come from `--session-key-file`: one key per line, base64url (or base64) of 32 random bytes; blank lines and
 * lines starting with `#` are skipped. The first key seals, every key opens (rotation: put the new key first, keep
 * the old one below it until the sessions it sealed have expired). Each sealed value names its key by a short id
 * (the first 8 base64url characters of the key's SHA-256), so opening tries one key. A value that does not open
 * (another key, tampered, expired, not ours) is no session, never an error. Key material never reaches a message.
 *
 * This module is also the way for other programs (bench:auth) to mint a session cookie from a key file:
 * `sealSession(readSessionKeyFile(path), identity, { maxAgeMs })` and `sessionCookieName(secure)`.
 */
import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';

/** Bytes of one session key (A256GCM). */
export const SESSION_KEY_BYTES = 32;
/** The session cookie's name over HTTPS; `__Host-` makes browsers refuse it unless Secure, Path=/ and host-only. */
export const SESSION_COOKIE = '__Host-svc-session';
/** The session cookie's name when the external URL is http:// on loopback (tests, a laptop): no Secure, no prefix. */
export const SESSION_COOKIE_INSECURE = 'svc-session';
/** The longest `name=value` of a cookie svc-auth sets: browsers drop a cookie over 4096 bytes without a word. */
export const MAX_COOKIE_BYTES = 4000;
/** What a sealed value says it is (the JWE's `typ`), so a sign-in transaction is never read as a session. */
export const SESSION_TYP = 'svc-session';

export function sessionCookieName(secure: boolean): string {
  return secure ? SESSION_COOKIE : SESSION_COOKIE_INSECURE;
}

export interface SessionKey {
  /** The first 8 base64url characters of the key's SHA-256: which key sealed a value. */
  readonly kid: string;
  readonly key: KeyObject;
}

/** The keys of `--session-key-file`: the first seals, every one opens. */
export interface SessionKeys {
  readonly keys: readonly [SessionKey, ...SessionKey[]];
}

/** A key file that cannot be used; the message names the line, never its content. */
export class SessionKeyError extends Error {}

const KEY_LINE = /^[A-Za-z0-9+/_-]{43}=?$/;

/** The keys of a key file's text (see the module comment for the format). */
export function parseSessionKeys(text: string): SessionKeys {
  const keys: SessionKey[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line.length === 0 || line.startsWith('#')) continue;
    // Node's base64 decoder takes both alphabets; the pattern keeps anything else (and other lengths) out.
    const bytes = KEY_LINE.test(line) ? Buffer.from(line.replace(/=$/, ''), 'base64') : undefined;
    if (bytes === undefined || bytes.length !== SESSION_KEY_BYTES) {
      throw new SessionKeyError(`line ${i + 1} is not a key: give base64url of ${SESSION_KEY_BYTES} random bytes (43 characters), e.g. from "openssl rand -base64 32"`);
    }
    const kid = createHash('sha256').update(bytes).digest('base64url').slice(0, 8);
    if (keys.some((k) => k.kid === kid)) throw new SessionKeyError(`line ${i + 1} repeats a key given above it`);
    keys.push({ kid, key: createSecretKey(bytes) });
  }
  const [first, ...rest] = keys;
  if (first === undefined) throw new SessionKeyError(`no key: put one key per line (base64url of ${SESSION_KEY_BYTES} random bytes), the one that seals first`);
  return { keys: [first, ...rest] };
}

/** The keys of a key file; a SessionKeyError says what is wrong with it. */
export function readSessionKeyFile(path: string): SessionKeys {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SessionKeyError(`cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseSessionKeys(text);
}

/** Seals `payload` (JWT claims, `iat` and `exp` set here) as a compact JWE of type `typ` under the first key. */
export async function seal(keys: SessionKeys, typ: string, payload: JWTPayload, expiresAtMs: number, nowMs = Date.now()): Promise<string> {
  const { kid, key } = keys.keys[0];
  return new EncryptJWT(payload)
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ, kid })
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(Math.floor(expiresAtMs / 1000))
    .encrypt(key);
}

/**
 * The claims of a value sealed as `typ` by one of the keys and not expired at `nowMs`; undefined for anything
 * else (another key, tampered, expired, another type, not a JWE at all).
 */
export async function unseal(keys: SessionKeys, typ: string, value: string, nowMs = Date.now()): Promise<JWTPayload | undefined> {
  if (value.length === 0 || value.length > MAX_COOKIE_BYTES) return undefined;
  try {
    const { payload } = await jwtDecrypt(value, (header) => {
      const found = keys.keys.find((k) => k.kid === header.kid);
      if (found === undefined) throw new Error('no such key');
      return found.key;
    }, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], typ, requiredClaims: ['iat', 'exp'], currentDate: new Date(nowMs) });
    return payload;
  } catch {
    return undefined;
  }
}

/** Who signed in: as the issuer's bearer JWTs name them (prefixes applied). */
export interface SessionIdentity {
  readonly issuer: string;
  readonly user: string;
  readonly groups: readonly string[];
}

export interface Session extends SessionIdentity {
  /** ms since the epoch. */
  readonly issuedAt: number;
  /** The sooner of the sealed expiry and `issuedAt` plus the max age it was opened under. */
  readonly expiresAt: number;
}

/** A session's sealed value (the cookie's value), valid for `maxAgeMs` from `now`. */
export function sealSession(keys: SessionKeys, identity: SessionIdentity, o: { readonly maxAgeMs: number; readonly now?: number }): Promise<string> {
  const now = o.now ?? Date.now();
  return seal(keys, SESSION_TYP, { iss: identity.issuer, user: identity.user, groups: [...identity.groups] }, now + o.maxAgeMs, now);
}

/**
 * The session a cookie value holds, or undefined: no session (it does not open, has expired, or is malformed).
 *
 * `maxAgeMs` is the `--session-max-age` in force now, not the one the session was sealed under: a session issued
 * longer ago than that has expired, whatever its sealed expiry says, so lowering the flag ends the sessions already
 * issued beyond it (the sealed `exp` alone would keep them for the old max age). Every session carries its
 * issued-at: seal() has set `iat` since sessions exist, and unseal() has always required it, so none is refused for
 * lacking one.
 */
export async function openSession(keys: SessionKeys, value: string, o: { readonly maxAgeMs: number; readonly now?: number }): Promise<Session | undefined> {
  const now = o.now ?? Date.now();
  const p = await unseal(keys, SESSION_TYP, value, now);
  if (p === undefined) return undefined;
  const { iss, user, groups, iat, exp } = p as { iss?: unknown; user?: unknown; groups?: unknown; iat?: unknown; exp?: unknown };
  if (typeof iss !== 'string' || typeof user !== 'string' || user.length === 0 || typeof iat !== 'number' || typeof exp !== 'number') return undefined;
  if (!Array.isArray(groups) || !groups.every((g): g is string => typeof g === 'string' && g.length > 0)) return undefined;
  const expiresAt = Math.min(exp * 1000, iat * 1000 + o.maxAgeMs);
  if (expiresAt <= now) return undefined;
  return { issuer: iss, user, groups, issuedAt: iat * 1000, expiresAt };
}

export interface CookieAttributes {
  /** Secure (and the `__Host-` name) unless the external URL is http:// on loopback. */
  readonly secure: boolean;
  /** Seconds; 0 clears the cookie. */
  readonly maxAgeSeconds: number;
}

/**
 * A Set-Cookie value: HttpOnly (no script reads it), SameSite=Lax (sent on top-level navigations from other sites,
 * as the provider's redirect back is, never on their subrequests or form POSTs), host-only (no Domain), Path=/.
 */
export function setCookieValue(name: string, value: string, a: CookieAttributes): string {
  return `${name}=${value}; Path=/; Max-Age=${a.maxAgeSeconds}; HttpOnly; SameSite=Lax${a.secure ? '; Secure' : ''}`;
}

/** Whether `name=value` stays within what every browser keeps (MAX_COOKIE_BYTES). */
export function cookieFits(name: string, value: string): boolean {
  return name.length + 1 + value.length <= MAX_COOKIE_BYTES;
}

/** A session cookie's value, and the groups left out to make it fit. */
export interface SealedCookie {
  readonly value: string;
  /** The identity's groups not in the session: none unless it had to be narrowed to fit. */
  readonly droppedGroups: number;
}

/**
 * A session's cookie value within MAX_COOKIE_BYTES: the identity as it is when it fits; else with only the groups
 * `usable` keeps (the groups some subject of the snapshot names: the others can grant nothing today); else
 * undefined, which the sign-in answers with an error page rather than a cookie the browser would drop.
 */
export async function sealSessionCookie(
  keys: SessionKeys,
  identity: SessionIdentity,
  o: { readonly maxAgeMs: number; readonly secure: boolean; readonly usable: (groups: readonly string[]) => readonly string[]; readonly now?: number },
): Promise<SealedCookie | undefined> {
  const name = sessionCookieName(o.secure);
  const whole = await sealSession(keys, identity, o);
  if (cookieFits(name, whole)) return { value: whole, droppedGroups: 0 };
  const groups = o.usable(identity.groups);
  const narrowed = await sealSession(keys, { ...identity, groups }, o);
  return cookieFits(name, narrowed) ? { value: narrowed, droppedGroups: identity.groups.length - groups.length } : undefined;
}
