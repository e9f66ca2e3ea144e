import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import {
  buildIndex, compileSnapshot, DEFAULT_CONFIG, formatGeneratedToken, hashToken, newProtectedScope, tokenIdOf, type AccessIndex, type Scope, type Subject,
} from '../../core/index.js';
import { OidcProvider } from '../../test/e2e/support/oidc-provider.js';
import { CookieJar, navigate, send } from '../../test/e2e/support/browserless.js';
import { freePort } from '../../test/support/ports.js';
import { waitUntil } from '../../test/support/wait.js';
import { contractFor } from '../endpoints/index.js';
import { issuersFromFlags } from '../identity/oidc-config.js';
import { parseSessionKeys, sealSession, SESSION_COOKIE_INSECURE, type SessionKeys } from '../identity/session.js';
import { startServer, type RunningServer } from '../server.js';
import type { SnapshotSink, SnapshotSource } from '../sources/source.js';
import type { SignInConfig } from './config.js';
import { SIGN_IN_PATHS } from './routes.js';
import { TRANSACTION_COOKIE_INSECURE } from './relying-party.js';

// Browser sign-in in process: svc-auth (startServer) as the relying party of a real OpenID provider (panva's
// oidc-provider, ../../test/e2e/support/oidc-provider.ts), its routes, and its auth endpoints deciding with the
// session. Through real nginx: test/e2e/sign-in.test.ts.

const quiet = pino({ level: 'silent' });
/** The main suite's log, at debug: what svc-auth says about a sign-in, and that it never names a secret or a URL's query. */
const logLines: string[] = [];
const logged = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
const USERS = {
  alice: { password: 'alice-pw', email: 'alice@example.org', groups: ['staff'] },
  bob: { password: 'bob-pw', email: 'bob@example.org', groups: ['staff', 'wis2-ops'] },
  mallory: { password: 'mallory-pw', email: 'mallory@example.org', groups: ['guests'] },
};
type Who = keyof typeof USERS;
const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
const FILE = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4';
const EXECUTION = '/oapi/processes/svc-synop2bufr/execution';
const TOKEN = formatGeneratedToken(randomBytes(32));
const NAV = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none' };

/** A source the test swaps indexes into (a reload), as a real source does. */
class TestSource implements SnapshotSource {
  readonly kind = 'static';
  readonly origin = 'test';
  private sink: SnapshotSink | undefined;
  constructor(private index: AccessIndex) {}
  start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
    sink.loaded({ index: this.index, origin: this.origin, loadMs: 0 });
    return Promise.resolve();
  }
  swap(index: AccessIndex): void {
    this.index = index;
    this.sink?.loaded({ index, origin: this.origin, loadMs: 0 });
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}

function world(topicSubjects: Subject[]): AccessIndex {
  const withSubjects = (scope: Scope, name: string, subjects: Subject[], tokens: string[] = []) => {
    const records = tokens.map((t) => ({ id: tokenIdOf(hashToken(t)), hash: hashToken(t), createdAt: '2026-01-01T00:00:00Z' }));
    const o = newProtectedScope(scope, name, undefined, records);
    return { ...o, spec: { ...o.spec, subjects } };
  };
  const s = compileSnapshot([withSubjects(TOPIC, 'topic', topicSubjects, [TOKEN]), withSubjects(PROCESSES, 'processes', [{ kind: 'Group', name: 'wis2-ops' }])]);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}
const ALICE_ON_TOPIC: Subject[] = [{ kind: 'User', name: 'alice@example.org' }];

describe('browser sign-in (svc-auth in process, a real OpenID provider)', () => {
  let idp: OidcProvider;
  let server: RunningServer;
  let source: TestSource;
  let ext: string;
  let keys: SessionKeys;
  const cookies: Partial<Record<Who, string>> = {};

  /** Signs `who` in through svc-auth's routes and the provider's login form; returns the session cookie's value. */
  const signIn = async (who: Who, rd = `${ext}${FILE}`): Promise<{ value: string; landed: string }> => {
    const jar = new CookieJar();
    const r = await navigate(jar, `${ext}/authz/sign-in?rd=${encodeURIComponent(rd)}`, { login: { user: who, password: USERS[who].password } });
    const value = jar.get(ext, SESSION_COOKIE_INSECURE);
    if (value === undefined) throw new Error(`no session for ${who}: ${r.hops.map((h) => `${h.status} ${h.url}`).join(' -> ')} ${r.body.slice(0, 300)}`);
    return { value, landed: r.url };
  };
  /** The forward-auth endpoint asked about `uri` as Traefik asks (X-Forwarded-*), with the browser's headers. */
  const forwardAuth = (uri: string, headers: Record<string, string> = {}, method = 'GET') =>
    send(`${ext}/authz/forward-auth`, { headers: { 'x-forwarded-method': method, 'x-forwarded-uri': uri, 'x-forwarded-host': new URL(ext).host, 'x-forwarded-proto': 'http', ...headers } });
  const authRequest = (uri: string, headers: Record<string, string> = {}, method = 'GET') =>
    send(`${ext}/authz/auth-request`, { headers: { 'x-original-method': method, 'x-original-url': `${ext}${uri}`, ...headers } });
  const session = (who: Who) => ({ cookie: `${SESSION_COOKIE_INSECURE}=${cookies[who]!}` });

  beforeAll(async () => {
    const port = await freePort();
    ext = `http://127.0.0.1:${port}`;
    idp = new OidcProvider({ users: USERS, clients: {}, signInClients: { 'svc-browser': { secret: 'browser-secret', redirectUris: [`${ext}/authz/callback`], postLogoutRedirectUris: [`${ext}/`] } } });
    await idp.start();
    keys = parseSessionKeys(randomBytes(32).toString('base64url'));
    const issuers = issuersFromFlags({ issuers: [idp.issuer], audiences: ['svc-data'], usernameClaim: 'email', groupsClaim: 'groups', requiredClaims: [] });
    const signInConfig: SignInConfig = {
      externalUrls: [ext], secure: false, clientId: 'svc-browser', clientSecret: 'browser-secret', issuer: issuers[0]!,
      scopes: ['openid', 'email', 'groups'], sessionKeys: keys, sessionMaxAgeMs: 3600_000,
    };
    source = new TestSource(world(ALICE_ON_TOPIC));
    server = await startServer({
      listen: { host: '127.0.0.1', port }, metricsListen: { host: '127.0.0.1', port: 0 }, access: DEFAULT_CONFIG, source, logger: logged,
      oidc: { issuers, refreshIntervalMs: 0 }, signIn: signInConfig,
    });
    await server.firstLoad;
    cookies.alice = (await signIn('alice')).value;
    cookies.bob = (await signIn('bob')).value;
    cookies.mallory = (await signIn('mallory')).value;
  }, 60_000);

  afterAll(async () => {
    await server?.shutdown();
    await idp?.stop();
  });

  it('the sign-in routes are no auth endpoint (contractFor matches none), and the endpoints none of them', () => {
    for (const p of SIGN_IN_PATHS) {
      expect(contractFor(p)).toBeUndefined();
      expect(contractFor(`${p}?rd=/authz/auth-request`)).toBeUndefined();
    }
    expect(contractFor('/authz/v1/session/x')).toBeUndefined();
  });

  it('GET /authz/sign-in sends the browser to the provider with PKCE S256, state and nonce, in a sealed HttpOnly cookie', async () => {
    const res = await send(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${FILE}`)}`, {});
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(idp.issuer);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({ client_id: 'svc-browser', response_type: 'code', redirect_uri: `${ext}/authz/callback`, code_challenge_method: 'S256', scope: 'openid email groups' });
    for (const p of ['state', 'nonce', 'code_challenge']) expect(to.searchParams.get(p)).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    const [cookie] = res.headers.getSetCookie();
    expect(cookie).toMatch(new RegExp(`^${TRANSACTION_COOKIE_INSECURE}=[A-Za-z0-9_.-]+; Path=/; Max-Age=600; HttpOnly; SameSite=Lax$`));
    // Nothing of the flow's secrets is readable in the cookie (a JWE).
    expect(cookie).not.toContain(to.searchParams.get('state')!);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('the callback sets the session cookie (HttpOnly, SameSite=Lax, host-only, Max-Age = --session-max-age) and lands on rd', async () => {
    const jar = new CookieJar();
    const r = await navigate(jar, `${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}/authz/v1/session`)}`, { login: { user: 'alice', password: USERS.alice.password } });
    const callback = r.hops.find((h) => h.url.startsWith(`${ext}/authz/callback`))!;
    expect(callback.status).toBe(302);
    expect(callback.location).toBe(`${ext}/authz/v1/session`);
    const set = callback.headers.getSetCookie();
    expect(set).toContain(`${TRANSACTION_COOKIE_INSECURE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`);
    expect(set.find((c) => c.startsWith(`${SESSION_COOKIE_INSECURE}=`))).toMatch(/; Path=\/; Max-Age=3600; HttpOnly; SameSite=Lax$/);
    // The landing page: who is signed in, with a sign-out button, under a CSP.
    expect(r.status).toBe(200);
    expect(r.body).toContain('alice@example.org');
    expect(r.body).toContain('<form method="post" action="/authz/sign-out">');
    expect(r.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; form-action 'self' http:\/\/127\.0\.0\.1:\d+; frame-ancestors 'none'; base-uri 'none'$/);
  });

  it('GET /authz/v1/session: JSON for programs, 401 without a session', async () => {
    const res = await send(`${ext}/authz/v1/session`, { headers: session('bob') });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ issuer: idp.issuer, user: 'bob@example.org', groups: ['staff', 'wis2-ops'] });
    expect(Date.parse(body.expiresAt as string)).toBeGreaterThan(Date.now());
    const none = await send(`${ext}/authz/v1/session`);
    expect(none.status).toBe(401);
    const page = await send(`${ext}/authz/v1/session`, { headers: NAV });
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('href="/authz/sign-in?rd=%2F"');
  });

  it('rd to another host lands on the external URL\'s home', async () => {
    expect((await signIn('alice', 'https://evil.example/steal')).landed).toBe(`${ext}/`);
    expect((await signIn('alice', '//evil.example/x')).landed).toBe(`${ext}/`);
  });

  it('rd naming svc-auth\'s own steps in another case, percent-encoded or with doubled slashes lands on home (Express routes them all)', async () => {
    // Express routes /AUTHZ/CALLBACK to the callback: the spelling reaches the step, so it is refused as the step is.
    expect((await send(`${ext}/AUTHZ/CALLBACK?code=x&state=y`, { headers: NAV })).status).toBe(400);
    for (const rd of [`${ext}/AUTHZ/SIGN-IN?rd=%2F`, '/Authz/Callback', '/authz/sign%2Din', `${ext}//authz/callback`, '/authz/Sign-Out/']) {
      const { landed } = await signIn('alice', rd);
      expect(landed).toBe(`${ext}/`);
    }
  });

  describe('a URL too long to keep in the sign-in cookie: the sign-in still finishes, on a shorter landing', () => {
    /** Signs alice in from `rd`: the sign-in's answer, its transaction cookie, where the callback sent the browser. */
    const longSignIn = async (rd: string) => {
      const jar = new CookieJar();
      const r = await navigate(jar, `${ext}/authz/sign-in?rd=${encodeURIComponent(rd)}`, { login: { user: 'alice', password: USERS.alice.password } });
      const begun = r.hops.find((h) => h.url.startsWith(`${ext}/authz/sign-in`))!;
      const setCookie = begun.headers.getSetCookie().find((c) => c.startsWith(`${TRANSACTION_COOKIE_INSECURE}=`))!;
      const callback = r.hops.find((h) => h.url.startsWith(`${ext}/authz/callback`));
      return { setCookie, callback, begun, session: jar.get(ext, SESSION_COOKIE_INSECURE) };
    };
    const lengthOf = (n: number, path = FILE) => {
      const head = `${ext}${path}?bbox=`;
      return `${head}${'7'.repeat(n - head.length)}`;
    };

    it.each([
      ['8,192 characters, mostly query (the most rd may be): its path without the query', 8192],
      ['3,582 characters (the review\'s URL): its path without the query', 3582],
    ])('%s', async (_what, n) => {
      const rd = lengthOf(n);
      expect(rd).toHaveLength(n);
      logLines.length = 0;
      const { setCookie, callback, session } = await longSignIn(rd);
      expect(Buffer.byteLength(setCookie)).toBeLessThanOrEqual(4096);
      expect(callback?.status).toBe(302);
      expect(callback?.location).toBe(`${ext}${FILE}`);
      expect(session).toBeDefined();
      // Said in a debug line, by lengths: never the URL (its query may hold a token).
      const said = logLines.map((l) => JSON.parse(l) as { level: number; msg: string; rdChars?: number; landing?: string });
      expect(said).toContainEqual(expect.objectContaining({ level: 20, rdChars: n, landing: 'its path without the query' }));
      expect(logLines.join('\n')).not.toContain('7777777777');
    });

    it('a path of 8,192 characters: the origin\'s home', async () => {
      const rd = `${ext}/data/${'p'.repeat(8192 - ext.length - 6)}`;
      expect(rd).toHaveLength(8192);
      const { setCookie, callback, session } = await longSignIn(rd);
      expect(Buffer.byteLength(setCookie)).toBeLessThanOrEqual(4096);
      expect(callback?.status).toBe(302);
      expect(callback?.location).toBe(`${ext}/`);
      expect(session).toBeDefined();
    });

    it('a URL that fits lands where it was asked, query and all; the redirect\'s headers stay within 4 KiB (nginx\'s buffer)', async () => {
      // The status line and every header of an answer, as they are sent.
      const headerBytes = (headers: Headers) =>
        Buffer.byteLength('HTTP/1.1 302 Found\r\n\r\n') + [...headers].filter(([k]) => k !== 'set-cookie').concat(headers.getSetCookie().map((c) => ['set-cookie', c]))
          .reduce((n, [k, v]) => n + Buffer.byteLength(`${k}: ${v}\r\n`), 0);
      let largest = 0;
      for (let n = 1500; n <= 2800; n += 50) {
        const { setCookie, callback, begun } = await longSignIn(lengthOf(n));
        expect(Buffer.byteLength(setCookie)).toBeLessThanOrEqual(4096);
        expect(headerBytes(begun.headers)).toBeLessThanOrEqual(4096);
        expect(callback?.status).toBe(302);
        if (callback?.location === lengthOf(n)) largest = n;
        else expect(callback?.location).toBe(`${ext}${FILE}`);
      }
      // The bound is measured, not a guess well below it: URLs of 2,000 characters land as asked; the largest kept
      // whole fills the redirect's headers to within a few hundred bytes of 4 KiB.
      expect(largest).toBeGreaterThanOrEqual(2000);
      expect(largest).toBeLessThan(2800);
      const { begun } = await longSignIn(lengthOf(largest));
      expect(headerBytes(begun.headers)).toBeGreaterThan(3600);
    });
  });

  describe('the session decides as the same identity\'s JWT would', () => {
    it('a user grant: 200 with the user, and never cacheable by nginx (X-Accel-Expires: 0)', async () => {
      const f = await forwardAuth(FILE, session('alice'));
      expect(f.status).toBe(200);
      expect(f.headers.get('x-auth-request-user')).toBe('alice@example.org');
      const n = await authRequest(FILE, session('alice'));
      expect(n.status).toBe(200);
      expect(n.headers.get('x-accel-expires')).toBe('0');
      expect(n.headers.get('cache-control')).toBe('no-store');
    });

    it('without a grant: 403; a token or a JWT next to the cookie is decided alone', async () => {
      expect((await forwardAuth(FILE, session('mallory'))).status).toBe(403);
      // Mallory's session and a valid token: the token decides (200); Alice's session and a bad token: 401.
      expect((await forwardAuth(FILE, { ...session('mallory'), authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      expect((await forwardAuth(FILE, { ...session('alice'), authorization: 'Bearer svc_not-a-token-at-all' })).status).toBe(401);
      expect((await forwardAuth(`${FILE}?token=svc_wrong-wrong-wrong`, session('alice'))).status).toBe(401);
    });

    it('an empty or blank Bearer (wis2box-webapp\'s) is no credential: the session decides', async () => {
      for (const authorization of ['Bearer', 'Bearer ', 'Bearer    ']) {
        expect((await forwardAuth(FILE, { ...session('alice'), authorization })).status).toBe(200);
        expect((await forwardAuth(FILE, { authorization })).status).toBe(401);
      }
    });

    it('a tampered cookie, one sealed with another key, an expired one, one of another issuer: no session', async () => {
      const v = cookies.alice!;
      // The third character from the end changed (it chose by the last one before, and left one cookie in 64 as it was).
      const tampered = `${v.slice(0, -3)}${v.at(-3) === 'A' ? 'B' : 'A'}${v.slice(-2)}`;
      expect(tampered).not.toBe(v);
      const other = await sealSession(parseSessionKeys(randomBytes(32).toString('base64url')), { issuer: idp.issuer, user: 'alice@example.org', groups: [] }, { maxAgeMs: 3600_000 });
      const expired = await sealSession(keys, { issuer: idp.issuer, user: 'alice@example.org', groups: [] }, { maxAgeMs: 1000, now: Date.now() - 10_000 });
      const foreign = await sealSession(keys, { issuer: 'https://elsewhere.example.org', user: 'alice@example.org', groups: [] }, { maxAgeMs: 3600_000 });
      for (const bad of [tampered, other, expired, foreign]) {
        const res = await forwardAuth(FILE, { cookie: `${SESSION_COOKIE_INSECURE}=${bad}` });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toContain('Bearer realm="svc"');
      }
    });

    it('a session issued under a longer --session-max-age (8h) than the one in force (1h): refused once 1h old, however far its own expiry', async () => {
      const identity = { issuer: idp.issuer, user: 'alice@example.org', groups: [] };
      const old = await sealSession(keys, identity, { maxAgeMs: 8 * 3600_000, now: Date.now() - 2 * 3600_000 });
      const recent = await sealSession(keys, identity, { maxAgeMs: 8 * 3600_000, now: Date.now() - 30 * 60_000 });
      for (const attempt of [1, 2]) {
        expect([attempt, (await forwardAuth(FILE, { cookie: `${SESSION_COOKIE_INSECURE}=${old}` })).status]).toEqual([attempt, 401]);
        expect([attempt, (await forwardAuth(FILE, { cookie: `${SESSION_COOKIE_INSECURE}=${recent}` })).status]).toEqual([attempt, 200]);
      }
      expect((await send(`${ext}/authz/v1/session`, { headers: { cookie: `${SESSION_COOKIE_INSECURE}=${old}` } })).status).toBe(401);
      // The session says it ends 1h after it was issued, not 8h.
      const body = (await (await send(`${ext}/authz/v1/session`, { headers: { cookie: `${SESSION_COOKIE_INSECURE}=${recent}` } })).json()) as { expiresAt: string };
      expect(Date.parse(body.expiresAt) - Date.now()).toBeLessThanOrEqual(30 * 60_000 + 1000);
    });

    it('a session minted from the key file (as bench:auth does) is as good as one from a sign-in', async () => {
      const minted = await sealSession(keys, { issuer: idp.issuer, user: 'alice@example.org', groups: [] }, { maxAgeMs: 60_000 });
      expect((await forwardAuth(FILE, { cookie: `other=1; ${SESSION_COOKIE_INSECURE}=${minted}` })).status).toBe(200);
    });
  });

  describe('navigations are sent to sign in, programs are not', () => {
    it('ForwardAuth answers a navigation without a credential with a 302 to sign in, rd = the original URL', async () => {
      const res = await forwardAuth(FILE, NAV);
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${FILE}`)}`);
      // Without Sec-Fetch headers, an Accept preferring HTML is a navigation too.
      expect((await forwardAuth(FILE, { accept: 'text/html' })).status).toBe(302);
    });

    it('ext_authz (Envoy: the original path appended, its own Host) answers the 302 itself; Gateway Fabric\'s nginx dialect names it', async () => {
      const envoy = await send(`${ext}/authz/ext-authz${FILE}`, { headers: { ...NAV, host: new URL(ext).host, 'x-forwarded-proto': 'http' } });
      expect(envoy.status).toBe(302);
      expect(envoy.headers.get('location')).toBe(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${FILE}`)}`);
      expect((await send(`${ext}/authz/ext-authz${FILE}`, { headers: { ...NAV, ...session('alice') } })).status).toBe(200);
      const fabric = await send(`${ext}/authz/ext-authz`, { headers: { ...NAV, path: FILE, method: 'GET' } });
      expect(fabric.status).toBe(401);
      // Fabric's dialect (the nginx answers): the 401 names the sign-in URL, on the external URL its Host names.
      expect(fabric.headers.get('x-svc-sign-in')).toBe(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${FILE}`)}`);
    });

    it('a fetch (Sec-Fetch-Mode: cors), curl (*/*), a POST: 401 with the challenge, never a redirect', async () => {
      for (const headers of [{ 'sec-fetch-mode': 'cors', accept: 'text/html' }, { accept: '*/*' }, {}] as Record<string, string>[]) {
        const res = await forwardAuth(FILE, headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toContain('Bearer realm="svc"');
      }
      expect((await forwardAuth(EXECUTION, NAV, 'POST')).status).toBe(401);
    });

    it('the nginx endpoints keep 401 and name the sign-in URL in X-Svc-Sign-In (only for navigations)', async () => {
      const res = await authRequest(FILE, NAV);
      expect(res.status).toBe(401);
      expect(res.headers.get('x-svc-sign-in')).toBe(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${FILE}`)}`);
      expect(res.headers.get('x-accel-expires')).toBe('0');
      const api = await authRequest(FILE, { 'sec-fetch-mode': 'cors' });
      expect(api.status).toBe(401);
      expect(api.headers.get('x-svc-sign-in')).toBeNull();
    });

    it('a request made on a host that is no external URL signs in on the first one and lands on its home', async () => {
      const res = await forwardAuth(FILE, { ...NAV, 'x-forwarded-host': 'other.example.org', 'x-forwarded-proto': 'https' });
      expect(res.headers.get('location')).toBe(`${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}/`)}`);
    });

    it('a signed-in navigation without a grant: the 403 page naming them (ForwardAuth), X-Svc-Denied on nginx', async () => {
      const res = await forwardAuth(FILE, { ...NAV, ...session('mallory') });
      expect(res.status).toBe(403);
      const body = await res.text();
      expect(body).toContain('mallory@example.org');
      expect(body).toContain('no access to this dataset or topic');
      expect(body).toContain('action="/authz/sign-out"');
      expect(Buffer.byteLength(body)).toBeLessThan(4096);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      const n = await authRequest(FILE, { ...NAV, ...session('mallory') });
      expect(n.status).toBe(403);
      const denied = n.headers.get('x-svc-denied')!;
      expect(denied).toBe(`${ext}/authz/v1/session?denied=${encodeURIComponent(`${ext}${FILE}`)}`);
      const page = await send(denied, { headers: { ...NAV, ...session('mallory') } });
      expect(page.status).toBe(403);
      expect(await page.text()).toContain('mallory@example.org');
    });
  });

  describe('CSRF: a session grants an unsafe method only with same-origin evidence', () => {
    it('bob (wis2-ops) executes from the data service\'s own page; a cross-site form POST is refused', async () => {
      expect((await forwardAuth(EXECUTION, { ...session('bob'), 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' }, 'POST')).status).toBe(200);
      expect((await forwardAuth(EXECUTION, { ...session('bob'), origin: ext }, 'POST')).status).toBe(200);
      // wis2box-webapp's exact request: a blank Bearer, same-origin fetch.
      expect((await forwardAuth(EXECUTION, { ...session('bob'), authorization: 'Bearer ', 'sec-fetch-site': 'same-origin', origin: ext }, 'POST')).status).toBe(200);
      for (const headers of [{ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example', 'sec-fetch-mode': 'navigate' }, { origin: 'https://evil.example' }, { 'sec-fetch-site': 'same-site' }, {}] as Record<string, string>[]) {
        const res = await forwardAuth(EXECUTION, { ...session('bob'), ...headers }, 'POST');
        expect(res.status).toBe(403);
        expect(await res.text()).toContain('cross-site');
      }
      // An nginx subrequest without the method stated is an unsafe method: evidence needed too.
      expect((await send(`${ext}/authz/auth-request`, { headers: { 'x-original-url': `${ext}${EXECUTION}`, ...session('bob') } })).status).toBe(403);
      // alice is not in wis2-ops: 403 whatever the evidence; reads need none.
      expect((await forwardAuth(EXECUTION, { ...session('alice'), 'sec-fetch-site': 'same-origin' }, 'POST')).status).toBe(403);
      expect((await forwardAuth(FILE, { ...session('alice'), 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    });
  });

  it('remove-subject takes effect on the next request (grants are read from the index in service)', async () => {
    expect((await forwardAuth(FILE, session('alice'))).status).toBe(200);
    source.swap(world([{ kind: 'User', name: 'someone-else@example.org' }]));
    expect((await forwardAuth(FILE, session('alice'))).status).toBe(403);
    source.swap(world(ALICE_ON_TOPIC));
    expect((await forwardAuth(FILE, session('alice'))).status).toBe(200);
  });

  it('sign-out: a confirm page; a cross-site POST refused; a same-origin POST clears the cookie and signs out at the provider', async () => {
    const form = await send(`${ext}/authz/sign-out`, { headers: { ...NAV, ...session('alice') } });
    expect(await form.text()).toContain('alice@example.org');
    const cross = await send(`${ext}/authz/sign-out`, { method: 'POST', headers: { ...session('alice'), origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    expect(cross.status).toBe(403);
    expect(cross.headers.getSetCookie()).toEqual([]);
    const res = await send(`${ext}/authz/sign-out`, { method: 'POST', headers: { ...session('alice'), origin: ext, 'sec-fetch-site': 'same-origin' } });
    expect(res.status).toBe(303);
    expect(res.headers.getSetCookie()).toEqual([`${SESSION_COOKIE_INSECURE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`]);
    const end = new URL(res.headers.get('location')!);
    expect(end.origin).toBe(idp.issuer);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${ext}/`);
    expect(end.searchParams.get('client_id')).toBe('svc-browser');
  });

  it('a callback without its transaction, or with the provider\'s error: a clear page, no session', async () => {
    const lost = await send(`${ext}/authz/callback?code=x&state=y`, { headers: NAV });
    expect(lost.status).toBe(400);
    expect(await lost.text()).toContain('not started in this browser');
    expect(lost.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE_INSECURE}=`))).toBe(false);
  });
});

describe('the provider unreachable at start: svc-auth starts, tokens work, sign-in says so until it is back', () => {
  it('503 page, then a working sign-in once the provider answers', async () => {
    const [port, idpPort] = [await freePort(), await freePort()];
    const ext = `http://127.0.0.1:${port}`;
    const idp = new OidcProvider({ users: USERS, clients: {}, port: idpPort, signInClients: { 'svc-browser': { redirectUris: [`${ext}/authz/callback`] } } });
    const issuers = issuersFromFlags({ issuers: [`http://127.0.0.1:${idpPort}`], audiences: ['svc-data'], usernameClaim: 'email', groupsClaim: 'groups', requiredClaims: [] });
    const server = await startServer({
      listen: { host: '127.0.0.1', port }, metricsListen: { host: '127.0.0.1', port: 0 }, access: DEFAULT_CONFIG, source: new TestSource(world(ALICE_ON_TOPIC)), logger: quiet,
      oidc: { issuers, refreshIntervalMs: 0, fetchTimeoutMs: 1000 }, signInRetryAfterMs: 200,
      signIn: { externalUrls: [ext], secure: false, clientId: 'svc-browser', issuer: issuers[0]!, scopes: ['openid', 'email', 'groups'], sessionKeys: parseSessionKeys(randomBytes(32).toString('base64url')), sessionMaxAgeMs: 3600_000 },
    });
    try {
      await server.firstLoad;
      const down = await send(`${ext}/authz/sign-in?rd=%2F`, { headers: NAV });
      expect(down.status).toBe(503);
      expect(down.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await down.text()).toContain('cannot be reached');
      const tokenAnswer = await send(`${ext}/authz/forward-auth`, { headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': FILE, authorization: `Bearer ${TOKEN}` } });
      expect(tokenAnswer.status).toBe(200);
      await idp.start();
      // Sign-out alone discovers the provider it could not reach at start, so the provider's session ends too (a
      // replica that never served a sign-in used to skip it, and the next sign-in came back without asking).
      const signOut = () => send(`${ext}/authz/sign-out`, { method: 'POST', headers: { origin: ext, 'sec-fetch-site': 'same-origin' } });
      await waitUntil(async () => (await signOut()).status === 303, { what: 'sign-out continuing at the provider once it is back', timeoutMs: 20_000 });
      expect(new URL((await signOut()).headers.get('location')!).origin).toBe(idp.issuer);
      // A public client (no secret): PKCE alone.
      await waitUntil(async () => (await send(`${ext}/authz/sign-in?rd=%2F`, {})).status === 302, { what: 'sign-in after the provider is back', timeoutMs: 20_000 });
      const jar = new CookieJar();
      const r = await navigate(jar, `${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}/authz/v1/session`)}`, { login: { user: 'alice', password: USERS.alice.password } });
      expect(r.hops.find((h) => h.url.startsWith(`${ext}/authz/callback`))?.status).toBe(302);
      expect(jar.get(ext, SESSION_COOKIE_INSECURE)).toBeDefined();
    } finally {
      await server.shutdown();
      await idp.stop();
    }
  }, 60_000);
});
