/**
 * The decision pipeline every auth endpoint shares: read the original request through the endpoint's
 * contract (./endpoints), decide against the index in service, verify a JWT when one must be, answer in the
 * proxy's flavour, then count and log. Nothing here depends on which proxy asked.
 */
import type { Logger } from 'pino';
import { decide, scopeKey, type AccessConfig, type AccessIndex, type Decision, type Scope, type VerifiedJwt, type VerifyJwt } from '../core/index.js';
import { answerSets, sendGranted, sendGrantedIdentity, sendInsufficientScope, type AnswerSet } from './answers.js';
import { jwtExpOf, type OidcVerifier } from './oidc.js';
import { DecisionLog } from './decision-log.js';
import type { Refusal, Refusals } from './refusals.js';
import type { TokenUsage } from './token-usage.js';
import { checkImported } from './imported-check.js';
import type { ImportedTokens } from './imported-tokens.js';
import { isToken, MAX_HEADERS_COUNT, sendAnswer, type HeadRequest, type HeadResponse } from './http-front.js';
import { ContractHeaders, contractFor, type Contract, type EndpointName, type LikelyProxy, type Reading } from './endpoints/index.js';
import type { AnswerOutcome, AuthMetrics, ScopeKindLabel } from './metrics.js';

/** A request the endpoint's contract could read as one original request. */
type Described = Extract<Reading, { ok: true }>;

/** What the auth endpoints read on every request: one reference to the index in service, swapped whole. */
export interface ServingState {
  readonly index: AccessIndex | null;
  readonly draining: boolean;
}

export interface AuthContext {
  readonly access: AccessConfig;
  readonly state: ServingState;
  readonly metrics: AuthMetrics;
  readonly logger: Logger;
  /** Longest time, in seconds, an nginx decision cache may keep an allow (X-Accel-Expires). */
  readonly cacheMaxAge: number;
  /** Where grants are counted (logged per window at info; each grant is a debug line). */
  readonly usage: TokenUsage;
  /** Where refusals are counted (logged per window at info; a bounded sample one by one). */
  readonly refusals: Refusals;
  /** The OpenID verifier when issuers are configured; `access.oidcIssuers` names the same issuers. */
  readonly oidc?: OidcVerifier;
  /** Verifies tokens imported from wis2box-auth (PBKDF2), bounded and remembered; absent: they never grant. */
  readonly imported?: ImportedTokens;
}

function kindOf(governing: readonly Scope[]): ScopeKindLabel {
  const kind = governing[0]!.kind;
  for (let i = 1; i < governing.length; i++) if (governing[i]!.kind !== kind) return 'mixed';
  return kind;
}

/**
 * The scope a refusal is summed under, never a value the client builds (issue 27): the one governing scope, a
 * closed scope of the store; when several govern, their kind alone (a path may name any subset of the closed
 * datasets, and a key per combination let 1,023 requests write 1,001 lines); UNCOVERED for a path no scope covers
 * (closed by default), whose value the client chose (any process id). So the summary lines of a window are at most
 * endpoints × outcomes × reasons × (closed scopes + these labels), whatever the requests.
 */
const UNCOVERED = 'uncovered (closed by default)';
const severalGovern = (kind: ScopeKindLabel): string => `${kind} (several govern)`;
function summaryScope(d: { readonly governing: readonly Scope[]; readonly closedByDefault: boolean }): string {
  if (d.closedByDefault) return UNCOVERED;
  return d.governing.length === 1 ? scopeKey(d.governing[0]!) : severalGovern(kindOf(d.governing));
}

function keysOf(governing: readonly Scope[]): string {
  return governing.length === 1 ? scopeKey(governing[0]!) : governing.map(scopeKey).join(' ');
}

/** What a refusal is counted by (Refusals): never the method or the path, which the client chooses freely. */
function refusalOf(endpoint: EndpointName, d: Decision | null, outcome: AnswerOutcome): Refusal {
  if (d === null) return { endpoint, outcome };
  switch (d.outcome) {
    case 'insufficient-scope':
      return { endpoint, outcome, scope: summaryScope(d), tokenId: d.tokenId, issuer: d.issuer, user: d.user };
    case 'invalid-token':
      return { endpoint, outcome, scope: summaryScope(d), why: d.why, tokenId: d.tokenId };
    case 'no-token':
      return { endpoint, outcome, scope: summaryScope(d) };
    case 'malformed':
      return { endpoint, outcome, reason: d.reason };
    default:
      return { endpoint, outcome };
  }
}

/**
 * The hot path: a plain node:http handler placed before the Express app. Returns false for any URL that
 * is not an auth endpoint, for Express to handle. Nothing here parses a body or builds a URL object.
 */
export function createAuthHandler(ctx: AuthContext): (req: HeadRequest, res: HeadResponse) => boolean {
  const pipeline = new AuthPipeline(ctx);
  return (req, res) => pipeline.handle(req, res);
}

/** One request's path through the pipeline, and the bookkeeping after its answer (metrics, logs, counts). */
class AuthPipeline {
  private readonly answers: ReturnType<typeof answerSets>;
  private readonly decisions: DecisionLog;
  /** One reused reader: the handler runs to completion before the next request is read. */
  private readonly headers = new ContractHeaders();
  /** Misdirected proxies warned about already (at most one line per endpoint and likely sender). */
  private readonly warned = new Set<string>();

  constructor(private readonly ctx: AuthContext) {
    this.answers = answerSets(ctx.cacheMaxAge);
    this.decisions = new DecisionLog(ctx.logger);
  }

  handle(req: HeadRequest, res: HeadResponse): boolean {
    const contract = contractFor(req.url ?? '');
    if (contract === undefined) return false;
    const endpoint = contract.endpoint;
    const set = contract.answers(req.url!) === 'nginx' ? this.answers.nginx : this.answers.proxy;
    const started = performance.now();
    if (this.ctx.state.draining) res.shouldKeepAlive = false;
    let reading: Described | undefined;
    try {
      const index = this.ctx.state.index;
      if (index === null) {
        this.respond(endpoint, set, res, started, undefined, null, 0);
        return true;
      }
      const now = Date.now();
      const first = this.decideReading(contract, req, index, now);
      reading = first.reading;
      if (first.decision.outcome === 'verify-jwt') {
        const pending = first.decision;
        const o = reading!;
        void this.answerLater(endpoint, set, res, o, started, () => this.verifiedDecision(pending, o));
        return true;
      }
      let decision = first.decision;
      const imported = this.ctx.imported && checkImported(this.ctx.imported, () => this.ctx.state.index, this.ctx.access, reading!, decision, index, now);
      if (imported instanceof Promise) {
        void this.answerLater(endpoint, set, res, reading!, started, () => imported);
        return true;
      }
      if (imported) decision = imported;
      // A JWT decided in this pass (verified before: the verifier's cache) is a JWT decision all the same.
      if (isKnownJwtDecision(decision)) this.ctx.metrics.jwtDecision(outcomeOf(decision));
      this.respond(endpoint, set, res, started, reading, decision, now);
    } catch (e) {
      this.fail(endpoint, set, res, started, reading, e);
    }
    return true;
  }

  private decideReading(contract: Contract<EndpointName>, req: HeadRequest, index: AccessIndex, now: number): { decision: Decision | VerifyJwt; reading?: Described } {
    // node:http keeps only the first MAX_HEADERS_COUNT header lines: a repeat past them would go unseen.
    if (req.rawHeaders.length >= 2 * MAX_HEADERS_COUNT) return { decision: { outcome: 'malformed', reason: 'too many header lines' } };
    const reading = contract.read(req, this.headers.read(req.rawHeaders));
    if (!reading.ok) {
      if (reading.misdirected !== undefined) this.misdirectedProxy(contract, reading.misdirected, reading.reason);
      return { decision: { outcome: 'malformed', reason: reading.reason } };
    }
    if (reading.method !== null && !isToken(reading.method)) return { decision: { outcome: 'malformed', reason: 'no valid original method' }, reading };
    return { decision: decide(index, this.ctx.access, reading, now), reading };
  }

  private misdirectedProxy(contract: Contract<EndpointName>, likely: LikelyProxy, reason: string): void {
    this.ctx.metrics.misdirected(contract.endpoint, likely);
    const key = `${contract.endpoint} ${likely}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    // Once per endpoint and likely sender: the refusals themselves are counted and sampled like any other.
    this.ctx.logger.warn({ endpoint: contract.endpoint, likelyProxy: likely }, `requests without this endpoint's target headers are refused: ${reason}`);
  }

  /**
   * An answer that waits on a verification (a JWT's signature, an imported token's PBKDF2 hash): `settle` gives
   * the decision, or null when it cannot be made now (no keys, no free slot, no index), which is answered as
   * unavailable and never as a grant.
   */
  private async answerLater(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, reading: Described, started: number, settle: () => Promise<Decision | null>): Promise<void> {
    try {
      const decision = await settle();
      this.respond(endpoint, set, res, started, reading, decision, Date.now());
    } catch (e) {
      this.fail(endpoint, set, res, started, reading, e);
    }
  }

  /** Answers with the decision (null: unavailable, never a grant), then counts and logs it. */
  private respond(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, started: number, reading: Described | undefined, decision: Decision | null, now: number): void {
    let kind: ScopeKindLabel = 'none';
    if (decision === null) sendAnswer(res, set.unavailable);
    else kind = this.answer(res, set, decision, now);
    this.finish(endpoint, started, decision === null ? 'unavailable' : outcomeOf(decision), kind, reading, decision);
  }

  /** An internal error: denied (or the connection reset when the answer had begun), logged, counted as an error. */
  private fail(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, started: number, reading: Described | undefined, e: unknown): void {
    this.ctx.logger.error({ endpoint, err: e }, 'internal error while deciding; denied');
    if (!res.headersSent) sendAnswer(res, set.unavailable);
    else res.destroy();
    this.finish(endpoint, started, 'error', 'none', reading, null);
  }

  /**
   * The JWT path (single sign-on): verify the JWT (signature, issuer, audience, times; keys cached), then decide
   * again with the result against the index in service *after* verification, so a subject removed meanwhile
   * does not grant. No keys yet for the issuer: null (unavailable), never a grant; opaque tokens are unaffected.
   */
  private async verifiedDecision(pending: VerifyJwt, o: Described): Promise<Decision | null> {
    if (!this.ctx.oidc) throw new Error('a JWT to verify but no OpenID verifier configured');
    const v = await this.ctx.oidc.verify(pending.jwt, pending.issuer);
    const index = this.ctx.state.index;
    let decision: Decision | null = null;
    if (index !== null && (v.ok || v.unavailable !== true)) {
      const verified: VerifiedJwt = v.ok ? { ...v, source: pending.source } : { ok: false, source: pending.source };
      decision = decide(index, this.ctx.access, { method: o.method, target: o.target, authorization: o.authorization, verified }, Date.now());
    }
    this.ctx.metrics.jwtDecision(decision === null ? 'unavailable' : outcomeOf(decision), v.ok ? undefined : v.reason);
    return decision;
  }

  private answer(res: HeadResponse, set: AnswerSet, d: Decision, now: number): ScopeKindLabel {
    switch (d.outcome) {
      case 'open':
        sendAnswer(res, set.open);
        return 'none';
      case 'granted':
        sendGranted(res, set, d.scopeKey, d.tokenId, d.expiresAt, now);
        this.ctx.usage.record(d.scopeKey, d.tokenId, now, d.imported === true);
        return d.scope.kind;
      case 'granted-identity':
        // Granted until exp plus the skew, cacheable only until exp itself.
        sendGrantedIdentity(res, set, d.scopeKey, d.user, d.group, jwtExpOf(d.expiresAt), now);
        this.ctx.usage.recordIdentity(d.scopeKey, d.issuer, d.user, d.group, now);
        return d.scope.kind;
      case 'no-token':
        sendAnswer(res, d.area === 'waf' ? set.noTokenWaf : set.noToken);
        return kindOf(d.governing);
      case 'invalid-token':
        sendAnswer(res, set.invalidToken);
        return kindOf(d.governing);
      case 'insufficient-scope':
        sendInsufficientScope(res, set, keysOf(d.governing));
        return kindOf(d.governing);
      case 'malformed':
        sendAnswer(res, set.malformed);
        return 'none';
    }
  }

  private finish(endpoint: EndpointName, started: number, outcome: AnswerOutcome, kind: ScopeKindLabel, reading: Described | undefined, decision: Decision | null): void {
    try {
      this.ctx.metrics.decision(endpoint, outcome, kind, (performance.now() - started) / 1000);
      if (outcome !== 'error') this.log(endpoint, reading?.method ?? undefined, decision, outcome);
    } catch {
      // The answer is out; bookkeeping must never take the server down.
    }
  }

  private log(endpoint: EndpointName, method: string | undefined, d: Decision | null, outcome: AnswerOutcome): void {
    // Never the raw target or a header: the target may carry ?token=, so the path is logged normalized and
    // without its query. Open answers and grants at debug (grants are counted for TokenUsage's info lines).
    const decisions = this.decisions;
    if (d?.outcome === 'open') {
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path });
      return;
    }
    if (d?.outcome === 'granted') {
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenId: d.tokenId, tokenSource: d.source });
      return;
    }
    if (d?.outcome === 'granted-identity') {
      // Who (issuer, user) and through which group, never the JWT: a debug line per grant, summed at info by TokenUsage.
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenSource: d.source, issuer: d.issuer, user: d.user, group: d.group });
      return;
    }
    // Refusals are counted for Refusals' info lines; a bounded sample of them is written at info one by one.
    const refusal = refusalOf(endpoint, d, outcome);
    const level = this.ctx.refusals.record(refusal, Date.now()) ? 'info' : 'debug';
    if (!decisions.enabled(level)) return;
    // A sampled line names every governing scope where the summary has only their kind (several govern).
    const scope = d !== null && 'governing' in d && d.governing.length > 1 && !d.closedByDefault ? keysOf(d.governing) : refusal.scope;
    decisions.write(level, { ...refusal, scope, method, path: d !== null && 'path' in d ? d.path : undefined });
  }
}

/** A decision on an identity (a JWT of the verifier's cache): granted, not granted, or expired since. */
function isKnownJwtDecision(d: Decision): boolean {
  return d.outcome === 'granted-identity' || (d.outcome === 'insufficient-scope' && d.issuer !== undefined) || (d.outcome === 'invalid-token' && d.why === 'jwt');
}

/** The metric and log outcome of a decision: an identity's grant is a grant. */
function outcomeOf(d: Decision): AnswerOutcome {
  if (d.outcome === 'granted-identity') return 'granted';
  return d.outcome;
}
