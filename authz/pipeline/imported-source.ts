/**
 * Source 4 of the credential road (./credential-road.ts): imported (wis2box-auth) records, asked only where the
 * judgement of the explicit credential says "unknown" (no SHA-256 record knows the token) or found a value no svc
 * token can be under a scope holding imported records (spaces, other than ASCII, over 512 characters: wis2box-auth
 * took them; core's triesImported). A token verified before is known now; otherwise its hash is derived later, off
 * the event loop (../imported/imported-tokens.ts), and the match judged against the index in service then. Every
 * other decision passes unchanged.
 */
import { grantedByImported, importedCandidates, importedCredential, triesImported, type AccessConfig, type AccessIndex, type Decision, type GovernedRequest, type ImportedCandidate, type ImportedCredential, type ImportedMatch, type Credential } from '../../core/index.js';
import { decidedLater, decidedNow, type Deciding, type Later } from './exchange.js';
import type { ImportedTokens } from '../imported/imported-tokens.js';

type Unknown = Extract<Decision, { outcome: 'invalid-token' }>;

export class ImportedSource {
  constructor(
    private readonly tokens: ImportedTokens,
    private readonly access: Pick<AccessConfig, 'tokenParam'>,
  ) {}

  /**
   * The decision once imported records are counted: undefined when nothing imported can change `d`; an imported grant,
   * or another scope's token, now when the token verified before; later when its hash must be derived, judged once
   * more by the road's `judgedLater` (null when no slot was free).
   */
  after(d: Decision, g: GovernedRequest, explicit: Credential, authorization: string | undefined, index: AccessIndex, now: number, judgedLater: (later: Later) => Decision | null): Deciding | undefined {
    if (!triesImported(d)) return undefined;
    const candidates = importedCandidates(index, g.governing, now);
    // Nothing imported governs and nothing was ever verified: no imported token can change the answer.
    if (candidates.length === 0 && this.tokens.size === 0) return undefined;
    // Read from the query settleRequest normalized: the target is never normalized twice.
    const presented = importedCredential(g.query, authorization, this.access.tokenParam);
    if (presented === undefined) return undefined;
    const hit = candidates.length > 0 ? this.tokens.remembered(presented.value, candidates) : undefined;
    if (hit) return decidedNow(grantedByImported(g, hit, presented.carrier));
    const elsewhere = this.tokens.rememberedElsewhere(presented.value, index, now);
    if (elsewhere) return decidedNow(insufficientScope(d, elsewhere));
    if (candidates.length === 0) return undefined;
    return decidedLater(this.derived(presented, candidates, tokenOf(explicit)).then(judgedLater));
  }

  /** The hash derived: the record it matches, judged later; the token itself when none matches; none when no slot was free. */
  private async derived(presented: ImportedCredential, candidates: readonly ImportedCandidate[], token: ImportedMatch['token']): Promise<Later> {
    const v = await this.tokens.verify(presented.value, candidates);
    if (!v.ok) return { credential: v.busy ? null : token };
    return { credential: { kind: 'imported', hash: v.match.record.hash, token } };
  }
}

/** Another scope's imported token, known: insufficient scope, as for a SHA-256 token of another scope. */
function insufficientScope(d: Unknown, elsewhere: ImportedCandidate): Decision {
  return { outcome: 'insufficient-scope', area: d.area, governing: d.governing, path: d.path, closedByDefault: d.closedByDefault, tokenId: elsewhere.record.id };
}

/**
 * The explicit credential the imported record was asked about (a token, or a value no svc token can be): what the
 * request is judged as when no imported record matches. Never none, since only a presented value is asked about; a
 * malformed credential would be the safe reading if it were.
 */
function tokenOf(c: Credential): ImportedMatch['token'] {
  return c.kind === 'none' ? { kind: 'malformed', carrier: 'bearer' } : c;
}
