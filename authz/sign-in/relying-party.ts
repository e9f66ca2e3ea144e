/**
 * svc-auth as an OpenID Connect relying party (the authorization code flow with PKCE S256, `state` and `nonce`),
 * every protocol step done by openid-client (OpenID Certified): discovery, the authorization URL, the callback's
 * checks and the code exchange, the end-session URL. svc-auth adds what makes the identity its own: the ID token is
 * then verified as a bearer JWT of the same issuer is (authz/identity/oidc.ts: keys, algorithms, times, required
 * claims, email_verified, names with their prefixes), for the audience of the sign-in client.
 *
 * The flow's secrets (state, nonce, PKCE verifier) and where to land ride in a short-lived sealed cookie
 * (the sign-in transaction, sealed like sessions with --session-key-file's keys), so any replica finishes a
 * sign-in another one began. That cookie must stay within what browsers keep, and the redirect it rides on within
 * what nginx passes, so a landing too long to seal in it gives way to a shorter one on the same origin (begin()).
 *
 * Discovery is lazy: an unreachable provider is not a configuration error. svc-auth starts, tokens and JWTs keep
 * working, and sign-in answers "unavailable" until discovery succeeds (tried again at most every `retryAfterMs`).
 */
import type { Logger } from 'pino';
import * as client from 'openid-client';
import type { VerifyOutcome } from '../identity/oidc.js';
import { cookieFits, seal, setCookieValue, unseal, type SessionIdentity } from '../identity/session.js';
import type { SignInConfig } from './config.js';
import { fetchTrusting } from './provider-fetch.js';

/** The sign-in transaction's sealed type, its cookie names and its lifetime. */
export const TRANSACTION_TYP = 'svc-sign-in';
export const TRANSACTION_COOKIE = '__Host-svc-sign-in';
export const TRANSACTION_COOKIE_INSECURE = 'svc-sign-in';
export const TRANSACTION_MAX_AGE_SECONDS = 600;

/**
 * The longest Set-Cookie header value (name, value and attributes) svc-auth sends for the transaction: browsers
 * drop a larger cookie without a word, and the callback then finds no transaction.
 */
export const MAX_SET_COOKIE_BYTES = 4096;
/**
 * The most the sign-in's redirect spends on its transaction cookie and its Location together. nginx (ingress-nginx
 * too) reads an upstream answer's status line and headers into one buffer of 4 KiB by default (proxy_buffer_size)
 * and answers 502 when they do not fit: a cookie browsers keep could still not get through. The answer's other
 * headers (status line, Date, Cache-Control, Referrer-Policy, Content-Type, Content-Length, Vary, Connection) take
 * some 250 bytes; 512 are left for them.
 */
export const MAX_REDIRECT_HEADER_BYTES = 4096 - 512;

export function transactionCookieName(secure: boolean): string {
  return secure ? TRANSACTION_COOKIE : TRANSACTION_COOKIE_INSECURE;
}

/**
 * Where a sign-in may land, the URL asked for first: `rd` itself (already checked: an absolute URL on an external
 * origin), then its path without the query, then its origin's `/`, each shorter than the one before.
 */
function landings(rd: string): { readonly rd: string; readonly what: string }[] {
  const url = new URL(rd);
  url.search = '';
  const all = [{ rd, what: 'as asked' }, { rd: url.href, what: 'its path without the query' }, { rd: `${url.origin}/`, what: 'its origin\'s /' }];
  return all.filter((l, i) => all.findIndex((m) => m.rd === l.rd) === i);
}

/** What verifies the ID token (OidcVerifier.verifyIdToken). */
export type VerifyIdToken = (jwt: string, issuer: string, audience: string) => Promise<VerifyOutcome>;

export interface RelyingPartyOptions {
  readonly config: SignInConfig;
  readonly verifyIdToken: VerifyIdToken;
  readonly logger: Logger;
  /** A CA (PEM) trusted for the provider's TLS besides the system's roots. */
  readonly ca?: string;
  /** After a failed discovery, how long sign-ins answer "unavailable" before it is tried again; default 5 s. */
  readonly retryAfterMs?: number;
  /** Seconds each request to the provider may take; default 5. */
  readonly timeoutSeconds?: number;
  /** Called when discovery succeeds after failing (the provider is back: its keys are worth fetching now). */
  readonly onRecovered?: () => void;
}

/** The browser's way to the provider, and the transaction cookie to set on the way (a Set-Cookie value). */
export interface Begun {
  readonly location: string;
  readonly setCookie: string;
}

/** A finished sign-in: who, and where to land; or why not, with the status to answer. */
export type Finished =
  | { readonly ok: true; readonly identity: SessionIdentity; readonly rd: string }
  | { readonly ok: false; readonly status: 400 | 403 | 503; readonly reason: string };

interface Transaction {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly rd: string;
  readonly redirectUri: string;
}

export class RelyingParty {
  private discovered: client.Configuration | undefined;
  private pending: Promise<client.Configuration | undefined> | undefined;
  private failedAt = -Infinity;

  constructor(private readonly o: RelyingPartyOptions) {}

  get config(): SignInConfig {
    return this.o.config;
  }

  /** The provider's configuration, discovered once; undefined while it cannot be had (tried again lazily). */
  provider(): Promise<client.Configuration | undefined> {
    if (this.discovered) return Promise.resolve(this.discovered);
    if (this.pending) return this.pending;
    if (Date.now() - this.failedAt < (this.o.retryAfterMs ?? 5000)) return Promise.resolve(undefined);
    this.pending = this.discover().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async discover(): Promise<client.Configuration | undefined> {
    const { config, ca, logger } = this.o;
    const at = new URL(config.issuer.discoveryUrl ?? config.issuer.url);
    const insecure = at.protocol === 'http:';
    const auth = config.clientSecret === undefined ? client.None() : client.ClientSecretBasic(config.clientSecret);
    const trusted = ca ?? config.issuer.certificateAuthority;
    try {
      this.discovered = await client.discovery(at, config.clientId, config.clientSecret === undefined ? { token_endpoint_auth_method: 'none' } : undefined, auth, {
        timeout: this.o.timeoutSeconds ?? 5,
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
        ...(trusted !== undefined ? { [client.customFetch]: fetchTrusting(trusted) } : {}),
      });
      logger.info({ issuer: config.issuer.url, endSession: this.discovered.serverMetadata().end_session_endpoint !== undefined }, 'sign-in: the provider is discovered');
      if (this.failedAt > -Infinity) this.o.onRecovered?.();
      return this.discovered;
    } catch (e) {
      this.failedAt = Date.now();
      logger.warn({ issuer: config.issuer.url, err: (e as Error).message }, `sign-in: the provider cannot be discovered; sign-in answers "unavailable" for ${Math.round((this.o.retryAfterMs ?? 5000) / 1000)} s, then tries again (tokens and JWTs are unaffected)`);
      return undefined;
    }
  }

  /**
   * The redirect to the provider for a sign-in that lands on `rd` (already checked: svc-auth's safeRedirect), with
   * the transaction cookie; undefined when the provider cannot be reached.
   *
   * `rd` may be up to 8,192 characters; the cookie may not be over MAX_SET_COOKIE_BYTES (with its value within the
   * MAX_COOKIE_BYTES unseal() opens), nor with the Location over MAX_REDIRECT_HEADER_BYTES: past some 2,000
   * characters the sealed `rd` is too much, and a cookie the browser drops, or an answer nginx cannot pass, is a
   * sign-in that never finishes. So the cookie is sealed and measured as it will be sent, and when it does not fit
   * the sign-in lands on the next shorter landing (landings()): the same page without its query, else the origin's
   * `/`. The person is signed in and on the right site, one navigation from where they were, rather than stopped by
   * an error page about a URL they did not write.
   */
  async begin(redirectUri: string, rd: string): Promise<Begun | undefined> {
    const provider = await this.provider();
    if (provider === undefined) return undefined;
    const secrets = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() };
    const location = client.buildAuthorizationUrl(provider, {
      redirect_uri: redirectUri,
      scope: this.o.config.scopes.join(' '),
      state: secrets.state,
      nonce: secrets.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(secrets.verifier),
      code_challenge_method: 'S256',
    }).href;
    const setCookie = await this.transactionCookie({ ...secrets, rd, redirectUri }, MAX_REDIRECT_HEADER_BYTES - Buffer.byteLength(location));
    return { location, setCookie };
  }

  /**
   * The transaction sealed as a Set-Cookie value of at most `room` bytes (and MAX_SET_COOKIE_BYTES), landing on
   * `t.rd` or the first shorter landing that fits.
   */
  private async transactionCookie(t: Transaction, room: number): Promise<string> {
    const { sessionKeys, secure } = this.o.config;
    const name = transactionCookieName(secure);
    const expiresAt = Date.now() + TRANSACTION_MAX_AGE_SECONDS * 1000;
    for (const { rd, what } of landings(t.rd)) {
      const value = await seal(sessionKeys, TRANSACTION_TYP, { ...t, rd }, expiresAt);
      const setCookie = setCookieValue(name, value, { secure, maxAgeSeconds: TRANSACTION_MAX_AGE_SECONDS });
      const bytes = Buffer.byteLength(setCookie);
      if (!cookieFits(name, value) || bytes > MAX_SET_COOKIE_BYTES || bytes > room) continue;
      // Lengths only, never the URL: its query may hold a token (`?token=`).
      if (rd !== t.rd) this.o.logger.debug({ rdChars: t.rd.length, landing: what, landingChars: rd.length }, `sign-in: the URL to return to is too long for the sign-in cookie; the sign-in lands on ${what}`);
      return setCookie;
    }
    // The origin's `/` and the callback are an external URL's origin and a short path, the rest is of fixed size
    // (the Location too, but for the provider's endpoint): only host names far longer than DNS allows get here.
    throw new Error('sign-in: the external URL or the provider\'s authorization endpoint is too long for the sign-in\'s redirect');
  }

  /** The callback: the transaction checked, the code exchanged, the ID token verified as a bearer JWT is. */
  async finish(query: string, transaction: string | undefined): Promise<Finished> {
    const t = transaction === undefined ? undefined : await this.transactionOf(transaction);
    if (t === undefined) return { ok: false, status: 400, reason: 'This sign-in was not started in this browser, or took longer than 10 minutes.' };
    const params = new URLSearchParams(query);
    const error = params.get('error');
    if (error !== null) return { ok: false, status: 403, reason: `The provider did not sign you in (${error}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}).` };
    const provider = await this.provider();
    if (provider === undefined) return { ok: false, status: 503, reason: 'The sign-in provider cannot be reached.' };
    let idToken: string | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(provider, new URL(`?${query}`, t.redirectUri), { pkceCodeVerifier: t.verifier, expectedState: t.state, expectedNonce: t.nonce, idTokenExpected: true });
      idToken = tokens.id_token;
    } catch (e) {
      return this.exchangeFailed(e);
    }
    if (idToken === undefined) return { ok: false, status: 403, reason: 'The provider sent no ID token.' };
    const v = await this.o.verifyIdToken(idToken, this.o.config.issuer.url, this.o.config.clientId);
    if (!v.ok) return { ok: false, status: v.unavailable ? 503 : 403, reason: `The provider's ID token was refused (${v.reason}).` };
    return { ok: true, identity: v.identity, rd: t.rd };
  }

  private async transactionOf(value: string): Promise<Transaction | undefined> {
    const p = await unseal(this.o.config.sessionKeys, TRANSACTION_TYP, value);
    const fields = ['state', 'nonce', 'verifier', 'rd', 'redirectUri'] as const;
    if (p === undefined || !fields.every((f) => typeof p[f] === 'string')) return undefined;
    return p as unknown as Transaction;
  }

  /** A failed exchange: the provider unreachable (503) or its answer refused (403); the details go to the log only. */
  private exchangeFailed(e: unknown): Finished {
    const err = e as Error & { code?: string; error?: string };
    const unreachable = err.name === 'TypeError' || err.name === 'AbortError' || err.name === 'TimeoutError' || err.code === 'OAUTH_TIMEOUT';
    this.o.logger.warn({ issuer: this.o.config.issuer.url, code: err.code, error: err.error, err: err.message }, 'sign-in: the code exchange failed');
    if (unreachable) return { ok: false, status: 503, reason: 'The sign-in provider cannot be reached.' };
    return { ok: false, status: 403, reason: `The provider's answer did not verify (${err.error ?? err.code ?? 'invalid'}).` };
  }

  /** Where the browser signs out at the provider too, or undefined (no end_session_endpoint, or not discovered yet). */
  endSessionUrl(postLogoutRedirectUri: string): string | undefined {
    const p = this.discovered;
    if (p === undefined || p.serverMetadata().end_session_endpoint === undefined) return undefined;
    return client.buildEndSessionUrl(p, { post_logout_redirect_uri: postLogoutRedirectUri, client_id: this.o.config.clientId }).href;
  }

  /** The provider's origin, for the pages' CSP form-action (sign-out continues there); undefined before discovery. */
  providerOrigin(): string | undefined {
    const end = this.discovered?.serverMetadata().end_session_endpoint;
    return end === undefined ? undefined : new URL(end).origin;
  }
}
