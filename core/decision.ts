/**
 * The decision's data (docs/access-rules.md "From a request to a decision"): svc-auth's configuration as decide reads
 * it, a request, what settles it (open, malformed, granted by network, or governed by which scopes) and the decisions
 * a judged credential ends in. Types only, shared by core/governing.ts (what governs a request), core/judge.ts (a
 * credential judged against it) and core/decide.ts (the two composed).
 */
import type { IndexedScope } from './access-index.js';
import type { Credential, CredentialCarrier } from './credentials.js';
import type { Identity } from './subject.js';
import type { Scope } from './scope.js';
import { DEFAULT_PREFIXES, type PathPrefixes } from './path-scope.js';

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
}

export interface AccessRequest {
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

export interface Governed {
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
      /** The token matched an imported (wis2box-auth) hash: svc-auth checks those apart (authz/pipeline/imported-source.ts). */
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

/** A default configuration: the default prefixes, tokens in `?token=`. */
export const DEFAULT_CONFIG: AccessConfig = { ...DEFAULT_PREFIXES, tokenParam: 'token' };

/** What deciding for a scope (show, has-access-topic, the operator's status) needs of svc-auth's configuration. */
export type ScopeConfig = PathPrefixes & Pick<AccessConfig, 'openPathsByDefault'>;

/**
 * The stand-in for a write path no path scope covers (docs/access-rules.md "Open, closed, and closed by default": process
 * execution, stations writes and unsafe requests on jobs). It names the scope a token would have to be added to and
 * holds nothing, so nothing it governs is granted. Never in an index, never among other candidates.
 */
export interface ClosedByDefault {
  readonly kind: 'closed-by-default';
  readonly scope: Scope;
}

/** What governs a request: the most specific closed scopes of the index (none: the request is open), or the stand-in alone. */
export type GoverningScopes = readonly IndexedScope[] | ClosedByDefault;

/**
 * A governed request, settled (core/decide.ts settleRequest): what governs it, and what judging a credential against
 * it needs. Plain data: the credential it is judged with is resolved elsewhere (svc-auth's ordered list of credential
 * sources, authz/pipeline/credential-road.ts; the CLI's flags).
 */
export interface GovernedRequest extends Governed {
  readonly outcome: 'governed';
  /** The governing scopes as the index holds them (`governing` names them). */
  readonly by: GoverningScopes;
  /** The normalized target's query, where a `?token=` is read. */
  readonly query: string;
  readonly method: string | null;
}

/** A settled request: answered already (open, malformed, granted by a network), or governed and waiting for its credential. */
export type Settled = Extract<Decision, { outcome: 'open' | 'malformed' | 'granted-network' }> | GovernedRequest;

/** A browser session as a credential: the identity it holds, and whether the request has same-origin evidence (CSRF). */
export interface SessionCredential {
  readonly kind: 'session';
  readonly session: VerifiedJwt;
  readonly sameOrigin: boolean;
}

/**
 * A presented token that matched an imported (wis2box-auth) record's hash: judged by whether a governing scope of the
 * index in service still holds that record, else as the token itself.
 */
export interface ImportedMatch {
  readonly kind: 'imported';
  readonly hash: string;
  readonly token: Extract<Credential, { kind: 'token' | 'malformed' }>;
}

/** A credential resolved and ready to judge: explicit (or none), a verified JWT, a session, an imported match. */
export type ResolvedCredential = Credential | VerifiedJwt | SessionCredential | ImportedMatch;
