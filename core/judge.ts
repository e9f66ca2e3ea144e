/**
 * A resolved credential judged against the scopes that govern a request (docs/access-rules.md "From a request to a
 * decision", step 6, and the answers table): a token against their records, an identity against their subjects, a
 * session as its identity's JWT would be with the CSRF rule for unsafe methods. Only the governing scopes' grants count.
 */
import type { AccessIndex, IndexedScope } from './access-index.js';
import { isSafeMethod } from './browser.js';
import type { Credential } from './credentials.js';
import type { Area, Decision, GoverningScopes, VerifiedJwt } from './decision.js';
import { governingOf, isClosedByDefault, NO_SCOPES } from './governing.js';
import type { Scope } from './scope.js';
import { hashTokenDigestInto, isPlausibleToken, MAX_TOKEN_LENGTH, tokenIdOfDigest } from './token.js';

/** The presented token's digest: reused, as judge runs to completion and keeps nothing of it but the id. */
const DIGEST = Buffer.alloc(32);

/**
 * Step 3 and the answers table: only the governing scopes' tokens grant. The token's records are walked
 * per governing scope, in order (a digest has one record per scope holding it, usually just one).
 */
export function judge(index: AccessIndex, area: Area, path: string, by: GoverningScopes, credential: Credential | VerifiedJwt, nowMs: number): Decision {
  const governing = governingOf(by);
  const closedByDefault = isClosedByDefault(by);
  // The index scopes whose grants count: none under the stand-in, which holds nothing.
  const scopes = isClosedByDefault(by) ? NO_SCOPES : by;
  if ('ok' in credential) return judgeIdentity(area, path, governing, closedByDefault, scopes, credential, nowMs);
  if (credential.kind === 'none') return { outcome: 'no-token', area, governing, path, closedByDefault };
  if (credential.kind === 'malformed' || credential.token.length > MAX_TOKEN_LENGTH) {
    return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'malformed', ...importable(scopes) };
  }
  // The length bound keeps hashing cheap whatever is sent; the format checks (printable, checksum) only
  // tell "malformed" from "unknown" for a token the index does not hold, so they run after the lookup.
  // Every stored token passed them when it was created, so the answers are the same.
  const digest = hashTokenDigestInto(credential.token, DIGEST);
  const table = index.tokens;
  let expired = false;
  for (const entry of scopes) {
    for (let slot = table.first(digest); slot >= 0; slot = table.next(digest, slot)) {
      if (table.ownerAt(slot) !== entry) continue;
      const expiresAt = table.expiresAt(slot);
      if (expiresAt > nowMs) {
        return { outcome: 'granted', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, tokenId: tokenIdOfDigest(digest), carrier: credential.carrier, expiresAt };
      }
      expired = true;
      break;
    }
  }
  if (expired) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'expired', tokenId: tokenIdOfDigest(digest) };
  // Held unexpired by another scope: "insufficient scope" rather than "unknown".
  for (let slot = table.first(digest); slot >= 0; slot = table.next(digest, slot)) {
    if (table.expiresAt(slot) > nowMs) return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, tokenId: tokenIdOfDigest(digest) };
  }
  if (isPlausibleToken(credential.token)) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'unknown' };
  return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'malformed', ...importable(scopes) };
}

const IMPORTABLE = { importable: true } as const;

/** A value no svc token can be may still be a wis2box-auth one, where a governing scope holds imported records. */
function importable(scopes: readonly IndexedScope[]): { readonly importable?: true } {
  for (const s of scopes) if (s.imported !== undefined) return IMPORTABLE;
  return {};
}

/**
 * Step 3 for an identity: only the governing scopes' subjects grant, the user by name or one of its groups
 * (the first of the identity's groups, in its order, that a scope lists). A JWT that failed verification, or
 * has expired since, is an invalid token; a valid one no governing scope lists, insufficient scope.
 */
function judgeIdentity(area: Area, path: string, governing: readonly Scope[], closedByDefault: boolean, scopes: readonly IndexedScope[], v: VerifiedJwt, nowMs: number): Decision {
  if (!v.ok || v.expiresAt <= nowMs) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'jwt' };
  const { issuer, user, groups } = v.identity;
  for (const entry of scopes) {
    const grants = entry.subjects;
    if (!grants) continue;
    // One decision object, built once the granting name is known: this runs on every repeat request of a session's JWT.
    if (grants.users.has(user)) return { outcome: 'granted-identity', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, issuer, user, carrier: v.carrier, expiresAt: v.expiresAt };
    for (const group of groups) {
      if (grants.groups.has(group)) return { outcome: 'granted-identity', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, issuer, user, carrier: v.carrier, expiresAt: v.expiresAt, group };
    }
  }
  return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, issuer, user, carrier: v.carrier };
}

/**
 * A browser session decides as the same identity's bearer JWT would (judge), with one rule more: an unsafe method
 * needs same-origin evidence (docs/access-rules.md "Browser sessions", CSRF), or the grant is refused as cross-site.
 */
export function judgeSession(index: AccessIndex, area: Area, path: string, by: GoverningScopes, session: VerifiedJwt, method: string | null, sameOrigin: boolean, nowMs: number): Decision {
  const d = judge(index, area, path, by, session, nowMs);
  if (d.outcome !== 'granted-identity' || sameOrigin || isSafeMethod(method)) return d;
  const { governing, closedByDefault, issuer, user, carrier } = d;
  return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, issuer, user, carrier, crossSite: true };
}
