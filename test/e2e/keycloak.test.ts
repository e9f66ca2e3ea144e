// The real parts of browser sign-in, before svc-auth takes part: Keycloak (test/support/keycloak.ts) serving the svc
// realm of test/e2e/fixtures/keycloak-realm-svc.json, and Debian's Chromium (test/support/browser.ts) typing into its
// login form. A tiny relying party on a free loopback port stands where svc-auth's /authz/callback will: the browser
// is sent to Keycloak's authorization endpoint (code flow, PKCE S256, state, nonce), signs in as a person would,
// comes back with a code, and the test exchanges it at the token endpoint and verifies the ID token against the
// realm's published keys. Screenshots of the login page go to the artifacts directory.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkipReason, chromiumVersion, ensureChromium, launchChromium, screenshot, withBrowser } from '../support/browser.js';
import { Keycloak, keycloakSkipReason, readRealm } from '../support/keycloak.js';

const REALM_FILE = fileURLToPath(new URL('./fixtures/keycloak-realm-svc.json', import.meta.url));
const realm = readRealm(REALM_FILE);
const skip = keycloakSkipReason() ?? chromiumSkipReason();
const suite = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`skipping the Keycloak browser suite: ${skip}\n`);

const b64url = (b: Buffer): string => b.toString('base64url');

/** One authorization request: its URL and the secrets the relying party keeps for the callback. */
interface Request {
  readonly url: string;
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly redirectUri: string;
  readonly clientId: string;
}

suite('Keycloak and Chromium: the login form, the code, the ID token', () => {
  let keycloak: Keycloak;
  let browser: Browser;
  let rp: Server;
  let rpOrigin = '';

  beforeAll(async () => {
    // First runs install Chromium (apt), Keycloak (Maven Central, built once) and make the realm database: minutes.
    const binary = ensureChromium();
    process.stderr.write(`[keycloak suite] ${chromiumVersion(binary)}\n`);
    keycloak = await Keycloak.start({ realmFiles: [REALM_FILE] });
    browser = await launchChromium();
    // The relying party's callback: a page that only says it was reached (the test reads the code from the URL).
    rp = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>back at the relying party</title><p>signed in</p>'));
    await new Promise<void>((r) => rp.listen(0, '127.0.0.1', r));
    rpOrigin = `http://127.0.0.1:${(rp.address() as AddressInfo).port}`;
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await keycloak?.stop();
    if (rp) await new Promise((r) => rp.close(r));
  }, 120_000);

  const authorization = (clientId: string, pkce = true): Request => {
    const r = { state: b64url(randomBytes(16)), nonce: b64url(randomBytes(16)), verifier: b64url(randomBytes(32)), redirectUri: `${rpOrigin}/authz/callback`, clientId };
    const url = new URL(`${keycloak.issuer()}/protocol/openid-connect/auth`);
    const params: Record<string, string> = { client_id: clientId, response_type: 'code', scope: 'openid email', redirect_uri: r.redirectUri, state: r.state, nonce: r.nonce };
    if (pkce) Object.assign(params, { code_challenge: b64url(createHash('sha256').update(r.verifier).digest()), code_challenge_method: 'S256' });
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return { ...r, url: url.href };
  };

  /** Types the credentials into Keycloak's login form and submits it, as a person would. */
  const typeCredentials = async (page: Page, username: string, password: string): Promise<void> => {
    await page.getByLabel('Username or email').fill(username);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Sign In' }).click();
  };

  /** The browser's way through the login form back to the relying party; returns the callback's query. */
  const signIn = async (page: Page, request: Request, username: string, password: string, shot?: string): Promise<URLSearchParams> => {
    await page.goto(request.url);
    await expect(page.title()).resolves.toBe('Sign in to svc test realm');
    if (shot) await screenshot(page, shot);
    await typeCredentials(page, username, password);
    await page.waitForURL((u) => u.origin === rpOrigin, { timeout: 60_000 });
    const back = new URL(page.url());
    expect(back.pathname).toBe('/authz/callback');
    return back.searchParams;
  };

  /** The code exchanged at the token endpoint (client_secret_basic for a confidential client), the ID token verified. */
  const idTokenFor = async (request: Request, code: string): Promise<JWTPayload> => {
    const client = realm.clients[request.clientId]!;
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: request.redirectUri, code_verifier: request.verifier });
    if (client.secret) headers.authorization = `Basic ${Buffer.from(`${client.clientId}:${client.secret}`).toString('base64')}`;
    else form.set('client_id', client.clientId);
    const res = await fetch(`${keycloak.issuer()}/protocol/openid-connect/token`, { method: 'POST', headers, body: form });
    const body = (await res.json()) as { id_token?: string; error?: string };
    expect({ status: res.status, error: body.error }).toEqual({ status: 200, error: undefined });
    const jwks = createRemoteJWKSet(new URL(`${keycloak.issuer()}/protocol/openid-connect/certs`));
    const { payload } = await jwtVerify(body.id_token!, jwks, { issuer: keycloak.issuer(), audience: client.clientId });
    expect(payload.nonce).toBe(request.nonce);
    return payload;
  };

  it('alice signs in through the login form of the confidential client; her ID token says group partners and a verified email', async () => {
    const alice = realm.users.alice!;
    const request = authorization('svc-auth');
    const claims = await withBrowser(async (page) => {
      const back = await signIn(page, request, alice.username, alice.password, 'keycloak-login');
      expect(back.get('state')).toBe(request.state);
      return idTokenFor(request, back.get('code')!);
    }, { browser, failureScreenshot: 'keycloak-alice' });
    expect(claims).toMatchObject({ preferred_username: 'alice', email: 'alice@example.org', email_verified: true, groups: ['partners'], azp: 'svc-auth' });
  }, 180_000);

  it('bob signs in through the public client with PKCE; his ID token says group observers', async () => {
    const bob = realm.users.bob!;
    const request = authorization('svc-auth-public');
    const claims = await withBrowser(async (page) => idTokenFor(request, (await signIn(page, request, bob.username, bob.password)).get('code')!), { browser, failureScreenshot: 'keycloak-bob' });
    expect(claims).toMatchObject({ preferred_username: 'bob', email_verified: true, groups: ['observers'] });
  }, 180_000);

  it('carol, in no group, gets an ID token with no group', async () => {
    const carol = realm.users.carol!;
    const request = authorization('svc-auth');
    const claims = await withBrowser(async (page) => idTokenFor(request, (await signIn(page, request, carol.username, carol.password)).get('code')!), { browser, failureScreenshot: 'keycloak-carol' });
    expect(claims).toMatchObject({ preferred_username: 'carol', email_verified: true });
    expect(claims.groups ?? []).toEqual([]);
  }, 180_000);

  it('a wrong password keeps the browser at the login form, which says so', async () => {
    const request = authorization('svc-auth');
    await withBrowser(async (page) => {
      await page.goto(request.url);
      await typeCredentials(page, 'alice', 'not-her-password');
      await page.getByText('Invalid username or password.').waitFor({ timeout: 60_000 });
      expect(new URL(page.url()).origin).toBe(keycloak.url);
      await screenshot(page, 'keycloak-login-error');
    }, { browser, failureScreenshot: 'keycloak-wrong-password' });
  }, 180_000);

  it('the realm\'s administrator reaches the admin API: the groups are there, and a change is seen by the next sign-in', async () => {
    const groups = (await (await keycloak.adminFetch('/admin/realms/svc/groups')).json()) as { name: string }[];
    expect(groups.map((g) => g.name).sort()).toEqual(['observers', 'partners']);
    // carol joins observers: the next ID token says so (the harness is enough for tests that change the realm).
    const [carol] = (await (await keycloak.adminFetch('/admin/realms/svc/users?username=carol&exact=true')).json()) as { id: string }[];
    const observers = groups.find((g) => g.name === 'observers') as unknown as { id: string };
    expect((await keycloak.adminFetch(`/admin/realms/svc/users/${carol!.id}/groups/${observers.id}`, { method: 'PUT' })).status).toBe(204);
    const request = authorization('svc-auth');
    const c = realm.users.carol!;
    const claims = await withBrowser(async (page) => idTokenFor(request, (await signIn(page, request, c.username, c.password)).get('code')!), { browser, failureScreenshot: 'keycloak-carol-joined' });
    expect(claims.groups).toEqual(['observers']);
  }, 180_000);

  it('the public client refuses a request without PKCE: the browser comes back with invalid_request and no code', async () => {
    const request = authorization('svc-auth-public', false);
    const back = await withBrowser(async (page) => {
      await page.goto(request.url);
      await page.waitForURL((u) => u.origin === rpOrigin, { timeout: 60_000 });
      return new URL(page.url()).searchParams;
    }, { browser, failureScreenshot: 'keycloak-no-pkce' });
    expect({ error: back.get('error'), code: back.get('code'), state: back.get('state') }).toEqual({ error: 'invalid_request', code: null, state: request.state });
  }, 180_000);
});
