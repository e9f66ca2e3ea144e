/**
 * The HTTP answers of docs/access-rules.md "Answers", prepared once. Allow is exactly 200 with an empty
 * body. The nginx endpoints answer only 200, 401 or 403 (nginx turns anything else into 500) with empty
 * bodies (nginx drops them); the Traefik and Envoy endpoints pass the answer on to the client, so they get
 * the precise status and an `application/problem+json` body. Every answer carries `Cache-Control: no-store`.
 *
 * The nginx answers also carry `X-Accel-Expires`, which nginx (and ingress-nginx's `auth-cache-*`) prefers
 * to any other caching header: 0 on every refusal, so a new token works at once, and at most
 * `cacheMaxAge` seconds on an allow, never beyond the deciding token's expiry, so that is the longest a
 * revoked token or a newly closed scope keeps working through a proxy's decision cache.
 */
import type { HeadResponse } from './head.js';
import { PreparedAnswer } from './prepared-answer.js';
import { sendAnswer } from './http-front.js';
import { ENVOY_REMOVE_HEADER, headersToRemove, type AnswerHeader } from '../../core/index.js';

export type Flavour = 'nginx' | 'proxy';

type Headers = readonly string[];

const CC = 'Cache-Control';
const NO_STORE = 'no-store';
const CL = 'Content-Length';
const WWW = 'WWW-Authenticate';
const ACCEL = 'X-Accel-Expires';
export const BEARER_CHALLENGE = 'Bearer realm="svc"';
export const BASIC_CHALLENGE = 'Basic realm="svc"';
/**
 * Both challenges in ONE header (RFC 9110 11.6.1 allows a list): nginx's auth_request copies only the
 * first WWW-Authenticate of the subrequest's answer to the client, so a second header would be lost and
 * browsers or `wget --password` would never be asked for a password.
 */
export const WAF_CHALLENGE = `${BEARER_CHALLENGE}, ${BASIC_CHALLENGE}`;
export const INVALID_TOKEN_CHALLENGE = 'Bearer realm="svc", error="invalid_token"';
export const insufficientScopeChallenge = (scopes: string): string => `Bearer realm="svc", error="insufficient_scope", scope="${scopes}"`;

export const PROBLEM_JSON = 'application/problem+json';

function problem(status: number, title: string, detail: string): Buffer {
  return Buffer.from(JSON.stringify({ type: 'about:blank', title, status, detail }));
}

function canned(flavour: Flavour, status: number, extra: Headers, title: string, detail: string): PreparedAnswer {
  if (flavour === 'nginx') return new PreparedAnswer(status, [CC, NO_STORE, ACCEL, '0', CL, '0', ...extra]);
  const body = problem(status, title, detail);
  return new PreparedAnswer(status, [CC, NO_STORE, 'Content-Type', PROBLEM_JSON, CL, String(body.length), ...extra], body);
}

/** Granted answers kept at most (a few hundred bytes each); beyond it the cache starts over. */
const MAX_GRANTED_ANSWERS = 4096;

/**
 * Granted answers name the scope and the token id, so they cannot be prepared up front like the others.
 * They are prepared on first use and kept by token id, since the same tokens come back request after
 * request. Only the rendered answer is kept, never a decision: every request is still decided in full,
 * and an entry is used only for the same scope and the same X-Accel-Expires.
 */
class GrantedAnswers {
  private readonly byTokenId = new Map<string, { readonly scope: string; readonly accel: number; readonly answer: PreparedAnswer }>();

  constructor(
    private readonly flavour: Flavour,
    private readonly cacheMaxAge: number,
  ) {}

  answer(scope: string, tokenId: string, expiresAtMs: number, nowMs: number): PreparedAnswer {
    // An allow is cached by nginx for at most cacheMaxAge, and never beyond the token's expiry.
    const accel = this.flavour === 'nginx' ? Math.min(this.cacheMaxAge, Math.max(0, Math.floor((expiresAtMs - nowMs) / 1000))) : -1;
    const kept = this.byTokenId.get(tokenId);
    if (kept !== undefined && kept.scope === scope && kept.accel === accel) return kept.answer;
    const headers = [CC, NO_STORE, CL, '0', 'X-Auth-Request-Scope', scope, 'X-Auth-Request-Token-Id', tokenId];
    if (accel >= 0) headers.push(ACCEL, String(accel));
    else headers.push(...removing(['X-Auth-Request-Scope', 'X-Auth-Request-Token-Id']));
    const answer = new PreparedAnswer(200, headers);
    if (this.byTokenId.size >= MAX_GRANTED_ANSWERS) this.byTokenId.clear();
    this.byTokenId.set(tokenId, { scope, accel, answer });
    return answer;
  }
}

/**
 * What an allow of the proxy flavour adds so that Envoy removes the client's copies of the answer headers it does not
 * set (core/answer-headers.ts). Traefik ignores it: its authResponseHeaders delete the client's copies themselves.
 */
function removing(set: readonly AnswerHeader[]): Headers {
  return [ENVOY_REMOVE_HEADER, headersToRemove(set)];
}

function answers(flavour: Flavour, cacheMaxAge: number) {
  const nginx = flavour === 'nginx';
  const allowCache: Headers = nginx ? [ACCEL, String(cacheMaxAge)] : removing([]);
  return {
    flavour,
    cacheMaxAge,
    open: new PreparedAnswer(200, [CC, NO_STORE, ...allowCache, CL, '0']),
    granted: new GrantedAnswers(flavour, cacheMaxAge),
    /** Identity grants by scope, user and group (sendGrantedIdentity), and how many users they hold. */
    identities: new Map() as IdentityAnswers,
    identityCount: { n: 0 },
    /** Network grants by scope, then network (sendGrantedNetwork). */
    networks: new Map<string, Map<string, PreparedAnswer>>(),
    noTokenWaf: canned(flavour, 401, [WWW, WAF_CHALLENGE], 'Unauthorized', 'This resource needs a token.'),
    noToken: canned(flavour, 401, [WWW, BEARER_CHALLENGE], 'Unauthorized', 'This resource needs a token.'),
    invalidToken: canned(flavour, 401, [WWW, INVALID_TOKEN_CHALLENGE], 'Unauthorized', 'The token is unknown, expired or malformed.'),
    insufficientScope: canned(flavour, 403, [], 'Forbidden', 'The token is not valid for this resource.'),
    /** A browser session's unsafe request without same-origin evidence (the CSRF rule). */
    crossSite: canned(flavour, 403, [], 'Forbidden', 'A browser session does not grant a cross-site request that changes data.'),
    malformed: canned(flavour, nginx ? 403 : 400, [], nginx ? 'Forbidden' : 'Bad Request', 'The request path cannot be evaluated safely.'),
    unavailable: canned(flavour, nginx ? 403 : 503, [], nginx ? 'Forbidden' : 'Service Unavailable', 'Access control is not ready; nothing is allowed.'),
  };
}

export type AnswerSet = ReturnType<typeof answers>;

/** The answers of both flavours, prepared once per server; `cacheMaxAge` in seconds (0 disables caching). */
export function answerSets(cacheMaxAge: number): Readonly<Record<Flavour, AnswerSet>> {
  return { nginx: answers('nginx', cacheMaxAge), proxy: answers('proxy', cacheMaxAge) };
}

export function sendGranted(res: HeadResponse, set: AnswerSet, scope: string, tokenId: string, expiresAtMs: number, nowMs: number): void {
  sendAnswer(res, set.granted.answer(scope, tokenId, expiresAtMs, nowMs));
}

/**
 * A grant by a network of the scope (the request's address, docs/access-rules.md "Networks"): the scope and the
 * network for the proxy to pass on, `X-Accel-Expires: 0` for nginx, since an auth cache keys on the method, the URI,
 * Authorization and `?token=`, never on the address, and would hand the allow to the next request from anywhere.
 * Prepared on first use per scope and network (a bounded set: the networks of the snapshot).
 */
export function sendGrantedNetwork(res: HeadResponse, set: AnswerSet, scope: string, network: string): void {
  // Looked up by the index's own strings, level by level (no joined key built per request).
  let byNetwork = set.networks.get(scope);
  let answer = byNetwork?.get(network);
  if (answer === undefined) {
    const headers = [CC, NO_STORE, CL, '0', 'X-Auth-Request-Scope', scope, 'X-Auth-Request-Network', network];
    if (set.flavour === 'nginx') headers.push(ACCEL, '0');
    else headers.push(...removing(['X-Auth-Request-Scope', 'X-Auth-Request-Network']));
    answer = new PreparedAnswer(200, headers);
    if (set.networks.size >= MAX_GRANTED_ANSWERS) set.networks.clear();
    if (byNetwork === undefined || !set.networks.has(scope)) set.networks.set(scope, (byNetwork = new Map()));
    byNetwork.set(network, answer);
  }
  sendAnswer(res, answer);
}

/**
 * A grant to an identity (a verified JWT): the scope, the user and, when a group granted, the group, for the
 * proxy to pass on (`auth_request_set`, ForwardAuth's authResponseHeaders). Names go through headerValue
 * (below). Prepared on first use and kept like token grants: a session's JWT comes back request after
 * request, and rendering an answer each time cost as much as the rest of its decision.
 */
export function sendGrantedIdentity(res: HeadResponse, set: AnswerSet, scope: string, user: string, group: string | undefined, expMs: number, nowMs: number): void {
  // As for tokens: an nginx cache keeps the allow at most cacheMaxAge, never beyond the JWT's exp (`expMs`: exp
  // itself, without the skew decide grants past it; the pipeline passes oidc's jwtExpOf of the decision).
  const accel = set.flavour === 'nginx' ? Math.min(set.cacheMaxAge, Math.max(0, Math.floor((expMs - nowMs) / 1000))) : -1;
  // Looked up by the names themselves, level by level: they are the same strings request after request (the
  // index's scope keys, the verifier's cached identity), whose hashes V8 keeps, where a joined key is new each time.
  const byUser = set.identities.get(scope);
  const kept = byUser?.get(user)?.get(group ?? '');
  if (kept !== undefined && kept.accel === accel) return sendAnswer(res, kept.answer);
  const headers = [CC, NO_STORE, CL, '0', 'X-Auth-Request-Scope', scope, 'X-Auth-Request-User', headerValue(user)];
  if (group !== undefined) headers.push('X-Auth-Request-Group', headerValue(group));
  if (accel >= 0) headers.push(ACCEL, String(accel));
  else headers.push(...removing(group === undefined ? ['X-Auth-Request-Scope', 'X-Auth-Request-User'] : ['X-Auth-Request-Scope', 'X-Auth-Request-User', 'X-Auth-Request-Group']));
  const answer = new PreparedAnswer(200, headers);
  keepIdentityAnswer(set, scope, user, group ?? '', { accel, answer });
  sendAnswer(res, answer);
}

type KeptAnswer = { readonly accel: number; readonly answer: PreparedAnswer };
export type IdentityAnswers = Map<string, Map<string, Map<string, KeptAnswer>>>;

/** Keeps a prepared identity grant; past MAX_GRANTED_ANSWERS identities the cache starts over. */
function keepIdentityAnswer(set: AnswerSet, scope: string, user: string, group: string, kept: KeptAnswer): void {
  const byScope = set.identities;
  let byUser = byScope.get(scope);
  if (byUser === undefined) byScope.set(scope, (byUser = new Map()));
  let byGroup = byUser.get(user);
  if (byGroup === undefined) {
    if (set.identityCount.n >= MAX_GRANTED_ANSWERS) {
      byScope.clear();
      set.identityCount.n = 0;
      return keepIdentityAnswer(set, scope, user, group, kept);
    }
    set.identityCount.n++;
    byUser.set(user, (byGroup = new Map()));
  }
  byGroup.set(group, kept);
}

/** Printable ASCII without `%`: sent as it is. */
const PLAIN = /^[\x20-\x24\x26-\x7e]*$/;
/** RFC 8187's attr-char: what an ext-value leaves unencoded. */
const ATTR_CHAR = /[A-Za-z0-9!#$&+\-.^_`|~]/;

/**
 * A name as a header value that no other name gives: printable ASCII without `%` as it is, anything else as an
 * RFC 8187 ext-value (`UTF-8''` and the UTF-8 bytes percent-encoded, `%` included). A plain value never
 * contains `%` and an encoded one always does, so `аlice` (Cyrillic а, `UTF-8''%D0%B0lice`) and a user
 * literally named `%D0%B0lice` (`UTF-8''%25D0%25B0lice`) stay apart. A backend decodes a value that starts
 * with `UTF-8''` by percent-decoding the rest as UTF-8, and takes any other value as it is.
 */
export function headerValue(s: string): string {
  if (PLAIN.test(s)) return s;
  let out = "UTF-8''";
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && ATTR_CHAR.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function sendInsufficientScope(res: HeadResponse, set: AnswerSet, scopes: string): void {
  const a = set.insufficientScope;
  res.writeHead(a.status, [...a.headers, WWW, insufficientScopeChallenge(scopes)]);
  res.end(a.body ?? undefined);
}
