/**
 * The decision pipeline every auth endpoint shares: read the original request through the endpoint's
 * contract (./endpoints), decide against the index in service, verify a JWT when one must be, answer in the
 * proxy's flavour, then count and log. Nothing here depends on which proxy asked.
 */
import type { Logger } from 'pino';
import { decide, scopeKey, type AccessConfig, type AccessIndex, type Decision, type Scope, type VerifiedJwt, type VerifyJwt } from '../core/index.js';
import { answerSets, sendGranted, sendGrantedIdentity, sendInsufficientScope, type AnswerSet } from './answers.js';
import type { OidcVerifier } from './oidc.js';
import { DecisionLog } from './decision-log.js';
import type { Refusal, Refusals } from './refusals.js';
import type { TokenUsage } from './token-usage.js';
import { checkImported } from './imported-check.js';
import type { ImportedTokens } from './imported-tokens.js';
import { isToken, MAX_HEADERS_COUNT, sendAnswer, type HeadRequest, type HeadResponse } from './http-front.js';
import { ContractHeaders, contractFor, type Contract, type LikelyProxy, type Reading } from './endpoints/index.js';
import type { AnswerOutcome, AuthMetrics, EndpointName, ScopeKindLabel } from './metrics.js';

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
 * The scope a refusal is summed under: a scope of the store, or UNCOVERED for a path no scope covers (closed by
 * default), whose value the client chose (any process id): a summary key per id would let it write a line each.
 */
const UNCOVERED = 'uncovered (closed by default)';
function summaryScope(d: { readonly governing: readonly Scope[]; readonly closedByDefault: boolean }): string {
  return d.closedByDefault ? UNCOVERED : keysOf(d.governing);
}

function keysOf(governing: readonly Scope[]): string {
  return governing.length === 1 ? scopeKey(governing[0]!) : governing.map(scopeKey).join(' ');
}

/**
 * The hot path: a plain node:http handler placed before the Express app. Returns false for any URL that
 * is not an auth endpoint, for Express to handle. Nothing here parses a body or builds a URL object.
 */
export function createAuthHandler(ctx: AuthContext): (req: HeadRequest, res: HeadResponse) => boolean {
  const { access, state, metrics, logger, usage, refusals } = ctx;
  const ANSWERS = answerSets(ctx.cacheMaxAge);
  const decisions = new DecisionLog(logger);

  function answer(res: HeadResponse, set: AnswerSet, d: Decision, now: number): ScopeKindLabel {
    switch (d.outcome) {
      case 'open':
        sendAnswer(res, set.open);
        return 'none';
      case 'granted':
        sendGranted(res, set, d.scopeKey, d.tokenId, d.expiresAt, now);
        usage.record(d.scopeKey, d.tokenId, now, d.imported === true);
        return d.scope.kind;
      case 'granted-identity':
        sendGrantedIdentity(res, set, d.scopeKey, d.user, d.group, d.expiresAt, now);
        usage.recordIdentity(d.scopeKey, d.issuer, d.user, d.group, now);
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

  function log(endpoint: EndpointName, method: string | undefined, d: Decision | null, outcome: AnswerOutcome): void {
    // Never the raw target or a header: the target may carry ?token=, so the path is logged normalized and
    // without its query. Open answers and grants at debug (grants are counted for TokenUsage's info lines).
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
    const level = refusals.record(refusal, Date.now()) ? 'info' : 'debug';
    if (!decisions.enabled(level)) return;
    decisions.write(level, { ...refusal, method, path: d !== null && 'path' in d ? d.path : undefined });
  }

  /** One reused reader: the handler runs to completion before the next request is read. */
  const headers = new ContractHeaders();
  /** Misdirected proxies warned about already (at most one line per endpoint and likely sender). */
  const warned = new Set<string>();

  function decideReading(contract: Contract, req: HeadRequest, index: AccessIndex, now: number): { decision: Decision | VerifyJwt; reading?: Described } {
    // node:http keeps only the first MAX_HEADERS_COUNT header lines: a repeat past them would go unseen.
    if (req.rawHeaders.length >= 2 * MAX_HEADERS_COUNT) return { decision: { outcome: 'malformed', reason: 'too many header lines' } };
    const reading = contract.read(req, headers.read(req.rawHeaders));
    if (!reading.ok) {
      if (reading.misdirected !== undefined) misdirectedProxy(contract, reading.misdirected, reading.reason);
      return { decision: { outcome: 'malformed', reason: reading.reason } };
    }
    if (reading.method !== null && !isToken(reading.method)) return { decision: { outcome: 'malformed', reason: 'no valid original method' }, reading };
    return { decision: decide(index, access, reading, now), reading };
  }

  function misdirectedProxy(contract: Contract, likely: LikelyProxy, reason: string): void {
    metrics.misdirected(contract.endpoint, likely);
    const key = `${contract.endpoint} ${likely}`;
    if (warned.has(key)) return;
    warned.add(key);
    // Once per endpoint and likely sender: the refusals themselves are counted and sampled like any other.
    logger.warn({ endpoint: contract.endpoint, likelyProxy: likely }, `requests without this endpoint's target headers are refused: ${reason}`);
  }

  return function handleAuth(req: HeadRequest, res: HeadResponse): boolean {
    const contract = contractFor(req.url ?? '');
    if (contract === undefined) return false;
    const endpoint = contract.endpoint;
    const set = contract.answers(req) === 'nginx' ? ANSWERS.nginx : ANSWERS.proxy;

    const started = performance.now();
    if (state.draining) res.shouldKeepAlive = false;
    let outcome: AnswerOutcome;
    let kind: ScopeKindLabel = 'none';
    let decision: Decision | null = null;
    let reading: Described | undefined;
    try {
      const index = state.index;
      if (index === null) {
        outcome = 'unavailable';
        sendAnswer(res, set.unavailable);
      } else {
        const now = Date.now();
        const first = decideReading(contract, req, index, now);
        reading = first.reading;
        if (first.decision.outcome === 'verify-jwt') {
          void verifyThenAnswer(endpoint, set, res, reading!, first.decision, started);
          return true;
        }
        decision = first.decision;
        const imported = ctx.imported && checkImported(ctx.imported, () => state.index, access, reading!, decision, index, now);
        if (imported instanceof Promise) {
          void importedThenAnswer(endpoint, set, res, reading!, imported, started);
          return true;
        }
        if (imported) decision = imported;
        outcome = outcomeOf(decision);
        // A JWT decided in this pass (verified before: the verifier's cache) is a JWT decision all the same.
        if (isKnownJwtDecision(decision)) metrics.jwtDecision(outcome);
        kind = answer(res, set, decision, now);
      }
    } catch (e) {
      outcome = 'error';
      kind = 'none';
      decision = null;
      denyOnError(endpoint, set, res, e);
    }
    finish(endpoint, started, outcome, kind, reading, decision);
    return true;
  };

  function denyOnError(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, e: unknown): void {
    logger.error({ endpoint, err: e }, 'internal error while deciding; denied');
    if (!res.headersSent) sendAnswer(res, set.unavailable);
    else res.destroy();
  }

  function finish(endpoint: EndpointName, started: number, outcome: AnswerOutcome, kind: ScopeKindLabel, reading: Described | undefined, decision: Decision | null): void {
    try {
      metrics.decision(endpoint, outcome, kind, (performance.now() - started) / 1000);
      if (outcome !== 'error') log(endpoint, reading?.method ?? undefined, decision, outcome);
    } catch {
      // The answer is out; bookkeeping must never take the server down.
    }
  }

  /** An imported token being verified off the event loop: no free slot (null) is refused as unavailable, never granted. */
  async function importedThenAnswer(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, o: Described, pending: Promise<Decision | null>, started: number): Promise<void> {
    let outcome: AnswerOutcome = 'error';
    let kind: ScopeKindLabel = 'none';
    let decision: Decision | null;
    try {
      decision = await pending;
      if (decision === null) {
        outcome = 'unavailable';
        sendAnswer(res, set.unavailable);
      } else {
        outcome = outcomeOf(decision);
        kind = answer(res, set, decision, Date.now());
      }
    } catch (e) {
      decision = null;
      denyOnError(endpoint, set, res, e);
    }
    finish(endpoint, started, outcome, kind, o, decision);
  }

  /**
   * The JWT path (single sign-on): verify the JWT (signature, issuer, audience, times; keys cached), then decide
   * again with the result against the index in service *after* verification, so a subject removed meanwhile
   * does not grant. No keys yet for the issuer: unavailable, never a grant; opaque tokens are unaffected.
   */
  async function verifyThenAnswer(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, o: Described, pending: VerifyJwt, started: number): Promise<void> {
    let outcome: AnswerOutcome;
    let kind: ScopeKindLabel = 'none';
    let decision: Decision | null = null;
    try {
      if (!ctx.oidc) throw new Error('a JWT to verify but no OpenID verifier configured');
      const v = await ctx.oidc.verify(pending.jwt, pending.issuer);
      const index = state.index;
      if (index === null || (!v.ok && v.unavailable === true)) {
        outcome = 'unavailable';
        sendAnswer(res, set.unavailable);
      } else {
        const now = Date.now();
        const verified: VerifiedJwt = v.ok ? { ...v, source: pending.source } : { ok: false, source: pending.source };
        decision = decide(index, access, { method: o.method, target: o.target, authorization: o.authorization, verified }, now);
        outcome = outcomeOf(decision);
        kind = answer(res, set, decision, now);
      }
      metrics.jwtDecision(outcome, v.ok ? undefined : v.reason);
    } catch (e) {
      outcome = 'error';
      kind = 'none';
      decision = null;
      denyOnError(endpoint, set, res, e);
    }
    finish(endpoint, started, outcome, kind, o, decision);
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
