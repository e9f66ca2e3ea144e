/**
 * Where the auth pipeline meets imported (wis2box-auth) tokens: a decision that found no SHA-256 record for the
 * presented token ("unknown"), or a value no svc token can be under a scope holding imported records (spaces, other
 * than ASCII, over 512 characters: wis2box-auth took them), is checked against the governing scopes' imported records, from memory when the
 * token verified before, else off the event loop (./imported-tokens.ts). Every other decision passes unchanged.
 */
import { importedCandidates, presentedImported, triesImported, type AccessConfig, type AccessIndex, type Decision, type ImportedCandidate, type CredentialCarrier } from '../core/index.js';
import type { ImportedTokens } from './imported-tokens.js';

type Unknown = Extract<Decision, { outcome: 'invalid-token' }>;

/** The grant an imported record gives, shaped like a SHA-256 token's so answers, logs and caching are the same. */
function grantedBy(d: Unknown, c: ImportedCandidate, carrier: CredentialCarrier): Decision {
  return {
    outcome: 'granted', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault,
    scope: c.entry.scope, scopeKey: c.entry.key, tokenId: c.record.id, carrier, expiresAt: c.record.expiresAt, imported: true,
  };
}

/**
 * undefined: nothing imported to check (the decision stands); a Decision: answered now (a remembered token); a
 * Promise: verifying, resolving to the decision, or to null when no slot was free (refused as unavailable).
 */
export function checkImported(
  tokens: ImportedTokens, current: () => AccessIndex | null, access: AccessConfig, req: { readonly target: string; readonly authorization: string | undefined },
  d: Decision, index: AccessIndex, now: number,
): Decision | Promise<Decision | null> | undefined {
  if (!triesImported(d)) return undefined;
  const candidates = importedCandidates(index, d.governing, now);
  // Nothing imported governs and nothing was ever verified: no imported token can change the answer.
  if (candidates.length === 0 && tokens.size === 0) return undefined;
  const presented = presentedImported(access, req);
  if (presented === undefined) return undefined;
  const hit = candidates.length > 0 ? tokens.remembered(presented.value, candidates) : undefined;
  if (hit) return grantedBy(d, hit, presented.carrier);
  const elsewhere = tokens.rememberedElsewhere(presented.value, index, now);
  if (elsewhere) return { outcome: 'insufficient-scope', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault, tokenId: elsewhere.record.id };
  if (candidates.length === 0) return undefined;
  return tokens.verify(presented.value, candidates).then((v) => {
    if (!v.ok) return v.busy ? null : d;
    // Granted only if the index in service after the derivation still holds the record (not revoked meanwhile).
    const after = current();
    if (after === null) return null;
    const still = importedCandidates(after, d.governing, Date.now()).find((c) => c.record.hash === v.match.record.hash);
    return still ? grantedBy(d, still, presented.carrier) : d;
  });
}
