/**
 * Where the auth pipeline meets browsers (docs/access-rules.md "Browser sessions"), when sign-in is configured. Only a
 * request to a closed scope that carries no explicit credential (decide answered `no-token`) gets here, so open
 * requests and requests with a token or a JWT never parse a cookie:
 *
 * - its session cookie, if any, is opened (from memory when seen before, else asynchronously) and decided against the
 *   index in service as the same identity's bearer JWT would be, with the CSRF rule for unsafe methods;
 * - whether it is a top-level navigation, and where it was made, is kept for the answer: a navigation without a
 *   session is sent to sign in (ForwardAuth and ext_authz answer the 302 themselves; the nginx endpoints keep their
 *   401 and name the sign-in URL in X-Svc-Sign-In, which the documented nginx configuration redirects to), and a
 *   signed-in navigation refused for want of a grant gets the 403 page naming the person (on the nginx endpoints,
 *   X-Svc-Denied names that page).
 */
import { cookieValue, decide, externalOriginFor, isNavigation, originOf, sameOriginEvidence, type AccessConfig, type AccessIndex, type Decision } from '../../core/index.js';
import type { EndpointName } from '../endpoints/index.js';
import { insufficientScopeChallenge, type AnswerSet } from '../http/answers.js';
import { PreparedAnswer, sendAnswer, type HeadRequest, type HeadResponse } from '../http/http-front.js';
import type { SessionCache, SessionCredential } from '../identity/session-cache.js';
import { sessionCookieName } from '../identity/session.js';
import { readBrowserRequest, type BrowserRequest } from '../sign-in/browser-request.js';
import { deniedPage } from '../sign-in/pages.js';
import { decidedLater, decidedNow, type Deciding, type Described, type Exchange } from './exchange.js';

/** The header the nginx endpoints name the sign-in URL in, on a 401 to a navigation (nginx: $upstream_http_x_svc_sign_in). */
export const SIGN_IN_HEADER = 'X-Svc-Sign-In';
/** The header the nginx endpoints name the "no access" page in, on a 403 to a signed-in navigation. */
export const DENIED_HEADER = 'X-Svc-Denied';

/** What the answer to a browser's request needs of it: a navigation is sent to sign in, or to the 403 page. */
export interface BrowserView {
  readonly navigation: boolean;
  /** The external origin the request was made on (or the first external URL), where sign-in happens. */
  readonly origin: string;
  /** The URL to come back to after signing in: on `origin`, or `origin/` when the request named another host. */
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

export class BrowserCheck {
  private readonly cookieName: string;

  constructor(
    private readonly o: BrowserOptions,
    private readonly access: AccessConfig,
    /** The index in service when a session has been opened (it may have been swapped meanwhile). */
    private readonly current: () => AccessIndex | null,
  ) {
    this.cookieName = sessionCookieName(o.secure);
  }

  /** The decision on a request without an explicit credential to a closed scope: by its session, or `d` as it stands. */
  check(d: NoToken, endpoint: EndpointName, req: HeadRequest, reading: Described, x: Exchange): Deciding {
    const b = readBrowserRequest(req.rawHeaders);
    x.browser = this.viewOf(endpoint, b, reading);
    const value = cookieValue(b.cookie, this.cookieName);
    if (value === undefined) return decidedNow(d);
    const sameOrigin = sameOriginEvidence(b, this.o.externalUrls);
    const known = this.o.sessions.known(value, x.at);
    if (known !== undefined) return decidedNow(this.decideAs(known, reading, sameOrigin, x.at, d));
    return decidedLater(this.opened(value, reading, sameOrigin, d));
  }

  private async opened(value: string, reading: Described, sameOrigin: boolean, d: NoToken): Promise<Decision | null> {
    const session = await this.o.sessions.open(value, Date.now());
    if (session === undefined) return d;
    // Decided against the index in service now: a subject removed while the cookie was opened no longer grants.
    const index = this.current();
    return index === null ? null : this.decideAs(session, reading, sameOrigin, Date.now(), d, index);
  }

  private decideAs(session: SessionCredential, reading: Described, sameOrigin: boolean, now: number, d: NoToken, index = this.current()): Decision {
    if (index === null) return d;
    return decide(index, this.access, { method: reading.method, target: reading.target, authorization: undefined, verified: session, sameOrigin }, now);
  }

  /** Whether the request is a navigation to send to sign in (GET or HEAD), and where it was made. */
  private viewOf(endpoint: EndpointName, b: BrowserRequest, reading: Described): BrowserView {
    const first = this.o.externalUrls[0];
    const navigation = (reading.method === 'GET' || reading.method === 'HEAD') && isNavigation(b);
    if (!navigation) return { navigation, origin: first, landing: `${first}/` };
    const target = reading.target.startsWith('/') ? reading.target : '/';
    // Where the original request was made: ingress-nginx's absolute X-Original-URL, else the forwarded host (Traefik,
    // an nginx that sets it), else for Envoy's check request its own Host (Envoy keeps the original authority).
    const host = b.originalUrl !== undefined ? undefined : (b.forwardedHost ?? (endpoint === 'ext-authz' ? b.host : undefined));
    const stated = b.originalUrl !== undefined || host !== undefined;
    const found = b.originalUrl !== undefined ? this.external(originOf(b.originalUrl)) : externalOriginFor(host, b.forwardedProto, this.o.externalUrls);
    if (found !== undefined) return { navigation, origin: found, landing: `${found}${target}` };
    // Made on a host that is no external URL: signing in lands on the first one's home, never elsewhere.
    return { navigation, origin: first, landing: stated ? `${first}/` : `${first}${target}` };
  }

  private external(origin: string | undefined): string | undefined {
    return origin !== undefined && this.o.externalUrls.includes(origin) ? origin : undefined;
  }

  /** 401 to a navigation: sent to sign in (302 where the proxy passes answers on; X-Svc-Sign-In on nginx). */
  sendSignIn(res: HeadResponse, set: AnswerSet, view: BrowserView, challenge: PreparedAnswer): void {
    const url = `${view.origin}/authz/sign-in?rd=${encodeURIComponent(view.landing)}`;
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
    if (set.flavour === 'nginx') {
      const url = `${view.origin}/authz/v1/session?denied=${encodeURIComponent(view.landing)}`;
      res.writeHead(403, [...set.insufficientScope.headers, ...challenge, DENIED_HEADER, url]);
      res.end();
      return;
    }
    const page = deniedPage(user, new URL(view.landing).pathname, this.o.formActions());
    res.writeHead(403, [...page.headers, ...challenge]);
    res.end(page.body);
  }
}
