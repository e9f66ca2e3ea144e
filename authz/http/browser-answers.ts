/**
 * The answers to a browser's refused navigation (docs/access-rules.md "Browser sessions"), in each proxy's dialect: a
 * navigation without a session is sent to sign in, and a signed-in navigation without a grant gets the page naming
 * the person. ForwardAuth and ext_authz pass svc-auth's answer to the browser, so they get the 302 and the page
 * themselves; nginx keeps only 401 and 403 of an auth answer, so the nginx endpoints keep their status and name the
 * sign-in URL in X-Svc-Sign-In, or the "no access" page in X-Svc-Denied, which the documented nginx configuration
 * redirects to.
 */
import { externalOriginFor, isNavigation, originOf } from '../../core/index.js';
import { insufficientScopeChallenge, type AnswerSet } from './answers.js';
import { readBrowserRequest, type BrowserRequest } from './browser-request.js';
import type { HeadResponse } from './head.js';
import { PreparedAnswer } from './prepared-answer.js';
import { sendAnswer } from './http-front.js';
import { deniedPage } from './pages.js';

/** The header the nginx endpoints name the sign-in URL in, on a 401 to a navigation (nginx: $upstream_http_x_svc_sign_in). */
export const SIGN_IN_HEADER = 'X-Svc-Sign-In';
/** The header the nginx endpoints name the "no access" page in, on a 403 to a signed-in navigation. */
export const DENIED_HEADER = 'X-Svc-Denied';

/** A refused request to a closed scope that carried no explicit credential, as its answer reads it. */
export interface BrowserAsk {
  readonly rawHeaders: readonly string[];
  readonly method: string | null;
  readonly target: string;
  /** Asked by Envoy's check request, whose own Host is the original authority. */
  readonly envoyCheck: boolean;
}

/** What the answer to a browser's request needs of it: a navigation is sent to sign in, or to the 403 page. */
export interface BrowserView {
  readonly navigation: boolean;
  readonly envoyCheck: boolean;
  readonly headers: BrowserRequest;
  readonly target: string;
}

/** Where a navigation signs in: the external origin it was made on (else the first), and the URL to come back to. */
interface Landing {
  readonly origin: string;
  /** On `origin`; `origin/` when the request named a host that is no external URL. */
  readonly landing: string;
}

export interface BrowserAnswerOptions {
  readonly externalUrls: readonly [string, ...string[]];
  /** Origins the pages' forms may post to besides svc-auth (the provider's, where sign-out continues). */
  readonly formActions: () => readonly string[];
}

export class BrowserAnswers {
  constructor(private readonly o: BrowserAnswerOptions) {}

  /** The browser view of the request a refusal answers (its headers read then, once). */
  view(ask: BrowserAsk): BrowserView {
    const b = readBrowserRequest(ask.rawHeaders);
    return { navigation: (ask.method === 'GET' || ask.method === 'HEAD') && isNavigation(b), envoyCheck: ask.envoyCheck, headers: b, target: ask.target };
  }

  /** Where a navigation (a GET or HEAD) signs in and lands, from where the original request was made. */
  private landingOf(view: BrowserView): Landing {
    const first = this.o.externalUrls[0];
    const b = view.headers;
    const target = view.target.startsWith('/') ? view.target : '/';
    // Where the original request was made: ingress-nginx's absolute X-Original-URL, else the forwarded host (Traefik,
    // an nginx that sets it), else for Envoy's check request its own Host (Envoy keeps the original authority).
    const host = b.originalUrl !== undefined ? undefined : (b.forwardedHost ?? (view.envoyCheck ? b.host : undefined));
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

