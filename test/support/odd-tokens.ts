/**
 * Tokens wis2box-auth took, most of them values no svc token can be, and a decision index in which each has an
 * imported record: the imported-token tests of core (the decision) and of svc-auth (through the server) use the same.
 */
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, compileSnapshot, formatImportedHash, hashToken, newProtectedScope, scopeObjectName, tokenIdOf, type AccessIndex, type Scope, type TokenRecord } from '../../core/index.js';

/**
 * What wis2box-auth took through ?token= (werkzeug decodes it as UTF-8) that no svc token can be: svc-auth answers
 * "malformed" unless a governing scope holds imported records.
 */
export const ODD_TOKENS = {
  spaces: 'a partner token with spaces',
  nonAscii: 'jeton-météo-Ünïcode-€-パートナー',
  svcPrefix: 'svc_not-one-of-ours-no-checksum',
  long: 'L'.repeat(600),
  max: 'M'.repeat(4096),
} as const;

/** Every wis2box-auth token of these tests: the odd ones, and a short one svc would take for one of its own ("unknown"). */
export const WIS2BOX_TOKENS = { short: 'mytoken', ...ODD_TOKENS } as const;

/** The scope holding an imported record of each of WIS2BOX_TOKENS. */
export const IMPORTED_SCOPE: Scope = { kind: 'path', value: 'wis2downloader' };
/** A scope with a SHA-256 token only. */
export const SHA_ONLY_SCOPE: Scope = { kind: 'path', value: 'other' };

const SALT = Buffer.alloc(24, 5);
const ITERATIONS = 1000;

/** An imported (wis2box-auth, PBKDF2) record of `token`, with few iterations so that tests stay fast. */
export function importedRecord(token: string): TokenRecord {
  const hash = formatImportedHash(ITERATIONS, SALT, pbkdf2Sync(token, SALT, ITERATIONS, 32, 'sha256'));
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
}

/** IMPORTED_SCOPE with an imported record of each of WIS2BOX_TOKENS, SHA_ONLY_SCOPE with one SHA-256 token. */
export function oddTokensIndex(): AccessIndex {
  const sha = hashToken('a-sha256-token-of-other');
  const built = buildIndex('g', compileSnapshot([
    newProtectedScope(IMPORTED_SCOPE, scopeObjectName(IMPORTED_SCOPE), undefined, Object.values(WIS2BOX_TOKENS).map(importedRecord)),
    newProtectedScope(SHA_ONLY_SCOPE, scopeObjectName(SHA_ONLY_SCOPE), undefined, [{ id: tokenIdOf(sha), hash: sha, createdAt: '2026-01-01T00:00:00Z' }]),
  ]).lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}
