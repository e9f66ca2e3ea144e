/**
 * The real data path: a real pygeoapi (wis2box-like collections, an editable stations collection, real
 * processes) and the WAF tree behind svc-auth, with each proxy a user would run in front, each from its
 * example in deploy/: nginx (auth_request), Traefik (ForwardAuth, file provider) and Envoy (ext_authz).
 * Every check runs through every proxy. Tokens are generated per run and never appear in a test name or
 * a failure message (checks compare statuses and booleans).
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { load as yamlLoad, loadAll as yamlLoadAll } from 'js-yaml';
import { WAF, type WafFile } from './support/fixtures.js';
import { makeTokens, type TokenName } from './support/harness.js';
import { ENVOY_EXAMPLE } from './support/envoy.js';
import { nginxPlan } from './support/nginx.js';
import { header, rawRequest, type RawResponse } from './support/net.js';
import { waitUntil } from '../support/wait.js';
import { COLLECTIONS, featureId, STATION_ID } from './support/pygeoapi.js';
import { HOST, ProxyHarness, type ProxyName } from './support/proxies.js';
import { REPO_ROOT } from './support/svc-auth.js';
import { TRAEFIK_DYNAMIC } from './support/traefik.js';

jest.setTimeout(60_000);

const plan = nginxPlan();
if (plan.action === 'skip') console.warn(`e2e proxy suite skipped (SVC_E2E_SKIP_NGINX=1): ${plan.message}`);
const suite = plan.action === 'skip' ? describe.skip : describe;

const tokens = makeTokens();
let h: ProxyHarness;

const PROXIES: readonly [string, ProxyName][] = [
  ['nginx auth_request (deploy/nginx/svc-auth.conf)', 'nginx'],
  ['Traefik ForwardAuth (deploy/traefik)', 'traefik'],
  ['Envoy ext_authz (deploy/gateway-api/envoy.yaml)', 'envoy'],
  ['NGINX Gateway Fabric ExternalAuth (deploy/gateway-api/httproute-externalauth.yaml, as Fabric renders it)', 'gateway-fabric'],
  ['Envoy Gateway SecurityPolicy (deploy/gateway-api/envoy-gateway-securitypolicy.yaml, Envoy Gateway v1.9 standalone)', 'envoy-gateway'],
  ['Traefik\'s ingress-nginx provider reading deploy/ingress-nginx/ingress.yaml from the kube-apiserver (auth-url → /authz/forward-auth)', 'traefik-ingress-nginx'],
  ['Traefik\'s CRD provider reading deploy/traefik/middleware.yaml from the kube-apiserver', 'traefik-crd'],
];

type Via = 'bearer' | 'query';

interface Req {
  readonly method?: string;
  readonly target: string;
  readonly body?: string;
  readonly headers?: readonly (readonly [string, string])[];
}

function send(proxy: ProxyName | 'oapi', req: Req, token?: { name: TokenName; via: Via }): Promise<RawResponse> {
  let target = req.target;
  const headers = [...(req.headers ?? [])];
  if (token) {
    const value = tokens[token.name];
    if (token.via === 'query') target = `${target}${target.includes('?') ? '&' : '?'}token=${value}`;
    else headers.push(['Authorization', `Bearer ${value}`]);
  }
  return rawRequest(h.ports[proxy], { method: req.method ?? 'GET', target, headers, body: req.body, host: HOST });
}

const col = (id: string, rest = '/items'): string => `/oapi/collections/${id}${rest}`;
const json = [['Content-Type', 'application/json']] as const;
const geojson = [['Content-Type', 'application/geo+json']] as const;

/** What a closed resource is, who may read it, and how to recognise its content. */
interface Closed extends Req {
  readonly name: string;
  readonly token: TokenName;
  readonly other: TokenName;
  /** Text only the protected answer holds. */
  readonly content: () => string;
}

const topic = COLLECTIONS.topic;
const dataset = COLLECTIONS.dataset;
const marker = (id: string) => (): string => h.pygeoapi!.files.markers[id]!;
const wafMarker = (f: WafFile) => (): string => h.waf.markers[f];

const CLOSED: readonly Closed[] = [
  { name: 'topic collection /items', target: col(topic), token: 'topic', other: 'dataset', content: marker(topic) },
  { name: 'topic collection /items/{id}', target: col(topic, `/items/${featureId(topic)}`), token: 'topic', other: 'dataset', content: marker(topic) },
  { name: 'topic collection /items?f=json', target: col(topic, '/items?f=json'), token: 'topic', other: 'dataset', content: marker(topic) },
  { name: 'dataset collection /items', target: col(dataset), token: 'dataset', other: 'topic', content: marker(dataset) },
  { name: 'dataset collection /items/{id}?f=json', target: col(dataset, `/items/${featureId(dataset)}?f=json`), token: 'dataset', other: 'topic', content: marker(dataset) },
  { name: 'WAF file of a closed topic', target: WAF.topicFile, token: 'topic', other: 'dataset', content: wafMarker('topicFile') },
  { name: 'WAF file of a closed dataset', target: WAF.datasetFile, token: 'dataset', other: 'topic', content: wafMarker('datasetFile') },
];

const open = COLLECTIONS.open;
const OPEN: readonly (Req & { name: string; content: () => string })[] = [
  { name: 'open collection /items', target: col(open), content: marker(open) },
  { name: 'open collection /items/{id}', target: col(open, `/items/${featureId(open)}`), content: marker(open) },
  { name: 'open collection /items?f=json', target: col(open, '/items?f=json'), content: marker(open) },
  { name: 'collection obs2 (not under ...:obs) /items', target: col(COLLECTIONS.boundaryDataset), content: marker(COLLECTIONS.boundaryDataset) },
  { name: 'discovery-metadata /items', target: col(COLLECTIONS.discovery), content: marker(COLLECTIONS.discovery) },
  { name: 'the collections list with a trailing slash', target: '/oapi/collections/?f=json', content: () => open },
  { name: 'the processes list with a trailing slash', target: '/oapi/processes/?f=json', content: () => 'svc-synop2bufr' },
  { name: 'stations /items', target: col('stations'), content: () => STATION_ID },
  { name: 'stations /items/{id}', target: col('stations', `/items/${STATION_ID}`), content: () => STATION_ID },
  { name: 'WAF file of an open topic', target: WAF.openTopicFile, content: wafMarker('openTopicFile') },
  { name: 'WAF discovery metadata', target: WAF.metadataFile, content: wafMarker('metadataFile') },
];

const execute = (id: string): Req => ({ method: 'POST', target: `/oapi/processes/${id}/execution`, body: JSON.stringify({ inputs: { name: 'svc-e2e', message: 'hi' } }), headers: json });
/** pygeoapi's HelloWorld answer to the body above: only the process itself produces it. */
const RESULT = 'Hello svc-e2e! hi';

/**
 * The fail-closed table (issue 11): header, method and case cases, each through every proxy. Every row
 * is a request for something closed, made by a client without its token, that tries to pass as
 * something open. Each must be refused by svc-auth itself (400/401/403: a 404 would mean the variant
 * reached the backend), without the content and without changing the stations data.
 */
interface FailClosed extends Req {
  readonly name: string;
  readonly kind: 'header' | 'method' | 'case';
  readonly content?: () => string;
  /** A stations write: the data must be unchanged afterwards. */
  readonly write?: boolean;
}

const stationsPost = (extra: readonly (readonly [string, string])[] = []): Req => ({
  method: 'POST', target: col('stations'), headers: [...geojson, ...extra],
  body: JSON.stringify({ type: 'Feature', id: 'intruder', geometry: { type: 'Point', coordinates: [1, 1] }, properties: { name: 'INTRUDER' } }),
});

const FAIL_CLOSED: readonly FailClosed[] = [
  { kind: 'header', name: 'client X-Original-URI naming an open collection', target: col(dataset), headers: [['X-Original-URI', col(open)]], content: marker(dataset) },
  { kind: 'header', name: 'client X-Original-URL naming an open collection', target: col(dataset), headers: [['X-Original-URL', `http://${HOST}${col(open)}`]], content: marker(dataset) },
  { kind: 'header', name: 'client X-Forwarded-Uri naming an open file', target: WAF.topicFile, headers: [['X-Forwarded-Uri', WAF.openTopicFile]], content: wafMarker('topicFile') },
  { kind: 'header', name: 'client X-Envoy-Original-Path naming an open file', target: WAF.topicFile, headers: [['X-Envoy-Original-Path', WAF.openTopicFile]], content: wafMarker('topicFile') },
  { kind: 'header', name: 'client X-Forwarded-Prefix / X-Rewrite-URL', target: col(topic), headers: [['X-Forwarded-Prefix', '/oapi/collections/discovery-metadata'], ['X-Rewrite-URL', col(open)]], content: marker(topic) },
  { kind: 'method', name: 'stations POST with X-HTTP-Method-Override: GET', ...stationsPost([['X-HTTP-Method-Override', 'GET']]), write: true },
  { kind: 'method', name: 'stations POST with client X-Original-Method: GET', ...stationsPost([['X-Original-Method', 'GET']]), write: true },
  { kind: 'method', name: 'stations POST with client X-Forwarded-Method: GET', ...stationsPost([['X-Forwarded-Method', 'GET']]), write: true },
  { kind: 'method', name: 'stations POST with X-Method-Override: GET', ...stationsPost([['X-Method-Override', 'GET']]), write: true },
  { kind: 'case', name: 'stations POST to /oapi/collections/Stations/items', ...stationsPost(), target: col('Stations'), write: true },
  { kind: 'case', name: 'dataset collection with an upper-case id', target: col(dataset.toUpperCase()), content: marker(dataset) },
  { kind: 'case', name: 'WAF closed file with an upper-case level', target: WAF.topicFile.replace('/core/', '/CORE/'), content: wafMarker('topicFile') },
  { kind: 'case', name: 'process execution as /oapi/processes/SVC-synop2bufr', method: 'POST', target: '/oapi/processes/SVC-synop2bufr/execution', headers: json, body: JSON.stringify({ inputs: { name: 'svc-e2e', message: 'hi' } }), content: () => RESULT },
  { kind: 'method', name: 'stations item GET with X-HTTP-Method-Override: DELETE', target: col('stations', '/items/0-20000-0-64400'), headers: [['X-HTTP-Method-Override', 'DELETE']], write: true },
  { kind: 'method', name: 'stations item GET with X-HTTP-Method: PUT', target: col('stations', '/items/0-20000-0-64400'), headers: [['X-HTTP-Method', 'PUT']], write: true },
  { kind: 'header', name: 'a # in the target', target: `${col(dataset)}#x`, content: marker(dataset) },
  // Issue 19: every header family a proxy or framework may read, injected by the client.
  { kind: 'header', name: 'client Path (Gateway Fabric\'s) naming an open collection', target: col(dataset), headers: [['Path', col(open)]], content: marker(dataset) },
  { kind: 'header', name: 'client X-Original-URL and X-Original-URI together naming an open file', target: WAF.topicFile, headers: [['X-Original-URL', `http://${HOST}${WAF.openTopicFile}`], ['X-Original-URI', WAF.openTopicFile], ['X-Original-Method', 'GET']], content: wafMarker('topicFile') },
  { kind: 'header', name: 'every target header of every family naming an open file', target: WAF.topicFile, headers: [['X-Original-URL', `http://${HOST}${WAF.openTopicFile}`], ['X-Original-URI', WAF.openTopicFile], ['X-Forwarded-Uri', WAF.openTopicFile], ['X-Envoy-Original-Path', WAF.openTopicFile], ['Path', WAF.openTopicFile]], content: wafMarker('topicFile') },
  { kind: 'method', name: 'stations POST with client Method: GET (Gateway Fabric\'s)', ...stationsPost([['Method', 'GET']]), write: true },
  { kind: 'method', name: 'stations POST with client X-Api-Http-Method: GET', ...stationsPost([['X-Api-Http-Method', 'GET']]), write: true },
  { kind: 'method', name: 'stations POST with every method header of every family saying GET', ...stationsPost([['X-Original-Method', 'GET'], ['X-Forwarded-Method', 'GET'], ['X-Api-Http-Method', 'GET'], ['Method', 'GET'], ['X-HTTP-Method-Override', 'GET']]), write: true },
];

/** Every target header of every family, naming `target`: what a decision endpoint would decide on, were it reachable. */
const naming = (target: string): [string, string][] => [
  ['X-Original-URL', `http://${HOST}${target}`], ['X-Original-URI', target], ['X-Original-Method', 'GET'],
  ['X-Forwarded-Uri', target], ['X-Forwarded-Method', 'GET'], ['Path', target], ['Method', 'GET'],
];

/**
 * svc-auth's decision endpoints, asked from outside as a client would through the browser sign-in route of each
 * example: with a token and every header naming a closed file, so one that were reachable would answer 200 (an
 * oracle for any token). Each must be the proxy's own 404.
 */
const DECISION_ENDPOINTS: readonly [string, Req][] = [
  ['/authz/auth-request', { target: '/authz/auth-request', headers: naming(WAF.topicFile) }],
  ['/authorize', { target: '/authorize', headers: naming(WAF.topicFile) }],
  ['/authz/forward-auth', { target: '/authz/forward-auth', headers: naming(WAF.topicFile) }],
  ['/authz/ext-authz (Gateway Fabric\'s dialect)', { target: '/authz/ext-authz', headers: naming(WAF.topicFile) }],
  ['/authz/ext-authz/<path> (Envoy\'s)', { target: `/authz/ext-authz${WAF.topicFile}` }],
  ['/authz/auth-request reached by dot segments from a sign-in path', { target: '/authz/v1/protected/../../authz/auth-request', headers: naming(WAF.topicFile) }],
];

suite('the real data path: pygeoapi and the WAF behind svc-auth, through every proxy and controller of deploy/', () => {
  beforeAll(async () => {
    h = await ProxyHarness.start(plan, tokens);
  }, 1_500_000);

  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  describe('the examples the proxies run are the ones deploy/ documents', () => {
    it('Traefik: the CRD middleware (middleware.yaml) says what the file provider\'s (dynamic.yaml) does', () => {
      const crd = yamlLoadAll(readFileSync(`${REPO_ROOT}/deploy/traefik/middleware.yaml`, 'utf8')).find((d) => (d as { kind?: string }).kind === 'Middleware') as { spec: { forwardAuth: object } };
      const file = yamlLoad(readFileSync(TRAEFIK_DYNAMIC, 'utf8')) as { http: { middlewares: { 'svc-auth': { forwardAuth: object } } } };
      expect(crd.spec.forwardAuth).toEqual(file.http.middlewares['svc-auth'].forwardAuth);
    });

    it('Envoy Gateway: the SecurityPolicy asks the same path, fails closed and passes the same headers as envoy.yaml', () => {
      const docs = yamlLoadAll(readFileSync(`${REPO_ROOT}/deploy/gateway-api/envoy-gateway-securitypolicy.yaml`, 'utf8'));
      const policy = docs.find((d) => (d as { kind?: string }).kind === 'SecurityPolicy') as { spec: { extAuth: { failOpen: boolean; headersToExtAuth: string[]; http: { path: string; headersToBackend: string[] } } } };
      const text = readFileSync(ENVOY_EXAMPLE, 'utf8');
      expect(policy.spec.extAuth.failOpen).toBe(false);
      expect(text).toMatch(/failure_mode_allow: false/);
      expect(text).toContain(`path_prefix: ${policy.spec.extAuth.http.path}`);
      for (const name of policy.spec.extAuth.http.headersToBackend) expect(text).toContain(`exact: ${name}`);
      // The same client headers go to svc-auth: the credentials, the method overrides and a browser session's.
      for (const name of policy.spec.extAuth.headersToExtAuth) expect(text).toContain(`exact: ${name}`);
      expect(policy.spec.extAuth.headersToExtAuth).toEqual(['authorization', 'x-forwarded-for', 'x-http-method-override', 'x-http-method', 'x-method-override',
        'cookie', 'accept', 'sec-fetch-mode', 'sec-fetch-site', 'sec-fetch-dest', 'origin']);
    });

    it('Gateway API ExternalAuth: every rule but the sign-in route\'s asks the same path and lets the same headers through as envoy.yaml', () => {
      type Rule = { filters?: { type: string; externalAuth: { protocol: string; http: { path: string; allowedResponseHeaders: string[] } } }[]; backendRefs: { name: string }[] };
      const routes = yamlLoadAll(readFileSync(`${REPO_ROOT}/deploy/gateway-api/httproute-externalauth.yaml`, 'utf8')) as { spec: { rules: Rule[] } }[];
      const route = { spec: { rules: routes.flatMap((r) => r.spec.rules) } };
      const text = readFileSync(ENVOY_EXAMPLE, 'utf8');
      // The browser sign-in rule goes to svc-auth itself, without the filter (test/docs/deploy-sign-in.test.ts checks its paths).
      const data = route.spec.rules.filter((r) => r.backendRefs[0]?.name !== 'svc-auth');
      expect(data.length).toBe(route.spec.rules.length - 1);
      expect(data.length).toBeGreaterThan(0);
      for (const rule of data) {
        const auth = rule.filters?.find((f) => f.type === 'ExternalAuth')?.externalAuth;
        expect(auth?.protocol).toBe('HTTP');
        expect(text).toContain(`path_prefix: ${auth!.http.path}`);
        for (const name of auth!.http.allowedResponseHeaders) expect(text).toContain(`exact: ${name.toLowerCase()}`);
      }
    });
  });

  describe.each(PROXIES)('%s', (_label, proxy) => {
    describe('open data: the backend\'s own answer, no token needed', () => {
      it.each(OPEN.map((o) => [o.name, o] as const))('%s → 200', async (_n, o) => {
        const res = await send(proxy, o);
        expect(res.status).toBe(200);
        expect(res.body.includes(o.content())).toBe(true);
      });

      it('an item URL with a trailing slash gets exactly what pygeoapi answers directly', async () => {
        const target = col(open, '/items/');
        const [direct, via] = await Promise.all([send('oapi', { target }), send(proxy, { target })]);
        expect(via.status).toBe(direct.status);
        expect(via.body).toBe(direct.body);
      });
    });

    describe.each(CLOSED.map((c) => [c.name, c] as const))('closed: %s', (_n, c) => {
      it('no token → 401 with the Bearer challenge', async () => {
        const res = await send(proxy, c);
        expect(res.status).toBe(401);
        expect(res.body.includes(c.content())).toBe(false);
        expect(header(res, 'www-authenticate') ?? '').toContain('Bearer realm="svc"');
      });

      it.each([['Bearer header', 'bearer'], ['?token= query argument', 'query']] as const)('its own token in the %s → 200 with the content', async (_v, via) => {
        const res = await send(proxy, c, { name: c.token, via });
        expect(res.status).toBe(200);
        expect(res.body.includes(c.content())).toBe(true);
      });

      it('another scope’s token → 403 with its WWW-Authenticate (insufficient_scope)', async () => {
        const res = await send(proxy, c, { name: c.other, via: 'bearer' });
        expect(res.status).toBe(403);
        expect(res.body.includes(c.content())).toBe(false);
        // nginx's auth_request passes WWW-Authenticate on to the client only with a 401; deploy/nginx adds it to
        // a 403 itself, Gateway Fabric renders nothing that could (deploy/README.md says so).
        if (proxy === 'gateway-fabric') expect(header(res, 'www-authenticate')).toBeUndefined();
        else expect(header(res, 'www-authenticate') ?? '').toMatch(/^Bearer realm="svc", error="insufficient_scope", scope="/);
      });

      it('an unknown token → 401 invalid_token', async () => {
        const res = await send(proxy, c, { name: 'unknown', via: 'bearer' });
        expect(res.status).toBe(401);
        expect(header(res, 'www-authenticate') ?? '').toContain('invalid_token');
      });
    });

    describe('process execution (POST with a JSON body)', () => {
      it.each(['svc-synop2bufr', 'svc-csv2bufr'])('%s: pygeoapi\'s result with a processes/svc token', async (id) => {
        const res = await send(proxy, execute(id), { name: 'processes', via: 'bearer' });
        expect(res.status).toBe(200);
        expect(res.body.includes(RESULT)).toBe(true);
      });

      it.each(['svc-synop2bufr', 'svc-csv2bufr'])('%s: 401 without a token, 403 with another scope’s, never the result', async (id) => {
        const none = await send(proxy, execute(id));
        const other = await send(proxy, execute(id), { name: 'stations', via: 'bearer' });
        expect([none.status, other.status]).toEqual([401, 403]);
        expect(none.body.includes(RESULT) || other.body.includes(RESULT)).toBe(false);
      });

      // docs/access-rules.md: a process no `processes/<prefix>` scope covers is closed by default, and a
      // processes/svc token does not open other-process or svcx: 401 without a token, 403 with it.
      it.each(['other-process', 'svcx'])('%s is not under processes/svc: closed by default, that token does not open it', async (id) => {
        const without = await send(proxy, execute(id));
        const withToken = await send(proxy, execute(id), { name: 'processes', via: 'bearer' });
        expect([without.status, withToken.status]).toEqual([401, 403]);
        expect(without.body.includes(RESULT) || withToken.body.includes(RESULT)).toBe(false);
      });
    });

    describe('stations writes', () => {
      const item = (name: string) => JSON.stringify({ type: 'Feature', id: `e2e-${proxy}`, geometry: { type: 'Point', coordinates: [34, -14] }, properties: { name } });
      const post = (name: string): Req => ({ method: 'POST', target: col('stations'), headers: geojson, body: item(name) });
      const put = (name: string): Req => ({ method: 'PUT', target: col('stations', `/items/e2e-${proxy}`), headers: geojson, body: item(name) });
      const del: Req = { method: 'DELETE', target: col('stations', `/items/e2e-${proxy}`) };

      /** Sends a write and reports the status and whether the stations data changed. */
      async function write(req: Req, token?: { name: TokenName; via: Via }): Promise<{ status: number; changed: boolean }> {
        const before = h.pygeoapi!.stationsData();
        const res = await send(proxy, req, token);
        return { status: res.status, changed: h.pygeoapi!.stationsData() !== before };
      }

      it('refused writes (no token, another scope’s token, an unknown one) leave the data exactly as it was', async () => {
        for (const req of [post('REFUSED'), put('REFUSED'), del]) {
          expect(await write(req)).toEqual({ status: 401, changed: false });
          expect(await write(req, { name: 'processes', via: 'bearer' })).toEqual({ status: 403, changed: false });
          expect(await write(req, { name: 'unknown', via: 'query' })).toEqual({ status: 401, changed: false });
        }
      });

      it('accepted writes change it: POST creates, PUT replaces, DELETE removes', async () => {
        const token = { name: 'stations', via: 'bearer' } as const;
        expect(await write(post('CREATED'), token)).toEqual({ status: 201, changed: true });
        expect(h.pygeoapi!.stationsData().includes('CREATED')).toBe(true);
        const replaced = await write(put('REPLACED'), { name: 'stations', via: 'query' });
        expect(replaced.changed).toBe(true);
        expect(replaced.status).toBeLessThan(300);
        expect(h.pygeoapi!.stationsData().includes('REPLACED')).toBe(true);
        const removed = await write(del, token);
        expect(removed.changed).toBe(true);
        expect(h.pygeoapi!.stationsData().includes(`e2e-${proxy}`)).toBe(false);
      });
    });

    describe('fail closed: header, method and case cases', () => {
      it.each(FAIL_CLOSED.map((f) => [`${f.kind}: ${f.name}`, f] as const))('%s', async (_n, f) => {
        const before = h.pygeoapi!.stationsData();
        const res = await send(proxy, f);
        // Refused by svc-auth itself (a 404 would mean it let the variant through to the backend): 401/403,
        // or 400 for malformed input on the Traefik and Envoy endpoints (nginx turns svc-auth's answers into
        // 401/403, and refuses some shapes itself with 400).
        expect([400, 401, 403]).toContain(res.status);
        if (f.content) expect(res.body.includes(f.content())).toBe(false);
        if (f.write) expect(h.pygeoapi!.stationsData() === before).toBe(true);
      });
    });

    describe('the browser sign-in route: svc-auth\'s own pages and public list, never its decision endpoints', () => {
      it('serves the public list of closed scopes, exactly as svc-auth answers it', async () => {
        const [direct, via] = await Promise.all([rawRequest(h.ports.auth, { target: '/authz/v1/protected', host: HOST }), send(proxy, { target: '/authz/v1/protected' })]);
        expect(direct.status).toBe(200);
        expect(via.status).toBe(200);
        expect(via.body).toBe(direct.body);
      });

      it.each(DECISION_ENDPOINTS)('%s with a token and every target header → the proxy\'s 404', async (_n, req) => {
        const res = await send(proxy, req, { name: 'topic', via: 'bearer' });
        expect(res.status).toBe(404);
      });
    });
  });

  describe('the browser sign-in route with dot segments (the proxies that normalize the path)', () => {
    // nginx asks svc-auth the matched path itself; Traefik and Envoy forward the path they normalized. A raw URI that
    // names a decision endpoint but normalizes to a sign-in path therefore reaches svc-auth as that path. (NGINX
    // Gateway Fabric's rendering, like ingress-nginx, passes the raw URI on: deploy/README.md says what svc-auth then sees.)
    const NORMALIZING: readonly ProxyName[] = ['nginx', 'traefik', 'envoy', 'envoy-gateway', 'traefik-ingress-nginx', 'traefik-crd'];
    it.each(NORMALIZING)('%s: /authz/ext-authz/<closed file>/../../.. to the public list is the public list, not a decision', async (proxy) => {
      const direct = await rawRequest(h.ports.auth, { target: '/authz/v1/protected', host: HOST });
      // One more than the file's segments: back over ext-authz too, to /authz/v1/protected.
      const up = '/..'.repeat(WAF.topicFile.split('/').length);
      const res = await send(proxy, { target: `/authz/ext-authz${WAF.topicFile}${up}/v1/protected` }, { name: 'topic', via: 'bearer' });
      expect(res.status).toBe(200);
      expect(res.body).toBe(direct.body);
    });
  });

  describe('Traefik\'s ingress-nginx provider with auth-url left at /authz/auth-request (moved without changing it)', () => {
    // Traefik sends its X-Forwarded-* family and copies every client header: the nginx endpoint must refuse
    // it all, whatever X-Original-* a client adds (it cannot tell Traefik's request from a client's own headers).
    const viaUnchanged = (req: Req, token?: { name: TokenName; via: Via }): Promise<RawResponse> => {
      const headers = [...(req.headers ?? [])];
      if (token) headers.push(['Authorization', `Bearer ${tokens[token.name]}`]);
      return rawRequest(h.ports['traefik-ingress-nginx-unchanged'], { method: req.method ?? 'GET', target: req.target, headers, body: req.body, host: HOST });
    };
    const injections: readonly [string, (readonly [string, string])[]][] = [
      ['nothing', []],
      ['X-Original-URL + X-Original-Method naming an open file', [['X-Original-URL', `https://${HOST}${WAF.openTopicFile}`], ['X-Original-Method', 'GET']]],
      ['X-Original-URI naming an open file', [['X-Original-URI', WAF.openTopicFile]]],
      ['Path + Method naming an open file', [['Path', WAF.openTopicFile], ['Method', 'GET']]],
      ['X-Original-URI naming the file itself (no token)', [['X-Original-URI', WAF.topicFile], ['X-Original-Method', 'GET']]],
    ];

    it.each(injections)('the closed file with %s: refused, never the file', async (_n, headers) => {
      const res = await viaUnchanged({ target: WAF.topicFile, headers });
      expect([401, 403]).toContain(res.status);
      expect(res.body.includes(h.waf.markers.topicFile)).toBe(false);
    });

    it('a stations write with a client X-Original-Method: GET is refused and changes nothing', async () => {
      const before = h.pygeoapi!.stationsData();
      const res = await viaUnchanged(stationsPost([['X-Original-URI', col('stations')], ['X-Original-Method', 'GET']]));
      expect([400, 401, 403]).toContain(res.status);
      expect(h.pygeoapi!.stationsData() === before).toBe(true);
    });

    it('svc-auth says what it is: a ForwardAuth proxy pointed at the nginx endpoint (metric)', async () => {
      await viaUnchanged({ target: WAF.topicFile });
      const metrics = await rawRequest(h.ports.metrics, { target: '/metrics' });
      const line = /^svc_auth_misdirected_requests_total\{endpoint="auth-request",likely_proxy="forward-auth"\} (\d+)$/m.exec(metrics.body);
      expect(Number(line?.[1] ?? 0)).toBeGreaterThan(0);
    });
  });

  describe('svc-auth stopped: every proxy refuses', () => {
    it('closed data, with or without its token, and stations writes never get through', async () => {
      await h.svcAuth!.stop('SIGKILL');
      try {
        for (const [, proxy] of PROXIES) {
          for (const token of [undefined, { name: 'dataset', via: 'bearer' } as const, { name: 'dataset', via: 'query' } as const]) {
            const res = await send(proxy, { target: col(dataset) }, token);
            expect(res.status).toBeGreaterThanOrEqual(403);
            expect(res.body.includes(h.pygeoapi!.files.markers[dataset]!)).toBe(false);
          }
          const before = h.pygeoapi!.stationsData();
          const res = await send(proxy, stationsPost(), { name: 'stations', via: 'bearer' });
          expect(res.status).toBeGreaterThanOrEqual(403);
          expect(h.pygeoapi!.stationsData() === before).toBe(true);
          const file = await send(proxy, { target: WAF.topicFile }, { name: 'topic', via: 'bearer' });
          expect(file.status).toBeGreaterThanOrEqual(403);
          expect(file.body.includes(h.waf.markers.topicFile)).toBe(false);
        }
      } finally {
        await h.svcAuth!.start();
      }
    });

    it('started again, every proxy lets the token through at once', async () => {
      for (const [, proxy] of PROXIES) {
        let last = 0;
        await waitUntil(async () => (last = (await send(proxy, { target: col(dataset) }, { name: 'dataset', via: 'bearer' })).status) === 200,
          { what: `${proxy} to let the dataset token through`, timeoutMs: 5000, describe: () => `status ${last}` });
        expect(last).toBe(200);
      }
    });
  });

  it('svc-auth’s output never contains a token', () => {
    const output = h.svcAuth!.output;
    expect(Object.values(tokens).filter((t) => output.includes(t)).length).toBe(0);
  });
});
