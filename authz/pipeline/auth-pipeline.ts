/**
 * The decision pipeline every auth endpoint shares: read the original request through the endpoint's contract
 * (../endpoints), settle what governs it (core: open, malformed, granted by a network, or governed), resolve and judge
 * a governed request's credential by the one credential road (./credential-road.ts: now, or later when a JWT's
 * signature, a session cookie or an imported token's hash must be checked first), answer in the proxy's flavour, then
 * record the answer (./bookkeeping.ts). Nothing here depends on which proxy asked.
 */
import { crossSiteEvidence, isSafeMethod, settleRequest, type AccessConfig, type Decision } from '../../core/index.js';
import { answerSets, sendGranted, sendGrantedIdentity, sendGrantedNetwork, sendInsufficientScope } from '../http/answers.js';
import { BrowserAnswers } from '../http/browser-answers.js';
import { readBrowserRequest } from '../http/browser-request.js';
import { Bookkeeping, keysOf, type Books } from './bookkeeping.js';
import { ambiguousEndpointPath, ContractHeaders, contractFor, type Contract, type EndpointName, type Reading } from '../endpoints/index.js';
import { decidedNow, type Asked, type Deciding, type Described, type Exchange } from './exchange.js';
import { isToken, MAX_HEADERS_COUNT, type HeadRequest, type HeadResponse } from '../http/head.js';
import { sendAnswer } from '../http/http-front.js';
import { CredentialRoad } from './credential-road.js';
import { ImportedSource } from './imported-source.js';
import type { ImportedTokens } from '../imported/imported-tokens.js';
import { jwtExpOf, type OidcVerifier } from '../identity/oidc.js';
import type { SessionCache } from '../identity/session-cache.js';
import type { ServingState } from './serving-state.js';
import { SessionSource } from './session-source.js';

/** Browser sign-in as the pipeline uses it: sessions as credentials (./session-source.ts), refused navigations' answers. */
export interface BrowserOptions {
  readonly externalUrls: readonly [string, ...string[]];
  readonly secure: boolean;
  readonly sessions: SessionCache;
  /** Origins the pages' forms may post to besides svc-auth (the provider's, where sign-out continues). */
  readonly formActions: () => readonly string[];
}

/** What the pipeline decides with, and where it records its answers (Books: metrics, logger, usage, refusals). */
export interface AuthContext extends Books {
  readonly access: AccessConfig;
  /** What the endpoints read of the serving state: the index in service (read once per request), draining. */
  readonly state: Pick<ServingState, 'index' | 'draining'>;
  /** Longest time, in seconds, an nginx decision cache may keep an allow (X-Accel-Expires). */
  readonly cacheMaxAge: number;
  /** The OpenID verifier when issuers are configured; `access.oidcIssuers` names the same issuers. */
  readonly oidc?: Pick<OidcVerifier, 'known' | 'verify'>;
  /** Verifies tokens imported from wis2box-auth (PBKDF2), bounded and remembered; absent: they never grant. */
  readonly imported?: ImportedTokens;
  /** Browser sign-in: sessions as credentials, navigations sent to sign in; absent: neither. */
  readonly browser?: BrowserOptions;
  /** `--trusted-proxy-hops`: load balancers in front of the proxy (authz/endpoints/client-address.ts); default 0. */
  readonly trustedProxyHops?: number;
}

/** No index in service yet: nothing is allowed. */
const UNAVAILABLE: Deciding = decidedNow(null);
const TOO_MANY_HEADER_LINES: Reading = { ok: false, reason: 'too many header lines' };

/**
 * The hot path: a plain node:http handler placed before the Express app. Returns false for any URL that
 * is not an auth endpoint, for Express to handle. Nothing here parses a body or builds a URL object.
 */
export function createAuthHandler(ctx: AuthContext): (req: HeadRequest, res: HeadResponse) => boolean {
  const pipeline = new AuthPipeline(ctx);
  return (req, res) => pipeline.handle(req, res);
}

/** One request's path through the pipeline: read, settle, resolve and judge (now or later), answer, record. */
class AuthPipeline {
  private readonly answers: ReturnType<typeof answerSets>;
  private readonly books: Bookkeeping;
  private readonly road: CredentialRoad;
  private readonly browser: BrowserAnswers | undefined;
  /** One reused reader: the handler runs to completion before the next request is read. */
  private readonly headers: ContractHeaders;

  constructor(private readonly ctx: AuthContext) {
    this.headers = new ContractHeaders(ctx.trustedProxyHops ?? 0);
    this.answers = answerSets(ctx.cacheMaxAge);
    this.books = new Bookkeeping(ctx);
    const b = ctx.browser;
    this.browser = b && new BrowserAnswers(b);
    this.road = new CredentialRoad({
      access: ctx.access,
      current: () => ctx.state.index,
      metrics: ctx.metrics,
      ...(ctx.oidc ? { oidc: ctx.oidc } : {}),
      ...(b ? { sessions: new SessionSource(b) } : {}),
      ...(ctx.imported ? { imported: new ImportedSource(ctx.imported, ctx.access) } : {}),
    });
  }

  handle(req: HeadRequest, res: HeadResponse): boolean {
    const url = req.url ?? '';
    const contract = contractFor(url);
    if (contract === undefined) return false;
    const x: Exchange = { endpoint: contract.endpoint, answers: this.answers[contract.answers(url)], res, started: performance.now(), at: 0, reading: undefined };
    if (this.ctx.state.draining) res.shouldKeepAlive = false;
    try {
      const d = this.decision(contract, req, x);
      if (d.kind === 'now') this.respond(x, d.decision);
      else void this.answerLater(x, d.promise);
    } catch (e) {
      this.fail(x, e);
    }
    return true;
  }

  /** The decision on the request: settled by core, a governed one's credential resolved and judged by the road. */
  private decision(contract: Contract<EndpointName>, req: HeadRequest, x: Exchange): Deciding {
    const index = this.ctx.state.index;
    if (index === null) return UNAVAILABLE;
    x.at = Date.now();
    if (ambiguousEndpointPath(req.url ?? '')) return decidedNow({ outcome: 'malformed', reason: 'dot segments or encoded dots, slashes or backslashes in the endpoint path' });
    const reading = this.read(contract, req);
    if (!reading.ok) return decidedNow({ outcome: 'malformed', reason: reading.reason });
    x.reading = reading;
    if (reading.method !== null && !isToken(reading.method)) return decidedNow({ outcome: 'malformed', reason: 'no valid original method' });
    const asked = this.withCrossSite(reading, req);
    const settled = settleRequest(index, this.ctx.access, asked);
    const deciding = settled.outcome === 'governed' ? this.road.decide(settled, asked, req, x, index) : decidedNow(settled);
    // A decision still to come counts as a refusal might: its credential is being checked.
    if (reading.addressProblem !== undefined) this.books.addressUntrusted(contract.endpoint, reading.addressProblem, deciding.kind === 'now' ? deciding.decision : settled, index);
    if (deciding.kind === 'now' && deciding.decision !== null) this.books.decidedInOnePass(deciding.decision);
    return deciding;
  }

  /**
   * An unsafe method from an address a network may grant: whether it carries cross-site evidence (the CSRF rule for
   * networks, core/decide.ts). Only then are the browser headers read: safe methods and requests without a trusted
   * address, nearly all of them, never pay for it.
   */
  private withCrossSite(reading: Described, req: HeadRequest): Asked {
    if (reading.address === undefined || isSafeMethod(reading.method)) return reading;
    return { ...reading, crossSite: crossSiteEvidence(readBrowserRequest(req.rawHeaders), this.ctx.browser?.externalUrls ?? []) };
  }

  /** The contract's reading of the request; a misdirected proxy is recorded. */
  private read(contract: Contract<EndpointName>, req: HeadRequest): Reading {
    // node:http keeps only the first MAX_HEADERS_COUNT header lines: a repeat past them would go unseen.
    if (req.rawHeaders.length >= 2 * MAX_HEADERS_COUNT) return TOO_MANY_HEADER_LINES;
    const reading = contract.read(req, this.headers.read(req.rawHeaders));
    if (!reading.ok && reading.misdirected !== undefined) this.books.misdirected(contract.endpoint, reading.misdirected, reading.reason);
    return reading;
  }

  /** Answers once the credential resolved later has been judged; a failure is an internal error, never a grant. */
  private async answerLater(x: Exchange, decision: Promise<Decision | null>): Promise<void> {
    try {
      const d = await decision;
      x.at = Date.now();
      this.respond(x, d);
    } catch (e) {
      this.fail(x, e);
    }
  }

  /** Answers with the decision (null: unavailable, never a grant), then records it. */
  private respond(x: Exchange, d: Decision | null): void {
    if (d === null) sendAnswer(x.res, x.answers.unavailable);
    else this.answer(x, d);
    this.books.answered(x, d);
  }

  /** An internal error: denied (or the connection reset when the answer had begun), logged, counted as an error. */
  private fail(x: Exchange, e: unknown): void {
    this.ctx.logger.error({ endpoint: x.endpoint, err: e }, 'internal error while deciding; denied');
    if (!x.res.headersSent) sendAnswer(x.res, x.answers.unavailable);
    else x.res.destroy();
    this.books.failed(x);
  }

  private answer(x: Exchange, d: Decision): void {
    const { res, answers: set } = x;
    switch (d.outcome) {
      case 'open':
        return sendAnswer(res, set.open);
      case 'granted':
        return sendGranted(res, set, d.scopeKey, d.tokenId, d.expiresAt, x.at);
      case 'granted-identity':
        // A JWT: granted until exp plus the skew, cacheable only until exp itself. A session: never cacheable (an
        // auth cache keys on Authorization and ?token=, not on cookies: the next anonymous request would get it).
        return sendGrantedIdentity(res, set, d.scopeKey, d.user, d.group, d.carrier === 'session' ? x.at : jwtExpOf(d.expiresAt), x.at);
      case 'granted-network':
        // Never cacheable: an auth cache keys on Authorization and ?token=, not on the address.
        return sendGrantedNetwork(res, set, d.scopeKey, d.network);
      case 'no-token': {
        const challenge = d.area === 'waf' ? set.noTokenWaf : set.noToken;
        const view = x.browser && this.browser?.view(x.browser);
        if (view?.navigation) return this.browser!.sendSignIn(res, set, view, challenge);
        return sendAnswer(res, challenge);
      }
      case 'invalid-token':
        return sendAnswer(res, set.invalidToken);
      case 'insufficient-scope':
        if (d.crossSite) return sendAnswer(res, set.crossSite);
        if (d.carrier === 'session') {
          const view = x.browser && this.browser?.view(x.browser);
          if (view?.navigation) return this.browser!.sendDenied(res, set, view, d.user!, keysOf(d.governing));
        }
        return sendInsufficientScope(res, set, keysOf(d.governing));
      case 'malformed':
        return sendAnswer(res, set.malformed);
    }
  }
}
