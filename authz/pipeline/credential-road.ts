/**
 * svc-auth's one road from a credential to a decision (docs/architecture.md "The credential road"). core settles what
 * governs a request (open, malformed, granted by a network, or governed); a governed request's credential is then
 * resolved by one ordered list of sources, as oauth2-proxy's session loaders and Authelia's authentication strategies
 * are one list, and judged by core:
 *
 *   1. the explicit credential (`?token=`, Bearer, Basic): a token, judged now;
 *   2. a bearer JWT of a configured issuer: known now (verified before), or verified later;
 *   3. the session cookie, only without an explicit credential: known now, or opened later (./session-source.ts);
 *   4. an imported (wis2box-auth) record, only where the judgement says "unknown": known now, or derived later
 *      (./imported-source.ts).
 *
 * Each source answers now, later (a promise) or not at all. Whatever is resolved later is settled and judged once more
 * against the index in service, by judgedLater alone, so a grant removed (or a network added) meanwhile counts. Open
 * requests and network grants never reach this road: they never read a cookie or a JWT.
 */
import { extractCredential, judgeRequest, jwtToVerify, settleRequest, type AccessConfig, type Credential, type AccessIndex, type Decision, type GovernedRequest, type ResolvedCredential, type VerifiedJwt } from '../../core/index.js';
import type { OidcVerifier } from '../identity/oidc.js';
import type { HeadRequest } from '../http/head.js';
import type { AuthMetrics } from '../telemetry/metrics.js';
import { outcomeOf } from './bookkeeping.js';
import { decidedLater, decidedNow, type Asked, type Deciding, type Exchange, type Later, type Resolution, type Source } from './exchange.js';
import type { ImportedSource } from './imported-source.js';
import type { SessionSource } from './session-source.js';

export interface RoadOptions {
  readonly access: AccessConfig;
  /** The index in service when a later resolution ends (it may have been swapped meanwhile). */
  readonly current: () => AccessIndex | null;
  readonly metrics: Pick<AuthMetrics, 'jwtDecision'>;
  /** The OpenID verifier when issuers are configured; `access.oidcIssuers` names the same issuers. */
  readonly oidc?: Pick<OidcVerifier, 'known' | 'verify'>;
  /** Browser sign-in's session cookie (source 3); absent: no session is ever read. */
  readonly sessions?: SessionSource;
  /** Imported wis2box-auth records (source 4); absent: they never grant. */
  readonly imported?: ImportedSource;
}

export class CredentialRoad {
  constructor(private readonly o: RoadOptions) {}

  /** The decision on a governed request: its credential resolved by the list, then judged, now or later. */
  decide(g: GovernedRequest, asked: Asked, req: HeadRequest, x: Exchange, index: AccessIndex): Deciding {
    const explicit = extractCredential(g.query, asked.authorization, this.o.access.tokenParam);
    const r = this.resolve(explicit, asked, req, x);
    if ('later' in r) return decidedLater(r.later.then((l) => this.judgedLater(asked, l, r.source)));
    const d = judgeRequest(index, g, r.now, x.at);
    return this.o.imported?.after(d, g, explicit, asked.authorization, index, x.at, (l) => this.judgedLater(asked, l, 'imported')) ?? decidedNow(d);
  }

  /** Sources 1 to 3, in order: the explicit credential (a JWT of a configured issuer is source 2), else the session. */
  private resolve(explicit: Credential, asked: Asked, req: HeadRequest, x: Exchange): Resolution {
    if (explicit.kind === 'token') return this.jwt(explicit) ?? { now: explicit };
    if (explicit.kind === 'malformed' || this.o.sessions === undefined) return { now: explicit };
    return this.o.sessions.resolve(asked, req, x);
  }

  /** Source 2: a token that is a JWT of a configured issuer, known now or verified later; undefined for any other token. */
  private jwt(token: Extract<ResolvedCredential, { kind: 'token' }>): Resolution | undefined {
    const oidc = this.o.oidc;
    if (oidc === undefined || this.o.access.oidcIssuers === undefined) return undefined;
    // Known first: a lookup by the JWT's tail, where naming its issuer would parse its payload on every request.
    const known = oidc.known(token.token, token.carrier);
    if (known !== undefined) return { now: known };
    const pending = jwtToVerify(this.o.access, token);
    if (pending === undefined) return undefined;
    return { later: this.verified(oidc, pending.jwt, pending.issuer, token.carrier), source: 'jwt' };
  }

  /** A JWT verified (signature, issuer, audience, times; keys cached); none when the issuer's keys cannot be had. */
  private async verified(oidc: Pick<OidcVerifier, 'verify'>, jwt: string, issuer: string, carrier: VerifiedJwt['carrier']): Promise<Later> {
    const v = await oidc.verify(jwt, issuer);
    if (v.ok) return { credential: { ...v, carrier } };
    return { credential: v.unavailable === true ? null : { ok: false, carrier }, failure: v.reason };
  }

  /**
   * A credential resolved later, judged against the index in service now: the request settled again (the index may
   * have been swapped: a scope opened, a network added) and the credential judged. null (no index, no keys, no free
   * slot to derive a hash) is answered as unavailable, never as a grant.
   */
  judgedLater(asked: Asked, later: Later, source: Source): Decision | null {
    const index = this.o.current();
    let d: Decision | null = null;
    if (later.credential !== null && index !== null) {
      const s = settleRequest(index, this.o.access, asked);
      d = s.outcome === 'governed' ? judgeRequest(index, s, later.credential, Date.now()) : s;
    }
    if (source === 'jwt') this.o.metrics.jwtDecision(d === null ? 'unavailable' : outcomeOf(d), later.failure);
    return d;
  }
}
