/**
 * Token hashes imported from wis2box-auth's store. wis2box-auth keeps one row per token: a 24-byte random salt and
 * PBKDF2-HMAC-SHA256(token, salt, 100,000 iterations, 32 bytes). The plaintext is unknown, so an imported token stays
 * in that form in the ProtectedScope: `pbkdf2-sha256:<iterations>:<salt hex>:<key hex>`. Such records never enter
 * the SHA-256 token table; each closed scope keeps its imported records in a short list (access-index.ts), which
 * svc-auth checks off the event loop (authz/imported-tokens.ts) only when no SHA-256 record matched; what the
 * decision does with them is imported-decision.ts.
 */
import { pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { parseScope, type Scope } from './scope.js';
import { err, ok, type Result } from './result.js';
import { IMPORTED_HASH_PATTERN, isImportedHash, tokenIdOf, type ImportedHash, type TokenHash } from './token.js';

/** wis2box-auth's parameters (wis2box_auth/base.py): what `svc auth import` expects to find. */
export const WIS2BOX_ITERATIONS = 100_000;
export const DERIVED_KEY_BYTES = 32;

export interface ImportedParams {
  readonly iterations: number;
  readonly salt: Buffer;
  readonly key: Buffer;
}

/** An imported record of a closed scope, decoded once when the index is built. */
export interface ImportedRecord extends ImportedParams {
  /** The stored hash string: what the verified-token cache remembers (it never holds a token). */
  readonly hash: ImportedHash;
  readonly id: string;
  /** ms since the epoch; Infinity when it never expires. */
  readonly expiresAt: number;
}

export function formatImportedHash(iterations: number, salt: Uint8Array, key: Uint8Array): ImportedHash {
  return `pbkdf2-sha256:${iterations}:${Buffer.from(salt).toString('hex')}:${Buffer.from(key).toString('hex')}`;
}

export function parseImportedHash(hash: string): ImportedParams | undefined {
  if (!IMPORTED_HASH_PATTERN.test(hash)) return undefined;
  const [, iterations, salt, key] = hash.split(':') as [string, string, string, string];
  return { iterations: Number(iterations), salt: Buffer.from(salt, 'hex'), key: Buffer.from(key, 'hex') };
}

/** The imported records among a scope's token hashes (the others are SHA-256 and go to the token table). */
export function importedRecordsOf(tokens: readonly { readonly hash: TokenHash; readonly expiresAt?: string }[]): ImportedRecord[] | undefined {
  let out: ImportedRecord[] | undefined;
  for (const t of tokens) {
    if (!isImportedHash(t.hash)) continue;
    const params = parseImportedHash(t.hash);
    if (!params) continue; // the snapshot line was checked against the pattern: unreachable
    const expiresAt = t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
    (out ??= []).push({ ...params, hash: t.hash, id: tokenIdOf(t.hash), expiresAt });
  }
  return out;
}

/** Whether `token` is the one an imported record was derived from (constant-time comparison of the keys). */
export function matchesImported(token: string | Buffer, record: ImportedParams): boolean {
  const derived = pbkdf2Sync(token, record.salt, record.iterations, record.key.length, 'sha256');
  return timingSafeEqual(derived, record.key);
}

/**
 * The scope a wis2box-auth topic becomes. wis2box matched its topics as substrings of the request URI, so the
 * kinds are told apart by shape: a URN is a metadata id; `processes/…`, `collections/stations` and any other
 * value with a slash, or a single word (`wis2downloader`), a path; dotted levels a topic hierarchy.
 */
export function scopeOfWis2boxTopic(topic: string): Result<Scope> {
  const value = topic.trim();
  if (value.length === 0) return err('empty topic');
  if (value.startsWith('urn:')) return parseScope('dataset', value);
  if (value.includes('/') || !value.includes('.')) return parseScope('path', value);
  const topicScope = parseScope('topic', value);
  return topicScope.ok ? topicScope : err(`not a metadata id, a path or a topic hierarchy (${topicScope.error})`);
}

/** Checks a row of wis2box-auth's store: salt and key as bytes, as Python's sqlite3 stores `bytes`. */
export function importedHashOfRow(salt: unknown, key: unknown, iterations = WIS2BOX_ITERATIONS): Result<ImportedHash> {
  if (!(salt instanceof Uint8Array) || !(key instanceof Uint8Array)) return err('salt and key must be blobs (bytes)');
  if (salt.length < 8 || salt.length > 64) return err(`a salt of ${salt.length} bytes (8 to 64 expected)`);
  if (key.length !== DERIVED_KEY_BYTES) return err(`a key of ${key.length} bytes (${DERIVED_KEY_BYTES} expected)`);
  return ok(formatImportedHash(iterations, salt, key));
}

/** The id of the imported record among `records` that `token` was derived from, if any (`remove-token TOKEN`). */
export function importedIdOf(token: string, hashes: readonly string[]): { id: string; hash: ImportedHash } | undefined {
  for (const hash of hashes) {
    if (!isImportedHash(hash)) continue;
    const params = parseImportedHash(hash);
    if (params && matchesImported(token, params)) return { id: tokenIdOf(hash), hash };
  }
  return undefined;
}
