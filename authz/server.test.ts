import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { freePort } from '../test/support/ports.js';
import { StaticSource } from '../test/support/static-source.js';
import { Writable } from 'node:stream';
import {
  buildIndex,
  compileSnapshot,
  DEFAULT_CONFIG,
  formatGeneratedToken,
  hashToken,
  newProtectedScope,
  scopeKey,
  tokenIdOf,
  type AccessIndex,
  type Scope,
  type TokenRecord,
} from '../core/index.js';
import type { Logger } from 'pino';
import { createLogger } from './telemetry/log.js';
import { startServer, type RunningServer, type ServerOptions } from './server.js';

// The real server on 127.0.0.1:0, hit with real HTTP: every endpoint × every row of docs/access-rules.md
// "Answers". Tokens come from fixed seeds and are referred to by name; no assertion message prints one.

const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`server-test-${seed}`).digest());
const idOf = (token: string) => tokenIdOf(hashToken(token));

const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const DATASET: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' };
const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
const STATIONS: Scope = { kind: 'path', value: 'collections/stations' };

const T_TOPIC = tok('topic');
const T_EXPIRED = tok('expired');
const T_DATASET = tok('dataset');
const T_PROCESSES = tok('processes');
const T_STATIONS = tok('stations');
const T_UNKNOWN = tok('unknown');
const T_BAD_CHECKSUM = `${T_TOPIC.slice(0, -1)}${T_TOPIC.endsWith('A') ? 'B' : 'A'}`;
const ALL_TOKENS = [T_TOPIC, T_EXPIRED, T_DATASET, T_PROCESSES, T_STATIONS, T_UNKNOWN, T_BAD_CHECKSUM];

function record(token: string, expiresAt?: string): TokenRecord {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...(expiresAt ? { expiresAt } : {}) };
}

function fixtureIndex(): AccessIndex {
  const snapshot = compileSnapshot([
    newProtectedScope(TOPIC, 'topic', undefined, [record(T_TOPIC), record(T_EXPIRED, '2020-01-01T00:00:00Z')]),
    newProtectedScope(DATASET, 'dataset', undefined, [record(T_DATASET)]),
    newProtectedScope(PROCESSES, 'processes', undefined, [record(T_PROCESSES)]),
    newProtectedScope(STATIONS, 'stations', undefined, [record(T_STATIONS)]),
  ]);
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

/** An index whose every lookup throws: the internal-error path. */
function brokenIndex(): AccessIndex {
  const boom = () => {
    throw new Error('simulated internal error');
  };
  const broken = new Proxy(new Map(), { get: boom });
  return { generation: 'broken', scopeCount: 1, tokenCount: 1, topics: broken, datasets: broken, paths: broken, tokens: broken } as unknown as AccessIndex;
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

/** svc-auth on 127.0.0.1 (ephemeral ports) over a fixed index (null: never ready), with the defaults unless `extra` says otherwise. */
async function serveStatic(index: AccessIndex | null, logger: Logger, extra: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = await startServer({
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: { host: '127.0.0.1', port: 0 },
    access: DEFAULT_CONFIG,
    source: new StaticSource(index),
    logger,
    ...extra,
  });
  await server.firstLoad;
  return server;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  distinct: NodeJS.Dict<string[]>;
  body: string;
}

/** A request sent with its path exactly as given (a URL string would be normalized by WHATWG URL first). */
function http(base: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, distinct: res.headersDistinct, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

type Endpoint = 'auth-request' | 'auth-request-url' | 'authorize' | 'forward-auth' | 'ext-authz';
const NGINX: readonly Endpoint[] = ['auth-request', 'auth-request-url', 'authorize'];
const PROXY: readonly Endpoint[] = ['forward-auth', 'ext-authz'];
const ENDPOINTS: readonly Endpoint[] = [...NGINX, ...PROXY];

interface Original {
  method?: string;
  target: string;
  authorization?: string;
  extra?: Record<string, string>;
}

/** Sends the original request the way each proxy contract does. */
function ask(base: string, endpoint: Endpoint, o: Original): Promise<Answer> {
  const method = o.method ?? 'GET';
  const auth: Record<string, string> = o.authorization ? { Authorization: o.authorization } : {};
  const extra = o.extra ?? {};
  switch (endpoint) {
    case 'auth-request':
      return http(base, 'GET', '/authz/auth-request', { 'X-Original-Method': method, 'X-Original-URI': o.target, ...auth, ...extra });
    case 'auth-request-url':
      return http(base, 'GET', '/authz/auth-request', { 'X-Original-Method': method, 'X-Original-URL': `https://data.example.org${o.target}`, ...auth, ...extra });
    case 'authorize':
      return http(base, 'GET', '/authorize', { 'X-Api-Http-Method': method, 'X-Original-URI': o.target, ...auth, ...extra });
    case 'forward-auth':
      return http(base, 'GET', '/authz/forward-auth', { 'X-Forwarded-Method': method, 'X-Forwarded-Uri': o.target, ...auth, ...extra });
    case 'ext-authz':
      return http(base, method, `/authz/ext-authz${o.target}`, { ...auth, ...extra });
  }
}

const isNginx = (e: Endpoint) => NGINX.includes(e);

function expectNoStoreAndBody(e: Endpoint, a: Answer, status: number): void {
  expect(a.status).toBe(status);
  expect(a.headers['cache-control']).toBe('no-store');
  if (status === 200 || isNginx(e)) {
    expect(a.body).toBe('');
  } else {
    expect(a.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(a.body) as { status: number; title: string };
    expect(problem.status).toBe(status);
    expect(typeof problem.title).toBe('string');
  }
}

const WAF_TOPIC = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/weather/x.bufr4';
const WAF_OPEN = '/data/2026-11-21/wis/origin/a/wis2/other/data/core/weather/x.bufr4';
const WAF_BOTH = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/urn:wmo:md:mw-met:obs/x.bufr4';
const PROCESS = '/oapi/processes/svc-synop2bufr/execution';
const bearer = (t: string) => `Bearer ${t}`;

describe('svc-auth endpoints × answers', () => {
  let server: RunningServer;
  const log = new Capture();

  beforeAll(async () => {
    const { logger } = createLogger('debug', log);
    // Every refusal line at info, so that the log checks below do not depend on the order of the tests.
    server = await serveStatic(fixtureIndex(), logger, { refusalSample: Number.MAX_SAFE_INTEGER });
    await server.firstLoad;
  });
  afterAll(() => server.shutdown());

  describe.each(ENDPOINTS)('%s', (e) => {
    it('open: exactly 200, empty body, no grant headers', async () => {
      const a = await ask(server.url, e, { target: WAF_OPEN });
      expectNoStoreAndBody(e, a, 200);
      expect(a.headers['x-auth-request-scope']).toBeUndefined();
      expect(a.headers['x-auth-request-token-id']).toBeUndefined();
      expect(a.headers['www-authenticate']).toBeUndefined();
    });

    it('granted: 200 with the scope and token id', async () => {
      const a = await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) });
      expectNoStoreAndBody(e, a, 200);
      expect(a.headers['x-auth-request-scope']).toBe(scopeKey(TOPIC));
      expect(a.headers['x-auth-request-token-id']).toBe(idOf(T_TOPIC));
    });

    it('granted through the query argument and through Basic', async () => {
      const q = await ask(server.url, e, { target: `${PROCESS}?token=${T_PROCESSES}`, method: 'POST' });
      expectNoStoreAndBody(e, q, 200);
      expect(q.headers['x-auth-request-scope']).toBe(scopeKey(PROCESSES));
      const basic = await ask(server.url, e, { target: WAF_TOPIC, authorization: `Basic ${Buffer.from(`user:${T_TOPIC}`).toString('base64')}` });
      expectNoStoreAndBody(e, basic, 200);
      expect(basic.headers['x-auth-request-token-id']).toBe(idOf(T_TOPIC));
    });

    it('no token on a WAF path: 401 with a Bearer and a Basic challenge, in one header (nginx passes only the first)', async () => {
      const a = await ask(server.url, e, { target: WAF_TOPIC });
      expectNoStoreAndBody(e, a, 401);
      expect(a.distinct['www-authenticate']).toEqual(['Bearer realm="svc", Basic realm="svc"']);
    });

    it('no token on an API path: 401 with a Bearer challenge only', async () => {
      const a = await ask(server.url, e, { target: PROCESS, method: 'POST' });
      expectNoStoreAndBody(e, a, 401);
      expect(a.distinct['www-authenticate']).toEqual(['Bearer realm="svc"']);
    });

    it.each([
      ['unknown', T_UNKNOWN],
      ['expired', T_EXPIRED],
      ['badly checksummed', T_BAD_CHECKSUM],
    ])('%s token: 401 invalid_token', async (_name, token) => {
      const a = await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(token) });
      expectNoStoreAndBody(e, a, 401);
      expect(a.distinct['www-authenticate']).toEqual(['Bearer realm="svc", error="invalid_token"']);
      expect(a.headers['x-auth-request-scope']).toBeUndefined();
    });

    it("another scope's token: 403 insufficient_scope naming the governing scope", async () => {
      const a = await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_PROCESSES) });
      expectNoStoreAndBody(e, a, 403);
      expect(a.distinct['www-authenticate']).toEqual([`Bearer realm="svc", error="insufficient_scope", scope="${scopeKey(TOPIC)}"`]);
    });

    it('two kinds governing at once: the scopes are space-joined, and a token of either grants', async () => {
      const a = await ask(server.url, e, { target: WAF_BOTH, authorization: bearer(T_STATIONS) });
      expectNoStoreAndBody(e, a, 403);
      const challenge = a.distinct['www-authenticate']![0]!;
      const scopes = /scope="([^"]*)"/.exec(challenge)![1]!.split(' ').sort();
      expect(scopes).toEqual([scopeKey(DATASET), scopeKey(TOPIC)].sort());
      const granted = await ask(server.url, e, { target: WAF_BOTH, authorization: bearer(T_DATASET) });
      expectNoStoreAndBody(e, granted, 200);
      expect(granted.headers['x-auth-request-scope']).toBe(scopeKey(DATASET));
    });

    it('stations: reads are open, writes governed by the method from the contract', async () => {
      expectNoStoreAndBody(e, await ask(server.url, e, { target: '/oapi/collections/stations/items', method: 'GET' }), 200);
      expectNoStoreAndBody(e, await ask(server.url, e, { target: '/oapi/collections/stations/items', method: 'POST' }), 401);
      expectNoStoreAndBody(e, await ask(server.url, e, { target: '/oapi/collections/stations/items', method: 'PUT', authorization: bearer(T_STATIONS) }), 200);
    });

    it.each([
      ['an encoded slash', '/data/origin/a/wis2/mw-met%2Fdata/core/x'],
      ['an encoded NUL', '/data/origin/a/wis2/mw-met/data/core/x%00.bufr4'],
      ['an encoded newline', '/data/origin/a/wis2/mw-met/data/core/x%0a.bufr4'],
      ['a backslash', '/data/origin/a/wis2/mw-met/data/core\\x.bufr4'],
      ['a ; parameter', '/data/origin/a/wis2/mw-met/data/core;x=1/x'],
      ['double encoding', '/data/origin/a/wis2/mw-met/data/core/%252e%252e/x'],
    ])('malformed path (%s): 403 on nginx endpoints, 400 elsewhere, never 200 even with a valid token', async (_name, target) => {
      const a = await ask(server.url, e, { target, authorization: bearer(T_TOPIC) });
      expectNoStoreAndBody(e, a, isNginx(e) ? 403 : 400);
    });

    if (e === 'ext-authz') {
      it.each([
        '/authz/ext-authz/data/x/../../../../authz/v1/protected',
        '/authz/ext-authz/data/x/%2e%2e/%2e%2e/authz/v1/protected',
        '/authz/ext-authz/data/origin/a/wis2/mw-met/data/core/./x.bufr4',
      ])('an endpoint path with dot segments or encoded dots (%s): 400, never a decision, even with a valid token', async (path) => {
        expectNoStoreAndBody(e, await http(server.url, 'GET', path, { Authorization: bearer(T_TOPIC) }), 400);
      });
    }

    if (e !== 'ext-authz') {
      it('no original target header: malformed', async () => {
        const path = e === 'authorize' ? '/authorize' : e === 'forward-auth' ? '/authz/forward-auth' : '/authz/auth-request';
        const a = await http(server.url, 'GET', path, { Authorization: bearer(T_TOPIC) });
        expectNoStoreAndBody(e, a, isNginx(e) ? 403 : 400);
      });
    }
  });

  describe('the header contract: each endpoint reads its own family, every other family present must agree', () => {
    const STATION_ITEM = '/oapi/collections/stations/items/0-20000-0-12345';
    const absolute = (p: string) => `https://data.example.org${p}`;
    /** How each endpoint is asked about `target` with `method`, in its own family only. */
    const own: Record<'auth-request' | 'authorize' | 'forward-auth' | 'ext-authz (Envoy)' | 'ext-authz (Gateway Fabric)', (target: string, method: string) => [string, string, Record<string, string>]> = {
      'auth-request': (t, m) => ['GET', '/authz/auth-request', { 'X-Original-URL': absolute(t), 'X-Original-Method': m }],
      authorize: (t, m) => ['GET', '/authorize', { 'X-Original-URI': t, 'X-Api-Http-Method': m }],
      'forward-auth': (t, m) => ['GET', '/authz/forward-auth', { 'X-Forwarded-Uri': t, 'X-Forwarded-Method': m }],
      'ext-authz (Envoy)': (t, m) => [m, `/authz/ext-authz${t}`, {}],
      'ext-authz (Gateway Fabric)': (t, m) => ['GET', '/authz/ext-authz', { Path: t, Method: m }],
    };
    /** Every target and method header of every family, as a value naming `target` / `method`. */
    const targetHeaders: readonly [string, (t: string) => string][] = [
      ['X-Original-URL', absolute], ['X-Original-URI', (t) => t], ['X-Forwarded-Uri', (t) => t], ['X-Envoy-Original-Path', (t) => t], ['Path', (t) => t],
    ];
    const methodHeaders = ['X-Original-Method', 'X-Api-Http-Method', 'X-Forwarded-Method', 'Method', 'X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override'];
    const ownNames = (e: keyof typeof own): string[] => Object.keys(own[e]('/', 'GET')[2]).map((n) => n.toLowerCase());
    // nginx's auth_request (Gateway Fabric's too) understands only 200/401/403: malformed is 403 there, 400 elsewhere.
    const malformed = (e: string) => (e === 'auth-request' || e === 'authorize' || e === 'ext-authz (Gateway Fabric)' ? 403 : 400);

    describe.each(Object.keys(own) as (keyof typeof own)[])('%s', (e) => {
      const ask2 = (target: string, method: string, extra: Record<string, string>) => {
        const [m, path, headers] = own[e](target, method);
        return http(server.url, m, path, { ...headers, ...extra });
      };

      it('its own family alone decides (open data 200, a closed file 401)', async () => {
        expect((await ask2(WAF_OPEN, 'GET', {})).status).toBe(200);
        expect((await ask2(WAF_TOPIC, 'GET', {})).status).toBe(401);
      });

      const others = targetHeaders.filter(([n]) => !ownNames(e).includes(n.toLowerCase()));
      const otherMethods = methodHeaders.filter((n) => !ownNames(e).includes(n.toLowerCase()));

      it.each(others)('%s of another family naming the same target: decided as without it', async (name, value) => {
        expect((await ask2(WAF_OPEN, 'GET', { [name]: value(WAF_OPEN) })).status).toBe(200);
        expect((await ask2(WAF_TOPIC, 'GET', { [name]: value(WAF_TOPIC) })).status).toBe(401);
      });

      it.each(others)('%s naming another target: malformed, whichever way round', async (name, value) => {
        expect((await ask2(WAF_OPEN, 'GET', { [name]: value(WAF_TOPIC) })).status).toBe(malformed(e));
        expect((await ask2(WAF_TOPIC, 'GET', { [name]: value(WAF_OPEN) })).status).toBe(malformed(e));
      });

      it.each(otherMethods)('%s of another family: the same method (any case) is decided, another is malformed', async (name) => {
        expect((await ask2(STATION_ITEM, 'GET', { [name]: 'get' })).status).toBe(200);
        expect((await ask2(STATION_ITEM, 'GET', { [name]: 'DELETE' })).status).toBe(malformed(e));
      });

      it('X-Forwarded-Prefix (a rewritten path) is malformed', async () => {
        expect((await ask2(WAF_OPEN, 'GET', { 'X-Forwarded-Prefix': '/data' })).status).toBe(malformed(e));
      });

      it('a token holder still gets in with every agreeing header of every family present', async () => {
        const all = Object.fromEntries([...others.map(([n, v]) => [n, v(WAF_TOPIC)]), ...otherMethods.map((n) => [n, 'GET'])]);
        expect((await ask2(WAF_TOPIC, 'GET', { ...all, Authorization: bearer(T_TOPIC) })).status).toBe(200);
      });
    });

    it('/authz/auth-request: X-Original-URL and X-Original-URI that disagree are malformed, never a choice', async () => {
      const a = await http(server.url, 'GET', '/authz/auth-request', { 'X-Original-URL': absolute(WAF_OPEN), 'X-Original-URI': WAF_TOPIC, 'X-Original-Method': 'GET' });
      expect(a.status).toBe(403);
      const b = await http(server.url, 'GET', '/authz/auth-request', { 'X-Original-URL': absolute(WAF_TOPIC), 'X-Original-URI': WAF_OPEN, 'X-Original-Method': 'GET' });
      expect(b.status).toBe(403);
      const c = await http(server.url, 'GET', '/authz/auth-request', { 'X-Original-URL': absolute(WAF_OPEN), 'X-Original-URI': WAF_OPEN, 'X-Original-Method': 'GET' });
      expect(c.status).toBe(200);
    });

    it('Traefik\'s ingress-nginx provider pointed at /authz/auth-request: a client\'s X-Original-* cannot steer it', async () => {
      // What Traefik sends: its own X-Forwarded-* naming the real request, plus every client header.
      const traefik = { 'X-Forwarded-Uri': WAF_TOPIC, 'X-Forwarded-Method': 'GET' };
      expect((await http(server.url, 'GET', '/authz/auth-request', traefik)).status).toBe(403);
      expect((await http(server.url, 'GET', '/authz/auth-request', { ...traefik, 'X-Original-URL': absolute(WAF_OPEN), 'X-Original-Method': 'GET' })).status).toBe(403);
      expect((await http(server.url, 'GET', '/authz/auth-request', { ...traefik, 'X-Original-URI': WAF_OPEN })).status).toBe(403);
      // Naming the real target gets the real target's decision, never more.
      expect((await http(server.url, 'GET', '/authz/auth-request', { ...traefik, 'X-Original-URI': WAF_TOPIC, 'X-Original-Method': 'GET' })).status).toBe(401);
    });

    it('ext-authz: a target of only / while Path names something else is refused (a Fabric http.path ending in /)', async () => {
      expect((await http(server.url, 'GET', '/authz/ext-authz/', { Path: WAF_TOPIC, Method: 'GET' })).status).toBe(400);
      expect((await http(server.url, 'GET', '/authz/ext-authz/', { Path: '/' })).status).toBe(200);
      expect((await http(server.url, 'GET', '/authz/ext-authz/', {})).status).toBe(200);
    });

    it('ext-authz, Gateway Fabric\'s dialect: its subrequest\'s own GET never counts, a missing Method is governed as unsafe', async () => {
      expect((await http(server.url, 'GET', '/authz/ext-authz', { Path: STATION_ITEM, Method: 'GET' })).status).toBe(200);
      expect((await http(server.url, 'GET', '/authz/ext-authz', { Path: STATION_ITEM, Method: 'DELETE' })).status).toBe(401);
      expect((await http(server.url, 'GET', '/authz/ext-authz', { Path: STATION_ITEM })).status).toBe(401);
      const granted = await http(server.url, 'GET', '/authz/ext-authz', { Path: `${PROCESS}?token=${T_PROCESSES}`, Method: 'POST' });
      expect(granted.status).toBe(200);
      expect(granted.headers['x-auth-request-scope']).toBe(scopeKey(PROCESSES));
    });

    it('a request without its endpoint\'s target is refused, and the refusal says which proxy it most likely is', async () => {
      const cases: [string, string, Record<string, string>, string][] = [
        ['GET', '/authz/auth-request', { 'X-Forwarded-Uri': WAF_TOPIC, 'X-Forwarded-Method': 'GET' }, 'forward-auth'],
        ['GET', '/authorize', { Path: WAF_TOPIC }, 'gateway-fabric'],
        ['GET', '/authz/forward-auth', { 'X-Original-URL': absolute(WAF_TOPIC) }, 'nginx'],
        ['GET', '/authz/ext-authz', { 'X-Forwarded-Uri': WAF_TOPIC }, 'forward-auth'],
        ['GET', '/authz/ext-authz?x=1', {}, 'unknown'],
      ];
      for (const [m, path, headers] of cases) expect([400, 403]).toContain((await http(server.url, m, path, headers)).status);
      // Gateway Fabric's dialect is nginx's auth_request: an empty 403 with X-Accel-Expires: 0, never a 400 nginx would turn into 500.
      const fabric = await http(server.url, 'GET', '/authz/ext-authz', { 'X-Forwarded-Uri': WAF_TOPIC });
      expect([fabric.status, fabric.headers['x-accel-expires'], fabric.body]).toEqual([403, '0', '']);
      const text = (await http(server.metricsUrl, 'GET', '/metrics', {})).body;
      for (const [, path, , likely] of cases) {
        const endpoint = path.startsWith('/authorize') ? 'authorize' : path.split('/')[2]!.split('?')[0]!;
        const line = new RegExp(`^svc_auth_misdirected_requests_total\\{endpoint="${endpoint}",likely_proxy="${likely}"\\} ([0-9]+)$`, 'm').exec(text);
        expect(Number(line?.[1] ?? 0)).toBeGreaterThanOrEqual(1);
      }
    });

    it('a repeated original-target header is malformed, not joined or first-wins', async () => {
      const { hostname, port } = new URL(server.url);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => {
          socket.end(`GET /authz/auth-request HTTP/1.1\r\nHost: x\r\nX-Original-URI: ${WAF_OPEN}\r\nX-Original-URI: ${WAF_TOPIC}\r\nConnection: close\r\n\r\n`);
        });
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (c: string) => (text += c));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 403 /);
    });
  });

  describe('ambiguous or broken input fails closed on every endpoint, through the front and through node:http', () => {
    type H = readonly (readonly [string, string])[];
    /** Status of a raw request (HTTP/1.1 goes to the front, HTTP/1.0 is handed to node:http). */
    const raw = (version: string, method: string, path: string, headers: H) => {
      const { hostname, port } = new URL(server.url);
      return new Promise<number>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => {
          socket.end(`${method} ${path} ${version}\r\nHost: x\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}Connection: close\r\n\r\n`);
        });
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (c: string) => (text += c));
        socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0)));
        socket.on('error', reject);
      });
    };
    const STATION = '/oapi/collections/stations/items/0-20000-0-12345';
    const url = (p: string) => `http://data.example.org${p}`;
    // Short lines, so that 2,000 of them stay within node:http's 16 KiB head limit (past it: 431).
    const many = (n: number): H => Array.from({ length: n }, () => ['a', ''] as const);
    // [what, method, endpoint path, headers, status]: 403 is the nginx endpoints' malformed answer, 400 the others'.
    const CASES: readonly [string, string, string, H, number][] = [
      ['auth-request: X-Original-URL open, X-Original-URI closed', 'GET', '/authz/auth-request', [['X-Original-URL', url(WAF_OPEN)], ['X-Original-URI', WAF_TOPIC], ['X-Original-Method', 'GET']], 403],
      ['auth-request: X-Original-URL closed, X-Original-URI open', 'GET', '/authz/auth-request', [['X-Original-URL', url(WAF_TOPIC)], ['X-Original-URI', WAF_OPEN], ['X-Original-Method', 'GET']], 403],
      ['auth-request: the two name the same path, spelt differently: decided', 'GET', '/authz/auth-request', [['X-Original-URL', url(WAF_TOPIC)], ['X-Original-URI', WAF_TOPIC.replace('/wis/', '/./wis//')], ['X-Original-Method', 'GET']], 401],
      ['auth-request: same path, different query', 'GET', '/authz/auth-request', [['X-Original-URL', url(`${WAF_OPEN}?a=1`)], ['X-Original-URI', WAF_OPEN], ['X-Original-Method', 'GET']], 403],
      ['auth-request: an empty X-Original-URI copy, then a real one', 'GET', '/authz/auth-request', [['X-Original-URI', ''], ['X-Original-URI', WAF_OPEN], ['X-Original-Method', 'GET']], 403],
      ['auth-request: an empty X-Original-Method copy, then GET', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', ''], ['X-Original-Method', 'GET']], 403],
      ['auth-request: no X-Original-Method on a stations write target (governed as unsafe)', 'GET', '/authz/auth-request', [['X-Original-URI', STATION]], 401],
      ['auth-request: no X-Original-Method on a process (governed)', 'GET', '/authz/auth-request', [['X-Original-URL', url(PROCESS)]], 401],
      ['auth-request: no X-Original-Method on open data (open for every method)', 'GET', '/authz/auth-request', [['X-Original-URI', WAF_OPEN]], 200],
      ['auth-request: X-HTTP-Method-Override names another method', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'GET'], ['X-HTTP-Method-Override', 'DELETE']], 403],
      ['auth-request: X-HTTP-Method names another method', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'GET'], ['X-HTTP-Method', 'PUT']], 403],
      ['auth-request: X-Method-Override names another method', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'GET'], ['X-Method-Override', 'PATCH']], 403],
      ['auth-request: an override naming the stated method (any case) changes nothing', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'GET'], ['X-HTTP-Method-Override', 'get']], 200],
      ['auth-request: two override headers that disagree', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'POST'], ['X-HTTP-Method-Override', 'POST'], ['X-Method-Override', 'GET']], 403],
      ['auth-request: two X-Original-Method headers', 'GET', '/authz/auth-request', [['X-Original-URI', STATION], ['X-Original-Method', 'GET'], ['X-Original-Method', 'GET']], 403],
      ['auth-request: a case variant of a closed path', 'GET', '/authz/auth-request', [['X-Original-URI', WAF_TOPIC.replace('/origin/a/', '/Origin/A/')], ['X-Original-Method', 'GET']], 401],
      ['auth-request: a case variant of a stations write', 'GET', '/authz/auth-request', [['X-Original-URI', '/OAPI/Collections/STATIONS/items'], ['X-Original-Method', 'POST']], 401],
      ['auth-request: a # in the target', 'GET', '/authz/auth-request', [['X-Original-URI', `${WAF_OPEN}#x`], ['X-Original-Method', 'GET']], 403],
      ['auth-request: 2,000 header lines (node:http would drop the rest)', 'GET', '/authz/auth-request', [['X-Original-URI', WAF_OPEN], ['X-Original-Method', 'GET'], ...many(1998)], 403],
      ['authorize: no X-Api-Http-Method on a stations write target (governed as unsafe)', 'GET', '/authorize', [['X-Original-URI', STATION]], 401],
      ['authorize: X-Api-Http-Method GET and an override DELETE', 'GET', '/authorize', [['X-Original-URI', STATION], ['X-Api-Http-Method', 'GET'], ['X-HTTP-Method-Override', 'DELETE']], 403],
      ['authorize: an X-Original-URL naming another target', 'GET', '/authorize', [['X-Original-URI', WAF_TOPIC], ['X-Original-URL', url(WAF_OPEN)], ['X-Api-Http-Method', 'GET']], 403],
      ['forward-auth: a second family (Path) repeated', 'GET', '/authz/forward-auth', [['X-Forwarded-Uri', WAF_OPEN], ['X-Forwarded-Method', 'GET'], ['Path', WAF_OPEN], ['Path', WAF_OPEN]], 400],
      ['ext-authz (Fabric): Path and X-Original-URI disagree', 'GET', '/authz/ext-authz', [['Path', WAF_OPEN], ['Method', 'GET'], ['X-Original-URI', WAF_TOPIC]], 403],
      ['forward-auth: no X-Forwarded-Method on a stations write target (governed as unsafe)', 'GET', '/authz/forward-auth', [['X-Forwarded-Uri', STATION]], 401],
      ['forward-auth: X-Forwarded-Prefix set (the path was rewritten)', 'GET', '/authz/forward-auth', [['X-Forwarded-Uri', '/collections/stations/items'], ['X-Forwarded-Prefix', '/oapi'], ['X-Forwarded-Method', 'POST']], 400],
      ['forward-auth: an override naming another method', 'GET', '/authz/forward-auth', [['X-Forwarded-Uri', STATION], ['X-Forwarded-Method', 'GET'], ['X-HTTP-Method-Override', 'DELETE']], 400],
      ['forward-auth: two X-Forwarded-Uri', 'GET', '/authz/forward-auth', [['X-Forwarded-Uri', WAF_OPEN], ['X-Forwarded-Uri', WAF_TOPIC], ['X-Forwarded-Method', 'GET']], 400],
      ['ext-authz: X-Envoy-Original-Path names another target', 'GET', `/authz/ext-authz${WAF_TOPIC}`, [['X-Envoy-Original-Path', WAF_OPEN]], 400],
      ['ext-authz: X-Envoy-Original-Path names the same target: decided', 'GET', `/authz/ext-authz${WAF_TOPIC}`, [['X-Envoy-Original-Path', WAF_TOPIC]], 401],
      ['ext-authz: an override naming another method', 'GET', `/authz/ext-authz${STATION}`, [['X-HTTP-Method-Override', 'PUT']], 400],
      ['ext-authz: a case variant of a process', 'POST', '/authz/ext-authz/oapi/processes/SVC-synop2bufr/execution', [], 401],
    ];
    it.each(CASES)('%s', async (_what, method, path, headers, status) => {
      expect(await raw('HTTP/1.1', method, path, headers)).toBe(status);
      expect(await raw('HTTP/1.0', method, path, headers)).toBe(status);
    });
  });

  it('health and readiness are served by the app; /metrics is not on the main port', async () => {
    expect((await http(server.url, 'GET', '/healthz', {})).status).toBe(200);
    const ready = await http(server.url, 'GET', '/readyz', {});
    expect(ready.status).toBe(200);
    expect(ready.headers['x-powered-by']).toBeUndefined();
    expect(ready.headers.etag).toBeUndefined();
    expect((await http(server.url, 'GET', '/metrics', {})).status).toBe(404);
    expect((await http(server.url, 'GET', '/authz/unknown', {})).status).toBe(404);
  });

  it('exposes decisions, latency and snapshot metrics on the metrics port', async () => {
    await ask(server.url, 'auth-request', { target: WAF_TOPIC, authorization: bearer(T_TOPIC) });
    const m = await http(server.metricsUrl, 'GET', '/metrics', {});
    expect(m.status).toBe(200);
    expect(m.body).toMatch(/^svc_auth_decisions_total\{endpoint="auth-request",outcome="granted",scope_kind="topic"\} [1-9]/m);
    expect(m.body).toMatch(/^svc_auth_decisions_total\{endpoint="forward-auth",outcome="malformed",scope_kind="none"\} [1-9]/m);
    expect(m.body).toMatch(/^svc_auth_decision_duration_seconds_bucket\{le="\+Inf",endpoint="auth-request"\} [1-9]/m);
    expect(m.body).toMatch(/^svc_auth_decision_duration_seconds_count\{endpoint="ext-authz"\} [1-9]/m);
    expect(m.body).toContain(`svc_auth_snapshot_info{generation="${server.state.index!.generation}"} 1`);
    expect(m.body).toMatch(/^svc_auth_snapshot_scopes 4$/m);
    expect(m.body).toMatch(/^svc_auth_snapshot_tokens 5$/m);
    expect(m.body).toMatch(/^svc_auth_snapshot_age_seconds \d/m);
    expect(m.body).toMatch(/^svc_auth_reload_failures_total\{source="static"\} 0$/m);
    expect(m.body).toMatch(/^svc_auth_ready 1$/m);
    expect(m.body).toMatch(/^svc_auth_log_lines_dropped_total 0$/m);
    expect(m.body).toMatch(/^process_resident_memory_bytes \d+/m);
  });

  it('logs decisions with scope and token id, the normalized path, and never a token or a raw target', async () => {
    await ask(server.url, 'auth-request', { target: `/data/x/./origin/a/wis2/mw-met/data/core//y.bufr4?token=${T_TOPIC}&x=1` });
    await new Promise((resolve) => setImmediate(resolve));
    const lines = log.text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const granted = lines.find((l) => l.outcome === 'granted' && l.tokenSource === 'query' && l.endpoint === 'auth-request' && String(l.path).startsWith('/data/x/'));
    // Grants are debug lines (counted for the "tokens used" info lines); refusals are info lines.
    expect(granted).toMatchObject({ msg: 'decision', level: 'debug', endpoint: 'auth-request', method: 'GET', path: '/data/x/origin/a/wis2/mw-met/data/core/y.bufr4', scope: scopeKey(TOPIC), tokenId: idOf(T_TOPIC) });
    expect(lines.some((l) => l.outcome === 'insufficient-scope' && l.level === 'info')).toBe(true);
    expect(lines.some((l) => l.outcome === 'insufficient-scope' && l.tokenId === idOf(T_PROCESSES))).toBe(true);
    expect(lines.some((l) => l.outcome === 'open' && l.level === 'debug')).toBe(true);
    for (const t of ALL_TOKENS) {
      if (log.text.includes(t)) throw new Error('a token plaintext appears in the log'); // never print the token itself
    }
    // Booleans, so that a failure cannot print the log (and the token in it).
    expect(log.text.includes('token=')).toBe(false);
    expect(/authorization|bearer |basic /i.test(log.text)).toBe(false);
  });
});

describe('GET /authz/v1/protected (public: what metadata publishers need)', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await serveStatic(fixtureIndex(), createLogger('warn', new Capture()).logger);
  });
  afterAll(() => server.shutdown());

  it('lists every closed scope and how credentials are presented, never a token id, hash or count', async () => {
    const a = await http(server.url, 'GET', '/authz/v1/protected', {});
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(a.body) as { scopes: unknown[]; credentials: { type: string; scheme?: string; in?: string; name?: string }[]; closedByDefault: { value: string }[] };
    expect(body.scopes).toEqual([
      { kind: 'dataset', value: DATASET.value },
      { kind: 'path', value: 'collections/stations' },
      { kind: 'path', value: 'processes/svc' },
      { kind: 'topic', value: TOPIC.value },
    ]);
    expect(body.credentials.map((c) => [c.type, c.scheme ?? c.in, c.name ?? null])).toEqual([['http', 'bearer', null], ['apiKey', 'query', 'token'], ['http', 'basic', null]]);
    expect(body.closedByDefault.map((d) => d.value)).toEqual(['collections/stations', 'processes', 'oapi/jobs']);
    for (const t of ALL_TOKENS) expect(a.body.includes(idOf(t))).toBe(false);
    expect(a.body.includes('sha256')).toBe(false);
    // Only these keys anywhere in the document: nothing about tokens but how to present one.
    const keys = new Set<string>();
    JSON.parse(a.body, (k: string, v: unknown) => (keys.add(k), v));
    expect([...keys].filter((k) => k !== '' && !/^\d+$/.test(k)).sort()).toEqual(['closedByDefault', 'credentials', 'description', 'in', 'kind', 'name', 'scheme', 'scopes', 'type', 'value']);
  });

  it('answers 304 to If-None-Match with its ETag', async () => {
    const a = await http(server.url, 'GET', '/authz/v1/protected', {});
    const etag = String(a.headers.etag);
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect((await http(server.url, 'GET', '/authz/v1/protected', { 'If-None-Match': etag })).status).toBe(304);
    expect((await http(server.url, 'GET', '/authz/v1/protected', { 'If-None-Match': '"other"' })).status).toBe(200);
  });
});

describe('svc-auth refusal lines', () => {
  it('a refusal flood writes a bounded sample of lines and one "requests refused" line per key, whatever its size', async () => {
    const log = new Capture();
    const { logger } = createLogger('info', log);
    const server = await serveStatic(fixtureIndex(), logger, { usageWindowMs: 0, refusalSample: 5 });
    const flood = 300;
    for (let i = 0; i < flood; i++) {
      const kind = i % 3;
      const a = await ask(server.url, 'auth-request', kind === 0 ? { target: WAF_TOPIC } : kind === 1 ? { target: WAF_TOPIC, authorization: bearer(T_UNKNOWN) } : { target: `${WAF_TOPIC}#x` });
      expect(a.status).toBe(kind === 2 ? 403 : 401);
    }
    await server.shutdown();
    const lines = log.text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.msg === 'decision').length).toBe(5);
    const summary = lines.filter((l) => l.msg === 'requests refused').map((l) => [l.outcome, l.scope ?? null, l.why ?? null, l.reason ?? null, l.refused]);
    expect(summary.sort()).toEqual(
      [
        ['no-token', scopeKey(TOPIC), null, null, flood / 3],
        ['invalid-token', scopeKey(TOPIC), 'unknown', null, flood / 3],
        ['malformed', null, null, 'the request target has a "#"', flood / 3],
      ].sort(),
    );
    expect(lines.find((l) => String(l.msg).startsWith('refusal lines sampled'))).toMatchObject({ written: 5, notWritten: flood - 5 });
    // About 260 bytes a refusal before; now the sample and the summary only, however many refusals there are.
    expect(log.text.length).toBeLessThan(5 * 400 + 5 * 400);
    expect(log.text.includes(T_UNKNOWN)).toBe(false);
  });
});

describe('an oversized request head', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await serveStatic(fixtureIndex(), createLogger('silent').logger);
  });
  afterAll(async () => {
    await server.shutdown();
  });
  /** The status line of the answer to a head of about 20 KB (over node:http's 16 KiB), sent in pieces. */
  const oversized = (path: string) => {
    const { hostname, port } = new URL(server.url);
    return new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Original-URI: ${WAF_TOPIC}\r\n`);
        for (let i = 0; i < 20; i++) socket.write(`X-Pad-${i}: ${'p'.repeat(1000)}\r\n`);
        socket.end('\r\n');
      });
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => (text += c));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
  };
  it('is a 403 with X-Accel-Expires: 0 on the nginx endpoints (nginx would turn a 431 into a 500)', async () => {
    for (const path of ['/authz/auth-request', '/authorize', '/authz/ext-authz']) {
      const text = await oversized(path);
      expect(text).toMatch(/^HTTP\/1\.1 403 /);
      expect(text).toMatch(/\r\nX-Accel-Expires: 0\r\n/i);
    }
  });
  it('stays node:http\'s 431 where the proxy passes it on (Traefik, Envoy)', async () => {
    expect(await oversized('/authz/forward-auth')).toMatch(/^HTTP\/1\.1 431 /);
    expect(await oversized('/authz/ext-authz/data/x')).toMatch(/^HTTP\/1\.1 431 /);
  });
});

describe('refusal summaries are keyed by bounded values only', () => {
  it('1,500 refusals of distinct uncovered process ids (a path each) write one summary line, not one per id', async () => {
    const log = new Capture();
    const { logger } = createLogger('info', log);
    const server = await serveStatic(fixtureIndex(), logger, { usageWindowMs: 0, refusalSample: 5 });
    const n = 1500;
    for (let i = 0; i < n; i++) {
      const a = await ask(server.url, 'forward-auth', { target: `/oapi/processes/uncovered-${i}/execution`, method: 'POST' });
      expect(a.status).toBe(401);
    }
    await server.shutdown();
    const lines = log.text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = lines.filter((l) => l.msg === 'requests refused').map((l) => [l.outcome, l.scope, l.refused]);
    expect(summary).toEqual([['no-token', 'uncovered (closed by default)', n]]);
    // The sample (5 lines) and one summary line: a few KB, however many ids were tried.
    expect(log.text.length).toBeLessThan(5 * 400 + 2 * 400);
  });
});

describe('svc-auth "tokens used" lines', () => {
  it('count grants per scope and token id at info, per window and at shutdown, and log no grant line at info', async () => {
    const log = new Capture();
    const { logger } = createLogger('info', log);
    const server = await serveStatic(fixtureIndex(), logger, { usageWindowMs: 0 });
    for (let i = 0; i < 3; i++) expect((await ask(server.url, 'auth-request', { target: WAF_TOPIC, authorization: bearer(T_TOPIC) })).status).toBe(200);
    expect((await ask(server.url, 'forward-auth', { target: PROCESS, method: 'POST', authorization: bearer(T_PROCESSES) })).status).toBe(200);
    expect((await ask(server.url, 'auth-request', { target: WAF_TOPIC, authorization: bearer(T_UNKNOWN) })).status).toBe(401);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log.text.includes('"outcome":"granted"')).toBe(false);
    await server.shutdown();
    const lines = log.text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const used = lines.filter((l) => l.msg === 'tokens used').map((l) => [l.level, l.scope, l.tokenId, l.granted]);
    expect(used.sort()).toEqual(
      [
        ['info', scopeKey(TOPIC), idOf(T_TOPIC), 3],
        ['info', scopeKey(PROCESSES), idOf(T_PROCESSES), 1],
      ].sort(),
    );
    expect(lines.some((l) => l.msg === 'decision' && l.outcome === 'invalid-token' && l.level === 'info')).toBe(true);
    for (const t of ALL_TOKENS) {
      if (log.text.includes(t)) throw new Error('a token plaintext appears in the log');
    }
  });
});

describe('svc-auth without a snapshot', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      listen: { host: '127.0.0.1', port: 0 },
      metricsListen: { host: '127.0.0.1', port: 0 },
      access: DEFAULT_CONFIG,
      source: new StaticSource(null),
      logger: createLogger('silent').logger,
    });
  });
  afterAll(() => server.shutdown());

  it.each(ENDPOINTS)('%s never answers 200: 403 on nginx endpoints, 503 elsewhere', async (e) => {
    for (const o of [{ target: WAF_OPEN }, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) }, { target: '/' }]) {
      const a = await ask(server.url, e, o);
      expectNoStoreAndBody(e, a, isNginx(e) ? 403 : 503);
    }
  });

  it('is alive but not ready', async () => {
    expect((await http(server.url, 'GET', '/healthz', {})).status).toBe(200);
    expect((await http(server.url, 'GET', '/readyz', {})).status).toBe(503);
    const m = await http(server.metricsUrl, 'GET', '/metrics', {});
    expect(m.body).toMatch(/^svc_auth_ready 0$/m);
    expect(m.body).toMatch(/^svc_auth_decisions_total\{endpoint="ext-authz",outcome="unavailable",scope_kind="none"\} [1-9]/m);
  });
});

describe('svc-auth on a port already taken', () => {
  it('fails to start, starts no source, and does not keep the port it had bound', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    // The main port binds first and the metrics port is the taken one: the main port must be let go again.
    const mainPort = await freePort();
    const source = new StaticSource(fixtureIndex());
    try {
      await expect(startServer({
        listen: { host: '127.0.0.1', port: mainPort },
        metricsListen: { host: '127.0.0.1', port: (taken.address() as AddressInfo).port },
        access: DEFAULT_CONFIG,
        source,
        logger: createLogger('silent').logger,
      })).rejects.toThrow(/EADDRINUSE/);
      expect(source.started).toBe(false);
      const again = createServer();
      await new Promise<void>((resolve, reject) => again.once('error', reject).listen(mainPort, '127.0.0.1', resolve));
      await new Promise((resolve) => again.close(resolve));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('svc-auth on an internal error', () => {
  let server: RunningServer;
  const log = new Capture();
  beforeAll(async () => {
    server = await startServer({
      listen: { host: '127.0.0.1', port: 0 },
      metricsListen: { host: '127.0.0.1', port: 0 },
      access: DEFAULT_CONFIG,
      source: new StaticSource(brokenIndex()),
      logger: createLogger('info', log).logger,
    });
    await server.firstLoad;
  });
  afterAll(() => server.shutdown());

  it.each(ENDPOINTS)('%s never answers 200: 403 on nginx endpoints, 503 elsewhere', async (e) => {
    for (const o of [{ target: WAF_OPEN }, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) }]) {
      const a = await ask(server.url, e, o);
      expectNoStoreAndBody(e, a, isNginx(e) ? 403 : 503);
    }
  });

  it('counts and logs the error, and keeps serving', async () => {
    const m = await http(server.metricsUrl, 'GET', '/metrics', {});
    expect(m.body).toMatch(/^svc_auth_decisions_total\{endpoint="auth-request",outcome="error",scope_kind="none"\} [1-9]/m);
    expect(log.text).toContain('simulated internal error');
    expect((await http(server.url, 'GET', '/healthz', {})).status).toBe(200);
  });
});

describe('decision cache bound: X-Accel-Expires on the nginx endpoints', () => {
  const T_SOON = tok('soon');
  let server: RunningServer;
  let uncached: RunningServer;
  let unready: RunningServer;

  beforeAll(async () => {
    const soon = new Date(Date.now() + 20_000).toISOString();
    const snapshot = compileSnapshot([
      newProtectedScope(TOPIC, 'topic', undefined, [record(T_TOPIC), record(T_SOON, soon)]),
      newProtectedScope(PROCESSES, 'processes', undefined, [record(T_PROCESSES)]),
    ]);
    const built = buildIndex(snapshot.generation, snapshot.lines);
    if (!built.ok) throw new Error(built.error);
    const start = (index: AccessIndex | null, cacheMaxAge: number) =>
      startServer({
        listen: { host: '127.0.0.1', port: 0 },
        metricsListen: { host: '127.0.0.1', port: 0 },
        access: DEFAULT_CONFIG,
        cacheMaxAge,
        source: new StaticSource(index),
        logger: createLogger('silent').logger,
      });
    [server, uncached, unready] = await Promise.all([start(built.value, 30), start(built.value, 0), start(null, 30)]);
    await Promise.all([server.firstLoad, uncached.firstLoad]);
  });
  afterAll(() => Promise.all([server.shutdown(), uncached.shutdown(), unready.shutdown()]));

  describe.each(NGINX)('%s', (e) => {
    it('allows may be cached for at most --cache-max-age seconds', async () => {
      expect((await ask(server.url, e, { target: WAF_OPEN })).headers['x-accel-expires']).toBe('30');
      expect((await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) })).headers['x-accel-expires']).toBe('30');
    });
    it("never beyond the deciding token's expiry", async () => {
      const a = await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_SOON) });
      expect(a.status).toBe(200);
      const seconds = Number(a.headers['x-accel-expires']);
      expect(seconds).toBeGreaterThanOrEqual(0);
      expect(seconds).toBeLessThanOrEqual(20); // the token expires in 20 s, sooner than --cache-max-age 30
    });
    it('refusals are never cached', async () => {
      const refusals = [
        await ask(server.url, e, { target: WAF_TOPIC }),
        await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_UNKNOWN) }),
        await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_PROCESSES) }),
        await ask(server.url, e, { target: '/data/a%2Fb' }),
        await ask(unready.url, e, { target: WAF_OPEN }),
      ];
      expect(refusals.map((a) => [a.status, a.headers['x-accel-expires']])).toEqual([
        [401, '0'],
        [401, '0'],
        [403, '0'],
        [403, '0'],
        [403, '0'],
      ]);
    });
    it('--cache-max-age 0 disables caching of allows', async () => {
      expect((await ask(uncached.url, e, { target: WAF_OPEN })).headers['x-accel-expires']).toBe('0');
      expect((await ask(uncached.url, e, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) })).headers['x-accel-expires']).toBe('0');
    });
  });

  it.each(PROXY)('%s (Traefik/Envoy have no such cache) sends no X-Accel-Expires', async (e) => {
    expect((await ask(server.url, e, { target: WAF_OPEN })).headers['x-accel-expires']).toBeUndefined();
    expect((await ask(server.url, e, { target: WAF_TOPIC, authorization: bearer(T_TOPIC) })).headers['x-accel-expires']).toBeUndefined();
  });
});
