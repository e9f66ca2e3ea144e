/**
 * `helm install` with one controller's values protects a host with no file copied from deploy/: the objects `helm
 * template` renders for protect.* (charts/svc), read by the real controllers — Traefik's kubernetesIngressNGINX and
 * kubernetesCRD providers from the harness's kube-apiserver, Envoy Gateway v1.9 (its file provider: the chart's
 * HTTPRoute, SecurityPolicy and pages route, Services as Backends) — in front of svc-auth and a WAF tree. Through each:
 * a closed file needs its token, an open one does not, a token holder gets in, a browser's navigation to a closed file
 * is sent to sign in and a page's fetch() keeps its 401, svc-auth's pages are routed and its decision endpoints are
 * not; and every header family of the other controllers, sent by the client, is refused, never a bypass. The
 * gateway-api choice (Gateway API's ExternalAuth filter) is read by Envoy Gateway too, which refuses the filter: the
 * route fails closed, and the suite says with which error. Tokens never appear in names or messages.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../controlplane/controlplane.js';
import { helmBinary } from '../stack/helm.js';
import { freePorts } from '../support/ports.js';
import { backendRefsToBackends, loopbackBackends, startEnvoyGateway, type RunningEnvoyGateway } from './support/envoy-gateway.js';
import { buildWafTree, WAF, type WafTree } from './support/fixtures.js';
import { initialScopes, makeTokens, type TokenName } from './support/harness.js';
import { rawRequest, type RawResponse } from './support/net.js';
import { writeScopeAtomically } from './support/scopes.js';
import { SvcAuth } from './support/svc-auth.js';
import { startTraefikProvider, type TraefikKube } from './support/traefik-kube.js';
import { networkScopes, sendWith, wiredCases, type WiredRequest } from './support/wiring-cases.js';
import { EXTERNAL_URL, loopbackServices, renderWiring, startCountingServer, wiredValues, WIRED_HOST, yamlStream, type CountingServer, type WiredController } from './support/wiring.js';
import { stopServer } from './support/oapi-standin.js';

jest.setTimeout(60_000);

const tokens = makeTokens();
/** The host the gateway-api choice protects, beside data.example.org on the same Envoy Gateway. */
const GW_HOST = 'gw.example.org';
/** `idp`: nothing listens there (the provider svc-auth names, never asked). */
const PORT_NAMES = ['auth', 'metrics', 'idp', 'waf', 'oapi', 'traefik-ingress-nginx', 'traefik-crd', 'envoy-gateway'] as const;
type PortName = (typeof PORT_NAMES)[number];
const ROUTED = ['traefik-ingress-nginx', 'traefik-crd', 'envoy-gateway'] as const satisfies readonly WiredController[];
type Routed = (typeof ROUTED)[number];
const NAMES: Record<Routed, string> = {
  'traefik-ingress-nginx': 'Traefik\'s kubernetesIngressNGINX provider (protect.controller ingress-nginx, readBy traefik)',
  'traefik-crd': 'Traefik\'s kubernetesCRD provider (protect.controller traefik)',
  'envoy-gateway': 'Envoy Gateway v1.9 (protect.controller envoy-gateway: HTTPRoute + SecurityPolicy)',
};

let base = '';
let ports: Record<PortName, number>;
let waf: WafTree;
let wafServer: CountingServer | undefined;
let oapiServer: CountingServer | undefined;
let svcAuth: SvcAuth | undefined;
let cp: ControlPlane | undefined;
const traefiks: TraefikKube[] = [];
let envoyGateway: RunningEnvoyGateway | undefined;

/** This machine's own IPv4 addresses, loopback aside. */
const hostAddresses = (): string[] => Object.values(networkInterfaces()).flat().filter((i) => i && i.family === 'IPv4' && !i.internal).map((i) => i!.address);

const send = (port: number, req: WiredRequest, token?: TokenName, host?: string): Promise<RawResponse> => sendWith(tokens, port, host ? { host } : {})(req, token);

async function startTraefiks(helm: string): Promise<void> {
  const p = { auth: ports.auth, waf: ports.waf, oapi: ports.oapi };
  for (const [controller, provider] of [['traefik-ingress-nginx', 'kubernetesIngressNGINX'], ['traefik-crd', 'kubernetesCRD']] as const) {
    const namespace = `svc-wired-${controller}`;
    const objects = renderWiring(helm, namespace, wiredValues(controller, namespace, p));
    traefiks.push(await startTraefikProvider(join(base, controller), cp!, provider, ports[controller], namespace, `${loopbackServices(namespace, p)}---\n${yamlStream(objects)}`, { name: controller, probePath: '/oapi/' }));
  }
}

async function startWiredEnvoyGateway(helm: string): Promise<void> {
  const p = { auth: ports.auth, waf: ports.waf, oapi: ports.oapi };
  // envoy-gateway in namespace svc, where the harness's test objects keep Backends named as the Services; gateway-api in
  // a namespace of its own, with its own Backends.
  const eg = backendRefsToBackends(renderWiring(helm, 'svc', wiredValues('envoy-gateway', 'svc', p)));
  const gw = backendRefsToBackends(renderWiring(helm, 'svc-gw', wiredValues('gateway-api', 'svc-gw', p, GW_HOST)));
  const resources = `${yamlStream(eg)}---\n${loopbackBackends('svc-gw', { waf: p.waf, oapi: p.oapi, 'svc-auth': p.auth })}---\n${yamlStream(gw)}`;
  envoyGateway = await startEnvoyGateway(join(base, 'envoy-gateway'), { ...p, listen: ports['envoy-gateway'] }, { resources });
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'svc-e2e-wiring-'));
  const free = await freePorts(PORT_NAMES.length);
  ports = Object.fromEntries(PORT_NAMES.map((n, i) => [n, free[i]!])) as Record<PortName, number>;
  const scopes = join(base, 'scopes');
  const staging = join(base, 'staging');
  for (const d of [scopes, staging]) mkdirSync(d, { recursive: true });
  for (const [scope, records] of initialScopes(tokens)) writeScopeAtomically(scopes, staging, scope, records);
  // Traefik reports the suite's requests from 127.0.0.1; Envoy, whose peer is a loopback address, appends its own
  // address instead (one of this machine's).
  writeFileSync(join(scopes, 'networks.yaml'), networkScopes(['127.0.0.1/32', ...hostAddresses().map((a) => `${a}/32`)]));
  waf = buildWafTree(join(base, 'waf'));
  wafServer = await startCountingServer(ports.waf, waf.root);
  oapiServer = await startCountingServer(ports.oapi);
  const keys = join(base, 'session-keys');
  writeFileSync(keys, `${Buffer.alloc(32, 1).toString('base64url')}\n`, { mode: 0o600 });
  // Browser sign-in on (the provider is never asked here: a navigation is sent to sign in without it).
  svcAuth = new SvcAuth({
    scopesDir: scopes, port: ports.auth, metricsPort: ports.metrics, secrets: Object.values(tokens),
    extraArgs: ['--oidc-issuer', `http://127.0.0.1:${ports.idp}/realms/wis2`, '--oidc-audience', 'svc-browser', '--sign-in-client-id', 'svc-browser', '--external-url', EXTERNAL_URL, '--session-key-file', keys],
  });
  await svcAuth.start();
  const helm = await helmBinary();
  cp = await startControlPlane({ dir: join(base, 'controlplane'), log: () => undefined });
  await startTraefiks(helm);
  await startWiredEnvoyGateway(helm);
}, 1_500_000);

afterAll(async () => {
  for (const t of traefiks) await t.stop();
  await envoyGateway?.stop();
  await cp?.stop();
  await svcAuth?.stop();
  await stopServer(wafServer?.server);
  await stopServer(oapiServer?.server);
  if (base && process.env.SVC_E2E_KEEP !== '1') rmSync(base, { recursive: true, force: true });
}, 120_000);

describe.each(ROUTED.map((c) => [NAMES[c], c] as const))('%s, reading what helm template rendered', (_name, controller) => {
  wiredCases(() => ({
    send: sendWith(tokens, ports[controller]),
    direct: (target) => rawRequest(ports.auth, { target, host: WIRED_HOST }),
    waf,
    wafSeen: () => wafServer!.seen,
    apiSeen: () => oapiServer!.seen,
  }));
});

describe('Gateway API\'s ExternalAuth filter (protect.controller gateway-api), read by Envoy Gateway v1.9', () => {
  it.each([['the closed file', WAF.topicFile], ['the open file', WAF.openTopicFile]])('refuses the filter, and the route fails closed: %s is a 500, never the file', async (_n, target) => {
    const res = await send(ports['envoy-gateway'], { target }, 'topic', GW_HOST);
    expect(res.status).toBe(500);
    expect(Object.values(waf.markers).some((m) => res.body.includes(m))).toBe(false);
  });

  it('says why, in the route\'s status: Accepted False, UnsupportedValue, the filter type not supported', () => {
    const log = envoyGateway!.tail(20_000);
    // The file provider logs the status it would write: the HTTPRoute svc-data.gw.example.org is not accepted.
    const status = log.slice(log.indexOf('"name": "svc-data.gw.example.org"}'));
    expect(status).toMatch(/Got new status for HTTPRoute[\s\S]*Invalid filter ExternalAuth: unsupported filter type ExternalAuth\.[\s\S]*reason: UnsupportedValue\s+status: "False"\s+type: Accepted/);
  });
});

it('svc-auth\'s output never contains a token', () => {
  const output = svcAuth!.output;
  expect(Object.values(tokens).filter((t) => output.includes(t)).length).toBe(0);
});
