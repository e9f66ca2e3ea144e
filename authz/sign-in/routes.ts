/**
 * Browser sign-in's endpoints (docs/access-rules.md "Browser sessions"), Express routes beside /healthz and the
 * public list, reached on the data host through one plain route to svc-auth (never the decision endpoints):
 *
 * - `GET /authz/sign-in?rd=URL`: 302 to the provider (PKCE S256, state, nonce in a sealed, short-lived cookie);
 * - `GET /authz/callback`: the code exchanged, the ID token verified, the session cookie set, 302 to `rd`;
 * - `GET /authz/sign-out`: a confirm button; `POST /authz/sign-out`: the cookie cleared, then the provider's
 *   end-session endpoint when it publishes one;
 * - `GET /authz/v1/session`: who is signed in, as JSON (401 without a session), or a page for a browser's navigation
 *   (`?denied=URL`: the "no access" page the nginx endpoints send signed-in navigations to).
 *
 * None of them is an auth endpoint: contractFor() matches none of their paths (tested), so the decision pipeline
 * never answers them and they never answer a decision.
 */
import express from 'express';
import type { Logger } from 'pino';
import { cookieValue, externalOriginFor, isNavigation, safeRedirect, sameOriginEvidence, subjectGroups, type AccessIndex } from '../../core/index.js';
import type { SessionCache, SessionCredential } from '../identity/session-cache.js';
import { sealSessionCookie, sessionCookieName, setCookieValue } from '../identity/session.js';
import { deniedPage, errorPage, notSignedInPage, sessionPage, signedOutPage, signOutPage, type Page } from '../http/pages.js';
import { transactionCookieName, type RelyingParty } from './relying-party.js';

export interface SignInRoutesOptions {
  readonly rp: RelyingParty;
  readonly sessions: SessionCache;
  /** The index in service (the groups a session too large for a cookie keeps). */
  readonly index: () => AccessIndex | null;
  readonly logger: Logger;
}

/** The paths of the routes below: none of them is an auth endpoint's. */
export const SIGN_IN_PATHS = ['/authz/sign-in', '/authz/callback', '/authz/sign-out', '/authz/v1/session'] as const;

function send(res: express.Response, p: Page): void {
  res.status(p.status);
  for (let i = 0; i < p.headers.length; i += 2) res.setHeader(p.headers[i]!, p.headers[i + 1]!);
  res.end(p.body);
}

/** The first value of a query parameter, as a string. */
function param(req: express.Request, name: string): string | undefined {
  const v: unknown = req.query[name];
  return typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;
}

export function signInRouter(o: SignInRoutesOptions): express.Router {
  const router = express.Router();
  const h = new Handlers(o);
  router.get('/authz/sign-in', (req, res, next) => h.signIn(req, res).catch(next));
  router.get('/authz/callback', (req, res, next) => h.callback(req, res).catch(next));
  router.get('/authz/sign-out', (req, res, next) => h.signOutForm(req, res).catch(next));
  router.post('/authz/sign-out', (req, res, next) => h.signOut(req, res).catch(next));
  router.get('/authz/v1/session', (req, res, next) => h.session(req, res).catch(next));
  return router;
}

class Handlers {
  private readonly secure: boolean;
  private readonly externals: readonly [string, ...string[]];
  private usable: { index: AccessIndex; groups: ReadonlySet<string> } | undefined;

  constructor(private readonly o: SignInRoutesOptions) {
    this.secure = o.rp.config.secure;
    this.externals = o.rp.config.externalUrls;
  }

  /** The external origin the request was made on (the route passes Host, or X-Forwarded-Host), else the first. */
  private originOf(req: express.Request): string {
    const host = req.get('x-forwarded-host') ?? req.get('host');
    return externalOriginFor(host, req.get('x-forwarded-proto'), this.externals) ?? this.externals[0];
  }

  private formActions(): string[] {
    const p = this.o.rp.providerOrigin();
    return p === undefined ? [] : [p];
  }

  private async sessionOf(req: express.Request): Promise<SessionCredential | undefined> {
    const value = cookieValue(req.get('cookie'), sessionCookieName(this.secure));
    if (value === undefined) return undefined;
    const now = Date.now();
    return this.o.sessions.known(value, now) ?? (await this.o.sessions.open(value, now));
  }

  async signIn(req: express.Request, res: express.Response): Promise<void> {
    const origin = this.originOf(req);
    const rd = safeRedirect(param(req, 'rd'), this.externals, origin);
    const begun = await this.o.rp.begin(`${origin}/authz/callback`, rd);
    if (begun === undefined) {
      return send(res, errorPage(503, 'Sign-in is unavailable', 'The sign-in provider cannot be reached right now; access with a token still works. Try again in a minute.', `/authz/sign-in?rd=${encodeURIComponent(rd)}`));
    }
    res.append('Set-Cookie', begun.setCookie);
    res.set('Cache-Control', 'no-store').set('Referrer-Policy', 'no-referrer').redirect(302, begun.location);
  }

  async callback(req: express.Request, res: express.Response): Promise<void> {
    const txName = transactionCookieName(this.secure);
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    const f = await this.o.rp.finish(query, cookieValue(req.get('cookie'), txName));
    res.append('Set-Cookie', setCookieValue(txName, '', { secure: this.secure, maxAgeSeconds: 0 }));
    if (!f.ok) return send(res, errorPage(f.status, 'Sign-in failed', f.reason, '/authz/sign-in?rd=%2F'));
    const { sessionKeys: keys, sessionMaxAgeMs: maxAgeMs } = this.o.rp.config;
    const sealed = await sealSessionCookie(keys, f.identity, { maxAgeMs, secure: this.secure, usable: (groups) => this.usableGroups(groups) });
    if (sealed === undefined) {
      this.o.logger.warn({ issuer: f.identity.issuer, user: f.identity.user, groups: f.identity.groups.length }, 'sign-in refused: the session would not fit in a cookie, even with only the groups some scope grants');
      return send(res, errorPage(403, 'Sign-in failed', `Your account (${f.identity.user}) belongs to too many groups that grant access here for a browser session to hold them. Use a token, or ask the data owner to grant fewer, broader groups.`));
    }
    this.o.logger.info({ issuer: f.identity.issuer, user: f.identity.user, groups: f.identity.groups.length, droppedGroups: sealed.droppedGroups }, 'signed in');
    res.append('Set-Cookie', setCookieValue(sessionCookieName(this.secure), sealed.value, { secure: this.secure, maxAgeSeconds: Math.floor(maxAgeMs / 1000) }));
    res.set('Cache-Control', 'no-store').set('Referrer-Policy', 'no-referrer').redirect(302, f.rd);
  }

  /** The identity's groups that some subject of the index in service names (kept per index). */
  private usableGroups(groups: readonly string[]): readonly string[] {
    const index = this.o.index();
    if (index === null) return [];
    if (this.usable?.index !== index) this.usable = { index, groups: subjectGroups(index) };
    const granted = this.usable.groups;
    return groups.filter((g) => granted.has(g));
  }

  async signOutForm(req: express.Request, res: express.Response): Promise<void> {
    // The page's CSP must let the sign-out continue at the provider: a replica that could not discover it at start
    // (or has not yet) tries now, as sign-in does.
    await this.o.rp.provider();
    send(res, signOutPage((await this.sessionOf(req))?.identity.user, this.formActions()));
  }

  async signOut(req: express.Request, res: express.Response): Promise<void> {
    const evidence = { secFetchSite: req.get('sec-fetch-site'), origin: req.get('origin') };
    if (!sameOriginEvidence(evidence, this.externals)) {
      return send(res, errorPage(403, 'Sign-out refused', 'The sign-out did not come from this site\'s own page.', '/authz/sign-out'));
    }
    res.append('Set-Cookie', setCookieValue(sessionCookieName(this.secure), '', { secure: this.secure, maxAgeSeconds: 0 }));
    const session = await this.sessionOf(req);
    if (session !== undefined) this.o.logger.info({ issuer: session.identity.issuer, user: session.identity.user }, 'signed out');
    // Discovered now if it was not yet: otherwise the provider's session would outlive the sign-out, and the next
    // sign-in would come back without asking (one replica discovers at start, another may not have).
    await this.o.rp.provider();
    const endSession = this.o.rp.endSessionUrl(`${this.originOf(req)}/`);
    if (endSession === undefined) return send(res, signedOutPage());
    res.set('Cache-Control', 'no-store').redirect(303, endSession);
  }

  async session(req: express.Request, res: express.Response): Promise<void> {
    const s = await this.sessionOf(req);
    if (isNavigation({ accept: req.get('accept'), secFetchMode: req.get('sec-fetch-mode') })) return send(res, this.sessionPageFor(req, s));
    res.set('Cache-Control', 'no-store').type('application/json');
    if (s === undefined) {
      res.status(401).send(JSON.stringify({ signedIn: false, signIn: '/authz/sign-in' }));
      return;
    }
    const { issuer, user, groups } = s.identity;
    res.send(JSON.stringify({ issuer, user, groups, expiresAt: new Date(s.expiresAt).toISOString() }));
  }

  /** The session page: who is signed in, or (`?denied=URL`) that they lack access there, or how to sign in. */
  private sessionPageFor(req: express.Request, s: SessionCredential | undefined): Page {
    const given = param(req, 'denied');
    const denied = given === undefined ? undefined : safeRedirect(given, this.externals, this.originOf(req));
    if (s === undefined) return notSignedInPage(`/authz/sign-in?rd=${encodeURIComponent(denied ?? '/')}`);
    if (denied !== undefined) return deniedPage(s.identity.user, new URL(denied).pathname, this.formActions());
    return sessionPage({ ...s.identity, expiresAt: s.expiresAt }, this.formActions());
  }
}
