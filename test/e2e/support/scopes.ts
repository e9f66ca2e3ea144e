import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, scopeObjectName, tokenIdOf, type Scope, type TokenRecord } from '../../../core/index.js';

/** A fresh generated token; the suite keeps the plaintext in memory only and never prints it. */
export function newToken(): string {
  return formatGeneratedToken(randomBytes(32));
}

/** The record stored for a token: only its hash and id. */
export function tokenRecord(token: string, expiresAt?: string): TokenRecord {
  const hash = hashToken(token);
  const record: TokenRecord = { id: tokenIdOf(hash), hash, createdAt: new Date(Date.now() - 60_000).toISOString() };
  return expiresAt === undefined ? record : { ...record, expiresAt };
}

export function manifestFile(dir: string, scope: Scope): string {
  return join(dir, `${scopeObjectName(scope)}.yaml`);
}

export function manifestText(scope: Scope, records: readonly TokenRecord[]): string {
  return dumpManifests([newProtectedScope(scope, scopeObjectName(scope), undefined, records)]);
}

/** Writes a scope's manifest the way the CLI does: to a staging file, then renamed into the directory. */
export function writeScopeAtomically(dir: string, stagingDir: string, scope: Scope, records: readonly TokenRecord[]): void {
  const staged = join(stagingDir, `${scopeObjectName(scope)}.yaml`);
  writeFileSync(staged, manifestText(scope, records));
  renameSync(staged, manifestFile(dir, scope));
}

/** Rewrites a manifest in place, the way an editor that keeps the inode does. */
export function rewriteScopeInPlace(dir: string, scope: Scope, records: readonly TokenRecord[]): void {
  writeFileSync(manifestFile(dir, scope), manifestText(scope, records));
}

export function removeScope(dir: string, scope: Scope): void {
  rmSync(manifestFile(dir, scope), { force: true });
}
