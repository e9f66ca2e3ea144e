import type { Logger } from 'pino';
import { decide, sameTarget, scopeKey, stripOrigin, type AccessConfig, type AccessIndex, type Decision, type Scope, type VerifiedJwt } from '../core/index.js';
import { answerSets, sendGranted, sendGrantedIdentity, sendInsufficientScope, type AnswerSet } from './answers.js';
import type { OidcVerifier } from './oidc.js';
import { DecisionLog } from './decision-log.js';
import type { Refusal, Refusals } from './refusals.js';
import type { TokenUsage } from './token-usage.js';
import { isToken, MAX_HEADERS_COUNT, named, sendAnswer, type HeadRequest, type HeadResponse } from './http-front.js';
import type { AnswerOutcome, AuthMetrics, EndpointName, ScopeKindLabel } from './metrics.js';

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
}

const EXT_AUTHZ = '/authz/ext-authz';
const QUESTION_MARK = 0x3f;
const SLASH = 0x2f;

/** `url` is `path` exactly, or `path?query`: the auth endpoints' own query is never part of the decision. */
function isPath(url: string, path: string): boolean {
  return url.startsWith(path) && (url.length === path.length || url.charCodeAt(path.length) === QUESTION_MARK);
}

interface Original {
  /** null when the proxy did not state the original method: decide governs it as an unsafe method. */
  readonly method: string | null;
  readonly target: string | undefined;
  readonly authorization: string | undefined;
  /** Why the headers cannot be read as one request (a header sent twice, two that disagree): refused as malformed. */
  readonly malformed?: string;
}

const REPEATED = Symbol('repeated');
/** A header's value as sent ('' when sent empty), undefined when absent, REPEATED when sent more than once. */
type Found = string | undefined | typeof REPEATED;

/**
 * Reads the wanted headers straight from rawHeaders in one pass, without materializing req.headers
 * (which lowercases and copies every header of the request). A header sent twice is REPEATED rather than
 * joined or first-wins, since two values for the original target, method or credentials can only mean a
 * confused or malicious client; an empty copy counts as a copy, so `X-Original-URI:` followed by a real
 * one is a repeat too.
 */
function pick(raw: readonly string[], names: readonly string[], out: Found[]): void {
  out.fill(undefined);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    for (let j = 0; j < names.length; j++) {
      if (named(name, names[j]!)) {
        out[j] = out[j] === undefined ? raw[i + 1]! : REPEATED;
        break;
      }
    }
  }
}

/** A picked value that is not REPEATED (checked first): an empty value counts as absent. */
function valueOf(f: Found): string | undefined {
  return f === '' ? undefined : (f as string | undefined);
}

/**
 * Method-override headers: frameworks that honour them run the overriding method, so one that names
 * another method than the stated one makes the request two requests at once. Read on every endpoint (the
 * examples pass them to svc-auth), after the endpoint's own headers.
 */
const OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'];

/** Each endpoint reads its own headers, then OVERRIDES: at most this many in all. */
const found: Found[] = new Array<Found>(8).fill(undefined);

/** ASCII case-insensitive: frameworks upper-case an override's value before using it. */
function sameMethod(a: string, b: string): boolean {
  return a.length === b.length && named(a, b.toLowerCase());
}

/** The request as read, or malformed: a repeated header, or an override that disagrees with the stated method. */
function original(names: readonly string[], method: string | null, target: string | undefined, authorization: Found, malformed?: string): Original {
  const repeated = found.indexOf(REPEATED);
  if (repeated >= 0 && repeated < names.length) return { method: null, target: undefined, authorization: undefined, malformed: `${names[repeated]} was sent more than once` };
  if (malformed !== undefined) return { method: null, target: undefined, authorization: undefined, malformed };
  // An unstated method is governed as unsafe whatever an override claims, so only a stated one is compared.
  if (method !== null) {
    const from = names.length - OVERRIDES.length;
    for (let j = 0; j < OVERRIDES.length; j++) {
      const v = valueOf(found[from + j]);
      if (v !== undefined && !sameMethod(v, method)) return { method: null, target: undefined, authorization: undefined, malformed: `${OVERRIDES[j]} names another method than the stated one` };
    }
  }
  return { method, target, authorization: valueOf(authorization) };
}

/**
 * Each endpoint reads its own contract's headers and nothing else: a client can send any header and most
 * proxies pass it through, so `X-Forwarded-Uri` reaching the nginx endpoint must not count. Where a
 * contract has two target headers, both present must name the same path and query (sameTarget).
 */
const AUTH_REQUEST = ['x-original-url', 'x-original-uri', 'x-original-method', 'authorization', ...OVERRIDES];
function authRequest(req: HeadRequest): Original {
  pick(req.rawHeaders, AUTH_REQUEST, found);
  const url = valueOf(found[0]);
  const uri = valueOf(found[1]);
  // X-Original-URL is absolute (ingress-nginx): only its path and query count.
  const target = url !== undefined ? stripOrigin(url) : uri;
  const disagree = url !== undefined && uri !== undefined && !sameTarget(target!, uri) ? 'X-Original-URL and X-Original-URI name different targets' : undefined;
  // An nginx subrequest is always GET (auth_request), whatever the original method was: never fall back to it.
  return original(AUTH_REQUEST, valueOf(found[2]) ?? null, target, found[3], disagree);
}

const AUTHORIZE = ['x-original-uri', 'x-api-http-method', 'authorization', ...OVERRIDES];
function authorize(req: HeadRequest): Original {
  pick(req.rawHeaders, AUTHORIZE, found);
  return original(AUTHORIZE, valueOf(found[1]) ?? null, valueOf(found[0]), found[2]);
}

/**
 * Traefik's StripPrefix middleware, placed before ForwardAuth, shortens the path it reports in
 * X-Forwarded-Uri and records the removed part in X-Forwarded-Prefix: the path asked about would not be
 * the one requested, so the prefix header makes the request malformed rather than guessed at.
 */
const FORWARD_AUTH = ['x-forwarded-uri', 'x-forwarded-method', 'x-forwarded-prefix', 'authorization', ...OVERRIDES];
function forwardAuth(req: HeadRequest): Original {
  pick(req.rawHeaders, FORWARD_AUTH, found);
  const stripped = valueOf(found[2]) !== undefined ? 'X-Forwarded-Prefix is set: the path was rewritten before the auth check (put ForwardAuth before StripPrefix)' : undefined;
  // Traefik asks with GET whatever the original method was: never fall back to the request's own method.
  return original(FORWARD_AUTH, valueOf(found[1]) ?? null, valueOf(found[0]), found[3], stripped);
}

/** Envoy sets X-Envoy-Original-Path when a route rewrote the path: present, it must name the same target. */
const EXT_AUTHZ_HEADERS = ['x-envoy-original-path', 'authorization', ...OVERRIDES];
function extAuthz(req: HeadRequest): Original {
  pick(req.rawHeaders, EXT_AUTHZ_HEADERS, found);
  // Envoy appends the original path (with its query) to the configured path prefix, and keeps the method.
  const target = req.url!.slice(EXT_AUTHZ.length);
  const envoyPath = valueOf(found[0]);
  const disagree = envoyPath !== undefined && !sameTarget(target, envoyPath) ? 'X-Envoy-Original-Path names another target than the request' : undefined;
  return original(EXT_AUTHZ_HEADERS, req.method ?? null, target, found[1], disagree);
}

function kindOf(governing: readonly Scope[]): ScopeKindLabel {
  const kind = governing[0]!.kind;
  for (let i = 1; i < governing.length; i++) if (governing[i]!.kind !== kind) return 'mixed';
  return kind;
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
        usage.record(d.scopeKey, d.tokenId, now);
        return d.scope.kind;
      case 'granted-identity':
        sendGrantedIdentity(res, set, d.scopeKey, d.user, d.group, d.expiresAt, now);
        usage.recordIdentity(d.scopeKey, d.issuer, d.user, d.group, now);
        return d.scope.kind;
      case 'verify-jwt':
        // Never an answer: the handler verifies and decides again. Reaching here is a bug: deny.
        throw new Error('verify-jwt reached the answer');
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
        return { endpoint, outcome, scope: keysOf(d.governing), tokenId: d.tokenId, issuer: d.issuer, user: d.user };
      case 'invalid-token':
        return { endpoint, outcome, scope: keysOf(d.governing), why: d.why, tokenId: d.tokenId };
      case 'no-token':
        return { endpoint, outcome, scope: keysOf(d.governing) };
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

  return function handleAuth(req: HeadRequest, res: HeadResponse): boolean {
    const url = req.url ?? '';
    let endpoint: EndpointName;
    let read: (req: HeadRequest) => Original;
    let set: AnswerSet;
    if (url.startsWith('/authz/')) {
      if (isPath(url, '/authz/auth-request')) {
        endpoint = 'auth-request';
        read = authRequest;
        set = ANSWERS.nginx;
      } else if (isPath(url, '/authz/forward-auth')) {
        endpoint = 'forward-auth';
        read = forwardAuth;
        set = ANSWERS.proxy;
      } else if (url.startsWith(EXT_AUTHZ) && (url.length === EXT_AUTHZ.length || url.charCodeAt(EXT_AUTHZ.length) === SLASH || url.charCodeAt(EXT_AUTHZ.length) === QUESTION_MARK)) {
        endpoint = 'ext-authz';
        read = extAuthz;
        set = ANSWERS.proxy;
      } else {
        return false;
      }
    } else if (isPath(url, '/authorize')) {
      endpoint = 'authorize';
      read = authorize;
      set = ANSWERS.nginx;
    } else {
      return false;
    }

    const started = performance.now();
    if (state.draining) res.shouldKeepAlive = false;
    let outcome: AnswerOutcome;
    let kind: ScopeKindLabel = 'none';
    let decision: Decision | null = null;
    let original: Original | undefined;
    try {
      const index = state.index;
      if (index === null) {
        outcome = 'unavailable';
        sendAnswer(res, set.unavailable);
      } else {
        const now = Date.now();
        // node:http keeps only the first MAX_HEADERS_COUNT header lines: a repeat past them would go unseen.
        if (req.rawHeaders.length >= 2 * MAX_HEADERS_COUNT) decision = { outcome: 'malformed', reason: 'too many header lines' };
        else {
          original = read(req);
          const { method, target, authorization, malformed } = original;
          if (malformed !== undefined) decision = { outcome: 'malformed', reason: malformed };
          else if (target === undefined) decision = { outcome: 'malformed', reason: 'no original request target' };
          else if (method !== null && !isToken(method)) decision = { outcome: 'malformed', reason: 'no valid original method' };
          else decision = decide(index, access, { method, target, authorization }, now);
        }
        if (decision.outcome === 'verify-jwt' && original?.target !== undefined) {
          void verifyThenAnswer(endpoint, set, res, { ...original, target: original.target }, decision, started);
          return true;
        }
        outcome = outcomeOf(decision);
        kind = answer(res, set, decision, now);
      }
    } catch (e) {
      outcome = 'error';
      kind = 'none';
      decision = null;
      denyOnError(endpoint, set, res, e);
    }
    finish(endpoint, started, outcome, kind, original, decision);
    return true;
  };

  function denyOnError(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, e: unknown): void {
    logger.error({ endpoint, err: e }, 'internal error while deciding; denied');
    if (!res.headersSent) sendAnswer(res, set.unavailable);
    else res.destroy();
  }

  function finish(endpoint: EndpointName, started: number, outcome: AnswerOutcome, kind: ScopeKindLabel, original: Original | undefined, decision: Decision | null): void {
    try {
      metrics.decision(endpoint, outcome, kind, (performance.now() - started) / 1000);
      if (outcome !== 'error') log(endpoint, original?.method ?? undefined, decision, outcome);
    } catch {
      // The answer is out; bookkeeping must never take the server down.
    }
  }

  /**
   * The JWT path (single sign-on): verify the JWT (signature, issuer, audience, times; keys cached), then decide
   * again with the result against the index in service *after* verification, so a subject removed meanwhile
   * does not grant. No keys yet for the issuer: unavailable, never a grant; opaque tokens are unaffected.
   */
  async function verifyThenAnswer(endpoint: EndpointName, set: AnswerSet, res: HeadResponse, o: Original & { target: string }, pending: Decision & { outcome: 'verify-jwt' }, started: number): Promise<void> {
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

/** The metric and log outcome of a decision: an identity's grant is a grant. */
function outcomeOf(d: Decision): AnswerOutcome {
  if (d.outcome === 'granted-identity') return 'granted';
  // verify-jwt is never answered (the handler verifies first): count it as the error it would be.
  if (d.outcome === 'verify-jwt') return 'error';
  return d.outcome;
}
