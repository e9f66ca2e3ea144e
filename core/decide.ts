/**
 * The access decision of docs/access-rules.md, as a pure function of the index, the configuration, the
 * request (its client address among it: a network of a governing scope grants before any credential is read) and the clock. svc-auth maps decisions to HTTP answers; the CLI's has-access-topic uses
 * decideForScope, so both give the same answer.
 */
import type { AccessIndex, IndexedScope, TopicNode } from './access-index.js';
import { extractCredential, type Credential, type CredentialCarrier } from './credentials.js';
import { unverifiedIssuer } from './jwt-shape.js';
import { isSafeMethod } from './browser.js';
import type { Identity } from './subject.js';
import { normalizeTarget } from './normalize.js';
import { parseAddressInto } from './network.js';
import { foldCase, isPrefixPath, type Scope, type ScopeKind } from './scope.js';
import { DEFAULT_PREFIXES, jobsPath, type PathPrefixes } from './path-scope.js';
import { hashTokenDigestInto, isPlausibleToken, MAX_TOKEN_LENGTH, tokenIdOfDigest } from './token.js';

export type Area = 'waf' | 'api' | 'other';

export interface AccessConfig {
  /** Path prefixes as segments: `/data` → ['data']. */
  readonly wafPrefix: readonly string[];
  readonly apiPrefix: readonly string[];
  /** The query argument that carries a token; null disables query tokens. */
  readonly tokenParam: string | null;
  /**
   * Process execution and stations writes are closed by default: with no path scope holding a token for
   * them they are denied. True restores "open until the first token" (`--open-paths-by-default`).
   */
  readonly openPathsByDefault?: boolean;
  /**
   * The configured OpenID issuers: a credential that is a compact JWS with one of them in `iss` is a JWT to
   * verify (decide answers `verify-jwt`), never a token to look up.
   */
  readonly oidcIssuers?: ReadonlySet<string>;
  /**
   * A JWT verified before (svc-auth's cache of verifications), or undefined: such a JWT is judged in the same
   * pass as a token, synchronously, instead of answering `verify-jwt` and deciding a second time.
   */
  readonly knownJwt?: (jwt: string, carrier: CredentialCarrier) => VerifiedJwt | undefined;
  /**
   * The browser session of the request being decided (svc-auth's hook, when sign-in is on), asked only when the
   * request carries no explicit credential and is governed: so open requests and requests with a token never look
   * at a cookie. Undefined: no session now (none, or one still to be opened, which the caller then decides with
   * `verified`). `sameOrigin` is the request's same-origin evidence (core/browser.ts), for the CSRF rule.
   */
  readonly browserSession?: () => { readonly session: VerifiedJwt; readonly sameOrigin: boolean } | undefined;
}

interface AccessRequest {
  /**
   * The original request's method; null when the proxy did not state it. An unstated method is governed as
   * an unsafe one: an nginx subrequest is always GET, so falling back to the subrequest's own method would
   * let every stations write through behind a proxy that does not send it (docs/access-rules.md).
   */
  readonly method: string | null;
  /** The original request target: a path with optional query, as the proxy sent it. */
  readonly target: string;
  readonly authorization: string | undefined;
  /**
   * Set by the caller when the request's credential is a JWT of a configured OpenID issuer: what verifying it
   * gave. decide then judges the identity against the governing scopes' subjects and never looks the value
   * up as a token; a JWT that failed verification grants nothing.
   */
  readonly verified?: VerifiedJwt;
  /**
   * The request carries same-origin evidence (`Sec-Fetch-Site: same-origin`, or an `Origin` of an external URL:
   * core/browser.ts). Read only when a browser session is the credential of an unsafe method (the CSRF rule).
   */
  readonly sameOrigin?: boolean;
  /**
   * The client address as the proxy saw it (the endpoint's reading after `--trusted-proxy-hops`: authz/endpoints),
   * as text; undefined when the endpoint has none it can trust, and then no network grants (docs/access-rules.md
   * "Networks"). A network of a governing scope holding it grants whatever credential the request carries.
   */
  readonly address?: string;
  /**
   * The request carries evidence of coming from another site's page (core/browser.ts crossSiteEvidence). An address
   * is ambient authority like a session cookie: a network never grants an unsafe method that carries this evidence
   * (the request is decided as if no network matched), so a page elsewhere cannot make a browser at a granted address
   * write. The caller may leave it unset for safe methods, where it is never read.
   */
  readonly crossSite?: boolean;
}

/**
 * The outcome of verifying a JWT (signature, issuer, audience, times) outside core, or of opening a browser session
 * (carrier `session`, authz/identity/session.ts): an identity, or a failure.
 */
export type VerifiedJwt =
  | { readonly ok: true; readonly identity: Identity; readonly carrier: CredentialCarrier; /** the JWT's exp, ms since epoch */ readonly expiresAt: number }
  | { readonly ok: false; readonly carrier: CredentialCarrier };

interface Governed {
  readonly area: Area;
  readonly governing: readonly Scope[];
  /**
   * The request's normalized path (decide computed it anyway; svc-auth logs it instead of normalizing
   * twice). decideForScope has no request: '' there.
   */
  readonly path: string;
  /**
   * No scope of the store covers the request: it is governed by a path closed by default (process execution,
   * stations writes; docs/access-rules.md), which no token can open until a scope covering it has one.
   */
  readonly closedByDefault: boolean;
}

/**
 * Not an answer: the credential is a JWT of a configured issuer and the caller must verify it, then decide again
 * with `verified` set. Only for governed requests: open ones never cost a verification. Only `decide` returns it
 * (svc-auth verifies); the CLI's decideForScope* never do, so their callers handle answers only.
 */
export type VerifyJwt = Governed & {
  readonly outcome: 'verify-jwt';
  readonly jwt: string;
  readonly issuer: string;
  readonly carrier: CredentialCarrier;
};

export type Decision =
  | { readonly outcome: 'open'; readonly area: Area; readonly path: string }
  | { readonly outcome: 'malformed'; readonly reason: string }
  | (Governed & {
      readonly outcome: 'granted';
      readonly scope: Scope;
      /** scopeKey(scope), computed once when the index was built. */
      readonly scopeKey: string;
      readonly tokenId: string;
      readonly carrier: CredentialCarrier;
      /** When the deciding token expires (ms since epoch; Infinity when never): bounds how long a proxy may cache the allow. */
      readonly expiresAt: number;
      /** The token matched an imported (wis2box-auth) hash: svc-auth checks those apart (authz/pipeline/imported-check.ts). */
      readonly imported?: true;
    })
  | (Governed & {
      readonly outcome: 'granted-identity';
      readonly scope: Scope;
      readonly scopeKey: string;
      readonly issuer: string;
      readonly user: string;
      /** The group of the identity that the scope grants; absent when the user is granted by name. */
      readonly group?: string;
      readonly carrier: CredentialCarrier;
      /** The JWT's expiry: bounds how long a proxy may cache the allow. */
      readonly expiresAt: number;
    })
  | (Governed & {
      readonly outcome: 'granted-network';
      readonly scope: Scope;
      readonly scopeKey: string;
      /** The network of the scope that holds the address (canonical text): the grant. */
      readonly network: string;
      /** The request's address as the endpoint read it. */
      readonly address: string;
    })
  | (Governed & { readonly outcome: 'no-token' })
  | (Governed & {
      readonly outcome: 'invalid-token';
      readonly why: 'malformed' | 'unknown' | 'expired' | 'jwt';
      readonly tokenId?: string;
      /**
       * Set on a malformed credential when a governing scope holds imported (wis2box-auth) records: wis2box-auth
       * took any value, so it is still checked against those (core/imported-decision.ts) before the answer stands.
       */
      readonly importable?: true;
    })
  | (Governed & {
      readonly outcome: 'insufficient-scope';
      readonly tokenId?: string;
      readonly issuer?: string;
      readonly user?: string;
      /** Set for an identity: a JWT's carrier, or `session`. */
      readonly carrier?: CredentialCarrier;
      /** A session would have granted an unsafe method, but the request has no same-origin evidence (CSRF). */
      readonly crossSite?: true;
    });

export const DEFAULT_CONFIG: AccessConfig = { ...DEFAULT_PREFIXES, tokenParam: 'token' };

/** What deciding for a scope (show, has-access-topic, the operator's status) needs of svc-auth's configuration. */
export type ScopeConfig = PathPrefixes & Pick<AccessConfig, 'openPathsByDefault'>;

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

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The answer to one request: normalize the target (malformed when it cannot be read safely), find the most
 * specific governing scopes (none: open), then judge the credential against them alone. With `verified` set
 * (the JWT checked outside core) the answer is final: decide never asks to verify twice.
 */
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest & { readonly verified: VerifiedJwt }, nowMs: number): Decision;
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest, nowMs: number): Decision | VerifyJwt;
export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest, nowMs: number): Decision | VerifyJwt {
  const target = normalizeTarget(req.target);
  if (!target.ok) return { outcome: 'malformed', reason: target.reason };
  const { segments, path } = target;
  const { area, by } = governingFor(index, config, req.method, foldSegments(segments));
  if (isOpen(by)) return { outcome: 'open', area, path };
  if (req.address !== undefined && !(req.crossSite === true && !isSafeMethod(req.method))) {
    const byNetwork = networkGrant(area, path, by, req.address);
    if (byNetwork !== undefined) return byNetwork;
  }
  const credential = req.verified ?? extractCredential(target.query, req.authorization, config.tokenParam);
  if (req.verified?.carrier === 'session') return judgeSession(index, area, path, by, req.verified, req.method, req.sameOrigin === true, nowMs);
  if (config.browserSession && !('ok' in credential) && credential.kind === 'none') {
    const browser = config.browserSession();
    if (browser !== undefined) return judgeSession(index, area, path, by, browser.session, req.method, browser.sameOrigin, nowMs);
  }
  if (config.oidcIssuers && !('ok' in credential) && credential.kind === 'token') {
    const known = config.knownJwt?.(credential.token, credential.carrier);
    if (known !== undefined) return judge(index, area, path, by, known, nowMs);
    const issuer = unverifiedIssuer(credential.token);
    if (issuer !== undefined && config.oidcIssuers.has(issuer)) {
      return { outcome: 'verify-jwt', area, governing: governingOf(by), path, closedByDefault: isClosedByDefault(by), jwt: credential.token, issuer, carrier: credential.carrier };
    }
  }
  return judge(index, area, path, by, credential, nowMs);
}

/** The request's address, parsed: reused, as decide runs to completion (core/network.ts parseAddressInto). */
const ADDRESS = new Uint32Array(4);

/**
 * A network of a governing scope holding the address grants (the first governing scope, in order, that has one; its
 * most specific network), before any credential is looked at; undefined otherwise, and always under the closed-by-
 * default stand-in, which holds nothing. Allocates nothing but the decision.
 */
function networkGrant(area: Area, path: string, by: GoverningScopes, address: string): Decision | undefined {
  if (isClosedByDefault(by)) return undefined;
  let family: 4 | 6 | 0 | undefined;
  for (const entry of by) {
    if (entry.networks === undefined) continue;
    family ??= parseAddressInto(address, ADDRESS);
    if (family === 0) return undefined;
    const n = entry.networks.find(family, ADDRESS);
    if (n !== undefined) return { outcome: 'granted-network', area, governing: governingOf(by), path, closedByDefault: false, scope: entry.scope, scopeKey: entry.key, network: n.cidr, address };
  }
  return undefined;
}

/**
 * A browser session decides as the same identity's bearer JWT would (judge), with one rule more: an unsafe method
 * needs same-origin evidence (docs/access-rules.md "Browser sessions", CSRF), or the grant is refused as cross-site.
 */
function judgeSession(index: AccessIndex, area: Area, path: string, by: GoverningScopes, session: VerifiedJwt, method: string | null, sameOrigin: boolean, nowMs: number): Decision {
  const d = judge(index, area, path, by, session, nowMs);
  if (d.outcome !== 'granted-identity' || sameOrigin || isSafeMethod(method)) return d;
  const { governing, closedByDefault, issuer, user, carrier } = d;
  return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, issuer, user, carrier, crossSite: true };
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

/** The folded segments of the request a path scope stands for: an execution, a stations write, or its own path. */
function ownRequest(value: string, prefixes: PathPrefixes): readonly string[] {
  if (value === 'collections/stations') return [...prefixes.apiPrefix, 'collections', 'stations'];
  if (!isPrefixPath(value)) return [...prefixes.apiPrefix, 'processes', value.slice('processes/'.length), 'execution'];
  return value.split('/');
}

/**
 * The stand-in for a write path no path scope covers (docs/access-rules.md "Open, closed, and closed by default": process
 * execution, stations writes and unsafe requests on jobs). It names the scope a token would have to be added to and
 * holds nothing, so nothing it governs is granted. Never in an index, never among other candidates.
 */
interface ClosedByDefault {
  readonly kind: 'closed-by-default';
  readonly scope: Scope;
}

/** What governs a request: the most specific closed scopes of the index (none: the request is open), or the stand-in alone. */
type GoverningScopes = readonly IndexedScope[] | ClosedByDefault;

function isClosedByDefault(by: GoverningScopes): by is ClosedByDefault {
  return 'kind' in by;
}

function isOpen(by: GoverningScopes): boolean {
  return !isClosedByDefault(by) && by.length === 0;
}

/** The governing scopes as a decision names them. */
function governingOf(by: GoverningScopes): readonly Scope[] {
  return isClosedByDefault(by) ? [by.scope] : by.map((s) => s.scope);
}

/** The presented token's digest: reused, as judge runs to completion and keeps nothing of it but the id. */
const DIGEST = Buffer.alloc(32);

/**
 * Step 3 and the answers table: only the governing scopes' tokens grant. The token's records are walked
 * per governing scope, in order (a digest has one record per scope holding it, usually just one).
 */
function judge(index: AccessIndex, area: Area, path: string, by: GoverningScopes, credential: Credential | VerifiedJwt, nowMs: number): Decision {
  const governing = governingOf(by);
  const closedByDefault = isClosedByDefault(by);
  // The index scopes whose grants count: none under the stand-in, which holds nothing.
  const scopes = isClosedByDefault(by) ? NO_SCOPES : by;
  if ('ok' in credential) return judgeIdentity(area, path, governing, closedByDefault, scopes, credential, nowMs);
  if (credential.kind === 'none') return { outcome: 'no-token', area, governing, path, closedByDefault };
  if (credential.kind === 'malformed' || credential.token.length > MAX_TOKEN_LENGTH) {
    return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'malformed', ...importable(scopes) };
  }
  // The length bound keeps hashing cheap whatever is sent; the format checks (printable, checksum) only
  // tell "malformed" from "unknown" for a token the index does not hold, so they run after the lookup.
  // Every stored token passed them when it was created, so the answers are the same.
  const digest = hashTokenDigestInto(credential.token, DIGEST);
  const table = index.tokens;
  let expired = false;
  for (const entry of scopes) {
    for (let slot = table.first(digest); slot >= 0; slot = table.next(digest, slot)) {
      if (table.ownerAt(slot) !== entry) continue;
      const expiresAt = table.expiresAt(slot);
      if (expiresAt > nowMs) {
        return { outcome: 'granted', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, tokenId: tokenIdOfDigest(digest), carrier: credential.carrier, expiresAt };
      }
      expired = true;
      break;
    }
  }
  if (expired) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'expired', tokenId: tokenIdOfDigest(digest) };
  // Held unexpired by another scope: "insufficient scope" rather than "unknown".
  for (let slot = table.first(digest); slot >= 0; slot = table.next(digest, slot)) {
    if (table.expiresAt(slot) > nowMs) return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, tokenId: tokenIdOfDigest(digest) };
  }
  if (isPlausibleToken(credential.token)) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'unknown' };
  return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'malformed', ...importable(scopes) };
}

const IMPORTABLE = { importable: true } as const;

/** A value no svc token can be may still be a wis2box-auth one, where a governing scope holds imported records. */
function importable(scopes: readonly IndexedScope[]): { readonly importable?: true } {
  for (const s of scopes) if (s.imported !== undefined) return IMPORTABLE;
  return {};
}

/**
 * Step 3 for an identity: only the governing scopes' subjects grant, the user by name or one of its groups
 * (the first of the identity's groups, in its order, that a scope lists). A JWT that failed verification, or
 * has expired since, is an invalid token; a valid one no governing scope lists, insufficient scope.
 */
function judgeIdentity(area: Area, path: string, governing: readonly Scope[], closedByDefault: boolean, scopes: readonly IndexedScope[], v: VerifiedJwt, nowMs: number): Decision {
  if (!v.ok || v.expiresAt <= nowMs) return { outcome: 'invalid-token', area, governing, path, closedByDefault, why: 'jwt' };
  const { issuer, user, groups } = v.identity;
  for (const entry of scopes) {
    const grants = entry.subjects;
    if (!grants) continue;
    // One decision object, built once the granting name is known: this runs on every repeat request of a session's JWT.
    if (grants.users.has(user)) return { outcome: 'granted-identity', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, issuer, user, carrier: v.carrier, expiresAt: v.expiresAt };
    for (const group of groups) {
      if (grants.groups.has(group)) return { outcome: 'granted-identity', area, governing, path, closedByDefault, scope: entry.scope, scopeKey: entry.key, issuer, user, carrier: v.carrier, expiresAt: v.expiresAt, group };
    }
  }
  return { outcome: 'insufficient-scope', area, governing, path, closedByDefault, issuer, user, carrier: v.carrier };
}

function startsWith(segments: readonly string[], prefix: readonly string[]): boolean {
  if (segments.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (segments[i] !== prefix[i]) return false;
  return true;
}

/** The segments case-folded (foldCase); the same array when none changes, as for most requests. */
function foldSegments(segments: readonly string[]): readonly string[] {
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (foldCase(seg) !== seg) return segments.map(foldCase);
  }
  return segments;
}

/**
 * Finds the closed candidate scopes of a normalized request (docs/access-rules.md "From a request to a decision", step 3). `segments` are
 * case-folded, as the index's keys are; `method` is null when unstated, which is never a safe method.
 */
function governingFor(index: AccessIndex, config: AccessConfig, method: string | null, segments: readonly string[]): { area: Area; by: GoverningScopes } {
  const found = new Candidates();
  let area: Area = 'other';
  // The stand-in when the request is closed by default (an execution, a stations or jobs write).
  let fallback: ClosedByDefault | undefined;
  // Prefix path scopes (`wis2downloader`) govern their path and below wherever it is, every method.
  found.prefixRuns(index, segments);
  if (startsWith(segments, config.wafPrefix)) {
    area = 'waf';
    // The segments after the prefix, read in place.
    const from = config.wafPrefix.length;
    if (segments[from] !== 'metadata') {
      found.topicRuns(index, segments, from);
      for (let i = from; i < segments.length; i++) found.datasetPrefixes(index, segments[i]!);
    }
  } else if (startsWith(segments, config.apiPrefix)) {
    area = 'api';
    fallback = apiCandidates(found, index, config, method, segments);
  }
  return { area, by: settle(found, fallback, config) };
}

/** Step 2 below the API prefix: collections, stations writes, executions, jobs; returns the default-closed stand-in. */
function apiCandidates(found: Candidates, index: AccessIndex, config: AccessConfig, method: string | null, segments: readonly string[]): ClosedByDefault | undefined {
  const resource = segments[config.apiPrefix.length];
  const id = segments[config.apiPrefix.length + 1];
  const safe = method !== null && SAFE_METHODS.has(method);
  if (resource === 'collections' && id !== undefined) {
    if (id === 'stations') {
      if (safe) return undefined;
      found.add(index.paths.get('collections/stations'));
      return DEFAULT_STATIONS_SCOPE;
    }
    if (!(id === 'discovery-metadata' && safe)) {
      found.topicRuns(index, id.split('.'));
      found.datasetPrefixes(index, id);
    }
  } else if (resource === 'processes' && id !== undefined && method !== 'OPTIONS') {
    found.processPrefixes(index, id);
    return defaultProcessScope(id);
  } else if (resource === 'jobs' && !safe) {
    // Dismissing a job (DELETE) and any other unsafe request on jobs: closed by default like an execution.
    return jobsScope(config);
  }
  return undefined;
}

/**
 * The governing scopes (docs/access-rules.md "From a request to a decision", steps 4 and 5, and "Public"): any candidate with a grant or
 * `closed: true` governs, the most specific first, and no public scope opens what it covers. With none, a request
 * closed by default is governed by its stand-in unless a public scope names exactly what the stand-in closes.
 */
function settle(found: Candidates, fallback: ClosedByDefault | undefined, config: AccessConfig): GoverningScopes {
  if (!found.none) return found.mostSpecific();
  if (fallback === undefined || config.openPathsByDefault) return NO_SCOPES;
  return found.lifts(fallback, config.apiPrefix.length) ? NO_SCOPES : fallback;
}

/** The stand-in (ClosedByDefault) for the path scope `value`. */
const byDefault = (value: string): ClosedByDefault => ({ kind: 'closed-by-default', scope: { kind: 'path', value } });
const DEFAULT_STATIONS_SCOPE = byDefault('collections/stations');
const PROCESS_ID = /^[a-z0-9_]+(-[a-z0-9_]+)*$/;
const DEFAULT_PROCESSES_SCOPE = byDefault('processes');

/** The default-closed stand-in for a process: `processes/<id>` when the id could be a scope's, else `processes`. */
function defaultProcessScope(id: string): ClosedByDefault {
  return id.length <= 200 && PROCESS_ID.test(id) ? byDefault(`processes/${id}`) : DEFAULT_PROCESSES_SCOPE;
}

/** The stand-in for unsafe requests on jobs, `<api prefix>/jobs` (a prefix path), one per prefix. */
const JOBS_SCOPES = new Map<readonly string[], ClosedByDefault>();
function jobsScope(prefixes: PathPrefixes): ClosedByDefault {
  let scope = JOBS_SCOPES.get(prefixes.apiPrefix);
  if (scope === undefined) {
    if (JOBS_SCOPES.size > 16) JOBS_SCOPES.clear();
    JOBS_SCOPES.set(prefixes.apiPrefix, (scope = byDefault(jobsPath(prefixes))));
  }
  return scope;
}

/**
 * Collects candidates (closed ones, and public ones apart); allocation only starts with the first hit, so open
 * requests (the common case) cost a few map lookups.
 */
const NO_SCOPES: readonly IndexedScope[] = Object.freeze([]);

class Candidates {
  private hits: IndexedScope[] | undefined;
  /** Public candidates, apart: they never govern, and lift only a default that they name exactly (lifts). */
  private publics: IndexedScope[] | undefined;

  /** No candidate with a grant or `closed: true` (public ones aside). */
  get none(): boolean {
    return this.hits === undefined;
  }

  add(entry: IndexedScope | undefined): void {
    if (!entry) return;
    if (entry.public) (this.publics ??= []).push(entry);
    else (this.hits ??= []).push(entry);
  }

  /**
   * Whether a public candidate lifts the default-closed stand-in: a process id or collections/stations named
   * exactly (not the `-` family of a process), or for jobs a prefix path below the API prefix (at or below
   * `<api>/jobs`: the candidates are prefixes of the request). A public prefix path never lifts an execution or a
   * stations write, whatever it spells.
   */
  lifts(fallback: ClosedByDefault, apiDepth: number): boolean {
    const publics = this.publics;
    if (!publics) return false;
    const jobs = isPrefixPath(fallback.scope.value);
    for (const p of publics) {
      const value = foldCase(p.scope.value);
      if (isPrefixPath(value) ? jobs && p.depth > apiDepth : value === fallback.scope.value) return true;
    }
    return false;
  }

  /** Topic scopes whose levels appear as consecutive items of `levels` (from index `from` on), starting anywhere. */
  topicRuns(index: AccessIndex, levels: readonly string[], from = 0): void {
    if (index.topics.size === 0) return;
    for (let start = from; start < levels.length; start++) {
      let node: TopicNode | undefined = index.topics.get(levels[start]!);
      for (let i = start + 1; node; i++) {
        this.add(node.scope);
        if (i >= levels.length) break;
        node = node.children.get(levels[i]!);
      }
    }
  }

  /** Prefix path scopes whose segments begin `segments` (segment-exact: `wis2downloader` does not cover `wis2downloaderx`). */
  prefixRuns(index: AccessIndex, segments: readonly string[]): void {
    const root = index.prefixes;
    if (root === undefined || segments.length === 0) return;
    let node: TopicNode | undefined = root.get(segments[0]!);
    for (let i = 1; node; i++) {
      this.add(node.scope);
      if (i >= segments.length) break;
      node = node.children.get(segments[i]!);
    }
  }

  /** Dataset scopes equal to the id or a prefix of it at a `:` boundary. */
  datasetPrefixes(index: AccessIndex, id: string): void {
    if (index.datasets.size === 0 || !id.startsWith('urn:')) return;
    for (let colon = id.indexOf(':', 4); colon > 0; colon = id.indexOf(':', colon + 1)) {
      this.add(index.datasets.get(id.slice(0, colon)));
    }
    this.add(index.datasets.get(id));
  }

  /** Path scopes processes/<p> where the process id equals p or starts with `p-`. */
  processPrefixes(index: AccessIndex, processId: string): void {
    if (index.paths.size === 0) return;
    for (let dash = processId.indexOf('-'); dash > 0; dash = processId.indexOf('-', dash + 1)) {
      this.add(index.paths.get(`processes/${processId.slice(0, dash)}`));
    }
    this.add(index.paths.get(`processes/${processId}`));
  }

  /**
   * The deepest closed candidates of each kind, each once, in the order first found; candidates of
   * different kinds govern together. A single hit (the common governed case) is returned as it is.
   */
  mostSpecific(): readonly IndexedScope[] {
    const hits = this.hits;
    if (!hits) return NO_SCOPES;
    if (hits.length === 1) return hits;
    const deepest: Record<ScopeKind, number> = { topic: 0, dataset: 0, path: 0 };
    for (const h of hits) if (h.depth > deepest[h.scope.kind]) deepest[h.scope.kind] = h.depth;
    const out: IndexedScope[] = [];
    // `includes` is fine for the few hits of a real path; a long crafted path can hit hundreds, hence the Set.
    const seen = hits.length > 16 ? new Set<IndexedScope>() : undefined;
    for (const h of hits) {
      if (h.depth !== deepest[h.scope.kind]) continue;
      if (seen ? seen.has(h) : out.includes(h)) continue;
      seen?.add(h);
      out.push(h);
    }
    return out;
  }
}
