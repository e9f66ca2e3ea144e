// Browser sign-in end to end (issue 29): a real nginx in front of two svc-auth replicas (one key file), a real OpenID
// provider (panva's oidc-provider: ./support/oidc-provider.ts) whose login form is submitted by plain HTTP requests
// with a cookie jar (./support/browserless.ts; the Chromium suites drive Keycloak the same way with a real browser).
// nginx redirects navigations with the X-Svc-Sign-In and X-Svc-Denied headers (./support/sign-in-nginx.ts).
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, scopeObjectName, tokenIdOf, type Subject } from '../../core/index.js';
import { parseSessionKeys, sealSession, SESSION_COOKIE_INSECURE } from '../../authz/identity/session.js';
import { TRANSACTION_COOKIE_INSECURE } from '../../authz/sign-in/relying-party.js';
import { buildWafTree, PROCESSES, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { freePorts } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { OAPI_MARKER, startOapiStandin, stopServer } from './support/oapi-standin.js';
import { OidcProvider } from './support/oidc-provider.js';
import { SvcAuth } from './support/svc-auth.js';
import { CookieJar, navigate, send } from './support/browserless.js';
import { signInNginxConf } from './support/sign-in-nginx.js';

const plan = nginxPlan();
const suite = plan.action === 'skip' ? describe.skip : describe;

const USERS = {
  alice: { password: 'alice-pw-1', email: 'alice@example.org', groups: ['staff'] },
  bob: { password: 'bob-pw-2', email: 'bob@example.org', groups: ['staff', 'wis2-ops'] },
  mallory: { password: 'mallory-pw-3', email: 'mallory@example.org', groups: ['guests'] },
};
type Who = keyof typeof USERS;
const EXECUTION = '/oapi/processes/svc-synop2bufr/execution';
const FETCH = { accept: '*/*', 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'same-origin' };
const key = () => randomBytes(32).toString('base64url');

suite('browser sign-in through nginx, two svc-auth replicas and a real OpenID provider', () => {
  const secrets: string[] = [];
  const token = formatGeneratedToken(randomBytes(32));
  let base: string;
  let scopes: string;
  let keyFile: string;
  let oldKey: string;
  let waf: WafTree;
  let idp: OidcProvider;
  let replicas: SvcAuth[] = [];
  let nginx: Nginx | undefined;
  let oapi: Server | undefined;
  let ext = '';
  let cached = '';
  const cookies: Partial<Record<Who, string>> = {};

  const writeScopes = (topicSubjects: Subject[]) => {
    const hash = hashToken(token);
    const topic = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, [{ id: tokenIdOf(hash), hash, createdAt: new Date().toISOString() }]);
    const processes = newProtectedScope(PROCESSES, scopeObjectName(PROCESSES), undefined, []);
    writeFileSync(join(scopes, 'scopes.yaml'), dumpManifests([
      { ...topic, spec: { ...topic.spec, subjects: topicSubjects } },
      { ...processes, spec: { ...processes.spec, subjects: [{ kind: 'Group', name: 'wis2-ops' }] } },
    ]));
  };
  const ALICE: Subject[] = [{ kind: 'User', name: 'alice@example.org' }];

  /** A full sign-in in a fresh "browser": the closed file, nginx's redirect, svc-auth, the provider's form, back. */
  const signIn = async (who: Who, start = `${ext}${WAF.topicFile}`) => {
    const jar = new CookieJar();
    const landed = await navigate(jar, start, { login: { user: who, password: USERS[who].password } });
    const value = jar.get(ext, SESSION_COOKIE_INSECURE);
    if (value !== undefined) secrets.push(value);
    return { jar, landed, value };
  };
  const withSession = (who: Who | string, headers: Record<string, string> = {}) => ({ ...headers, cookie: `${SESSION_COOKIE_INSECURE}=${cookies[who as Who] ?? who}` });
  const get = (url: string, headers: Record<string, string> = {}) => send(url, { headers });

  const startReplicas = async (ports: readonly [number, number][]) => {
    const secret = join(base, 'client-secret');
    replicas = ports.map(([port, metricsPort]) => new SvcAuth({
      scopesDir: scopes, port, metricsPort, secrets, extraArgs: [
        '--oidc-issuer', idp.issuer, '--oidc-audience', 'svc-data', '--oidc-username-claim', 'email',
        '--sign-in-client-id', 'svc-browser', '--sign-in-client-secret-file', secret, '--external-url', ext,
        '--sign-in-scope', 'email', '--sign-in-scope', 'groups', '--session-key-file', keyFile, '--session-max-age', '1h',
      ],
    }));
    await Promise.all(replicas.map((r) => r.start()));
  };
  let replicaPorts: [number, number][] = [];

  beforeAll(async () => {
    const binary = ensureNginx(plan);
    base = mkdtempSync(join(tmpdir(), 'svc-sign-in-e2e-'));
    chmodSync(base, 0o755);
    scopes = join(base, 'scopes');
    const prefix = join(base, 'nginx');
    for (const d of [scopes, join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    waf = buildWafTree(join(base, 'waf'));
    secrets.push(token);
    writeScopes(ALICE);
    oldKey = key();
    keyFile = join(base, 'session-keys');
    writeFileSync(keyFile, `${oldKey}\n`);
    writeFileSync(join(base, 'client-secret'), 'svc-browser-secret\n');
    const [port, cachePort, oapiPort, a, am, b, bm] = (await freePorts(7)) as [number, number, number, number, number, number, number];
    ext = `http://127.0.0.1:${port}`;
    cached = `http://127.0.0.1:${cachePort}`;
    idp = new OidcProvider({
      users: USERS, clients: {},
      signInClients: { 'svc-browser': { secret: 'svc-browser-secret', redirectUris: [`${ext}/authz/callback`], postLogoutRedirectUris: [`${ext}/`] } },
    });
    await idp.start();
    oapi = await startOapiStandin(oapiPort);
    replicaPorts = [[a, am], [b, bm]];
    await startReplicas(replicaPorts);
    nginx = await Nginx.start(binary, prefix, signInNginxConf({ prefix, wafRoot: waf.root, port, cachePort, replicas: [a, b], oapi: oapiPort }), [port, cachePort]);
    for (const who of ['alice', 'bob', 'mallory'] as const) cookies[who] = (await signIn(who)).value;
  }, 180_000);

  afterAll(async () => {
    await nginx?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    await stopServer(oapi);
    await idp?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('a closed file: 401 with X-Svc-Sign-In, which nginx turns into the sign-in; the provider; back at the file with a session', async () => {
    // svc-auth's own answer to nginx: 401 and the sign-in URL.
    const asked = await send(`http://127.0.0.1:${replicaPorts[0]![0]}/authz/auth-request`, { headers: { 'x-original-url': `${ext}${WAF.topicFile}`, 'x-original-method': 'GET', 'sec-fetch-mode': 'navigate' } });
    expect(asked.status).toBe(401);
    const signInUrl = `${ext}/authz/sign-in?rd=${encodeURIComponent(`${ext}${WAF.topicFile}`)}`;
    expect(asked.headers.get('x-svc-sign-in')).toBe(signInUrl);
    const { landed, value } = await signIn('alice');
    expect(value).toBeDefined();
    const steps = landed.hops.map((h) => `${h.status} ${new URL(h.url).origin === ext ? new URL(h.url).pathname : 'provider'}`);
    expect(steps[0]).toBe(`302 ${WAF.topicFile}`);
    expect(landed.hops[0]!.location).toBe(signInUrl);
    expect(steps[1]).toBe('302 /authz/sign-in');
    expect(steps).toContain('302 /authz/callback');
    expect(landed.status).toBe(200);
    expect(landed.url).toBe(`${ext}${WAF.topicFile}`);
    expect(landed.body).toContain(waf.markers.topicFile);
  });

  it('a group grant (bob in wis2-ops executes); a user without a grant gets the page naming them', async () => {
    const denied = await navigate(new CookieJar(), `${ext}${WAF.topicFile}`, { headers: withSession('mallory') });
    expect(denied.hops[0]!.status).toBe(302);
    expect(denied.hops[0]!.location).toBe(`${ext}/authz/v1/session?denied=${encodeURIComponent(`${ext}${WAF.topicFile}`)}`);
    // The jar has no cookie of its own: ask the page with mallory's session as the browser would.
    const page = await get(denied.hops[0]!.location!, { ...withSession('mallory'), accept: 'text/html', 'sec-fetch-mode': 'navigate' });
    expect(page.status).toBe(403);
    const html = await page.text();
    expect(html).toContain('mallory@example.org');
    expect(html).toContain('no access to this dataset or topic');
    expect(html).not.toContain(waf.markers.topicFile);
    const executed = await send(`${ext}${EXECUTION}`, { method: 'POST', headers: withSession('bob', { ...FETCH, origin: ext, authorization: 'Bearer ' }), body: '{}' });
    expect(executed.status).toBe(200);
    expect(await executed.text()).toContain(OAPI_MARKER);
  });

  it('a fetch without navigation: 401 with its challenge, never a redirect; an API client\'s 403 keeps its challenge', async () => {
    const res = await get(`${ext}${WAF.topicFile}`, FETCH);
    expect(res.status).toBe(401);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="svc", Basic realm="svc"');
    const curl = await get(`${ext}${WAF.topicFile}`, { accept: '*/*' });
    expect(curl.status).toBe(401);
    const forbidden = await get(`${ext}${WAF.topicFile}`, withSession('mallory', FETCH));
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('www-authenticate')).toBe('Bearer realm="svc", error="insufficient_scope", scope="topic:origin.a.wis2.mw-met.data.core"');
  });

  it('a cross-site form POST to an execution with a session: 403; a same-origin fetch POST: executes', async () => {
    const cross = await send(`${ext}${EXECUTION}`, { method: 'POST', headers: withSession('bob', { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'cross-site', origin: 'https://evil.example', accept: 'text/html' }), body: 'a=1' });
    expect(cross.status).toBe(403);
    expect(await cross.text()).not.toContain(OAPI_MARKER);
    const same = await send(`${ext}${EXECUTION}`, { method: 'POST', headers: withSession('bob', FETCH), body: '{}' });
    expect(same.status).toBe(200);
  });

  it('a tampered cookie, one from another key, an expired one: no session (sent to sign in again)', async () => {
    const v = cookies.alice!;
    const identity = { issuer: idp.issuer, user: 'alice@example.org', groups: [] };
    const bad = [
      `${v.slice(0, 40)}${v[40] === 'A' ? 'B' : 'A'}${v.slice(41)}`,
      await sealSession(parseSessionKeys(key()), identity, { maxAgeMs: 3600_000 }),
      await sealSession(parseSessionKeys(oldKey), identity, { maxAgeMs: 1000, now: Date.now() - 60_000 }),
    ];
    for (const cookie of bad) {
      const res = await get(`${ext}${WAF.topicFile}`, withSession(cookie, { accept: 'text/html', 'sec-fetch-mode': 'navigate' }));
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toContain('/authz/sign-in?rd=');
    }
  });

  it('--session-max-age applies to sessions already issued: one sealed for 8h, 2h ago, is expired under the replicas\' 1h', async () => {
    const identity = { issuer: idp.issuer, user: 'alice@example.org', groups: [] };
    const old = await sealSession(parseSessionKeys(oldKey), identity, { maxAgeMs: 8 * 3600_000, now: Date.now() - 2 * 3600_000 });
    const recent = await sealSession(parseSessionKeys(oldKey), identity, { maxAgeMs: 8 * 3600_000, now: Date.now() - 30 * 60_000 });
    // Twice per replica (round robin): `recent` is then served from each replica's opened sessions, and `old`, never
    // kept, is opened and refused again.
    for (let i = 0; i < 4; i++) {
      const refused = await get(`${ext}${WAF.topicFile}`, withSession(old, { accept: 'text/html', 'sec-fetch-mode': 'navigate' }));
      expect(refused.status).toBe(302);
      expect(refused.headers.get('location')).toContain('/authz/sign-in?rd=');
      expect((await get(`${ext}${WAF.topicFile}`, withSession(recent, FETCH))).status).toBe(200);
    }
  });

  it('rd to another host lands on the external URL\'s home', async () => {
    const { landed } = await signIn('alice', `${ext}/authz/sign-in?rd=${encodeURIComponent('https://evil.example/phish')}`);
    expect(landed.url).toBe(`${ext}/`);
  });

  it('rd naming svc-auth\'s own steps in another spelling (case, percent-encoding, doubled slashes) lands on home, not back in the flow', async () => {
    // nginx decodes /authz/sign%2Din to choose its location and passes it on as sent; Express routes /AUTHZ/CALLBACK.
    for (const rd of [`${ext}/AUTHZ/SIGN-IN?rd=%2F`, `${ext}/Authz/Callback`, `${ext}/authz/sign%2Din?rd=%2F`, `${ext}//authz/callback`]) {
      const { landed, value } = await signIn('alice', `${ext}/authz/sign-in?rd=${encodeURIComponent(rd)}`);
      expect([rd, landed.url]).toEqual([rd, `${ext}/`]);
      expect(value).toBeDefined();
    }
  });

  it('a sign-in from a URL too long for the sign-in cookie finishes through nginx, on that page without its query', async () => {
    // The closed file with a long query (static files ignore it): nginx's redirect to sign in, the provider, back.
    const from = (n: number) => `${ext}${WAF.topicFile}?bbox=`.padEnd(n, '7');
    const transactionOf = (landed: { hops: readonly { url: string; headers: Headers }[] }) =>
      landed.hops.find((h) => h.url.startsWith(`${ext}/authz/sign-in`))!.headers.getSetCookie().find((c) => c.startsWith(`${TRANSACTION_COOKIE_INSECURE}=`))!;
    // 3,582 characters (the review's: a 5,268-byte cookie the browser dropped) and 2,600 (a cookie browsers keep, in
    // an answer too large for nginx's 4 KiB buffer: a 502): both land on the file, without the query.
    // 4,000: nginx's redirect itself (X-Svc-Sign-In naming the whole URL) would pass 4 KiB of answer headers (a 502
    // before the sign-in starts): it names the page without its query.
    for (const n of [4000, 3582, 2600]) {
      const { landed, value } = await signIn('alice', from(n));
      expect(Buffer.byteLength(transactionOf(landed))).toBeLessThanOrEqual(4096);
      expect([n, landed.hops.find((h) => h.url.startsWith(`${ext}/authz/callback`))?.status]).toEqual([n, 302]);
      expect(value).toBeDefined();
      expect(landed.url).toBe(`${ext}${WAF.topicFile}`);
      expect(landed.body).toContain(waf.markers.topicFile);
    }
    // 1,900 characters fit: kept whole, query and all.
    const { landed, value } = await signIn('alice', from(1900));
    expect(value).toBeDefined();
    expect(landed.url).toBe(from(1900));
    expect(landed.body).toContain(waf.markers.topicFile);
  });

  it('the decision endpoints are not on the public route (only the sign-in paths and the public list are)', async () => {
    for (const p of ['/authz/auth-request', '/authz/forward-auth', '/authz/ext-authz/data/x', '/authz/v1/sessionx']) expect((await get(`${ext}${p}`)).status).toBe(404);
    expect((await get(`${ext}/authz/v1/protected`)).status).toBe(200);
    expect((await get(`${ext}/authz/v1/session`, withSession('alice'))).status).toBe(200);
  });

  it('two replicas with one key file serve one session: each opens it', async () => {
    for (const [port] of replicaPorts) {
      const res = await send(`http://127.0.0.1:${port}/authz/v1/session`, { headers: withSession('bob') });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ user: 'bob@example.org', groups: ['staff', 'wis2-ops'] });
    }
  });

  it('the auth cache (ingress-nginx\'s documented key) never serves a session\'s allow to the next anonymous request', async () => {
    // The cache works: a token's allow is kept (second request: HIT).
    const first = await get(`${cached}${WAF.topicFile}`, { authorization: `Bearer ${token}` });
    expect(first.status).toBe(200);
    expect((await get(`${cached}${WAF.topicFile}`, { authorization: `Bearer ${token}` })).headers.get('x-auth-cache')).toBe('HIT');
    // A session's allow is never kept: its key (no Authorization, no ?token=) is every anonymous request's.
    const signedIn = await get(`${cached}${WAF.topicFile}`, withSession('alice'));
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get('x-auth-cache')).toBe('MISS');
    const anonymous = await get(`${cached}${WAF.topicFile}`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain(waf.markers.topicFile);
    expect((await get(`${cached}${WAF.topicFile}`, withSession('alice'))).headers.get('x-auth-cache')).not.toBe('HIT');
  });

  it('remove-subject takes effect on the next request after the reload (the session holds no grant)', async () => {
    expect((await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status).toBe(200);
    writeScopes([{ kind: 'User', name: 'carol@example.org' }]);
    await waitUntil(async () => (await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status === 403 && (await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status === 403,
      { what: 'alice refused on both replicas', timeoutMs: 20_000 });
    writeScopes(ALICE);
    await waitUntil(async () => (await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status === 200 && (await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status === 200,
      { what: 'alice granted again on both replicas', timeoutMs: 20_000 });
  }, 60_000);

  it('key rotation (the new key first, the old one kept) keeps the sessions made with the old key', async () => {
    const newKey = key();
    writeFileSync(keyFile, `# rotated\n${newKey}\n${oldKey}\n`);
    await Promise.all(replicas.map((r) => r.stop()));
    await startReplicas(replicaPorts);
    expect((await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status).toBe(200);
    const fresh = await signIn('bob');
    expect(fresh.value).toBeDefined();
    // Sealed with the new key now: a replica holding only the old key could not open it.
    expect(await sealSession(parseSessionKeys(newKey), { issuer: idp.issuer, user: 'x', groups: [] }, { maxAgeMs: 1000 }).then((v) => v.split('.')[0])).toBe(fresh.value!.split('.')[0]);
  }, 90_000);

  it('sign-out: the cookie is cleared and the provider is asked to sign out too', async () => {
    const { jar } = await signIn('alice');
    expect(jar.get(ext, SESSION_COOKIE_INSECURE)).toBeDefined();
    const form = await navigate(jar, `${ext}/authz/sign-out`);
    expect(form.body).toContain('alice@example.org');
    const out = await send(`${ext}/authz/sign-out`, { method: 'POST', headers: { cookie: jar.header(ext)!, origin: ext, 'sec-fetch-site': 'same-origin' }, body: '' });
    expect(out.status).toBe(303);
    jar.take(ext, out);
    expect(jar.get(ext, SESSION_COOKIE_INSECURE)).toBeUndefined();
    expect(out.headers.get('location')).toMatch(new RegExp(`^${idp.issuer}/session/end\\?`));
    // At the provider: its confirmation form, submitted; it sends the browser back to the external URL.
    const confirm = await navigate(jar, out.headers.get('location')!, { from: ext });
    const action = /action="([^"]+)"/.exec(confirm.body)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
    expect(action && xsrf).toBeTruthy();
    const back = await navigate(jar, new URL(action!.replace(/&amp;/g, '&'), confirm.url).href, { method: 'POST', body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }).toString(), from: confirm.url });
    expect(back.url).toBe(`${ext}/`);
    // The next navigation asks again: the provider's login form, not the file.
    const next = await navigate(jar, `${ext}${WAF.topicFile}`);
    expect(next.url).toMatch(new RegExp(`^${idp.issuer}/interaction/`));
    expect(next.body).toContain('name="password"');
  });

  it('the provider down during sign-in: a clear error page, while tokens and sessions keep working; no secret in any log', async () => {
    const jar = new CookieJar();
    // Up to the provider's redirect back with the code; the provider goes away before svc-auth exchanges it.
    const atCallback = await navigate(jar, `${ext}/authz/sign-in?rd=%2F`, { login: { user: 'bob', password: USERS.bob.password }, stopBefore: (u) => u.startsWith(`${ext}/authz/callback`) });
    expect(atCallback.url).toMatch(/\/authz\/callback\?code=/);
    await idp.stop();
    try {
      const res = await navigate(jar, atCallback.url);
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('The sign-in provider cannot be reached.');
      expect(jar.get(ext, SESSION_COOKIE_INSECURE)).toBeUndefined();
      expect((await get(`${ext}${WAF.topicFile}`, { authorization: `Bearer ${token}` })).status).toBe(200);
      expect((await get(`${ext}${WAF.topicFile}`, withSession('alice', FETCH))).status).toBe(200);
    } finally {
      await idp.start();
    }
    const logs = replicas.map((r) => r.output).join('\n') + readFileSync(nginx!.errorLogPath, 'utf8');
    for (const s of [...secrets, 'svc-browser-secret', oldKey]) expect(logs.includes(s)).toBe(false);
  }, 60_000);
});
