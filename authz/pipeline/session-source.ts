/**
 * Source 3 of the credential road (./credential-road.ts): a browser's session cookie, read only for a governed request
 * without an explicit credential when sign-in is configured, so open requests and requests with a token or a JWT
 * never parse a cookie. A session opened before is found now; a cookie seen for the first time is opened later
 * (asynchronously). Either is judged as the same identity's bearer JWT would be, with the CSRF rule for unsafe
 * methods (core judgeSession), for which the request's same-origin evidence is read here.
 */
import { cookieValue, isSafeMethod, sameOriginEvidence, type Credential, type ResolvedCredential } from '../../core/index.js';
import { cookieHeader, readBrowserRequest } from '../http/browser-request.js';
import type { HeadRequest } from '../http/head.js';
import type { SessionCache } from '../identity/session-cache.js';
import { sessionCookieName } from '../identity/session.js';
import type { Asked, Exchange, Later, Resolution } from './exchange.js';

export interface SessionSourceOptions {
  readonly externalUrls: readonly [string, ...string[]];
  readonly secure: boolean;
  readonly sessions: SessionCache;
}

const NONE: Credential = { kind: 'none' };
const NO_SESSION: Resolution = { now: NONE };

export class SessionSource {
  private readonly cookieName: string;

  constructor(private readonly o: SessionSourceOptions) {
    this.cookieName = sessionCookieName(o.secure);
  }

  /**
   * The session of a governed request without an explicit credential: none, one known now, or one to open. The request
   * is kept on the exchange for the answer: a refused navigation is sent to sign in (../http/browser-answers.ts).
   */
  resolve(asked: Asked, req: HeadRequest, x: Exchange): Resolution {
    x.browser = { rawHeaders: req.rawHeaders, method: asked.method, target: asked.target, envoyCheck: x.endpoint === 'ext-authz' };
    const value = cookieValue(cookieHeader(req.rawHeaders), this.cookieName);
    if (value === undefined) return NO_SESSION;
    // Same-origin evidence is read by the CSRF rule alone, which only unsafe methods meet (core judgeSession).
    const sameOrigin = !isSafeMethod(asked.method) && sameOriginEvidence(readBrowserRequest(req.rawHeaders), this.o.externalUrls);
    const session = this.o.sessions.known(value, x.at);
    if (session !== undefined) return { now: { kind: 'session', session, sameOrigin } };
    return { later: this.opened(value, sameOrigin), source: 'session' };
  }

  /** A cookie seen for the first time, opened: its session, or no credential when it does not open. */
  private async opened(value: string, sameOrigin: boolean): Promise<Later> {
    const session = await this.o.sessions.open(value, Date.now());
    const credential: ResolvedCredential = session === undefined ? NONE : { kind: 'session', session, sameOrigin };
    return { credential };
  }
}
