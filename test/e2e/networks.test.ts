/**
 * Network grants (issue 30) through the real proxies in front of svc-auth: nginx (deploy/nginx/svc-auth.conf),
 * Traefik (deploy/traefik, ForwardAuth) and Envoy (deploy/gateway-api/envoy.yaml, ext_authz), each run from its example.
 * Clients are bound to loopback source addresses: 127.0.0.2 is in the scope's network, 127.0.0.3 is not. A client's
 * own address headers (X-Real-IP, X-Forwarded-For, Forwarded, X-Client-IP) naming the allowed address never grant;
 * an nginx auth cache with the documented key never hands a network's allow to another address; a load balancer in
 * front (a second nginx) with --trusted-proxy-hops 1 grants by the address the balancer saw; Traefik behind a TCP
 * balancer speaking the PROXY protocol (nginx's stream module) grants by the address the balancer saw and keeps no
 * target header a client wrote; removing the network revokes.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWafTree, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { exampleNginxConf } from './support/nginx-example.js';
import { rawRequest, type RawResponse } from './support/net.js';
import { manifestFile, newToken, tokenRecord } from './support/scopes.js';
import { SvcAuth } from './support/svc-auth.js';
import { startTraefik } from './support/traefik.js';
import { httpBalancer, ingressNginxBehindBalancer, proxyProtocolBalancer, startEnvoyBehindBalancer, startTraefikBehindBalancer } from './support/balancers.js';
import type { Supervised } from '../support/process.js';
import { startEnvoy } from './support/envoy.js';
import { freePorts, httpGet } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { dumpManifests, newProtectedScope, scopeObjectName } from '../../core/index.js';

jest.setTimeout(120_000);

const plan = nginxPlan();
const suite = plan.action === 'skip' ? describe.skip : describe;
const HOST = 'data.example.org';
const ALLOWED = '127.0.0.2';
const OTHER = '127.0.0.3';
const PORTS = ['nginx', 'waf', 'auth', 'metrics', 'oapi', 'traefik', 'envoy', 'cache', 'lb', 'controller', 'auth1', 'metrics1', 'traefikHops', 'lbTraefik', 'envoyHops', 'lbEnvoy'] as const;
type PortName = (typeof PORTS)[number];

let base: string;
let scopesDir: string;
let waf: WafTree;
let ports: Record<PortName, number>;
let nginx: Nginx | undefined;
let traefik: Supervised | undefined;
let traefikHops: Supervised | undefined;
let envoyHops: Supervised | undefined;
let envoy: Supervised | undefined;
let svcAuth: SvcAuth | undefined;
let svcAuthHops: SvcAuth | undefined;
/** A token of the scope: keeps it closed when its network goes (a scope with nothing left would be open). */
const token = newToken();

function writeScope(networks: readonly string[]): void {
  const o = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, [tokenRecord(token)]);
  const spec = networks.length > 0 ? { ...o.spec, networks: networks.map((cidr) => ({ cidr, description: 'a WIS2 Global Cache' })) } : o.spec;
  writeFileSync(manifestFile(scopesDir, TOPIC), dumpManifests([{ ...o, spec }]));
}

/** Extra servers in the same nginx: an auth cache with the documented key, and a load balancer before a controller. */
function extraServers(): string {
  const p = ports;
  return `
    proxy_cache_path ${base}/nginx/cache levels=1:2 keys_zone=svc_auth_net:1m max_size=8m inactive=60s use_temp_path=off;
    # The example's auth location with the documented decision cache turned on.
    server {
        listen 127.0.0.1:${p.cache};
        server_name ${HOST};
        location /data/ {
            auth_request /_svc_auth;
            root ${waf.root};
        }
        location = /_svc_auth {
            internal;
            proxy_pass http://127.0.0.1:${p.auth}/authz/auth-request;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_cache svc_auth_net;
            proxy_cache_key "$request_method $request_uri $http_authorization $arg_token";
            proxy_cache_valid 200 202 30s;
            proxy_cache_valid 401 403 0s;
            proxy_ignore_headers Cache-Control Expires;
            proxy_cache_lock on;
        }
    }
    # A load balancer in front of the controller, and one in front of the second Envoy (xff_num_trusted_hops: 1).
${httpBalancer(p.lb, p.controller)}${httpBalancer(p.lbEnvoy, p.envoyHops)}
    # The controller behind it: trusts the balancer (127.0.0.1) only, as ingress-nginx with use-forwarded-headers and
    # proxy-real-ip-cidr does, and asks the svc-auth started with --trusted-proxy-hops 1.
${ingressNginxBehindBalancer({ listen: p.controller, auth: p.auth1, oapi: p.oapi }, waf.root, HOST)}`;
}

beforeAll(async () => {
  if (plan.action === 'skip') return;
  const binary = ensureNginx(plan);
  base = mkdtempSync(join(tmpdir(), 'svc-e2e-networks-'));
  chmodSync(base, 0o755);
  scopesDir = join(base, 'scopes');
  for (const d of [scopesDir, join(base, 'nginx', 'logs'), join(base, 'nginx', 'temp'), join(base, 'nginx', 'cache')]) mkdirSync(d, { recursive: true });
  waf = buildWafTree(join(base, 'waf'));
  const free = await freePorts(PORTS.length);
  ports = Object.fromEntries(PORTS.map((n, i) => [n, free[i]!])) as Record<PortName, number>;
  writeScope([`${ALLOWED}/32`]);
  svcAuth = new SvcAuth({ scopesDir, port: ports.auth, metricsPort: ports.metrics, extraArgs: ['--log-level', 'debug'], secrets: [token] });
  // For the balancers that append to X-Forwarded-For (in front of nginx and Envoy); Traefik's speaks the PROXY protocol.
  svcAuthHops = new SvcAuth({ scopesDir, port: ports.auth1, metricsPort: ports.metrics1, extraArgs: ['--trusted-proxy-hops', '1'], secrets: [token] });
  await svcAuth.start();
  await svcAuthHops.start();
  const p = ports;
  nginx = await Nginx.start(binary, join(base, 'nginx'), exampleNginxConf(join(base, 'nginx'), { listen: p.nginx, waf: p.waf, auth: p.auth, oapi: p.oapi }, waf.root, extraServers(), proxyProtocolBalancer(p.lbTraefik, p.traefikHops)), [p.nginx, p.waf, p.cache, p.lb, p.controller, p.lbTraefik, p.lbEnvoy]);
  const backends = { auth: p.auth, waf: p.waf, oapi: p.oapi };
  traefik = await startTraefik(base, { ...backends, listen: p.traefik });
  envoy = await startEnvoy(base, { ...backends, listen: p.envoy });
  envoyHops = await startEnvoyBehindBalancer(join(base, 'envoy-hops'), { ...backends, auth: p.auth1, listen: p.envoyHops });
  traefikHops = await startTraefikBehindBalancer(join(base, 'traefik-hops'), { ...backends, listen: p.traefikHops });
  for (const proxy of ['traefik', 'envoy', 'lbTraefik', 'lbEnvoy'] as const) {
    await waitUntil(async () => (await get(proxy, ALLOWED).catch(() => ({ status: 0 }))).status === 200, { what: `${proxy} to route a network-granted request`, timeoutMs: 30_000, intervalMs: 200 });
  }
});

afterAll(async () => {
  await envoy?.stop();
  await envoyHops?.stop();
  await traefikHops?.stop();
  await traefik?.stop();
  await nginx?.stop();
  await svcAuthHops?.stop();
  await svcAuth?.stop();
  if (base && process.env.SVC_E2E_KEEP !== '1') rmSync(base, { recursive: true, force: true });
});

function get(port: PortName, from: string, headers: readonly (readonly [string, string])[] = [], target: string = WAF.topicFile): Promise<RawResponse> {
  return rawRequest(ports[port], { target, host: HOST, headers, localAddress: from });
}
const gotFile = (r: RawResponse) => r.status === 200 && r.body.includes(waf.markers.topicFile);

/** Every header a client might hope a proxy or svc-auth takes for its address, each naming the allowed address. */
const SPOOFS: readonly (readonly [string, string])[] = [
  ['X-Real-IP', ALLOWED],
  ['X-Forwarded-For', ALLOWED],
  ['Forwarded', `for=${ALLOWED}`],
  ['X-Client-IP', ALLOWED],
  ['X-Envoy-External-Address', ALLOWED],
];

suite('network grants through the real proxies', () => {
  const PROXIES = [['nginx (X-Real-IP)', 'nginx'], ['Traefik ForwardAuth (X-Forwarded-For)', 'traefik'], ['Envoy ext_authz (X-Forwarded-For)', 'envoy']] as const;

  describe.each(PROXIES)('%s', (_name, proxy) => {
    it('the allowed address gets the file without a token, and with any credential', async () => {
      expect(gotFile(await get(proxy, ALLOWED))).toBe(true);
      expect(gotFile(await get(proxy, ALLOWED, [['Authorization', 'Bearer not-a-token']]))).toBe(true);
    });

    it('another address gets 401', async () => {
      expect((await get(proxy, OTHER)).status).toBe(401);
    });

    it.each(SPOOFS)('another address sending %s naming the allowed one gets 401', async (name, value) => {
      expect((await get(proxy, OTHER, [[name, value]])).status).toBe(401);
    });

    it('another address sending every spoofing header at once gets 401; the token still works from there', async () => {
      expect((await get(proxy, OTHER, SPOOFS)).status).toBe(401);
      expect(gotFile(await get(proxy, OTHER, [...SPOOFS, ['Authorization', `Bearer ${token}`]]))).toBe(true);
    });
  });

  it('nginx auth cache with the documented key: a network\'s allow is never handed to another address', async () => {
    expect(gotFile(await get('cache', ALLOWED))).toBe(true);
    expect((await get('cache', OTHER)).status).toBe(401);
    expect(gotFile(await get('cache', ALLOWED))).toBe(true);
    expect((await get('cache', OTHER)).status).toBe(401);
  });

  /** Through a load balancer: the balancer's entry for the allowed address grants; the other address, alone or with forged entries, never. */
  const balancerEntryGrantsOnly = async (front: 'lb' | 'lbTraefik' | 'lbEnvoy'): Promise<void> => {
    expect(gotFile(await get(front, ALLOWED))).toBe(true);
    expect((await get(front, OTHER)).status).toBe(401);
    for (const spoof of SPOOFS) expect((await get(front, OTHER, [spoof])).status).toBe(401);
    expect((await get(front, OTHER, SPOOFS)).status).toBe(401);
  };

  it('--trusted-proxy-hops 1 behind a load balancer grants by the address it saw, never by one the client wrote', async () => {
    await balancerEntryGrantsOnly('lb');
  });

  it('Traefik behind a PROXY-protocol balancer: the address the balancer saw grants, a client-forged one never', async () => {
    await balancerEntryGrantsOnly('lbTraefik');
    // Straight to that Traefik, not through the balancer: a connection from an address outside proxyProtocol.trustedIPs
    // keeps its own peer address, which is the client's; a PROXY header it writes itself is not taken.
    expect(gotFile(await get('traefikHops', ALLOWED))).toBe(true);
    expect((await get('traefikHops', OTHER, [['X-Forwarded-For', ALLOWED]])).status).toBe(401);
  });

  it('Traefik behind a PROXY-protocol balancer keeps no target header a client wrote (issue 37, finding 1)', async () => {
    // The setup docs/access-rules.md prescribed before (forwardedHeaders.trustedIPs + trustForwardHeader: true) served
    // the closed file for X-Forwarded-Uri naming an open one, and let a stations POST pass as a GET.
    for (const forged of [[['X-Forwarded-Uri', WAF.openTopicFile]], [['X-Forwarded-Uri', WAF.openTopicFile], ['X-Forwarded-Host', HOST], ['X-Forwarded-Proto', 'https'], ['X-Forwarded-Method', 'GET']]] as const) {
      const r = await get('lbTraefik', OTHER, forged);
      expect(r.status).toBe(401);
      expect(r.body.includes(waf.markers.topicFile)).toBe(false);
    }
    const post = await rawRequest(ports.lbTraefik, { method: 'POST', target: '/oapi/collections/stations/items', host: HOST, headers: [['Content-Type', 'application/geo+json'], ['X-Forwarded-Method', 'GET']], body: '{}', localAddress: OTHER });
    expect(post.status).toBe(401);
  });

  it('Envoy behind a load balancer, xff_num_trusted_hops 1 and --trusted-proxy-hops 1: the balancer\'s entry grants, a client-forged one never', async () => {
    await balancerEntryGrantsOnly('lbEnvoy');
    // Straight to that Envoy, without a balancer's entry: the chain is one entry short, network grants are off. (A
    // client that can reach it directly could write the balancer's entry itself, as it could for Envoy's own
    // xff_num_trusted_hops: with N > 0 the proxy must be reachable only through the balancers; docs/access-rules.md.)
    expect((await get('envoyHops', ALLOWED)).status).toBe(401);
  });

  it('the grants are counted by credential network', async () => {
    const metrics = await httpGet(ports.metrics, '/metrics');
    expect(metrics.body).toMatch(/svc_auth_grants_total\{credential="network"\} [1-9]/);
  });

  it('removing the network revokes within the propagation bound, through every proxy', async () => {
    writeScope([]);
    for (const proxy of ['nginx', 'traefik', 'envoy', 'lb', 'lbTraefik', 'lbEnvoy'] as const) {
      await waitUntil(async () => (await get(proxy, ALLOWED)).status === 401, { what: `${proxy} to refuse the address once its network is removed`, timeoutMs: 10_000, intervalMs: 100 });
    }
    expect(gotFile(await get('nginx', ALLOWED, [['Authorization', `Bearer ${token}`]]))).toBe(true);
  });
});
