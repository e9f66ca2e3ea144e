// Browser sign-in as a person meets it (issue 29): Debian's Chromium (test/support/browser.ts) and Keycloak
// (test/support/keycloak.ts, realm fixtures/keycloak-realm-svc.json: alice in partners, bob in observers, carol in no
// group), through real nginx (two svc-auth replicas behind one upstream: ./support/sign-in-nginx.ts, the X-Svc-Sign-In
// and X-Svc-Denied shape of deploy/nginx) and real Traefik (deploy/traefik's file-provider configuration, ForwardAuth
// answering the redirects itself), in front of a file backend and a stand-in OGC API. One Keycloak, one browser for the
// file; every test its own browser context (its own cookies). Cookie tampering, other keys, expiry and key rotation
// are checked without a browser in sign-in.test.ts and are not repeated here.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, scopeObjectName, tokenIdOf } from '../../core/index.js';
import { chromiumSkipReason, launchChromium, screenshot, screenshotPath, withBrowser } from '../support/browser.js';
import { Keycloak, keycloakSkipReason, readRealm } from '../support/keycloak.js';
import { freePorts } from '../support/ports.js';
import type { Supervised } from '../support/process.js';
import { buildWafTree, PROCESSES, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { OAPI_MARKER, startOapiStandin, stopServer } from './support/oapi-standin.js';
import { signInNginxConf } from './support/sign-in-nginx.js';
import { SvcAuth } from './support/svc-auth.js';
import { startTraefik } from './support/traefik.js';

const REALM_FILE = fileURLToPath(new URL('./fixtures/keycloak-realm-svc.json', import.meta.url));
const realm = readRealm(REALM_FILE);
const plan = nginxPlan();
const skip = plan.action === 'skip' ? 'nginx is not available' : keycloakSkipReason() ?? chromiumSkipReason();
const suite = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`skipping the browser sign-in suite: ${skip}\n`);

/** A closed file the browser shows (JSON, not a download): in the topic's tree, granted to group partners. */
const FILE = `${WAF.topicDir}/weather/latest.json`;
const EXECUTION = '/oapi/processes/svc-synop2bufr/execution';
const CLIENT_SECRET = realm.clients['svc-auth']!.secret!;
const DOC_IMAGES = fileURLToPath(new URL('../../docs/images/', import.meta.url));
type Who = 'alice' | 'bob' | 'carol';
/** The screenshots' window: small enough for docs/sign-in.md. */
const SMALL = { viewport: { width: 800, height: 560 } };

/** One proxy in front of svc-auth: the origin the browser opens. */
interface Front {
  readonly name: string;
  origin: string;
}

suite('browser sign-in with Chromium and Keycloak through real nginx and real Traefik', () => {
  const token = formatGeneratedToken(randomBytes(32));
  const secrets: string[] = [token];
  const marker = `browser-file-${randomBytes(4).toString('hex')}`;
  const nginxFront: Front = { name: 'nginx', origin: '' };
  const traefikFront: Front = { name: 'Traefik', origin: '' };
  let base = '';
  let waf: WafTree;
  let keycloak: Keycloak;
  let browser: Browser;
  let replicas: SvcAuth[] = [];
  let nginx: Nginx | undefined;
  let traefik: Supervised | undefined;
  let oapi: Server | undefined;
  let files: Server | undefined;
  let sibling: Server | undefined;
  let siblingPort = 0;

  const writeScopes = (scopesDir: string) => {
    const hash = hashToken(token);
    const topic = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, [{ id: tokenIdOf(hash), hash, createdAt: new Date().toISOString() }]);
    const processes = newProtectedScope(PROCESSES, scopeObjectName(PROCESSES), undefined, []);
    writeFileSync(join(scopesDir, 'scopes.yaml'), dumpManifests([
      { ...topic, spec: { ...topic.spec, subjects: [{ kind: 'Group', name: 'partners' }, { kind: 'User', name: 'bob@example.org' }] } },
      { ...processes, spec: { ...processes.spec, subjects: [{ kind: 'Group', name: 'partners' }] } },
    ]));
  };

  beforeAll(async () => {
    const nginxBinary = ensureNginx(plan);
    const started = Keycloak.start({ realmFiles: [REALM_FILE] });
    browser = await launchChromium();
    keycloak = await started;
    base = mkdtempSync(join(tmpdir(), 'svc-browser-sign-in-'));
    chmodSync(base, 0o755);
    const scopes = join(base, 'scopes');
    const prefix = join(base, 'nginx');
    for (const d of [scopes, join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    waf = buildWafTree(join(base, 'waf'));
    writeFileSync(join(waf.root, FILE), JSON.stringify({ file: marker }));
    chmodSync(join(waf.root, FILE), 0o644);
    writeScopes(scopes);
    const keyFile = join(base, 'session-keys');
    const sessionKey = randomBytes(32).toString('base64url');
    secrets.push(sessionKey, CLIENT_SECRET);
    writeFileSync(keyFile, `${sessionKey}\n`);
    writeFileSync(join(base, 'client-secret'), `${CLIENT_SECRET}\n`);
    const [np, cp, tp, op, fp, sp, a, am, b, bm] = (await freePorts(10)) as [number, number, number, number, number, number, number, number, number, number];
    // Two hosts, so the two fronts' cookies never meet: nginx on 127.0.0.1, Traefik on localhost.
    nginxFront.origin = `http://127.0.0.1:${np}`;
    traefikFront.origin = `http://localhost:${tp}`;
    siblingPort = sp;
    replicas = [[a, am], [b, bm]].map(([port, metricsPort]) => new SvcAuth({
      scopesDir: scopes, port: port!, metricsPort: metricsPort!, secrets, extraArgs: [
        '--oidc-issuer', keycloak.issuer(), '--oidc-audience', 'svc-auth', '--oidc-username-claim', 'email',
        '--sign-in-client-id', 'svc-auth', '--sign-in-client-secret-file', join(base, 'client-secret'),
        '--external-url', nginxFront.origin, '--external-url', traefikFront.origin,
        '--session-key-file', keyFile, '--session-max-age', '1h',
      ],
    }));
    oapi = await startOapiStandin(op);
    files = await startFileServer(fp, waf.root);
    sibling = await startSibling(sp);
    await Promise.all(replicas.map((r) => r.start()));
    nginx = await Nginx.start(nginxBinary, prefix, signInNginxConf({ prefix, wafRoot: waf.root, port: np, cachePort: cp, replicas: [a, b], oapi: op }), [np, cp]);
    traefik = await startTraefik(base, { auth: a, waf: fp, oapi: op, listen: tp }, 'localhost');
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await nginx?.stop();
    await traefik?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    await Promise.all([stopServer(oapi), stopServer(files), stopServer(sibling)]);
    await keycloak?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  }, 120_000);

  /** Keycloak's login form, filled in and submitted as a person would. */
  const typeCredentials = async (page: Page, who: Who): Promise<void> => {
    const user = realm.users[who]!;
    await page.getByLabel('Username or email').fill(user.username);
    await page.getByLabel('Password', { exact: true }).fill(user.password);
    await page.getByRole('button', { name: 'Sign In' }).click();
  };

  /** Opens `path` on the front: Keycloak's login page after the redirect; the credentials; back at `path`. Returns its status. */
  const signIn = async (page: Page, front: Front, who: Who, path = FILE, shot?: string): Promise<number> => {
    const target = `${front.origin}${path}`;
    await page.goto(target);
    expect(new URL(page.url()).origin).toBe(keycloak.url);
    await expect(page.title()).resolves.toBe('Sign in to svc test realm');
    if (shot) await screenshot(page, shot);
    const back = page.waitForResponse((r) => r.url() === target && r.request().isNavigationRequest(), { timeout: 60_000 });
    await typeCredentials(page, who);
    return (await back).status();
  };

  /** fetch() from the page (no navigation): status, whether it was redirected, whether the stand-in answered. */
  const pageFetch = (page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    page.evaluate(async ([u, i]) => {
      const r = await fetch(u, i);
      const text = await r.text();
      return { status: r.status, redirected: r.redirected, text };
    }, [url, init] as const);

  describe.each([nginxFront, traefikFront])('through $name', (front) => {
    const shoot = front === nginxFront;

    it('a closed file: Keycloak\'s login page, the credentials typed into its form, back at the file (200, group partners)', async () => {
      await withBrowser(async (page) => {
        expect(await signIn(page, front, 'alice', FILE, shoot ? 'sign-in-redirect' : undefined)).toBe(200);
        expect(page.url()).toBe(`${front.origin}${FILE}`);
        expect(await page.textContent('body')).toContain(marker);
        await page.goto(`${front.origin}/authz/v1/session`);
        expect(await page.textContent('body')).toContain('alice@example.org');
        if (shoot) await screenshot(page, 'sign-in-session');
      }, { browser, failureScreenshot: `browser-${front.name}-alice`, context: SMALL });
    }, 180_000);

    it('carol, in no group with no grant: the 403 page names her, says she lacks access and offers sign-out', async () => {
      await withBrowser(async (page) => {
        expect(await signIn(page, front, 'carol').catch(() => 0)).not.toBe(200);
        await page.waitForLoadState();
        const html = (await page.textContent('body')) ?? '';
        expect(html).toContain('carol@example.org');
        expect(html).toContain('no access to this dataset or topic');
        expect(html).not.toContain(marker);
        await expect(page.getByRole('button', { name: 'Sign out' }).count()).resolves.toBe(1);
        const again = await page.goto(`${front.origin}${FILE}`);
        expect(again?.status()).toBe(403);
        if (shoot) await screenshot(page, 'sign-in-403');
      }, { browser, failureScreenshot: `browser-${front.name}-carol`, context: SMALL });
    }, 180_000);

    it('sign-out: the confirm button, Keycloak signs out too, and the next navigation asks again', async () => {
      await withBrowser(async (page) => {
        expect(await signIn(page, front, 'alice')).toBe(200);
        await page.goto(`${front.origin}/authz/sign-out`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL((u) => u.origin === keycloak.url || u.href === `${front.origin}/`, { timeout: 60_000 });
        if (new URL(page.url()).origin === keycloak.url) {
          // Keycloak asks whether to sign out (svc-auth sends no ID token hint): the person confirms.
          await page.locator('#kc-logout').click();
          await page.waitForURL(`${front.origin}/`, { timeout: 60_000 });
        }
        // A URL the browser has not cached: nginx serves the file with Last-Modified, so Chromium may show its copy
        // from the sign-in above without asking anyone (heuristic freshness), which says nothing about the session.
        await page.goto(`${front.origin}${FILE}?after=sign-out`);
        expect(new URL(page.url()).origin).toBe(keycloak.url);
        await expect(page.title()).resolves.toBe('Sign in to svc test realm');
      }, { browser, failureScreenshot: `browser-${front.name}-sign-out` });
    }, 180_000);

    it('a fetch() without navigation gets 401, never a redirect; with a session, the file', async () => {
      await withBrowser(async (page) => {
        await page.goto(`${front.origin}/authz/v1/protected`);
        const anonymous = await pageFetch(page, `${front.origin}${FILE}`);
        expect({ status: anonymous.status, redirected: anonymous.redirected }).toEqual({ status: 401, redirected: false });
        expect(anonymous.text).not.toContain(marker);
        expect(await signIn(page, front, 'alice')).toBe(200);
        const signedIn = await pageFetch(page, `${front.origin}${FILE}`);
        expect(signedIn.status).toBe(200);
        expect(signedIn.text).toContain(marker);
      }, { browser, failureScreenshot: `browser-${front.name}-fetch` });
    }, 180_000);

    it('executions: a form POST from a sibling site is refused (403); a same-origin fetch POST and wis2box-webapp\'s own request (blank Bearer) execute', async () => {
      await withBrowser(async (page) => {
        expect(await signIn(page, front, 'alice')).toBe(200);
        // Same site, another origin (another port): the Lax cookie is sent, the origin is not an external URL.
        const host = new URL(front.origin).hostname;
        await page.goto(`http://${host}:${siblingPort}/?action=${encodeURIComponent(`${front.origin}${EXECUTION}`)}`);
        const posted = page.waitForResponse((r) => r.url() === `${front.origin}${EXECUTION}` && r.request().method() === 'POST', { timeout: 60_000 });
        await page.getByRole('button', { name: 'Run' }).click();
        expect((await posted).status()).toBe(403);
        await page.waitForLoadState();
        expect(await page.content()).not.toContain(OAPI_MARKER);
        await page.goto(`${front.origin}${FILE}`);
        const same = await pageFetch(page, `${front.origin}${EXECUTION}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"inputs":{}}' });
        expect(same.status).toBe(200);
        expect(same.text).toContain(OAPI_MARKER);
        // wis2box-webapp's execution call as it sends it, its token field empty.
        const webapp = await pageFetch(page, `${front.origin}${EXECUTION}`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' }, body: JSON.stringify({ inputs: { data: 'AAXX', notify: true } }),
        });
        expect(webapp.status).toBe(200);
        expect(JSON.parse(webapp.text)).toMatchObject({ standin: OAPI_MARKER, method: 'POST', path: EXECUTION });
      }, { browser, failureScreenshot: `browser-${front.name}-csrf` });
    }, 180_000);

    it('bob (observers, granted by name on the file only) reads the file but his group executes nothing', async () => {
      await withBrowser(async (page) => {
        expect(await signIn(page, front, 'bob')).toBe(200);
        const refused = await pageFetch(page, `${front.origin}${EXECUTION}`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' }, body: '{}' });
        expect(refused.status).toBe(403);
        expect(refused.text).not.toContain(OAPI_MARKER);
      }, { browser, failureScreenshot: `browser-${front.name}-bob` });
    }, 180_000);

    it('rd to another host: signed in, the browser lands on / of the external URL', async () => {
      await withBrowser(async (page) => {
        await page.goto(`${front.origin}/authz/sign-in?rd=${encodeURIComponent('https://evil.example/phish')}`);
        await expect(page.title()).resolves.toBe('Sign in to svc test realm');
        await typeCredentials(page, 'alice');
        await page.waitForURL((u) => u.origin !== keycloak.url, { timeout: 60_000 });
        expect(page.url()).toBe(`${front.origin}/`);
      }, { browser, failureScreenshot: `browser-${front.name}-rd` });
    }, 180_000);
  });

  it('two svc-auth replicas behind nginx serve one session: each opens the cookie the other sealed', async () => {
    await withBrowser(async (page, context) => {
      expect(await signIn(page, nginxFront, 'alice')).toBe(200);
      const cookie = (await context.cookies(nginxFront.origin)).map((c) => `${c.name}=${c.value}`).join('; ');
      for (const r of replicas) {
        const res = await fetch(`http://127.0.0.1:${r.options.port}/authz/v1/session`, { headers: { cookie } });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ user: 'alice@example.org', groups: ['partners'] });
      }
      for (let i = 0; i < 4; i++) expect((await pageFetch(page, `${nginxFront.origin}${FILE}`)).status).toBe(200);
    }, { browser, failureScreenshot: 'browser-replicas' });
  }, 180_000);

  it('Keycloak stopped during sign-in: a clear error page, while tokens and sessions keep working; back, sign-in works again', async () => {
    await withBrowser(async (page) => {
      expect(await signIn(page, nginxFront, 'alice')).toBe(200);
      await withBrowser(async (fresh) => {
        // Keycloak goes away right after it accepted the login form, before svc-auth exchanges the code: its answer
        // (the redirect to the callback) is taken, Keycloak stopped, then the answer handed to the browser.
        await fresh.route((u) => u.origin === keycloak.url && u.pathname.endsWith('/login-actions/authenticate'), async (route) => {
          const response = await route.fetch({ maxRedirects: 0 });
          await keycloak.stop({ keepHome: true });
          await route.fulfill({ response });
        });
        await fresh.goto(`${nginxFront.origin}${FILE}`);
        await expect(fresh.title()).resolves.toBe('Sign in to svc test realm');
        const answered = fresh.waitForResponse((r) => new URL(r.url()).pathname === '/authz/callback', { timeout: 60_000 });
        await typeCredentials(fresh, 'bob');
        expect((await answered).status()).toBe(503);
        await fresh.waitForLoadState();
        expect(await fresh.textContent('body')).toContain('The sign-in provider cannot be reached.');
        await screenshot(fresh, 'sign-in-provider-down');
        expect((await fetch(`${nginxFront.origin}${FILE}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
        expect((await pageFetch(page, `${nginxFront.origin}${FILE}`)).status).toBe(200);
      }, { browser, failureScreenshot: 'browser-keycloak-down' }).finally(async () => {
        if (!keycloak.running) await keycloak.restart();
      });
    }, { browser, failureScreenshot: 'browser-keycloak-down-session' });
    await withBrowser(async (page) => expect(await signIn(page, nginxFront, 'bob')).toBe(200), { browser, failureScreenshot: 'browser-keycloak-back' });
    const logs = replicas.map((r) => r.output).join('\n') + readFileSync(nginx!.errorLogPath, 'utf8');
    for (const s of secrets) expect(logs.includes(s)).toBe(false);
  }, 300_000);

  it('the screenshots docs/sign-in.md shows are saved (SVC_UPDATE_SCREENSHOTS=1 copies them to docs/images)', () => {
    for (const name of ['sign-in-redirect', 'sign-in-403', 'sign-in-session']) {
      const path = screenshotPath(name);
      expect(readFileSync(path).subarray(1, 4).toString()).toBe('PNG');
      if (process.env.SVC_UPDATE_SCREENSHOTS === '1') copyFileSync(path, join(DOC_IMAGES, `${name}.png`));
    }
  });
});

/** The file backend Traefik routes /data/ to: the WAF tree as static files (JSON as JSON). */
function startFileServer(port: number, root: string): Promise<Server> {
  const server = createServer((req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    let body: Buffer;
    try {
      if (!path.startsWith(root)) throw new Error('outside');
      body = readFileSync(path);
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': path.endsWith('.json') ? 'application/json' : 'application/octet-stream' }).end(body);
  });
  return listen(server, port);
}

/** Another origin on the same site (another port): a page whose form posts to the execution given in ?action=. */
function startSibling(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const action = new URL(req.url ?? '/', 'http://x').searchParams.get('action') ?? '/';
    const escaped = action.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>sibling</title><form method="post" action="${escaped}"><input name="inputs" value="x"><button type="submit">Run</button></form>`);
  });
  return listen(server, port);
}

function listen(server: Server, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
