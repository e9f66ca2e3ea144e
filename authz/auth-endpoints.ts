import type { Logger } from 'pino';
import { decide, scopeKey, stripOrigin, type AccessConfig, type AccessIndex, type Decision, type Scope } from '../core/index.js';
import { answerSets, sendGranted, sendInsufficientScope, type AnswerSet } from './answers.js';
import { DecisionLog } from './decision-log.js';
import type { TokenUsage } from './token-usage.js';
import { isToken, named, sendAnswer, type HeadRequest, type HeadResponse } from './http-front.js';
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
}

const EXT_AUTHZ = '/authz/ext-authz';
const QUESTION_MARK = 0x3f;
const SLASH = 0x2f;

/** `url` is `path` exactly, or `path?query`: the auth endpoints' own query is never part of the decision. */
function isPath(url: string, path: string): boolean {
  return url.startsWith(path) && (url.length === path.length || url.charCodeAt(path.length) === QUESTION_MARK);
}

interface Original {
  readonly method: string | undefined;
  readonly target: string | undefined;
  readonly authorization: string | undefined;
  /** Set when a header the endpoint reads was sent more than once: the request is refused as malformed. */
  readonly ambiguous?: string;
}

const REPEATED = Symbol('repeated');
type Found = string | undefined | typeof REPEATED;

/**
 * Reads the wanted headers straight from rawHeaders in one pass, without materializing req.headers
 * (which lowercases and copies every header of the request). An empty value counts as absent; a header
 * sent twice is REPEATED rather than joined or first-wins, since two values for the original target,
 * method or credentials can only mean a confused or malicious client.
 */
function pick(raw: readonly string[], names: readonly string[], out: Found[]): void {
  out.fill(undefined);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    for (let j = 0; j < names.length; j++) {
      if (named(name, names[j]!)) {
        const value = raw[i + 1]!;
        if (out[j] !== undefined) out[j] = REPEATED;
        else if (value.length > 0) out[j] = value;
        break;
      }
    }
  }
}

const found: Found[] = [undefined, undefined, undefined, undefined];

function original(method: Found, target: Found, authorization: Found, names: readonly string[]): Original {
  const repeated = found.indexOf(REPEATED);
  if (repeated >= 0) return { method: undefined, target: undefined, authorization: undefined, ambiguous: names[repeated] };
  return { method: method as string | undefined, target: target as string | undefined, authorization: authorization as string | undefined };
}

/**
 * Each endpoint reads its own contract's headers and nothing else: a client can send any header and most
 * proxies pass it through, so `X-Forwarded-Uri` reaching the nginx endpoint must not count.
 */
const AUTH_REQUEST = ['x-original-url', 'x-original-uri', 'x-original-method', 'authorization'];
function authRequest(req: HeadRequest): Original {
  pick(req.rawHeaders, AUTH_REQUEST, found);
  const url = found[0];
  // X-Original-URL is absolute (ingress-nginx): only its path and query count.
  const target = typeof url === 'string' ? stripOrigin(url) : found[1];
  // nginx subrequests keep the original request's method unless proxy_method says otherwise.
  return original(found[2] ?? req.method, target, found[3], AUTH_REQUEST);
}

const AUTHORIZE = ['x-original-uri', 'x-api-http-method', 'authorization'];
function authorize(req: HeadRequest): Original {
  pick(req.rawHeaders, AUTHORIZE, found);
  return original(found[1] ?? 'GET', found[0], found[2], AUTHORIZE);
}

const FORWARD_AUTH = ['x-forwarded-uri', 'x-forwarded-method', 'authorization'];
function forwardAuth(req: HeadRequest): Original {
  pick(req.rawHeaders, FORWARD_AUTH, found);
  return original(found[1] ?? req.method, found[0], found[2], FORWARD_AUTH);
}

const EXT_AUTHZ_HEADERS = ['authorization'];
function extAuthz(req: HeadRequest): Original {
  pick(req.rawHeaders, EXT_AUTHZ_HEADERS, found);
  // Envoy appends the original path (with its query) to the configured path prefix.
  return original(req.method, req.url!.slice(EXT_AUTHZ.length), found[0], EXT_AUTHZ_HEADERS);
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
  const { access, state, metrics, logger, usage } = ctx;
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

  function log(endpoint: EndpointName, method: string | undefined, d: Decision | null, outcome: AnswerOutcome): void {
    // Refusals at info; open answers and grants at debug (grants are counted for TokenUsage's info lines).
    // Never the raw target or a header: the target may carry ?token=, so the path is logged normalized and
    // without its query.
    const level = outcome === 'open' || outcome === 'granted' ? 'debug' : 'info';
    if (!decisions.enabled(level)) return;
    if (d === null) {
      decisions.write(level, { endpoint, method, outcome });
      return;
    }
    switch (d.outcome) {
      case 'open':
        decisions.write(level, { endpoint, method, outcome, path: d.path });
        break;
      case 'granted':
        decisions.write(level, { endpoint, method, outcome, path: d.path, scope: d.scopeKey, tokenId: d.tokenId, tokenSource: d.source });
        break;
      case 'insufficient-scope':
        decisions.write(level, { endpoint, method, outcome, path: d.path, scope: keysOf(d.governing), tokenId: d.tokenId });
        break;
      case 'invalid-token':
        decisions.write(level, { endpoint, method, outcome, path: d.path, scope: keysOf(d.governing), why: d.why, tokenId: d.tokenId });
        break;
      case 'no-token':
        decisions.write(level, { endpoint, method, outcome, path: d.path, scope: keysOf(d.governing) });
        break;
      case 'malformed':
        decisions.write(level, { endpoint, method, outcome, reason: d.reason });
        break;
    }
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
        original = read(req);
        const { method, target, authorization, ambiguous } = original;
        const now = Date.now();
        if (ambiguous !== undefined) decision = { outcome: 'malformed', reason: `${ambiguous} was sent more than once` };
        else if (target === undefined) decision = { outcome: 'malformed', reason: 'no original request target' };
        else if (method === undefined || !isToken(method)) decision = { outcome: 'malformed', reason: 'no valid original method' };
        else decision = decide(index, access, { method, target, authorization }, now);
        outcome = decision.outcome;
        kind = answer(res, set, decision, now);
      }
    } catch (e) {
      outcome = 'error';
      kind = 'none';
      decision = null;
      logger.error({ endpoint, err: e }, 'internal error while deciding; denied');
      if (!res.headersSent) sendAnswer(res, set.unavailable);
      else res.destroy();
    }
    try {
      metrics.decision(endpoint, outcome, kind, (performance.now() - started) / 1000);
      if (outcome !== 'error') log(endpoint, original?.method, decision, outcome);
    } catch {
      // The answer is out; bookkeeping must never take the server down.
    }
    return true;
  };
}
