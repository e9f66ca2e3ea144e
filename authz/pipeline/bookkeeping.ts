/**
 * What svc-auth records of each answer once it is out: the decision metrics, grants counted for TokenUsage, the
 * decision line and the refusal count (Refusals), and the warning about a misdirected proxy. The shaping lives
 * here: which outcome and scope kind label an answer is counted under, the key a refusal is summed under, and
 * what a decision line carries (never the raw target, a header or a credential).
 */
import type { Logger } from 'pino';
import { entryOf, scopeKey, type AccessIndex, type Decision, type GovernedRequest, type Scope } from '../../core/index.js';
import { DecisionLog } from '../telemetry/decision-log.js';
import type { AddressProblem, EndpointName, LikelyProxy } from '../endpoints/index.js';
import type { Exchange } from './exchange.js';
import type { AnswerOutcome, AuthMetrics, GrantCredential, ScopeKindLabel } from '../telemetry/metrics.js';
import type { Refusal, Refusals } from '../telemetry/refusals.js';
import type { TokenUsage } from '../telemetry/token-usage.js';

/** Where the answers are recorded (svc-auth's AuthContext has them all). */
export interface Books {
  readonly metrics: AuthMetrics;
  readonly logger: Logger;
  /** Where grants are counted (logged per window at info; each grant is a debug line). */
  readonly usage: TokenUsage;
  /** Where refusals are counted (logged per window at info; a bounded sample one by one). */
  readonly refusals: Refusals;
}

/** The metric and log outcome of a decision: an identity's grant is a grant. */
export function outcomeOf(d: Decision): AnswerOutcome {
  if (d.outcome === 'granted-identity' || d.outcome === 'granted-network') return 'granted';
  return d.outcome;
}

/** A decision on an identity (a JWT of the verifier's cache): granted, not granted, or expired since. */
function isKnownJwtDecision(d: Decision): boolean {
  if ((d.outcome === 'granted-identity' || d.outcome === 'insufficient-scope') && d.carrier === 'session') return false;
  return d.outcome === 'granted-identity' || (d.outcome === 'insufficient-scope' && d.issuer !== undefined) || (d.outcome === 'invalid-token' && d.why === 'jwt');
}

function kindOf(governing: readonly Scope[]): ScopeKindLabel {
  const kind = governing[0]!.kind;
  for (let i = 1; i < governing.length; i++) if (governing[i]!.kind !== kind) return 'mixed';
  return kind;
}

/** The scope kind label an answer is counted under: the granting scope's, the governing scopes', or none. */
function kindLabel(d: Decision | null): ScopeKindLabel {
  switch (d?.outcome) {
    case 'granted':
    case 'granted-identity':
    case 'granted-network':
      return d.scope.kind;
    case 'no-token':
    case 'invalid-token':
    case 'insufficient-scope':
      return kindOf(d.governing);
    default:
      return 'none';
  }
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

export function keysOf(governing: readonly Scope[]): string {
  return governing.length === 1 ? scopeKey(governing[0]!) : governing.map(scopeKey).join(' ');
}

/** What a refusal is counted by (Refusals): never the method or the path, which the client chooses freely. */
function refusalOf(endpoint: EndpointName, d: Decision | null, outcome: AnswerOutcome): Refusal {
  if (d === null) return { endpoint, outcome };
  switch (d.outcome) {
    case 'insufficient-scope':
      return { endpoint, outcome, scope: summaryScope(d), tokenId: d.tokenId, issuer: d.issuer, user: d.user, why: d.crossSite ? 'cross-site' : d.carrier === 'session' ? 'session' : undefined };
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

/** The credential a grant was made on (svc_auth_grants_total's `credential`), or undefined for anything but a grant. */
function credentialOf(d: Decision | null): GrantCredential | undefined {
  switch (d?.outcome) {
    case 'granted':
      return d.imported ? 'imported' : 'token';
    case 'granted-identity':
      return d.carrier === 'session' ? 'session' : 'jwt';
    case 'granted-network':
      return 'network';
    default:
      return undefined;
  }
}

/** A decision that refused: where an address that could not be trusted may have cost a network grant. */
/** A refusal, or a governed request whose credential is still being checked (a JWT, a session, an imported hash). */
function isRefusal(d: Decision | GovernedRequest): boolean {
  return d.outcome === 'no-token' || d.outcome === 'invalid-token' || d.outcome === 'insufficient-scope' || d.outcome === 'governed';
}

export class Bookkeeping {
  private readonly decisions: DecisionLog;
  /** Misdirected proxies warned about already (at most one line per endpoint and likely sender). */
  private readonly warned = new Set<string>();

  constructor(private readonly books: Books) {
    this.decisions = new DecisionLog(books.logger);
  }

  /** After the answer to `d` (null: unavailable): a grant counted, then the metrics and the decision line. */
  answered(x: Exchange, d: Decision | null): void {
    if (d?.outcome === 'granted') this.books.usage.record(d.scopeKey, d.tokenId, x.at, d.imported === true);
    else if (d?.outcome === 'granted-identity') this.books.usage.recordIdentity(d.scopeKey, d.issuer, d.user, d.group, x.at);
    else if (d?.outcome === 'granted-network') this.books.usage.recordNetwork(d.scopeKey, d.network, x.at);
    const credential = credentialOf(d);
    if (credential !== undefined) this.books.metrics.grant(credential);
    this.finish(x, d === null ? 'unavailable' : outcomeOf(d), kindLabel(d), d);
  }

  /** After an internal error's answer: counted as an error (the error itself is logged where it was caught). */
  failed(x: Exchange): void {
    this.finish(x, 'error', 'none', null);
  }

  /** A JWT decided in the first pass (verified before: the verifier's cache) is a JWT decision all the same. */
  decidedInOnePass(d: Decision): void {
    if (isKnownJwtDecision(d)) this.books.metrics.jwtDecision(outcomeOf(d));
  }

  /**
   * A governed request whose endpoint read no address it can trust (a missing, repeated or disagreeing header, too
   * short a chain for --trusted-proxy-hops, or an endpoint that reads none): network grants were off for it. Counted,
   * and warned about once per endpoint and reason, when it was refused and a governing scope grants networks: only
   * there could the address have changed the answer.
   */
  addressUntrusted(endpoint: EndpointName, problem: AddressProblem, d: Decision | GovernedRequest | null, index: AccessIndex): void {
    if (d === null || !isRefusal(d) || !('governing' in d) || !d.governing.some((s) => entryOf(index, s)?.networks !== undefined)) return;
    this.books.metrics.addressUntrusted(endpoint, problem);
    const key = `address ${endpoint} ${problem}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.books.logger.warn({ endpoint, addressProblem: problem }, `network grants are off for requests whose client address cannot be trusted (${problem}); see docs/access-rules.md "Networks"`);
  }

  /** A request without its endpoint's target headers: counted, and warned about once per endpoint and likely sender. */
  misdirected(endpoint: EndpointName, likely: LikelyProxy, reason: string): void {
    this.books.metrics.misdirected(endpoint, likely);
    const key = `${endpoint} ${likely}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    // Once: the refusals themselves are counted and sampled like any other.
    this.books.logger.warn({ endpoint, likelyProxy: likely }, `requests without this endpoint's target headers are refused: ${reason}`);
  }

  private finish(x: Exchange, outcome: AnswerOutcome, kind: ScopeKindLabel, decision: Decision | null): void {
    try {
      this.books.metrics.decision(x.endpoint, outcome, kind, (performance.now() - x.started) / 1000);
      if (outcome !== 'error') this.log(x.endpoint, x.reading?.method ?? undefined, decision, outcome);
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
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenId: d.tokenId, tokenSource: d.carrier });
      return;
    }
    if (d?.outcome === 'granted-identity') {
      // Who (issuer, user) and through which group, never the JWT: a debug line per grant, summed at info by TokenUsage.
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenSource: d.carrier, issuer: d.issuer, user: d.user, group: d.group });
      return;
    }
    if (d?.outcome === 'granted-network') {
      // Which network of which scope admitted which address: a debug line per grant, as for every grant (counted by
      // svc_auth_grants_total{credential="network"}).
      if (decisions.enabled('debug')) decisions.write('debug', { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenSource: 'network', network: d.network, address: d.address });
      return;
    }
    // Refusals are counted for Refusals' info lines; a bounded sample of them is written at info one by one.
    const refusal = refusalOf(endpoint, d, outcome);
    const level = this.books.refusals.record(refusal, Date.now()) ? 'info' : 'debug';
    if (!decisions.enabled(level)) return;
    // A sampled line names every governing scope where the summary has only their kind (several govern).
    const scope = d !== null && 'governing' in d && d.governing.length > 1 && !d.closedByDefault ? keysOf(d.governing) : refusal.scope;
    decisions.write(level, { ...refusal, scope, method, path: d !== null && 'path' in d ? d.path : undefined });
  }
}
