// Single sign-on end to end: ID tokens issued by a real OpenID provider (panva's oidc-provider, OpenID Certified,
// through its own code flow and token endpoint: ./support/oidc-provider.ts), presented through a real nginx
// configured as ingress-nginx's auth-url to svc-auth running with --oidc-issuer. A topic is closed by subjects only:
// user alice, group wis2-ops. Every rejection case of the issue, then key rotation and the provider going down.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, scopeObjectName, tokenIdOf } from '../../core/index.js';
import { buildWafTree, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { freePorts } from '../support/ports.js';
import { sleep } from '../support/wait.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { nginxConf } from './support/nginx-conf.js';
import { startOapiStandin, stopServer } from './support/oapi-standin.js';
import { OidcProvider } from './support/oidc-provider.js';
import { SvcAuth } from './support/svc-auth.js';

const plan = nginxPlan();
const suite = plan.action === 'skip' ? describe.skip : describe;
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

const USERS = {
  alice: { password: 'alice-pw-1', email: 'alice@example.org', groups: ['staff'] },
  bob: { password: 'bob-pw-2', email: 'bob@example.org', groups: ['staff', 'wis2-ops'] },
  mallory: { password: 'mallory-pw-3', email: 'mallory@example.org', groups: ['guests'] },
};
const CLIENTS = { 'svc-data': 'svc-data-secret', 'short-lived': 'short-lived-secret', 'other-app': 'other-app-secret' };

suite('single sign-on through nginx and svc-auth, with a real OpenID provider', () => {
  const secrets: string[] = [];
  let base: string;
  let waf: WafTree;
  let idp: OidcProvider;
  let stranger: OidcProvider;
  let auth: SvcAuth;
  let nginx: Nginx | undefined;
  let oapi: Server | undefined;
  let ingress = 0;

  const token = async (user: keyof typeof USERS, client: keyof typeof CLIENTS = 'svc-data', from: OidcProvider = idp) => {
    const t = await from.idToken(user, USERS[user].password, client);
    secrets.push(t);
    return t;
  };
  const get = async (path: string, authorization?: string) => {
    const res = await fetch(`http://127.0.0.1:${ingress}${path}`, { headers: authorization ? { authorization } : {} });
    return { status: res.status, body: await res.text(), challenge: res.headers.get('www-authenticate') ?? '' };
  };

  beforeAll(async () => {
    const binary = ensureNginx(plan);
    base = mkdtempSync(join(tmpdir(), 'svc-oidc-e2e-'));
    chmodSync(base, 0o755);
    const scopes = join(base, 'scopes');
    const prefix = join(base, 'nginx');
    for (const d of [scopes, join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    waf = buildWafTree(join(base, 'waf'));
    // The provider's tokens for the short-lived client expire after 1 s (the expired case).
    idp = new OidcProvider({ users: USERS, clients: CLIENTS, idTokenTtl: (client) => (client === 'short-lived' ? 1 : 300) });
    await idp.start();
    stranger = new OidcProvider({ users: USERS, clients: CLIENTS });
    await stranger.start();
    const object = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, []);
    writeFileSync(join(scopes, `${object.metadata.name}.yaml`), dumpManifests([{ ...object, spec: { ...object.spec, subjects: [{ kind: 'User', name: `${idp.issuer}#alice` }, { kind: 'Group', name: 'wis2-ops' }] } }]));
    const [ing, customErrors, original, uriOnly, authPort, metrics, oapiPort] = (await freePorts(7)) as [number, number, number, number, number, number, number];
    ingress = ing;
    oapi = await startOapiStandin(oapiPort);
    auth = new SvcAuth({ scopesDir: scopes, port: authPort, metricsPort: metrics, secrets, extraArgs: ['--oidc-issuer', idp.issuer, '--oidc-audience', 'svc-data', '--oidc-audience', 'short-lived', '--log-level', 'debug'] });
    await auth.start();
    nginx = await Nginx.start(binary, prefix, nginxConf({ prefix, wafRoot: waf.root, ports: { ingress, customErrors, original, uriOnly, auth: authPort, oapi: oapiPort } }), [ingress, customErrors, original, uriOnly]);
  }, 120_000);

  afterAll(async () => {
    await nginx?.stop();
    await auth?.stop();
    await stopServer(oapi);
    await idp?.stop();
    await stranger?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('without a credential the topic is closed (subjects alone close it)', async () => {
    expect((await get(WAF.topicFile)).status).toBe(401);
    expect((await get(WAF.openTopicFile)).status).toBe(200);
  });

  it('a user grant: alice\'s ID token opens it, as a Bearer token and as ?token=', async () => {
    const t = await token('alice');
    const r = await get(WAF.topicFile, `Bearer ${t}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain(waf.markers.topicFile);
    expect((await get(`${WAF.topicFile}?token=${t}`)).status).toBe(200);
  });

  it('a group grant: bob is in wis2-ops', async () => {
    expect((await get(WAF.topicFile, `Bearer ${await token('bob')}`)).status).toBe(200);
  });

  it('a valid token without a grant: 403 insufficient_scope', async () => {
    const r = await get(WAF.topicFile, `Bearer ${await token('mallory')}`);
    expect(r.status).toBe(403);
    expect(r.body).not.toContain(waf.markers.topicFile);
  });

  it('a wrong audience (another client\'s token): 401', async () => {
    expect((await get(WAF.topicFile, `Bearer ${await token('alice', 'other-app')}`)).status).toBe(401);
  });

  it('another issuer (a real provider svc-auth does not trust): 401', async () => {
    expect((await get(WAF.topicFile, `Bearer ${await token('alice', 'svc-data', stranger)}`)).status).toBe(401);
  });

  it('a tampered payload (alice\'s token made to say bob, in wis2-ops): 401', async () => {
    const [h, p, s] = (await token('alice')).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${h}.${b64({ ...claims, sub: 'mallory', groups: ['wis2-ops'] })}.${s}`;
    expect((await get(WAF.topicFile, `Bearer ${forged}`)).status).toBe(401);
  });

  it('alg none (the payload of a real token, unsigned): 401', async () => {
    const [, p] = (await token('alice')).split('.') as [string, string];
    expect((await get(WAF.topicFile, `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${p}.`)).status).toBe(401);
  });

  it('an expired token (past exp and the 30 s skew): 401, where it was 200', async () => {
    const t = await token('alice', 'short-lived');
    expect((await get(WAF.topicFile, `Bearer ${t}`)).status).toBe(200);
    await sleep(32_500);
    expect((await get(WAF.topicFile, `Bearer ${t}`)).status).toBe(401);
  }, 60_000);

  it('key rotation at the provider (a restart with a new signing key) is picked up without restarting svc-auth', async () => {
    const before = await token('alice');
    await idp.stop();
    await idp.start();
    const after = await token('alice');
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).not.toBe(JSON.parse(Buffer.from(before.split('.')[0]!, 'base64url').toString()).kid);
    expect((await get(WAF.topicFile, `Bearer ${after}`)).status).toBe(200);
    // svc-auth follows the provider's JWKS: the retired key, no longer published, no longer verifies.
    expect((await get(WAF.topicFile, `Bearer ${before}`)).status).toBe(401);
  }, 30_000);

  it('the provider stopped: tokens signed by cached keys keep verifying; tokens are never logged', async () => {
    const t = await token('bob');
    await idp.stop();
    expect((await get(WAF.topicFile, `Bearer ${t}`)).status).toBe(200);
    // A forged token with an unknown key id is refused (the JWKS cannot be fetched, and the cooldown bounds tries).
    const [, p] = t.split('.') as [string, string, string];
    expect((await get(WAF.topicFile, `Bearer ${b64({ alg: 'RS256', kid: 'unknown' })}.${p}.c2ln`)).status).toBe(401);
    // Debug: a line per grant (at info they are summed a minute at a time); the JWT is in none of them.
    const out = auth.output;
    // Users carry their issuer (kube-apiserver's default prefix for a sub); groups are not prefixed by default.
    expect(out).toContain(`"user":"${idp.issuer}#alice"`);
    expect(out).toContain(`"user":"${idp.issuer}#bob","group":"wis2-ops"`);
    expect(secrets.length).toBeGreaterThan(8);
    for (const s of secrets) expect(out.includes(s) || out.includes(s.split('.')[2]!)).toBe(false);
  }, 30_000);
});

// Issue 27 item 3, through the real process: svc-auth as a child process with --oidc-issuer, asked directly on its
// nginx endpoint (no nginx needed); the credentials expire sooner than --cache-max-age (600 s here), so exp is the bound.
describe('a grant is cacheable no longer than its credential lives (svc-auth process, real OpenID provider)', () => {
  const secrets: string[] = [];
  let base: string;
  let idp: OidcProvider;
  let auth: SvcAuth;
  /** A token of the store that expires in 300 s, sooner than --cache-max-age (600 s). */
  const soonToken = formatGeneratedToken(randomBytes(32));
  let soonExp = 0;

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'svc-oidc-cache-'));
    const scopes = join(base, 'scopes');
    mkdirSync(scopes);
    secrets.push(soonToken);
    idp = new OidcProvider({ users: USERS, clients: CLIENTS, idTokenTtl: 60 });
    await idp.start();
    soonExp = Math.floor(Date.now() / 1000) + 300;
    const hash = hashToken(soonToken);
    const record = { id: tokenIdOf(hash), hash, createdAt: new Date().toISOString(), expiresAt: new Date(soonExp * 1000).toISOString() };
    const object = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, [record]);
    writeFileSync(join(scopes, `${object.metadata.name}.yaml`), dumpManifests([{ ...object, spec: { ...object.spec, subjects: [{ kind: 'User', name: `${idp.issuer}#alice` }] } }]));
    const [port, metrics] = (await freePorts(2)) as [number, number];
    auth = new SvcAuth({ scopesDir: scopes, port, metricsPort: metrics, secrets, extraArgs: ['--oidc-issuer', idp.issuer, '--oidc-audience', 'svc-data', '--cache-max-age', '600'] });
    await auth.start();
  }, 120_000);

  afterAll(async () => {
    await auth?.stop();
    await idp?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  /** The answer on the nginx endpoint, and the most seconds it may be cached: the credential's exp less the clock before asking. */
  const ask = async (credential: string, exp: number) => {
    const before = Date.now();
    const res = await fetch(`http://127.0.0.1:${auth.port}/authz/auth-request`, {
      headers: { 'X-Original-URL': `http://data.example.org${WAF.topicFile}`, 'X-Original-Method': 'GET', authorization: `Bearer ${credential}` },
    });
    await res.arrayBuffer();
    return { status: res.status, accel: Number(res.headers.get('x-accel-expires')), cacheControl: res.headers.get('cache-control'), most: Math.max(0, exp - Math.floor(before / 1000)) };
  };

  it('a JWT whose exp is sooner than --cache-max-age: X-Accel-Expires within exp, first and when decided from the verification cache', async () => {
    const jwt = await idp.idToken('alice', USERS.alice.password, 'svc-data');
    secrets.push(jwt);
    const exp = (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp;
    expect(exp * 1000 - Date.now()).toBeLessThan(600_000); // sooner than --cache-max-age: the bound that matters is exp
    const answers = [await ask(jwt, exp), await ask(jwt, exp)];
    for (const a of answers) {
      expect([a.status, a.cacheControl]).toEqual([200, 'no-store']);
      expect(a.accel).toBeGreaterThan(0); // still cacheable (for tens of seconds): bounded, not switched off
      expect(a.accel).toBeLessThanOrEqual(a.most);
    }
    for (const s of secrets) expect(auth.output.includes(s)).toBe(false);
  });

  it('a token whose expiry is sooner than --cache-max-age: the same bound', async () => {
    for (const a of [await ask(soonToken, soonExp), await ask(soonToken, soonExp)]) {
      expect([a.status, a.cacheControl]).toEqual([200, 'no-store']);
      expect(a.accel).toBeGreaterThan(0);
      expect(a.accel).toBeLessThanOrEqual(a.most);
    }
  });
});
