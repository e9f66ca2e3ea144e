/**
 * Where the auth pipeline meets browsers (docs/access-rules.md "Browser sessions"), when sign-in is configured. decide
 * asks for the request's session (AccessConfig.browserSession, `hook` below) only for a request to a closed scope that
 * carries no explicit credential, so open requests and requests with a token or a JWT never parse a cookie:
 *
 * - its session cookie, if any, is found among the sessions opened before and judged in the same pass, as the same
 *   identity's bearer JWT would be, with the CSRF rule for unsafe methods; a cookie seen for the first time is opened
 *   (asynchronously), then decided against the index in service;
 * - whether it is a top-level navigation, and where it was made, is kept for the answer: a navigation without a
 *   session is sent to sign in (ForwardAuth and ext_authz answer the 302 themselves; the nginx endpoints keep their
 *   401 and name the sign-in URL in X-Svc-Sign-In, which the documented nginx configuration redirects to), and a
 *   signed-in navigation refused for want of a grant gets the 403 page naming the person (on the nginx endpoints,
 *   X-Svc-Denied names that page).
 */
import { cookieValue, decide, externalOriginFor, isNavigation, isSafeMethod, originOf, sameOriginEvidence, type AccessConfig, type AccessIndex, type Decision } from '../../core/index.js';
import type { EndpointName } from '../endpoints/index.js';
import { insufficientScopeChallenge, type AnswerSet } from '../http/answers.js';
import { PreparedAnswer, sendAnswer, type HeadRequest, type HeadResponse } from '../http/http-front.js';
import type { SessionCache, SessionCredential } from '../identity/session-cache.js';
import { sessionCookieName } from '../identity/session.js';
import { cookieHeader, readBrowserRequest } from '../sign-in/browser-request.js';
import { deniedPage } from '../sign-in/pages.js';
import { decidedLater, type BrowserView, type Deciding, type Described, type Exchange } from './exchange.js';

/** The header the nginx endpoints name the sign-in URL in, on a 401 to a navigation (nginx: $upstream_http_x_svc_sign_in). */
export const SIGN_IN_HEADER = 'X-Svc-Sign-In';
/** The header the nginx endpoints name the "no access" page in, on a 403 to a signed-in navigation. */
export const DENIED_HEADER = 'X-Svc-Denied';

/** Where a navigation signs in: the external origin it was made on (else the first), and the URL to come back to. */
interface Landing {
  readonly origin: string;
  /** On `origin`; `origin/` when the request named a host that is no external URL. */
  readonly landing: string;
}

export interface BrowserOptions {
  readonly externalUrls: readonly [string, ...string[]];
  readonly secure: boolean;
  readonly sessions: SessionCache;
  /** Origins the pages' forms may post to besides svc-auth (the provider's, where sign-out continues). */
  readonly formActions: () => readonly string[];
}

type NoToken = Extract<Decision, { outcome: 'no-token' }>;
type Found = { readonly session: SessionCredential; readonly sameOrigin: boolean };

export class BrowserCheck {
  private readonly cookieName: string;
  /** The request being decided: decide asks for its session (`hook`) from within, synchronously. */
  private endpoint: EndpointName | undefined;
  private req: HeadRequest | undefined;
  private reading: Described | undefined;
  private x: Exchange | undefined;

  constructor(
    private readonly o: BrowserOptions,
    private readonly access: AccessConfig,
    /** The index in service when a session has been opened (it may have been swapped meanwhile). */
    private readonly current: () => AccessIndex | null,
  ) {
    this.cookieName = sessionCookieName(o.secure);
  }

  /** The request decide is about to decide (the pipeline runs one to completion before the next). */
  begin(endpoint: EndpointName, req: HeadRequest, reading: Described, x: Exchange): void {
    this.endpoint = endpoint;
    this.req = req;
    this.reading = reading;
    this.x = x;
  }

  end(): void {
    this.req = this.reading = this.x = this.endpoint = undefined;
  }

  /**
   * decide's hook (AccessConfig.browserSession), asked only for a governed request without an explicit credential:
   * the browser headers are read (for the answer, too), and the session cookie, if any, is found among the sessions
   * opened before; one to open first is left on the exchange for `toOpen`.
   */
  readonly hook = (): Found | undefined => {
    const { endpoint, req, reading, x } = this;
    if (endpoint === undefined || req === undefined || reading === undefined || x === undefined) return undefined;
    x.browser = { endpoint, rawHeaders: req.rawHeaders, method: reading.method, target: reading.target };
    const value = cookieValue(cookieHeader(req.rawHeaders), this.cookieName);
    if (value === undefined) return undefined;
    // Same-origin evidence is read by the CSRF rule alone, which only unsafe methods meet (core judgeSession).
    const sameOrigin = !isSafeMethod(reading.method) && sameOriginEvidence(readBrowserRequest(req.rawHeaders), this.o.externalUrls);
    const session = this.o.sessions.known(value, x.at);
    if (session !== undefined) return { session, sameOrigin };
    x.unopened = { value, sameOrigin };
    return undefined;
  };

  /** A session cookie seen for the first time: opened (asynchronously), then decided; undefined when there is none. */
  toOpen(d: Decision, reading: Described, x: Exchange): Deciding | undefined {
    if (d.outcome !== 'no-token' || x.unopened === undefined) return undefined;
    return decidedLater(this.opened(x.unopened.value, reading, x.unopened.sameOrigin, d));
  }

  private async opened(value: string, reading: Described, sameOrigin: boolean, d: NoToken): Promise<Decision | null> {
    const session = await this.o.sessions.open(value, Date.now());
    if (session === undefined) return d;
    // Decided against the index in service now: a subject removed while the cookie was opened no longer grants.
    const index = this.current();
    if (index === null) return null;
    return decide(index, this.access, { method: reading.method, target: reading.target, authorization: undefined, verified: session, sameOrigin }, Date.now());
  }

  /** The browser view of the request a refusal answers (read then, once); undefined when it had a credential. */
  view(x: Exchange): BrowserView | undefined {
    const ask = x.browser;
    if (ask === undefined) return undefined;
    const b = readBrowserRequest(ask.rawHeaders);
    return { navigation: (ask.method === 'GET' || ask.method === 'HEAD') && isNavigation(b), endpoint: ask.endpoint, headers: b, target: ask.target };
  }

  /** Where a navigation (a GET or HEAD) signs in and lands, from where the original request was made. */
  private landingOf(view: BrowserView): Landing {
    const first = this.o.externalUrls[0];
    const b = view.headers;
    const target = view.target.startsWith('/') ? view.target : '/';
    // Where the original request was made: ingress-nginx's absolute X-Original-URL, else the forwarded host (Traefik,
    // an nginx that sets it), else for Envoy's check request its own Host (Envoy keeps the original authority).
    const host = b.originalUrl !== undefined ? undefined : (b.forwardedHost ?? (view.endpoint === 'ext-authz' ? b.host : undefined));
    const stated = b.originalUrl !== undefined || host !== undefined;
    const found = b.originalUrl !== undefined ? this.external(originOf(b.originalUrl)) : externalOriginFor(host, b.forwardedProto, this.o.externalUrls);
    if (found !== undefined) return { origin: found, landing: `${found}${target}` };
    // Made on a host that is no external URL: signing in lands on the first one's home, never elsewhere.
    return { origin: first, landing: stated ? `${first}/` : `${first}${target}` };
  }

  private external(origin: string | undefined): string | undefined {
    return origin !== undefined && this.o.externalUrls.includes(origin) ? origin : undefined;
  }

  /** 401 to a navigation: sent to sign in (302 where the proxy passes answers on; X-Svc-Sign-In on nginx). */
  sendSignIn(res: HeadResponse, set: AnswerSet, view: BrowserView, challenge: PreparedAnswer): void {
    const { origin, landing } = this.landingOf(view);
    const url = `${origin}/authz/sign-in?rd=${boundedLanding(origin, landing)}`;
    if (set.flavour === 'nginx') {
      res.writeHead(challenge.status, [...challenge.headers, SIGN_IN_HEADER, url]);
      res.end();
      return;
    }
    sendAnswer(res, new PreparedAnswer(302, ['Cache-Control', 'no-store', 'Location', url, 'Content-Length', '0']));
  }

  /** 403 to a signed-in navigation without a grant: the page naming them (X-Svc-Denied naming it on nginx). */
  sendDenied(res: HeadResponse, set: AnswerSet, view: BrowserView, user: string, scopes: string): void {
    const challenge = ['WWW-Authenticate', insufficientScopeChallenge(scopes)];
    const { origin, landing } = this.landingOf(view);
    if (set.flavour === 'nginx') {
      const url = `${origin}/authz/v1/session?denied=${boundedLanding(origin, landing)}`;
      res.writeHead(403, [...set.insufficientScope.headers, ...challenge, DENIED_HEADER, url]);
      res.end();
      return;
    }
    const page = deniedPage(user, new URL(landing).pathname, this.o.formActions());
    res.writeHead(403, [...page.headers, ...challenge]);
    res.end(page.body);
  }
}

/**
 * The longest landing (percent-encoded) an answer names. nginx passes at most 4 KiB of an auth answer's headers (its
 * proxy buffer) and answers 502 past them, so a landing of thousands of characters would keep the sign-in from ever
 * starting; the sign-in route bounds what it seals the same way (authz/sign-in/relying-party.ts), so up to this length
 * a browser lands exactly where it asked.
 */
const MAX_LANDING = 2048;

/** The landing, percent-encoded, at most MAX_LANDING long: as asked, else its path without the query, else the origin's `/`. */
export function boundedLanding(origin: string, landing: string): string {
  const whole = encodeURIComponent(landing);
  if (whole.length <= MAX_LANDING) return whole;
  let pathname = '/';
  try {
    pathname = new URL(landing).pathname;
  } catch {
    // not a URL we can shorten: the origin's home
  }
  const path = encodeURIComponent(`${origin}${pathname}`);
  return path.length <= MAX_LANDING ? path : encodeURIComponent(`${origin}/`);
}

