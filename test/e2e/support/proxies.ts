import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWafTree, type WafTree } from './fixtures.js';
import { initialScopes, type TokenName } from './harness.js';
import { startControlPlane, type ControlPlane } from '../../controlplane/controlplane.js';
import { startEnvoy } from './envoy.js';
import { startEnvoyGateway, type RunningEnvoyGateway } from './envoy-gateway.js';
import { ensureNginx, Nginx, type NginxPlan } from './nginx.js';
import { exampleNginxConf } from './nginx-example.js';
import { gatewayFabricServer } from './gateway-fabric.js';
import { rawRequest } from './net.js';
import { freePorts } from '../../support/ports.js';
import type { Supervised } from '../../support/process.js';
import { waitUntil } from '../../support/wait.js';
import { Pygeoapi } from './pygeoapi.js';
import { writeScopeAtomically } from './scopes.js';
import { SvcAuth } from './svc-auth.js';
import { startTraefik } from './traefik.js';
import { startTraefikCrd, startTraefikIngressNginx, type TraefikKube } from './traefik-kube.js';

/** Every proxy (or controller) the suite routes through, each from its example in deploy/. */
export const PROXY_NAMES = ['nginx', 'traefik', 'envoy', 'gateway-fabric', 'envoy-gateway', 'traefik-ingress-nginx', 'traefik-crd'] as const;
export type ProxyName = (typeof PROXY_NAMES)[number];
/** Traefik's ingress-nginx provider with auth-url left at /authz/auth-request: must refuse everything. */
const UNCHANGED = 'traefik-ingress-nginx-unchanged';
const PORT_NAMES = [...PROXY_NAMES, UNCHANGED, 'waf', 'auth', 'metrics', 'oapi'] as const;
type PortName = (typeof PORT_NAMES)[number];

/** The Host every request of the proxy suites carries: the examples route on it. */
export const HOST = 'data.example.org';

/**
 * One WAF tree, one pygeoapi and one svc-auth, with the three proxies in front of them, each run from
 * its example in deploy/: nginx (deploy/nginx/svc-auth.conf), Traefik (deploy/traefik, file provider,
 * ForwardAuth) and Envoy (deploy/gateway-api/envoy.yaml, ext_authz).
 */
export class ProxyHarness {
  nginx: Nginx | undefined;
  traefik: Supervised | undefined;
  envoy: Supervised | undefined;
  pygeoapi: Pygeoapi | undefined;
  svcAuth: SvcAuth | undefined;
  envoyGateway: RunningEnvoyGateway | undefined;
  /** The kube-apiserver Traefik's Kubernetes providers read the examples' objects from. */
  controlPlane: ControlPlane | undefined;
  traefikIngressNginx: TraefikKube | undefined;
  traefikCrd: TraefikKube | undefined;
  traefikUnchanged: TraefikKube | undefined;
  readonly ports: Readonly<Record<PortName, number>>;

  private constructor(readonly base: string, readonly scopesDir: string, readonly waf: WafTree, ports: number[]) {
    this.ports = Object.fromEntries(PORT_NAMES.map((name, i) => [name, ports[i]!])) as Record<PortName, number>;
  }

  static async start(plan: NginxPlan, tokens: Readonly<Record<TokenName, string>>): Promise<ProxyHarness> {
    const nginxBinary = ensureNginx(plan);
    const base = mkdtempSync(join(tmpdir(), 'svc-e2e-proxies-'));
    chmodSync(base, 0o755);
    const scopesDir = join(base, 'scopes');
    const stagingDir = join(base, 'staging');
    const prefix = join(base, 'nginx');
    for (const d of [scopesDir, stagingDir, join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    const h = new ProxyHarness(base, scopesDir, buildWafTree(join(base, 'waf')), await freePorts(PORT_NAMES.length));
    const p = h.ports;
    try {
      for (const [scope, records] of initialScopes(tokens)) writeScopeAtomically(scopesDir, stagingDir, scope, records);
      // the slow first-time installs (pygeoapi, Envoy, the Traefik build) run before anything is started
      h.pygeoapi = await Pygeoapi.start(join(base, 'pygeoapi'), p.oapi, randomBytes(4).toString('hex'));
      h.svcAuth = new SvcAuth({ scopesDir, port: p.auth, metricsPort: p.metrics, secrets: Object.values(tokens) });
      await h.svcAuth.start();
      // One nginx process: deploy/nginx's example, the plain WAF backend, and NGINX Gateway Fabric's rendering of the ExternalAuth route.
      const fabric = gatewayFabricServer({ listen: p['gateway-fabric'], services: { 'svc-auth': p.auth, waf: p.waf, oapi: p.oapi } });
      h.nginx = await Nginx.start(nginxBinary, prefix, exampleNginxConf(prefix, { listen: p.nginx, waf: p.waf, auth: p.auth, oapi: p.oapi }, h.waf.root, fabric), [p.nginx, p.waf, p['gateway-fabric']]);
      const backends = { auth: p.auth, waf: p.waf, oapi: p.oapi };
      h.traefik = await startTraefik(base, { ...backends, listen: p.traefik });
      h.envoy = await startEnvoy(base, { ...backends, listen: p.envoy });
      h.envoyGateway = await startEnvoyGateway(join(base, 'envoy-gateway'), { ...backends, listen: p['envoy-gateway'] });
      // Traefik's Kubernetes providers read deploy/'s Ingress and Middleware/IngressRoute from a real kube-apiserver.
      h.controlPlane = await startControlPlane({ dir: join(base, 'controlplane'), log: () => undefined });
      h.traefikIngressNginx = await startTraefikIngressNginx(join(base, 'traefik-ingress-nginx'), h.controlPlane, { ...backends, listen: p['traefik-ingress-nginx'] });
      h.traefikCrd = await startTraefikCrd(join(base, 'traefik-crd'), h.controlPlane, { ...backends, listen: p['traefik-crd'] });
      h.traefikUnchanged = await startTraefikIngressNginx(join(base, UNCHANGED), h.controlPlane, { ...backends, listen: p[UNCHANGED] }, { namespace: 'svc-traefik-unchanged', keepAuthRequestPath: true, probePath: '/oapi/collections' });
      // Traefik loads its file provider after it listens: wait until each proxy routes an open request.
      for (const proxy of PROXY_NAMES) await h.waitRouting(proxy);
    } catch (e) {
      await h.stop();
      throw e;
    }
    return h;
  }

  private async waitRouting(proxy: ProxyName, timeoutMs = 30_000): Promise<void> {
    let last = 0;
    await waitUntil(async () => {
      last = (await rawRequest(this.ports[proxy], { target: '/oapi/collections', host: HOST }).catch(() => ({ status: 0 }))).status;
      return last === 200;
    }, { what: `${proxy} to route /oapi/collections to pygeoapi`, timeoutMs, intervalMs: 200, describe: () => `status ${last}` });
  }

  async stop(): Promise<void> {
    await this.traefikUnchanged?.stop();
    await this.traefikCrd?.stop();
    await this.traefikIngressNginx?.stop();
    await this.controlPlane?.stop();
    await this.envoyGateway?.stop();
    await this.envoy?.stop();
    await this.traefik?.stop();
    await this.nginx?.stop();
    await this.svcAuth?.stop();
    await this.pygeoapi?.stop();
    if (process.env.SVC_E2E_KEEP !== '1') rmSync(this.base, { recursive: true, force: true });
  }
}
