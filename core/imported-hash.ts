/**
 * Token hashes imported from wis2box-auth's store. wis2box-auth keeps one row per token: a 24-byte random salt and
 * PBKDF2-HMAC-SHA256(token, salt, 100,000 iterations, 32 bytes). The plaintext is unknown, so an imported token stays
 * in that form in the ProtectedScope: `pbkdf2-sha256:<iterations>:<salt hex>:<key hex>`. Such records never enter
 * the SHA-256 token table; each closed scope keeps its imported records in a short list (access-index.ts), which
 * svc-auth checks off the event loop (authz/imported/imported-tokens.ts) only when no SHA-256 record matched; what the
 * decision does with them is imported-decision.ts.
 */
import { pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { IMPORTED_HASH_PATTERN, isImportedHash, tokenIdOf, type ImportedHash, type TokenHash } from './token.js';

/** wis2box-auth's parameters (wis2box_auth/base.py): what `svc auth import` expects to find. */
export const WIS2BOX_ITERATIONS = 100_000;
export const DERIVED_KEY_BYTES = 32;

interface ImportedParams {
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

/** The id of the imported record among `records` that `token` was derived from, if any (`remove-token TOKEN`). */
export function importedIdOf(token: string, hashes: readonly string[]): { id: string; hash: ImportedHash } | undefined {
  for (const hash of hashes) {
    if (!isImportedHash(hash)) continue;
    const params = parseImportedHash(hash);
    if (params && matchesImported(token, params)) return { id: tokenIdOf(hash), hash };
  }
  return undefined;
}
