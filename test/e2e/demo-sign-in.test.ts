// `npm run demo:sign-in` (scripts/demo-sign-in.ts) as a person uses it: its core started on free ports, Debian's
// Chromium (test/support/browser.ts) opening a closed file, typing a user and the password the demo prints into
// Keycloak's login form, and landing on the file; a program without a session gets its 401; stop() leaves no port
// open and no directory behind. What the demo prints is checked against the realm and the scopes it serves, so the
// hint cannot promise a file the user may not open.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { demoHint, parseDemoArgs, startSignInDemo, type DemoUser, type SignInDemo } from '../../scripts/demo-sign-in.js';
import { chromiumSkipReason, launchChromium, withBrowser } from '../support/browser.js';
import { keycloakSkipReason } from '../support/keycloak.js';
import { canConnect, freePorts } from '../support/ports.js';
import { nginxPlan } from './support/nginx.js';

const plan = nginxPlan();
const skip = plan.action === 'skip' ? 'nginx is not available' : keycloakSkipReason() ?? chromiumSkipReason();
const suite = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`skipping the demo:sign-in suite: ${skip}\n`);

describe('the demo\'s flags', () => {
  it('are npm start\'s, on loopback: a port, :port or 127.0.0.1:port; anything else says what to write', () => {
    expect(parseDemoArgs([])).toEqual({ port: 8080, metricsPort: 9090 });
    expect(parseDemoArgs(['--listen', '8081', '--metrics-listen=:9091'])).toEqual({ port: 8081, metricsPort: 9091 });
    expect(parseDemoArgs(['--listen=127.0.0.1:8082'])).toEqual({ port: 8082, metricsPort: 9090 });
    expect(() => parseDemoArgs(['--listen', '0.0.0.0:8080'])).toThrow(/--listen 0.0.0.0:8080: write a port on 127.0.0.1/);
    expect(() => parseDemoArgs(['--port', '1'])).toThrow(/--port: unknown/);
    expect(() => parseDemoArgs(['--listen'])).toThrow(/--listen needs a value/);
  });
});

suite('npm run demo:sign-in: Keycloak, svc-auth with sign-in, nginx in front, a user signed in with Chromium', () => {
  let demo: SignInDemo;
  let browser: Browser;
  let ports: number[] = [];

  beforeAll(async () => {
    ports = await freePorts(2);
    const started = startSignInDemo({ port: ports[0]!, metricsPort: ports[1]!, log: (m) => process.stderr.write(`[demo] ${m}\n`) });
    browser = await launchChromium();
    demo = await started;
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
  }, 120_000);

  const user = (name: string): DemoUser => demo.users.find((u) => u.username === name)!;
  const closedFor = (u: DemoUser) => demo.files.find((f) => f.scope !== undefined && !u.mayOpen.includes(f))!;

  /** Opens `path`, signs in at Keycloak's form as `u` with the password the demo prints; the status back at `path`. */
  const signIn = async (page: Page, u: DemoUser, path: string): Promise<number> => {
    const target = `${demo.url}${path}`;
    await page.goto(target);
    // A browser's navigation to a closed file lands on Keycloak's login form (nginx turns svc-auth's X-Svc-Sign-In into the redirect).
    expect(new URL(page.url()).origin).toBe(demo.keycloak.url);
    const back = page.waitForResponse((r) => r.url() === target && r.request().isNavigationRequest(), { timeout: 60_000 });
    await page.getByLabel('Username or email').fill(u.username);
    await page.getByLabel('Password', { exact: true }).fill(u.password);
    await page.getByRole('button', { name: 'Sign In' }).click();
    return (await back).status();
  };

  it('prints the URL, each user with the password and what they may open, as the scopes grant it', () => {
    const hint = demoHint(demo);
    expect(hint).toContain(demo.url);
    for (const u of demo.users) expect(hint).toMatch(new RegExp(`${u.username} +password ${u.password}`));
    expect(user('alice').mayOpen.map((f) => f.scope!.value)).toEqual(['origin.a.wis2.mw-met.data.core']);
    expect(user('bob').mayOpen.map((f) => f.scope!.value)).toEqual(['urn:wmo:md:mw-met:obs']);
    expect(user('carol').mayOpen).toEqual([]);
  });

  it('a program without a session: 401 for a closed file, 200 for the open one', async () => {
    for (const f of demo.files) {
      const r = await fetch(`${demo.url}${f.path}`, { redirect: 'manual' });
      expect({ path: f.path, status: r.status }).toEqual({ path: f.path, status: f.scope ? 401 : 200 });
      await r.body?.cancel();
    }
  });

  it('alice signs in at Keycloak and gets her closed file; another closed file stays closed to her', async () => {
    const alice = user('alice');
    const mine = alice.mayOpen[0]!;
    await withBrowser(async (page) => {
      expect(await signIn(page, alice, mine.path)).toBe(200);
      expect(await page.textContent('body')).toContain(JSON.parse(demo.contents.get(mine.path)!).run);
      const other = await page.goto(`${demo.url}${closedFor(alice).path}`);
      expect(other?.status()).toBe(403);
      expect(await page.textContent('body')).toContain('alice@example.org');
    }, { browser, failureScreenshot: 'demo-sign-in-alice' });
  }, 180_000);

  it('stop() ends every process and removes the demo directory', async () => {
    const dir = dirname(demo.scopesDir);
    await demo.stop();
    expect(existsSync(dir)).toBe(false);
    expect(demo.keycloak.running).toBe(false);
    for (const port of [...ports, Number(new URL(demo.auth.url).port)]) expect(await canConnect(port)).toBe(false);
  }, 120_000);
});
