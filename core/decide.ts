/**
 * The access decision of docs/access-rules.md, as pure functions of data: the index, the configuration, the request and
 * the clock. Two steps, where the types split: settleRequest finds what governs a request (open, malformed, granted by a
 * network of a governing scope, or governed by which scopes: core/governing.ts), and judgeRequest judges a resolved
 * credential against a governed request (core/judge.ts). svc-auth resolves the credential in between, some of it
 * asynchronously (authz/pipeline/credential-road.ts); `decide` composes the two for the CLI and the property tests, and
 * the CLI's has-access-topic uses decideForScope, so both give the same answers.
 */
import type { AccessIndex } from './access-index.js';
import { isSafeMethod } from './browser.js';
import { extractCredential, type Credential } from './credentials.js';
import type { AccessConfig, AccessRequest, Decision, GovernedRequest, ResolvedCredential, ScopeConfig, Settled, VerifiedJwt, VerifyJwt } from './decision.js';
import { DEFAULT_CONFIG } from './decision.js';
import { Candidates, foldSegments, governingFor, governingOf, isClosedByDefault, isOpen, networkGrant, ownRequest } from './governing.js';
import { grantedByImported, importedCandidates } from './imported-decision.js';
import { judge, judgeSession } from './judge.js';
import { unverifiedIssuer } from './jwt-shape.js';
import { normalizeTarget } from './normalize.js';
import { foldCase, type Scope } from './scope.js';
import type { Identity } from './subject.js';

export * from './decision.js';

/**
 * `/data/` → ['data'], case-folded as requests are for governance; the root prefix `/` is refused because it
 * would make every path WAF and API at once.
 */
export function parsePrefix(prefix: string): readonly string[] {
  const segments = prefix.split('/').filter((s) => s.length > 0);
  if (segments.length === 0 || segments.some((s) => s === '.' || s === '..' || /[%;\\?#\s]/.test(s))) {
    throw new RangeError(`invalid path prefix ${JSON.stringify(prefix)}: use a path such as /data`);
  }
  return segments.map(foldCase);
}

/**
 * What governs a request: normalize the target (malformed when it cannot be read safely), find the most specific
 * governing scopes (none: open), then the networks of those scopes (the client address, when the endpoint could trust
 * one, grants before any credential is looked at; never an unsafe method with cross-site evidence). What remains is
 * governed: its credential decides (judgeRequest).
 */
export function settleRequest(index: AccessIndex, config: AccessConfig, req: AccessRequest): Settled {
  const target = normalizeTarget(req.target);
  if (!target.ok) return { outcome: 'malformed', reason: target.reason };
  const { segments, path } = target;
  const { area, by } = governingFor(index, config, req.method, foldSegments(segments));
  if (isOpen(by)) return { outcome: 'open', area, path };
  if (req.address !== undefined && !(req.crossSite === true && !isSafeMethod(req.method))) {
    const byNetwork = networkGrant(area, path, by, req.address);
    if (byNetwork !== undefined) return byNetwork;
  }
  return { outcome: 'governed', area, governing: governingOf(by), path, closedByDefault: isClosedByDefault(by), by, query: target.query, method: req.method };
}

/**
 * A resolved credential judged against a governed request: a token against the governing scopes' records, a verified
 * JWT against their subjects, a session as its identity's JWT would be with the CSRF rule, an imported match against
 * their imported records (else as the token it was).
 */
export function judgeRequest(index: AccessIndex, g: GovernedRequest, credential: ResolvedCredential, nowMs: number): Decision {
  if ('ok' in credential) return judge(index, g.area, g.path, g.by, credential, nowMs);
  if (credential.kind === 'session') return judgeSession(index, g.area, g.path, g.by, credential.session, g.method, credential.sameOrigin, nowMs);
  if (credential.kind === 'imported') {
    const held = importedCandidates(index, g.governing, nowMs).find((c) => c.record.hash === credential.hash);
    return held ? grantedByImported(g, held, credential.token.carrier) : judge(index, g.area, g.path, g.by, credential.token, nowMs);
  }
  return judge(index, g.area, g.path, g.by, credential, nowMs);
}

/**
 * The JWT a request's explicit credential is, when it names a configured OpenID issuer: it must be verified (outside
 * core) and judged as an identity, never looked up as a token. Undefined for anything else.
 */
export function jwtToVerify(config: Pick<AccessConfig, 'oidcIssuers'>, credential: Credential): { readonly jwt: string; readonly issuer: string; readonly carrier: Extract<Credential, { kind: 'token' }>['carrier'] } | undefined {
  if (config.oidcIssuers === undefined || credential.kind !== 'token') return undefined;
  const issuer = unverifiedIssuer(credential.token);
  return issuer !== undefined && config.oidcIssuers.has(issuer) ? { jwt: credential.token, issuer, carrier: credential.carrier } : undefined;
}

/**
 * The answer to one request, settled then judged: with `verified` set (a JWT checked outside core, or a session
 * opened, with `sameOrigin`) it is final; else a JWT of a configured issuer answers `verify-jwt` (decide never asks to
 * verify twice), and any other credential is judged as it is.
 */
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest & { readonly verified: VerifiedJwt }, nowMs: number): Decision;
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest, nowMs: number): Decision | VerifyJwt;
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest, nowMs: number): Decision | VerifyJwt {
  const s = settleRequest(index, config, req);
  if (s.outcome !== 'governed') return s;
  const v = req.verified;
  if (v !== undefined) return judgeRequest(index, s, v.carrier === 'session' ? { kind: 'session', session: v, sameOrigin: req.sameOrigin === true } : v, nowMs);
  const credential = extractCredential(s.query, req.authorization, config.tokenParam);
  const jwt = jwtToVerify(config, credential);
  if (jwt !== undefined) return { outcome: 'verify-jwt', area: s.area, governing: s.governing, path: s.path, closedByDefault: s.closedByDefault, ...jwt };
  return judgeRequest(index, s, credential, nowMs);
}

/**
 * What the CLI's has-access-topic answers: the decision for a request to the scope's own data. `config` is svc-auth's
 * (its prefixes and --open-paths-by-default), so the answer is the one svc-auth gives.
 */
export function decideForScope(index: AccessIndex, scope: Scope, token: string, nowMs: number, config: ScopeConfig = DEFAULT_CONFIG): Decision {
  return decideScopeWith(index, scope, { kind: 'token', token, carrier: 'bearer' }, nowMs, config);
}

/** has-access-topic for an identity (`--user U --group G`), as if it came in a valid JWT that never expires. */
export function decideForScopeAs(index: AccessIndex, scope: Scope, identity: Identity, nowMs: number, config: ScopeConfig = DEFAULT_CONFIG): Decision {
  return decideScopeWith(index, scope, { ok: true, identity, carrier: 'bearer', expiresAt: Infinity }, nowMs, config);
}

/** Whether anything but the scope's own grants decides its requests: open, or governed by which scopes. */
export function decideForScopeAnonymous(index: AccessIndex, scope: Scope, config: ScopeConfig = DEFAULT_CONFIG): Decision {
  return decideScopeWith(index, scope, { kind: 'none' }, 0, config);
}

/**
 * The scope's own data: a topic's or dataset's as their candidates (their levels anywhere); a path scope's as the
 * request svc-auth governs it by (an execution of the process, a stations write, an unsafe request to a prefix
 * path), through the same governingFor, so a public scope reads open exactly where svc-auth opens it.
 */
function decideScopeWith(index: AccessIndex, scope: Scope, credential: Credential | VerifiedJwt, nowMs: number, config: ScopeConfig): Decision {
  const value = foldCase(scope.value);
  if (scope.kind === 'path') {
    const { area, by } = governingFor(index, { ...config, tokenParam: null }, null, ownRequest(value, config));
    if (isOpen(by)) return { outcome: 'open', area, path: '' };
    return judge(index, area, '', by, credential, nowMs);
  }
  const found = new Candidates();
  if (scope.kind === 'topic') found.topicRuns(index, value.split('.'));
  else found.datasetPrefixes(index, value);
  const scopes = found.mostSpecific();
  if (scopes.length === 0) return { outcome: 'open', area: 'other', path: '' };
  return judge(index, 'other', '', scopes, credential, nowMs);
}
