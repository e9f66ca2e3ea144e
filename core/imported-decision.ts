/**
 * What the decision does with imported (wis2box-auth) hashes: which records a presented token is checked against
 * (svc-auth, off the event loop), and the CLI's synchronous check of a token no SHA-256 record knows. The hash form
 * itself is imported-hash.ts.
 */
import { entryOf, type AccessIndex, type IndexedScope } from './access-index.js';
import { importedCredential, MAX_IMPORTED_TOKEN_BYTES, type ImportedCredential } from './credentials.js';
import type { AccessConfig, Decision, Governed, VerifyJwt } from './decision.js';
import type { CredentialCarrier } from './credentials.js';
import { matchesImported, type ImportedRecord } from './imported-hash.js';
import { normalizeTarget } from './normalize.js';
import { scopeKey, type Scope } from './scope.js';

export interface ImportedCandidate {
  readonly entry: IndexedScope;
  readonly record: ImportedRecord;
}

/** The unexpired imported records of the governing scopes, in their order: what a presented token is checked against. */
export function importedCandidates(index: AccessIndex, governing: readonly Scope[], nowMs: number): ImportedCandidate[] {
  const out: ImportedCandidate[] = [];
  for (const scope of governing) {
    const entry = entryOf(index, scope);
    if (!entry?.imported) continue;
    for (const record of entry.imported) if (record.expiresAt > nowMs) out.push({ entry, record });
  }
  return out;
}

/** The grant an imported record gives, shaped like a SHA-256 token's so answers, logs and caching are the same. */
export function grantedByImported(g: Governed, c: ImportedCandidate, carrier: CredentialCarrier): Decision {
  return {
    outcome: 'granted', area: g.area, governing: g.governing, path: g.path, closedByDefault: g.closedByDefault,
    scope: c.entry.scope, scopeKey: c.entry.key, tokenId: c.record.id, carrier, expiresAt: c.record.expiresAt, imported: true,
  };
}

/**
 * Whether a decision still waits on imported records: a token no SHA-256 record knows ("unknown"), or a value no
 * svc token can be where a governing scope holds imported records (decide marks it `importable`).
 */
export function triesImported(d: Decision | VerifyJwt): d is Extract<Decision, { outcome: 'invalid-token' }> {
  return d.outcome === 'invalid-token' && (d.why === 'unknown' || d.importable === true);
}

/**
 * The value a request presents for imported records (query argument, Bearer, Basic password, from where decide
 * reads the token), as wis2box-auth read it: importedCredential. Undefined for none.
 */
export function presentedImported(config: Pick<AccessConfig, 'tokenParam'>, req: { readonly target: string; readonly authorization: string | undefined }): ImportedCredential | undefined {
  const target = normalizeTarget(req.target);
  if (!target.ok) return undefined;
  return importedCredential(target.query, req.authorization, config.tokenParam);
}

/** Every indexed scope that holds imported records (topics walked through their trie). */
function* entriesWithImported(index: AccessIndex): Generator<IndexedScope> {
  for (const e of index.datasets.values()) if (e.imported) yield e;
  for (const e of index.paths.values()) if (e.imported) yield e;
  const stack = [...index.topics.values()];
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.scope?.imported) yield node.scope;
    stack.push(...node.children.values());
  }
}

/**
 * The CLI's answer for a token no SHA-256 record knows (`has-access-topic`): checked synchronously against the
 * imported records, the governing scopes' first, then every other scope's, so an imported token of another scope
 * reads "another scope" as a SHA-256 one does. svc-auth never calls this: each derivation costs ~19 ms of CPU,
 * which a person running one command can spend but a server answering requests cannot (authz/pipeline/imported-source.ts).
 */
export function decideImportedSync(index: AccessIndex, d: Decision, token: string, nowMs: number): Decision {
  if (!triesImported(d)) return d;
  if (Buffer.byteLength(token) > MAX_IMPORTED_TOKEN_BYTES) return d;
  for (const scope of d.governing) {
    const entry = entryOf(index, scope);
    const record = entry?.imported?.find((r) => matchesImported(token, r));
    if (!entry || !record) continue;
    if (record.expiresAt <= nowMs) return { ...d, why: 'expired', tokenId: record.id };
    return {
      outcome: 'granted', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault,
      scope: entry.scope, scopeKey: entry.key, tokenId: record.id, carrier: 'bearer', expiresAt: record.expiresAt, imported: true,
    };
  }
  const governing = new Set(d.governing.map((s) => scopeKey(s)));
  for (const entry of entriesWithImported(index)) {
    if (governing.has(entry.key)) continue;
    const record = entry.imported!.find((r) => r.expiresAt > nowMs && matchesImported(token, r));
    if (record) return { outcome: 'insufficient-scope', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault, tokenId: record.id };
  }
  return d;
}
