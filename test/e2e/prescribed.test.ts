/**
 * Every proxy configuration the product prescribes, attacked as written (issue 37; docs/access-rules.md "What the
 * proxy in front may pass"): each configuration of test/e2e/support/prescribed.ts runs with its real proxy from its
 * file in deploy/ or its block in the documents (only addresses, ports and paths replaced), in front of one svc-auth
 * and a backend that records what reaches it. A hostile client sends, to each, forged target headers of every family,
 * forged method headers, forged address headers and forged answer headers. Required: no closed request allowed (no
 * content, no backend hit), no header of svc-auth's answer family at the backend with a value the client wrote; and,
 * so the suite can tell a closed door from a broken one, the legitimate requests pass. A summary per configuration is
 * printed at the end.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANSWER_HEADERS, dumpManifests, newProtectedScope, scopeObjectName, type Scope } from '../../core/index.js';
import { buildWafTree, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { exampleNginxConf } from './support/nginx-example.js';
import { rawRequest, type RawResponse } from './support/net.js';
import { manifestFile, newToken, tokenRecord } from './support/scopes.js';
import { REPO_ROOT, SvcAuth } from './support/svc-auth.js';
import { startTraefik } from './support/traefik.js';
import { replaceExact, startEnvoy } from './support/envoy.js';
import { startEnvoyGateway, type RunningEnvoyGateway } from './support/envoy-gateway.js';
import { gatewayFabricServer } from './support/gateway-fabric.js';
import { startTraefikCrd, startTraefikIngressNginx, type TraefikKube } from './support/traefik-kube.js';
import { httpBalancer, ingressNginxBehindBalancer, proxyProtocolBalancer, startEnvoyBehindBalancer, startTraefikBehindBalancer } from './support/balancers.js';
import { PRESCRIBED, type PrescribedName } from './support/prescribed.js';
import { startControlPlane, type ControlPlane } from '../controlplane/controlplane.js';
import type { Supervised } from '../support/process.js';
import { freePorts } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { fences } from '../docs/markdown.js';

jest.setTimeout(60_000);

const plan = nginxPlan();
const suite = plan.action === 'skip' ? describe.skip : describe;
const HOST = 'data.example.org';
/** The address the scopes' networks hold, and one they do not. */
const ALLOWED = '127.0.0.2';
const OTHER = '127.0.0.3';
/** The value of every answer header the client forges: it must never reach the backend. */
const FORGED = 'forged-by-client';
const EXEC_SCOPE: Scope = { kind: 'path', value: 'processes/echo' };
const EXEC = '/oapi/processes/echo/execution';
const STATIONS = '/oapi/collections/stations/items';
const OPEN_API = '/oapi/collections';

const PORTS = ['auth', 'metrics', 'auth1', 'metrics1', 'waf', 'oapi', 'wafStatic', 'nginx', 'wis2box', 'wis2boxSignIn', 'lbNginx', 'controller',
  'traefik', 'traefikPp', 'lbTraefik', 'traefikCrd', 'traefikIngressNginx', 'envoy', 'envoyHops', 'lbEnvoy', 'envoyGateway', 'fabric'] as const;
type PortName = (typeof PORTS)[number];

/** How the suite reaches each configuration, and whether it can grant by network (Gateway Fabric's subrequest carries no address). */
const ENTRY: Record<PrescribedName, { readonly port: PortName; readonly networks: boolean }> = {
  'nginx': { port: 'nginx', networks: true },
  'wis2box nginx': { port: 'wis2box', networks: true },
  'ingress-nginx behind an HTTP load balancer': { port: 'lbNginx', networks: true },
  'Traefik (file provider)': { port: 'traefik', networks: true },
  'Traefik behind a PROXY-protocol load balancer': { port: 'lbTraefik', networks: true },
  'Traefik CRD provider': { port: 'traefikCrd', networks: true },
  'Traefik ingress-nginx provider': { port: 'traefikIngressNginx', networks: true },
  'Envoy': { port: 'envoy', networks: true },
  'Envoy behind an HTTP load balancer': { port: 'lbEnvoy', networks: true },
  'Envoy Gateway': { port: 'envoyGateway', networks: true },
  'NGINX Gateway Fabric': { port: 'fabric', networks: false },
};
/** docs/wis2box.md's sign-in variant runs as a configuration of its own, reported under the same name's sources. */
const WIS2BOX_SIGN_IN = 'wis2box nginx (with browser sign-in, section 4)';
type ConfigName = PrescribedName | typeof WIS2BOX_SIGN_IN;
const CONFIGS: readonly (readonly [ConfigName, { readonly port: PortName; readonly networks: boolean }])[] = [
  ...PRESCRIBED.map((p) => [p.name, ENTRY[p.name]] as const),
  [WIS2BOX_SIGN_IN, { port: 'wis2boxSignIn', networks: true }],
];

let base: string;
let waf: WafTree;
let ports: Record<PortName, number>;
let svcAuth: SvcAuth | undefined;
let svcAuthHops: SvcAuth | undefined;
let nginx: Nginx | undefined;
const backends: Server[] = [];
const proxies: Supervised[] = [];
let envoyGateway: RunningEnvoyGateway | undefined;
let controlPlane: ControlPlane | undefined;
const kube: TraefikKube[] = [];
const topicToken = newToken();
const execToken = newToken();

/** What reached the backend: each request's id (X-Test-Id), method, URL and the answer family's headers. */
interface Hit {
  readonly id: string | undefined;
  readonly method: string;
  readonly url: string;
  readonly answerHeaders: readonly (readonly [string, string])[];
}
const hits: Hit[] = [];
const ANSWER_NAMES = new Set(ANSWER_HEADERS.map((h) => h.toLowerCase()));

/** The backend behind every configuration: records each request, serves the WAF tree's files, answers 200 otherwise. */
function backend(req: IncomingMessage, res: ServerResponse): void {
  const raw = req.rawHeaders;
  const answerHeaders: [string, string][] = [];
  let id: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (ANSWER_NAMES.has(name)) answerHeaders.push([name, raw[i + 1]!]);
    if (name === 'x-test-id') id = raw[i + 1];
  }
  hits.push({ id, method: req.method ?? '', url: req.url ?? '', answerHeaders });
  req.resume();
  const path = (req.url ?? '').split('?')[0]!;
  let body = `backend ${req.method} ${path}\n`;
  if (path.startsWith('/data/')) {
    try {
      body = readFileSync(join(waf.root, decodeURIComponent(path)), 'utf8');
    } catch {
      res.writeHead(404).end('not found\n');
      return;
    }
  }
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end(body);
}

function writeScopes(dir: string): void {
  const networks = [{ cidr: `${ALLOWED}/32`, description: 'a WIS2 Global Cache' }];
  for (const [scope, token] of [[TOPIC, topicToken], [EXEC_SCOPE, execToken]] as const) {
    const o = newProtectedScope(scope, scopeObjectName(scope), undefined, [tokenRecord(token)]);
    writeFileSync(manifestFile(dir, scope), dumpManifests([{ ...o, spec: { ...o.spec, networks } }]));
  }
}

/** The nginx fenced blocks under a heading of docs/wis2box.md, as written. */
function wis2boxBlocks(heading: string): string[] {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'wis2box.md'), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/wis2box.md has no heading "${heading}": update the suite with the document`);
  const next = text.indexOf('\n## ', start + 4);
  return fences(text.slice(start, next < 0 ? undefined : next)).filter((f) => f.info === 'nginx').map((f) => f.body);
}

/** wis2box's own server-level lines (its nginx/nginx.conf), which the documented blocks go into. */
const WIS2BOX_SERVER_LEVEL = `        server_name _;
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Host $server_name;`;

/**
 * wis2box's nginx with docs/wis2box.md's blocks as written: section 1's auth location and locations, and its answer-header
 * lines at server level; with `signIn`, the Keycloak section's block in place of section 1's /data (the same lines in
 * /oapi and /wis2downloader, as its comment says, are section 1's locations plus the four lines).
 */
function wis2boxServer(listen: number, signIn: boolean): string {
  const f = 'docs/wis2box.md';
  const [locations, answerHeaders] = wis2boxBlocks('1. nginx: the upstream and one line for the client address');
  if (locations === undefined || answerHeaders === undefined) throw new Error(`${f} section 1 no longer has its two nginx blocks`);
  let body = locations;
  body = replaceExact(body, 'http://svc-auth:8080/authorize', `http://127.0.0.1:${ports.auth}/authorize`, f);
  body = replaceExact(body, 'http://wis2downloader:5000', `http://127.0.0.1:${ports.oapi}`, f);
  body = replaceExact(body, 'http://wis2box-api/oapi', `http://127.0.0.1:${ports.oapi}/oapi`, f);
  body = replaceExact(body, 'root /data/wis2box/public;', `root ${waf.root};`, f);
  if (signIn) {
    const [block] = wis2boxBlocks('Keycloak in front of a wis2box with svc');
    if (block === undefined) throw new Error(`${f}'s Keycloak section no longer has its nginx block`);
    const fourLines = ['auth_request_set $svc_sign_in $upstream_http_x_svc_sign_in;', 'auth_request_set $svc_denied $upstream_http_x_svc_denied;', 'error_page 401 = @svc_sign_in;', 'error_page 403 = @svc_denied;'];
    for (const line of fourLines) replaceExact(block, line, line, f);
    body = body.split('\n').filter((l) => !l.startsWith('location /data ')).join('\n')
      .replace(/\{ auth_request \/authorize; /g, `{ auth_request /authorize; ${fourLines.join(' ')} `);
    let signInBlock = replaceExact(block, 'http://svc-auth:8080/authz/$1$is_args$args', `http://127.0.0.1:${ports.auth}/authz/$1$is_args$args`, f);
    signInBlock = replaceExact(signInBlock, 'root /data/wis2box/public;', `root ${waf.root};`, f);
    body = `${body}\n${signInBlock}`;
  }
  return `    server {
        listen 127.0.0.1:${listen};
${WIS2BOX_SERVER_LEVEL}
${answerHeaders}
${body}
    }
`;
}

beforeAll(async () => {
  if (plan.action === 'skip') return;
  const binary = ensureNginx(plan);
  base = mkdtempSync(join(tmpdir(), 'svc-e2e-prescribed-'));
  chmodSync(base, 0o755);
  const scopesDir = join(base, 'scopes');
  for (const d of [scopesDir, join(base, 'nginx', 'logs'), join(base, 'nginx', 'temp')]) mkdirSync(d, { recursive: true });
  waf = buildWafTree(join(base, 'waf'));
  const free = await freePorts(PORTS.length);
  ports = Object.fromEntries(PORTS.map((n, i) => [n, free[i]!])) as Record<PortName, number>;
  const p = ports;
  writeScopes(scopesDir);
  for (const port of [p.waf, p.oapi]) {
    const server = createServer(backend);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    backends.push(server);
  }
  svcAuth = new SvcAuth({ scopesDir, port: p.auth, metricsPort: p.metrics, secrets: [topicToken, execToken] });
  svcAuthHops = new SvcAuth({ scopesDir, port: p.auth1, metricsPort: p.metrics1, extraArgs: ['--trusted-proxy-hops', '1'], secrets: [topicToken, execToken] });
  await svcAuth.start();
  await svcAuthHops.start();
  const b = { auth: p.auth, waf: p.waf, oapi: p.oapi };
  const servers = [
    wis2boxServer(p.wis2box, false),
    wis2boxServer(p.wis2boxSignIn, true),
    httpBalancer(p.lbNginx, p.controller),
    ingressNginxBehindBalancer({ listen: p.controller, auth: p.auth1, oapi: p.oapi }, waf.root, HOST),
    httpBalancer(p.lbEnvoy, p.envoyHops),
    gatewayFabricServer({ listen: p.fabric, services: { 'svc-auth': p.auth, waf: p.waf, oapi: p.oapi } }),
  ].join('\n');
  nginx = await Nginx.start(binary, join(base, 'nginx'), exampleNginxConf(join(base, 'nginx'), { listen: p.nginx, waf: p.wafStatic, auth: p.auth, oapi: p.oapi }, waf.root, servers, proxyProtocolBalancer(p.lbTraefik, p.traefikPp)),
    [p.nginx, p.wis2box, p.wis2boxSignIn, p.lbNginx, p.controller, p.lbEnvoy, p.fabric, p.lbTraefik]);
  proxies.push(await startTraefik(base, { ...b, listen: p.traefik }));
  proxies.push(await startTraefikBehindBalancer(join(base, 'traefik-pp'), { ...b, listen: p.traefikPp }));
  proxies.push(await startEnvoy(base, { ...b, listen: p.envoy }));
  proxies.push(await startEnvoyBehindBalancer(join(base, 'envoy-hops'), { ...b, auth: p.auth1, listen: p.envoyHops }));
  envoyGateway = await startEnvoyGateway(join(base, 'envoy-gateway'), { ...b, listen: p.envoyGateway });
  controlPlane = await startControlPlane({ dir: join(base, 'controlplane'), log: () => undefined });
  kube.push(await startTraefikCrd(join(base, 'traefik-crd'), controlPlane, { ...b, listen: p.traefikCrd }, { namespace: 'svc-prescribed-crd' }));
  kube.push(await startTraefikIngressNginx(join(base, 'traefik-ingress-nginx'), controlPlane, { ...b, listen: p.traefikIngressNginx }, { namespace: 'svc-prescribed-ingress-nginx' }));
  for (const [name, entry] of CONFIGS) {
    let last = 0;
    await waitUntil(async () => (last = (await send(entry.port, { target: OPEN_API }).catch(() => ({ status: 0 }))).status) === 200,
      { what: `${name} to route an open request`, timeoutMs: 60_000, intervalMs: 200, describe: () => `status ${last}` });
  }
  // A cold tool cache builds Traefik and Envoy Gateway from their modules first (minutes each).
}, 1_500_000);

afterAll(async () => {
  for (const k of kube) await k.stop();
  await controlPlane?.stop();
  await envoyGateway?.stop();
  for (const proxy of proxies) await proxy.stop();
  await nginx?.stop();
  await svcAuthHops?.stop();
  await svcAuth?.stop();
  for (const server of backends) await new Promise<void>((resolve) => server.close(() => resolve()));
  if (base && process.env.SVC_E2E_KEEP !== '1') rmSync(base, { recursive: true, force: true });
  if (summary.size > 0) process.stderr.write(`\nPrescribed configurations, attacked as written:\n${[...summary].map(([name, s]) => `  ${name}: ${s.sent} requests sent (${s.hostile} hostile), ${s.closedAllowed} closed allowed, ${s.forgedAtBackend} forged answer headers at the backend; hostile answers ${[...s.statuses].sort().map(([st, n]) => `${st}×${n}`).join(' ')}`).join('\n')}\n`);
});

interface Req {
  readonly method?: string;
  readonly target: string;
  readonly headers?: readonly (readonly [string, string])[];
  readonly from?: string;
  readonly body?: string;
}

let nextId = 0;
function send(port: PortName, req: Req & { readonly id?: string }): Promise<RawResponse> {
  const headers = [...(req.headers ?? []), ...(req.id === undefined ? [] : [['X-Test-Id', req.id] as const])];
  return rawRequest(ports[port], { method: req.method ?? 'GET', target: req.target, host: HOST, headers, ...(req.body === undefined ? {} : { body: req.body }), localAddress: req.from ?? OTHER });
}

interface Tally { sent: number; hostile: number; closedAllowed: number; forgedAtBackend: number; statuses: Map<number, number> }
const summary = new Map<ConfigName, Tally>();
function tally(name: ConfigName): Tally {
  let t = summary.get(name);
  if (t === undefined) summary.set(name, (t = { sent: 0, hostile: 0, closedAllowed: 0, forgedAtBackend: 0, statuses: new Map() }));
  return t;
}

/**
 * A hostile request for something closed: returns what went wrong (nothing when it was refused by svc-auth without
 * the content and without reaching the backend). Messages name the case only: requests may carry tokens.
 */
async function refused(name: ConfigName, port: PortName, what: string, req: Req, marker?: string): Promise<string | undefined> {
  const id = `t${nextId++}`;
  const r = await send(port, { ...req, id });
  const t = tally(name);
  t.sent++;
  t.hostile++;
  t.statuses.set(r.status, (t.statuses.get(r.status) ?? 0) + 1);
  const reached = hits.some((h) => h.id === id);
  const content = marker !== undefined && r.body.includes(marker);
  if (reached || content || ![400, 401, 403].includes(r.status)) {
    t.closedAllowed += reached || content ? 1 : 0;
    return `${what}: status ${r.status}${reached ? ', reached the backend' : ''}${content ? ', served the content' : ''}`;
  }
  return undefined;
}

/** An allowed request carrying every answer header forged: what went wrong (not allowed, or a forged header at the backend). */
async function allowedClean(name: ConfigName, port: PortName, what: string, req: Req, marker?: string): Promise<string | undefined> {
  const id = `t${nextId++}`;
  const forged = ANSWER_HEADERS.map((h) => [h, FORGED] as const);
  const r = await send(port, { ...req, id, headers: [...(req.headers ?? []), ...forged] });
  const t = tally(name);
  t.sent++;
  const hit = hits.find((h) => h.id === id);
  const leaked = hit?.answerHeaders.filter(([, v]) => v.includes(FORGED)).map(([h]) => h) ?? [];
  t.forgedAtBackend += leaked.length;
  if (r.status !== 200 || (marker !== undefined && !r.body.includes(marker))) return `${what}: status ${r.status}, not allowed as it should be`;
  if (leaked.length > 0) return `${what}: the backend got the client's ${leaked.join(', ')}`;
  return undefined;
}

/** Forged target headers, each naming an open file or path instead of the closed one requested. */
const TARGET_FORGERIES: readonly (readonly [string, string])[] = [
  ['X-Original-URL', `http://${HOST}${WAF.openTopicFile}`],
  ['X-Original-URI', WAF.openTopicFile],
  ['X-Forwarded-Uri', WAF.openTopicFile],
  ['X-Forwarded-Prefix', '/data'],
  ['X-Forwarded-Host', 'open.example.org'],
  ['X-Forwarded-Proto', 'https'],
  ['X-Envoy-Original-Path', WAF.openTopicFile],
  ['X-Rewrite-URL', WAF.openTopicFile],
  ['Path', WAF.openTopicFile],
];
/** Forged method headers on a write, each claiming a read. */
const METHOD_FORGERIES: readonly (readonly [string, string])[] = [
  ['X-Original-Method', 'GET'],
  ['X-Forwarded-Method', 'GET'],
  ['X-Api-Http-Method', 'GET'],
  ['X-HTTP-Method-Override', 'GET'],
  ['X-HTTP-Method', 'GET'],
  ['X-Method-Override', 'GET'],
  ['Method', 'GET'],
];
/** Forged address headers, each naming the address the scopes' networks hold. */
const ADDRESS_FORGERIES: readonly (readonly [string, string])[] = [
  ['X-Real-IP', ALLOWED],
  ['X-Forwarded-For', ALLOWED],
  ['Forwarded', `for=${ALLOWED}`],
  ['X-Client-IP', ALLOWED],
  ['True-Client-IP', ALLOWED],
  ['X-Envoy-External-Address', ALLOWED],
  ['X-Original-Forwarded-For', ALLOWED],
];
const write = (target: string, headers: readonly (readonly [string, string])[]): Req => ({ method: 'POST', target, headers: [['Content-Type', 'application/json'], ...headers], body: '{"inputs":{}}' });

suite('every prescribed configuration, attacked as written', () => {
  it('lists every configuration of test/e2e/support/prescribed.ts', () => {
    expect(CONFIGS.map(([n]) => n)).toEqual(expect.arrayContaining(PRESCRIBED.map((p) => p.name)));
  });

  describe.each(CONFIGS)('%s', (name, entry) => {
    const port = entry.port;
    const marker = (): string => waf.markers.topicFile;

    it('serves what is open, and what a token grants (the door works)', async () => {
      expect((await send(port, { target: OPEN_API })).status).toBe(200);
      const file = await send(port, { target: WAF.topicFile, headers: [['Authorization', `Bearer ${topicToken}`]] });
      expect([file.status, file.body.includes(marker())]).toEqual([200, true]);
      expect((await send(port, write(EXEC, [['Authorization', `Bearer ${execToken}`]]))).status).toBe(200);
    });

    it('keeps a closed file closed whatever target header the client writes', async () => {
      const wrong = [];
      for (const forged of TARGET_FORGERIES) wrong.push(await refused(name, port, forged[0], { target: WAF.topicFile, headers: [forged] }, marker()));
      wrong.push(await refused(name, port, 'all target headers', { target: WAF.topicFile, headers: TARGET_FORGERIES }, marker()));
      expect(wrong.filter((w) => w !== undefined)).toEqual([]);
    });

    it('keeps writes closed whatever method header the client writes', async () => {
      const wrong = [];
      for (const target of [STATIONS, EXEC]) {
        for (const forged of METHOD_FORGERIES) wrong.push(await refused(name, port, `${target} ${forged[0]}`, write(target, [forged])));
        wrong.push(await refused(name, port, `${target} all method headers`, write(target, METHOD_FORGERIES)));
      }
      expect(wrong.filter((w) => w !== undefined)).toEqual([]);
    });

    it('grants no network by an address the client writes', async () => {
      const wrong = [];
      for (const forged of ADDRESS_FORGERIES) wrong.push(await refused(name, port, forged[0], { target: WAF.topicFile, headers: [forged] }, marker()));
      wrong.push(await refused(name, port, 'all address headers', { target: WAF.topicFile, headers: ADDRESS_FORGERIES }, marker()));
      wrong.push(await refused(name, port, 'a process by all address headers', write(EXEC, ADDRESS_FORGERIES)));
      expect(wrong.filter((w) => w !== undefined)).toEqual([]);
    });

    it('lets no answer header the client writes reach the backend', async () => {
      const wrong = [
        await allowedClean(name, port, 'open API', { target: OPEN_API }),
        await allowedClean(name, port, 'open file', { target: WAF.openTopicFile }, waf.markers.openTopicFile),
        await allowedClean(name, port, 'a file by token', { target: WAF.topicFile, headers: [['Authorization', `Bearer ${topicToken}`]] }, marker()),
        await allowedClean(name, port, 'a process by token', write(EXEC, [['Authorization', `Bearer ${execToken}`]])),
      ];
      if (entry.networks) {
        wrong.push(await allowedClean(name, port, 'a file by network', { target: WAF.topicFile, from: ALLOWED }, marker()));
        wrong.push(await allowedClean(name, port, 'a process by network', { ...write(EXEC, []), from: ALLOWED }));
      }
      expect(wrong.filter((w) => w !== undefined)).toEqual([]);
      // The backend saw the allowed API requests, so the check above looked at real requests.
      expect(hits.filter((h) => h.url.startsWith('/oapi/')).length).toBeGreaterThan(0);
    });
  });
});
