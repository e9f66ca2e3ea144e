import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { pino } from 'pino';
import { buildIndex, compileSnapshot, DEFAULT_CONFIG, newProtectedScope, type AccessIndex } from '../../core/index.js';
import { OidcVerifier, type OidcOptions } from './oidc.js';
import { issuersFromFlags, type OidcFlags } from './oidc-config.js';
import { createPki } from '../../test/controlplane/pki.js';
import { poll } from '../../test/support/wait.js';
import { startServer, type RunningServer } from '../server.js';
import type { SnapshotSink, SnapshotSource } from '../sources/source.js';

// The verifier and the JWT path of the server against a provider on 127.0.0.1 serving discovery and a JWKS of
// keys made here with jose: every rejection case, the kid-flood bound, rotation, and the provider going down.
// The suite against a real OpenID provider (Dex) is test/e2e/oidc.test.ts.

const AUD = 'svc-data';
const quiet = pino({ level: 'silent' });

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
interface Key {
  kid: string;
  privateKey: PrivateKey;
  jwk: JWK;
}

async function newKey(kid: string, alg: 'RS256' | 'ES256' = 'RS256'): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

class Provider {
  keys: Key[] = [];
  jwksRequests = 0;
  up = true;
  /** The JWKS one byte every `trickleMs` (a provider that never finishes), or whole after `delayMs`. */
  trickleMs = 0;
  delayMs = 0;
  /** Trickled JWKS transfers the client gave up on (a trickle never finishes, so each close is the client's). */
  trickledCut = 0;
  private server!: Server;
  issuer = '';

  constructor(private readonly tls?: { cert: string; key: string }) {}

  async start(): Promise<void> {
    const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      if (!this.up) {
        res.writeHead(503).end();
        return;
      }
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: this.issuer, jwks_uri: `${this.issuer}/keys` }));
      } else if (req.url === '/keys') {
        this.jwksRequests++;
        const body = JSON.stringify({ keys: this.keys.map((k) => k.jwk) });
        if (this.trickleMs > 0) return trickle(res, body, this.trickleMs, () => this.trickledCut++);
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body), this.delayMs);
      } else res.writeHead(404).end();
    };
    this.server = this.tls ? createHttpsServer({ cert: readFileSync(this.tls.cert), key: readFileSync(this.tls.key) }, handler) : createServer(handler);
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.issuer = `${this.tls ? 'https' : 'http'}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeAllConnections();
    return closed;
  }

  sign(key: Key, claims: Record<string, unknown> = {}, opts: { aud?: string; iss?: string; exp?: number; iat?: number; alg?: string; noKid?: boolean } = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const alg = opts.alg ?? (key.jwk.alg as string);
    return new SignJWT({ sub: 'alice', groups: ['ops', 'staff'], ...claims })
      .setProtectedHeader(opts.noKid ? { alg } : { alg, kid: key.kid })
      .setIssuer(opts.iss ?? this.issuer)
      .setAudience(opts.aud ?? AUD)
      .setIssuedAt(opts.iat ?? now)
      .setExpirationTime(opts.exp ?? now + 300)
      .sign(key.privateKey);
  }
}

/** A byte of `body` every `ms` until the connection closes: an idle timeout never fires, the transfer never ends. */
function trickle(res: import('node:http').ServerResponse, body: string, ms: number, onCut: () => void): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  let i = 0;
  const t = setInterval(() => (i < body.length - 1 ? res.write(body[i++]!) : undefined), ms);
  res.on('close', () => {
    clearInterval(t);
    onCut();
  });
}

/** The issuer as the flags configure it (kube-apiserver's defaults: `sub` usernames prefixed by the issuer URL and `#`). */
const flags = (issuer: string, extra: Partial<OidcFlags> = {}): OidcFlags => ({ issuers: [issuer], audiences: [AUD], usernameClaim: 'sub', groupsClaim: 'groups', requiredClaims: [], ...extra });
const options = (issuer: string, extra: Partial<OidcOptions> = {}, f: Partial<OidcFlags> = {}): OidcOptions => ({ issuers: issuersFromFlags(flags(issuer, f)), refreshIntervalMs: 0, ...extra });
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('OidcVerifier', () => {
  const idp = new Provider();
  let k1: Key;
  let fetches: boolean[];
  let verifier: OidcVerifier;

  beforeAll(async () => {
    await idp.start();
    k1 = await newKey('k1');
    idp.keys = [k1];
    fetches = [];
    verifier = new OidcVerifier(options(idp.issuer, { refetchCooldownMs: 60_000 }), { jwksFetch: (_i, ok) => fetches.push(ok) }, quiet);
    await verifier.start();
  });
  afterAll(async () => {
    verifier.stop();
    await idp.stop();
  });

  it('a valid JWT is an identity: issuer, username claim, groups claim, exp', async () => {
    const v = await verifier.verify(await idp.sign(k1), idp.issuer);
    expect(v).toMatchObject({ ok: true, identity: { issuer: idp.issuer, user: `${idp.issuer}#alice`, groups: ['ops', 'staff'] } });
    expect(fetches).toEqual([true]);
  });

  it.each([
    ['wrong audience', () => idp.sign(k1, {}, { aud: 'someone-else' }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['expired (beyond the skew)', () => idp.sign(k1, {}, { exp: Math.floor(Date.now() / 1000) - 120 }), 'ERR_JWT_EXPIRED'],
    ['not yet valid', () => idp.sign(k1, { nbf: Math.floor(Date.now() / 1000) + 600 }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['issued in the future', () => idp.sign(k1, {}, { iat: Math.floor(Date.now() / 1000) + 600 }), 'iat in the future'],
    ['no username claim', () => idp.sign(k1, { sub: undefined }), 'no sub claim'],
  ])('refuses a JWT: %s', async (_name, make, reason) => {
    const v = await verifier.verify(await make(), idp.issuer);
    expect(v.ok).toBe(false);
    if (!v.ok && reason) expect(v.reason).toContain(reason);
  });

  it('refuses a tampered payload (the signature no longer matches)', async () => {
    const [h, , s] = (await idp.sign(k1)).split('.');
    const forged = `${h}.${b64({ iss: idp.issuer, aud: AUD, sub: 'root', groups: ['admins'], iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 60 })}.${s}`;
    expect(await verifier.verify(forged, idp.issuer)).toMatchObject({ ok: false, reason: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  });

  it('refuses alg none and HMAC signed with the public key', async () => {
    const claims = b64({ iss: idp.issuer, aud: AUD, sub: 'alice', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 60 });
    expect((await verifier.verify(`${b64({ alg: 'none' })}.${claims}.`, idp.issuer)).ok).toBe(false);
    // The classic confusion: HS256 keyed with the RSA public key's bytes, as a naive verifier would accept it.
    const { createHmac } = await import('node:crypto');
    const head = b64({ alg: 'HS256', kid: 'k1' });
    const mac = createHmac('sha256', JSON.stringify(k1.jwk)).update(`${head}.${claims}`).digest('base64url');
    expect(await verifier.verify(`${head}.${claims}.${mac}`, idp.issuer)).toMatchObject({ ok: false, reason: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  });

  it("refuses a JWT signed by another key (another issuer's, or a forger's)", async () => {
    const stranger = await newKey('k1'); // same kid, other key
    expect(await verifier.verify(await idp.sign(stranger), idp.issuer)).toMatchObject({ ok: false, reason: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  });

  it('a sign-in ID token: verified the same way but for the sign-in client id, and never cached for bearer use', async () => {
    const idToken = await idp.sign(k1, {}, { aud: 'svc-browser' });
    expect(await verifier.verifyIdToken(idToken, idp.issuer, 'svc-browser')).toMatchObject({ ok: true, identity: { user: `${idp.issuer}#alice`, groups: ['ops', 'staff'] } });
    // The same token as a bearer: the bearer audience applies (and nothing was cached that would skip it).
    expect(await verifier.verify(idToken, idp.issuer)).toMatchObject({ ok: false, reason: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
    expect(verifier.known(idToken, 'bearer')).toBeUndefined();
    expect(await verifier.verifyIdToken(await idp.sign(k1), idp.issuer, 'svc-browser')).toMatchObject({ ok: false, reason: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
    expect(await verifier.verifyIdToken(await idp.sign(k1, {}, { aud: 'svc-browser', exp: Math.floor(Date.now() / 1000) - 120 }), idp.issuer, 'svc-browser')).toMatchObject({ ok: false, reason: 'ERR_JWT_EXPIRED' });
    expect(await verifier.verifyIdToken(idToken, 'https://other.example.org', 'svc-browser')).toMatchObject({ ok: false, reason: 'issuer not configured' });
  });

  it('a flood of unknown kids fetches the JWKS at most once per cooldown', async () => {
    const before = idp.jwksRequests;
    for (let i = 0; i < 50; i++) {
      const v = await verifier.verify(await idp.sign(await newKey(`random-${i}`, 'ES256')), idp.issuer);
      expect(v.ok).toBe(false);
    }
    expect(idp.jwksRequests - before).toBeLessThanOrEqual(1);
  });
});

describe('OidcVerifier: rotation and outages', () => {
  it('picks up a rotated key without a restart, keeps verifying with cached keys while the provider is down', async () => {
    const idp = new Provider();
    await idp.start();
    const k1 = await newKey('k1');
    idp.keys = [k1];
    const verifier = new OidcVerifier(options(idp.issuer, { refetchCooldownMs: 0 }), { jwksFetch: () => undefined }, quiet);
    await verifier.start();
    const first = await idp.sign(k1);
    expect((await verifier.verify(first, idp.issuer)).ok).toBe(true);
    expect((await verifier.verify(first, idp.issuer)).ok).toBe(true); // the repeat is answered from the cache
    // Rotation: the provider signs with k2 from now on.
    const k2 = await newKey('k2');
    idp.keys = [k1, k2];
    expect((await verifier.verify(await idp.sign(k2), idp.issuer)).ok).toBe(true);
    expect((await verifier.verify(first, idp.issuer)).ok).toBe(true);
    // k1 withdrawn (compromised, say): once the key set is refetched, the cached verification of `first` is not used.
    idp.keys = [k2];
    expect((await verifier.verify(await idp.sign(await newKey('k9')), idp.issuer)).ok).toBe(false); // unknown kid: refetch
    expect(await verifier.verify(first, idp.issuer)).toMatchObject({ ok: false });
    // Down: cached keys keep verifying.
    idp.up = false;
    expect((await verifier.verify(await idp.sign(k2), idp.issuer)).ok).toBe(true);
    expect((await verifier.verify(await idp.sign(await newKey('k3')), idp.issuer)).ok).toBe(false);
    verifier.stop();
    await idp.stop();
  });

  it('without keys yet (provider down from the start), JWTs are refused as unavailable', async () => {
    const idp = new Provider();
    await idp.start();
    idp.up = false;
    const k1 = await newKey('k1');
    idp.keys = [k1];
    const verifier = new OidcVerifier(options(idp.issuer, { refetchCooldownMs: 0 }), { jwksFetch: () => undefined }, quiet);
    await verifier.start();
    expect(await verifier.verify(await idp.sign(k1), idp.issuer)).toMatchObject({ ok: false, unavailable: true });
    idp.up = true;
    expect((await verifier.verify(await idp.sign(k1), idp.issuer)).ok).toBe(true);
    verifier.stop();
    await idp.stop();
  });
});

describe('OidcVerifier: a provider with a private CA (--oidc-ca-file)', () => {
  it('fetches its keys over TLS only when the CA is given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-oidc-ca-'));
    const pki = createPki(dir);
    const idp = new Provider(pki.serving);
    await idp.start();
    const k1 = await newKey('k1');
    idp.keys = [k1];
    const jwt = await idp.sign(k1);
    const untrusting = new OidcVerifier(options(idp.issuer), { jwksFetch: () => undefined }, quiet);
    await untrusting.start();
    expect(await untrusting.verify(jwt, idp.issuer)).toMatchObject({ ok: false, unavailable: true });
    const trusting = new OidcVerifier(options(idp.issuer, { caFile: pki.ca.cert }), { jwksFetch: () => undefined }, quiet);
    await trusting.start();
    expect(await trusting.verify(jwt, idp.issuer)).toMatchObject({ ok: true, identity: { user: `${idp.issuer}#alice` } });
    expect(idp.jwksRequests).toBe(1);
    untrusting.stop();
    trusting.stop();
    await idp.stop();
    rmSync(dir, { recursive: true, force: true });
  });
});

// ---- through the server: the answers and the audit line ----

class StaticSource implements SnapshotSource {
  readonly kind = 'static';
  readonly origin = 'test';
  constructor(private readonly index: AccessIndex) {}
  start(sink: SnapshotSink): Promise<void> {
    sink.loaded({ index: this.index, origin: this.origin, loadMs: 0 });
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

function ask(base: string, target: string, authorization?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const { hostname, port } = new URL(base);
  const headers: Record<string, string> = { 'X-Original-URL': `https://data.example.org${target}`, 'X-Original-Method': 'GET', ...(authorization ? { Authorization: authorization } : {}) };
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path: '/authz/auth-request', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('svc-auth with --oidc-issuer', () => {
  const idp = new Provider();
  const log = new Capture();
  let k1: Key;
  let server: RunningServer;
  const topicFile = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4';

  beforeAll(async () => {
    await idp.start();
    k1 = await newKey('k1');
    idp.keys = [k1];
    const base = newProtectedScope({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, 'core', undefined, []);
    const s = compileSnapshot([{ ...base, spec: { ...base.spec, subjects: [{ kind: 'User', name: `${idp.issuer}#alice` }, { kind: 'Group', name: 'ops' }] } }]);
    const index = buildIndex(s.generation, s.lines);
    if (!index.ok) throw new Error(index.error);
    server = await startServer({
      listen: { host: '127.0.0.1', port: 0 }, metricsListen: { host: '127.0.0.1', port: 0 }, access: DEFAULT_CONFIG,
      source: new StaticSource(index.value), logger: pino({ level: 'debug' }, log),
      oidc: options(idp.issuer, { refetchCooldownMs: 60_000 }), usageWindowMs: 100,
    });
    await server.firstLoad;
    // The keys are fetched in the background at start.
    for (let i = 0; i < 100 && idp.jwksRequests === 0; i++) await new Promise((r) => setTimeout(r, 20));
  });
  afterAll(async () => {
    await server.shutdown();
    await idp.stop();
  });

  it('a user grant: 200 with X-Auth-Request-User; the audit lines name issuer and user, never the JWT', async () => {
    const jwt = await idp.sign(k1, { groups: [] });
    const r = await ask(server.url, topicFile, `Bearer ${jwt}`);
    expect(r.status).toBe(200);
    expect(r.headers['x-auth-request-user']).toBe(`${idp.issuer}#alice`);
    expect(r.headers['x-auth-request-group']).toBeUndefined();
    // The per-grant line at debug; at info, the grants summed per scope and identity.
    expect(log.text).toMatch(/"level":"debug".*"outcome":"granted".*"issuer":"(http:\/\/127\.0\.0\.1:\d+)","user":"\1#alice"/);
    await new Promise((r) => setTimeout(r, 250)); // one usage window (100 ms here)
    expect(log.text).toMatch(/"level":30.*"scope":"topic:origin\.a\.wis2\.mw-met\.data\.core","issuer":"(http:\/\/127\.0\.0\.1:\d+)","user":"\1#alice","granted":1.*"msg":"identities used"/);
    expect(log.text).not.toContain(jwt);
    expect(log.text).not.toContain(jwt.split('.')[2]!);
  });

  it('a group grant, also as ?token=: 200 with X-Auth-Request-Group', async () => {
    const jwt = await idp.sign(k1, { sub: 'carol', groups: ['staff', 'ops'] });
    const r = await ask(server.url, `${topicFile}?token=${jwt}`);
    expect(r.status).toBe(200);
    expect(r.headers['x-auth-request-user']).toBe(`${idp.issuer}#carol`);
    expect(r.headers['x-auth-request-group']).toBe('ops');
  });

  it('a valid JWT without a grant: 403 insufficient_scope', async () => {
    const r = await ask(server.url, topicFile, `Bearer ${await idp.sign(k1, { sub: 'mallory', groups: ['guests'] })}`);
    expect(r.status).toBe(403);
    expect(r.headers['www-authenticate']).toContain('error="insufficient_scope"');
  });

  it.each([
    ['wrong audience', () => idp.sign(k1, {}, { aud: 'other' })],
    ['expired', () => idp.sign(k1, {}, { exp: Math.floor(Date.now() / 1000) - 120 })],
    ['alg none', async () => `${b64({ alg: 'none' })}.${b64({ iss: idp.issuer, aud: AUD, sub: 'alice', iat: 1, exp: 4102444800 })}.`],
  ])('a JWT that does not verify (%s): 401 invalid_token', async (_name, make) => {
    const r = await ask(server.url, topicFile, `Bearer ${await make()}`);
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('metrics count JWT decisions and JWKS fetches', async () => {
    const text = await fetch(`${server.metricsUrl}/metrics`).then((r) => r.text());
    expect(text).toMatch(/svc_auth_jwt_decisions_total\{outcome="granted",failure=""\} [1-9]/);
    expect(text).toMatch(/svc_auth_jwt_decisions_total\{outcome="invalid-token",failure="ERR_JWT_EXPIRED"\} 1/);
    expect(text).toMatch(/svc_auth_oidc_jwks_fetches_total\{issuer="http:\/\/127\.0\.0\.1:\d+",result="ok"\} 1/);
  });
});

// ---- the third attack round: each finding against a real provider on 127.0.0.1 ----

const TOPIC_FILE = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4';
/** Providers and servers of the test running, stopped after it whether it passed or not (a failure must not hang jest). */
const running: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of running.splice(0).reverse()) await stop().catch(() => undefined);
});

async function serveWith(subjects: { kind: 'User' | 'Group'; name: string }[], oidc: OidcOptions): Promise<RunningServer> {
  const base = newProtectedScope({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, 'core', undefined, []);
  const s = compileSnapshot([{ ...base, spec: { ...base.spec, subjects } }]);
  const index = buildIndex(s.generation, s.lines);
  if (!index.ok) throw new Error(index.error);
  const server = await startServer({
    listen: { host: '127.0.0.1', port: 0 }, metricsListen: { host: '127.0.0.1', port: 0 }, access: DEFAULT_CONFIG,
    source: new StaticSource(index.value), logger: quiet, oidc,
  });
  await server.firstLoad;
  running.push(() => server.shutdown());
  return server;
}

async function providerWith(...kids: string[]): Promise<{ idp: Provider; keys: Key[] }> {
  const idp = new Provider();
  await idp.start();
  running.push(() => idp.stop());
  const keys = await Promise.all(kids.map((k) => newKey(k)));
  idp.keys = keys;
  return { idp, keys };
}

describe('finding 1: subjects are per issuer (prefixed as kube-apiserver prefixes them)', () => {
  it("B's alice does not get A's alice's grants, nor B's partners A's partners' (prefixes from the AuthenticationConfiguration)", async () => {
    const a = await providerWith('ka');
    const b = await providerWith('kb');
    const { parseAuthenticationConfiguration } = await import('./oidc-config.js');
    const file = ['apiVersion: apiserver.config.k8s.io/v1', 'kind: AuthenticationConfiguration', 'jwt:',
      ...[[a.idp.issuer, 'a:'], [b.idp.issuer, 'b:']].flatMap(([url, p]) => [
        `- issuer: {url: "${url}", audiences: [${AUD}]}`,
        `  claimMappings: {username: {claim: sub, prefix: "${p}"}, groups: {claim: groups, prefix: "${p}"}}`,
      ])].join('\n');
    const server = await serveWith([{ kind: 'User', name: 'a:alice' }, { kind: 'Group', name: 'a:partners' }], { issuers: parseAuthenticationConfiguration(file, 'auth.yaml'), refreshIntervalMs: 0 });
    try {
      await new Promise((r) => setTimeout(r, 200)); // keys fetched at start
      const ask1 = async (idp: Provider, key: Key, claims: Record<string, unknown>) => (await ask(server.url, TOPIC_FILE, `Bearer ${await idp.sign(key, claims)}`)).status;
      expect(await ask1(a.idp, a.keys[0]!, { sub: 'alice', groups: [] })).toBe(200);
      expect(await ask1(a.idp, a.keys[0]!, { sub: 'dave', groups: ['partners'] })).toBe(200);
      expect(await ask1(b.idp, b.keys[0]!, { sub: 'alice', groups: [] })).toBe(403);
      expect(await ask1(b.idp, b.keys[0]!, { sub: 'dave', groups: ['partners'] })).toBe(403);
    } finally {
      await server.shutdown();
      await a.idp.stop();
      await b.idp.stop();
    }
  });

  it("with the flags, a sub is the issuer URL, '#' and the sub (kube-apiserver's default); '-' keeps the bare claim", async () => {
    const { idp, keys } = await providerWith('k1');
    const jwt = await idp.sign(keys[0]!);
    for (const [prefix, user] of [[undefined, `${idp.issuer}#alice`], ['-', 'alice'], ['corp:', 'corp:alice']] as const) {
      const v = new OidcVerifier(options(idp.issuer, {}, prefix === undefined ? {} : { usernamePrefix: prefix, groupsPrefix: 'corp:' }), { jwksFetch: () => undefined }, quiet);
      await v.start();
      expect(await v.verify(jwt, idp.issuer)).toMatchObject({ ok: true, identity: { user, groups: prefix === undefined ? ['ops', 'staff'] : ['corp:ops', 'corp:staff'] } });
      v.stop();
    }
    await idp.stop();
  });
});

describe('finding 2: email_verified with the email username claim', () => {
  it('refuses email_verified false (or not a boolean true); accepts true, and its absence as kube-apiserver does', async () => {
    const { idp, keys } = await providerWith('k1');
    const v = new OidcVerifier(options(idp.issuer, {}, { usernameClaim: 'email' }), { jwksFetch: () => undefined }, quiet);
    await v.start();
    const email = 'alice@example.org';
    expect(await v.verify(await idp.sign(keys[0]!, { email, email_verified: false }), idp.issuer)).toMatchObject({ ok: false, reason: 'email not verified' });
    expect(await v.verify(await idp.sign(keys[0]!, { email, email_verified: 'true' }), idp.issuer)).toMatchObject({ ok: false, reason: 'email not verified' });
    expect(await v.verify(await idp.sign(keys[0]!, { email, email_verified: true }), idp.issuer)).toMatchObject({ ok: true, identity: { user: email } });
    expect(await v.verify(await idp.sign(keys[0]!, { email }), idp.issuer)).toMatchObject({ ok: true, identity: { user: email } });
    v.stop();
    await idp.stop();
  });

  it('through the server: an unverified email is 401, not a grant', async () => {
    const { idp, keys } = await providerWith('k1');
    const server = await serveWith([{ kind: 'User', name: 'alice@example.org' }], options(idp.issuer, {}, { usernameClaim: 'email' }));
    try {
      const r = await ask(server.url, TOPIC_FILE, `Bearer ${await idp.sign(keys[0]!, { email: 'alice@example.org', email_verified: false, groups: [] })}`);
      expect(r.status).toBe(401);
    } finally {
      await server.shutdown();
      await idp.stop();
    }
  });
});

describe('finding 4: a deadline on the whole key load, a bound on waiting requests, recovery', () => {
  it('a provider trickling its JWKS a byte at a time: the load ends at the deadline, and the next one recovers', async () => {
    const { idp, keys } = await providerWith('k1');
    idp.trickleMs = 20; // never 5 s of silence: an idle timeout never fires
    const v = new OidcVerifier(options(idp.issuer, { fetchTimeoutMs: 400, refetchCooldownMs: 0 }), { jwksFetch: () => undefined }, quiet);
    const jwt = await idp.sign(keys[0]!);
    await v.start();
    // The transfer never finishes, so start() returning at all means the verifier cut it: the provider saw that.
    await poll(() => idp.trickledCut === 1, 3000, 'the provider to see the transfer cut');
    expect(await v.verify(jwt, idp.issuer)).toMatchObject({ ok: false, unavailable: true });
    idp.trickleMs = 0;
    expect(await v.verify(jwt, idp.issuer)).toMatchObject({ ok: true });
    v.stop();
    await idp.stop();
  });

  it('at most maxWaiting requests wait for keys; the others are refused at once (through the server: unavailable)', async () => {
    const { idp, keys } = await providerWith('k1');
    idp.trickleMs = 50;
    // A deadline far beyond the 8 immediate refusals, so the moment they are in, the other 4 are still waiting.
    const server = await serveWith([{ kind: 'User', name: 'x' }], options(idp.issuer, { fetchTimeoutMs: 3000, maxWaiting: 4, refetchCooldownMs: 0 }));
    try {
      const jwt = await idp.sign(keys[0]!);
      let answered = 0;
      const all = Promise.all(Array.from({ length: 12 }, () => ask(server.url, TOPIC_FILE, `Bearer ${jwt}`).then((r) => (answered++, r.status))));
      // 8 past the bound are answered while the (never-ending) key load still runs; the 4 waiting ones are not.
      await poll(() => answered >= 8, 2500, '8 answers');
      expect({ answered, cut: idp.trickledCut }).toEqual({ answered: 8, cut: 0 });
      // The deadline cuts the load, and the 4 waiting ones are answered then: unavailable, 403 on the nginx endpoint.
      expect(await all).toEqual(Array(12).fill(403));
      await poll(() => idp.trickledCut === 1, 3000, 'the provider to see the key load cut');
    } finally {
      await server.shutdown();
      await idp.stop();
    }
  }, 15_000);
});

describe('finding 8: shutdown drains a JWT request waiting for a slow provider', () => {
  it('a JWT request in flight at shutdown gets its answer (200), not a reset', async () => {
    const { idp, keys } = await providerWith('k1');
    idp.delayMs = 600;
    const server = await serveWith([{ kind: 'User', name: `${idp.issuer}#alice` }], options(idp.issuer));
    const pending = ask(server.url, TOPIC_FILE, `Bearer ${await idp.sign(keys[0]!)}`);
    await new Promise((r) => setTimeout(r, 100)); // the request waits on the key load the start began
    const closing = server.shutdown();
    expect((await pending).status).toBe(200);
    await closing;
    await idp.stop();
  });
});

describe('finding 9: several keys for one kid, or no kid', () => {
  it('a genuine JWT verifies whichever of the candidate keys signed it', async () => {
    const { idp, keys } = await providerWith('k1', 'k1');
    const v = new OidcVerifier(options(idp.issuer), { jwksFetch: () => undefined }, quiet);
    await v.start();
    for (const key of keys) {
      expect(await v.verify(await idp.sign(key, { sub: `by-${keys.indexOf(key)}` }), idp.issuer)).toMatchObject({ ok: true });
      expect(await v.verify(await idp.sign(key, { sub: `no-kid-${keys.indexOf(key)}` }, { noKid: true }), idp.issuer)).toMatchObject({ ok: true });
    }
    // A forger's key under the same kid still fails: every candidate is tried, none verifies.
    expect(await v.verify(await idp.sign(await newKey('k1'), { sub: 'forged' }), idp.issuer)).toMatchObject({ ok: false, reason: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    v.stop();
    await idp.stop();
  });
});

describe('finding 10: exp has the 30 s of skew the README promises', () => {
  it('a JWT 10 s past exp is granted, on its first request and on its repeats', async () => {
    const { idp, keys } = await providerWith('k1');
    const server = await serveWith([{ kind: 'User', name: `${idp.issuer}#alice` }], options(idp.issuer));
    try {
      await new Promise((r) => setTimeout(r, 200));
      const jwt = await idp.sign(keys[0]!, {}, { exp: Math.floor(Date.now() / 1000) - 10 });
      expect((await ask(server.url, TOPIC_FILE, `Bearer ${jwt}`)).status).toBe(200);
      expect((await ask(server.url, TOPIC_FILE, `Bearer ${jwt}`)).status).toBe(200);
    } finally {
      await server.shutdown();
      await idp.stop();
    }
  });
});

describe('JWT at token speed: a JWT verified before is decided in the same pass', () => {
  it('a known JWT is judged now (the credential road\'s source 2), never verified twice', async () => {
    const { idp, keys } = await providerWith('k1');
    const v = new OidcVerifier(options(idp.issuer), { jwksFetch: () => undefined }, quiet);
    await v.start();
    const base = newProtectedScope({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, 'core', undefined, []);
    const s = compileSnapshot([{ ...base, spec: { ...base.spec, subjects: [{ kind: 'Group', name: 'ops' }] } }]);
    const index = buildIndex(s.generation, s.lines);
    if (!index.ok) throw new Error(index.error);
    const { decide, judgeRequest, settleRequest } = await import('../../core/index.js');
    const config = { ...DEFAULT_CONFIG, oidcIssuers: v.issuers };
    const jwt = await idp.sign(keys[0]!);
    const req = { method: 'GET', target: TOPIC_FILE, authorization: `Bearer ${jwt}` };
    expect(decide(index.value, config, req, Date.now()).outcome).toBe('verify-jwt');
    expect(v.known(jwt, 'bearer')).toBeUndefined();
    expect((await v.verify(jwt, idp.issuer)).ok).toBe(true);
    const known = v.known(jwt, 'bearer');
    const g = settleRequest(index.value, config, req);
    if (known === undefined || g.outcome !== 'governed') throw new Error('a verified JWT is known, and the request governed');
    expect(judgeRequest(index.value, g, known, Date.now())).toMatchObject({ outcome: 'granted-identity', group: 'ops' });
    // Found by its tail, used only when whole: another string ending the same way is not the verified JWT.
    expect(v.known(`eyJmorged.${jwt.slice(-40)}`, 'bearer')).toBeUndefined();
    // Not past its exp (with the skew), and not under a key set that no longer holds its key.
    expect(judgeRequest(index.value, g, known, Date.now() + 3600_000).outcome).toBe('invalid-token');
    v.stop();
    await idp.stop();
  });
});

describe('issue 27 item 3: a JWT grant is cacheable no longer than the JWT lives', () => {
  /** What a proxy may cache the answer for, and the most it may be: the JWT's exp less the clock before the request. */
  const cacheBound = async (url: string, target: string, jwt: string, exp: number, via: 'bearer' | 'query') => {
    const before = Date.now();
    const r = await ask(url, via === 'query' ? `${target}?token=${jwt}` : target, via === 'bearer' ? `Bearer ${jwt}` : undefined);
    return { status: r.status, accel: Number(r.headers['x-accel-expires']), cacheControl: r.headers['cache-control'], most: Math.max(0, exp - Math.floor(before / 1000)) };
  };

  it.each(['bearer', 'query'] as const)('X-Accel-Expires stays within exp on the first answer and on the repeat decided from the verified cache (%s)', async (via) => {
    const { idp, keys } = await providerWith('k1');
    const server = await serveWith([{ kind: 'User', name: `${idp.issuer}#alice` }], options(idp.issuer));
    await new Promise((r) => setTimeout(r, 200)); // keys fetched at start
    // exp 5 s ahead: sooner than --cache-max-age (30 s by default), and within the 30 s of skew decide grants past it.
    const exp = Math.floor(Date.now() / 1000) + 5;
    const jwt = await idp.sign(keys[0]!, { groups: [] }, { exp });
    const first = await cacheBound(server.url, TOPIC_FILE, jwt, exp, via);
    const repeat = await cacheBound(server.url, TOPIC_FILE, jwt, exp, via);
    for (const a of [first, repeat]) {
      expect(a.status).toBe(200);
      expect(a.cacheControl).toBe('no-store');
      expect(a.accel).toBeGreaterThanOrEqual(0);
      expect(a.accel).toBeLessThanOrEqual(a.most);
    }
  });

  it('a JWT granted within the skew past its exp is never cached (X-Accel-Expires: 0), first and repeat', async () => {
    const { idp, keys } = await providerWith('k1');
    const server = await serveWith([{ kind: 'User', name: `${idp.issuer}#alice` }], options(idp.issuer));
    await new Promise((r) => setTimeout(r, 200));
    const jwt = await idp.sign(keys[0]!, {}, { exp: Math.floor(Date.now() / 1000) - 10 });
    for (let i = 0; i < 2; i++) {
      const r = await ask(server.url, TOPIC_FILE, `Bearer ${jwt}`);
      expect([r.status, r.headers['x-accel-expires'], r.headers['cache-control']]).toEqual([200, '0', 'no-store']);
    }
  });
});
