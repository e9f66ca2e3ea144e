/**
 * Where the auth pipeline meets imported (wis2box-auth) tokens: a decision that found no SHA-256 record for the
 * presented token ("unknown"), or a value no svc token can be under a scope holding imported records (spaces, other
 * than ASCII, over 512 characters: wis2box-auth took them), is checked against the governing scopes' imported records, from memory when the
 * token verified before, else off the event loop (./imported-tokens.ts). Every other decision passes unchanged.
 */
import { importedCandidates, presentedImported, triesImported, type AccessConfig, type AccessIndex, type Decision, type ImportedCandidate, type ImportedCredential, type CredentialCarrier } from '../../core/index.js';
import { decidedLater, decidedNow, type Deciding } from './exchange.js';
import type { ImportedTokens } from '../imported/imported-tokens.js';

type Unknown = Extract<Decision, { outcome: 'invalid-token' }>;

/** The grant an imported record gives, shaped like a SHA-256 token's so answers, logs and caching are the same. */
function grantedBy(d: Unknown, c: ImportedCandidate, carrier: CredentialCarrier): Decision {
  return {
    outcome: 'granted', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault,
    scope: c.entry.scope, scopeKey: c.entry.key, tokenId: c.record.id, carrier, expiresAt: c.record.expiresAt, imported: true,
  };
}

/** Checks tokens no SHA-256 record knows against the imported records of the index in service. */
export class ImportedCheck {
  constructor(
    private readonly tokens: ImportedTokens,
    /** The index in service when a derivation ends (it may have been swapped meanwhile). */
    private readonly current: () => AccessIndex | null,
    private readonly access: AccessConfig,
  ) {}

  /**
   * The decision on `req` once imported records are counted: `d` as it stands when nothing imported can change it
   * (any decision but an unknown token or a value no svc token can be: core's triesImported); an imported grant, or
   * another scope's token, now when the token verified before; later when its hash must be derived, resolving to
   * null when no slot was free.
   */
  check(d: Decision, req: { readonly target: string; readonly authorization: string | undefined }, index: AccessIndex, now: number): Deciding {
    if (!triesImported(d)) return decidedNow(d);
    const candidates = importedCandidates(index, d.governing, now);
    // Nothing imported governs and nothing was ever verified: no imported token can change the answer.
    if (candidates.length === 0 && this.tokens.size === 0) return decidedNow(d);
    const presented = presentedImported(this.access, req);
    if (presented === undefined) return decidedNow(d);
    const hit = candidates.length > 0 ? this.tokens.remembered(presented.value, candidates) : undefined;
    if (hit) return decidedNow(grantedBy(d, hit, presented.carrier));
    const elsewhere = this.tokens.rememberedElsewhere(presented.value, index, now);
    if (elsewhere) return decidedNow({ outcome: 'insufficient-scope', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault, tokenId: elsewhere.record.id });
    if (candidates.length === 0) return decidedNow(d);
    return decidedLater(this.derived(d, presented, candidates));
  }

  private async derived(d: Unknown, presented: ImportedCredential, candidates: readonly ImportedCandidate[]): Promise<Decision | null> {
    const v = await this.tokens.verify(presented.value, candidates);
    if (!v.ok) return v.busy ? null : d;
    // Granted only if the index in service after the derivation still holds the record (not revoked meanwhile).
    const after = this.current();
    if (after === null) return null;
    const still = importedCandidates(after, d.governing, Date.now()).find((c) => c.record.hash === v.match.record.hash);
    return still ? grantedBy(d, still, presented.carrier) : d;
  }
}
