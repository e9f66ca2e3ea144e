// The chart's wiring (values protect.*) with helm built from its Go module and the real API server: `helm lint --strict`
// and `helm template` with each controller's example values (deploy/values/), the objects equal to deploy/'s worked
// examples (so the two never drift), `svc auth wiring` printing exactly what `helm template` renders for the same values
// (every controller, and the settings that change the objects), the NetworkPolicy admitting exactly the controller's
// pods, both refusing the same bad values, and every rendered object accepted by the API server with the controllers'
// own CRDs installed (Traefik's from its module; Gateway API's experimental channel and Envoy Gateway's from Envoy
// Gateway's module). The controllers reading these objects: test/e2e/wiring.test.ts.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { repoRoot } from '../controlplane/controlplane.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { svc } from '../cli/harness.js';
import { admittedPeers, type Peer } from '../../cli/commands/wiring-prerequisites.js';
import { wiringValues } from '../../cli/commands/wiring-values.js';
import { helmBinary, helmLint, helmTemplate, ofKind, type Manifest } from '../stack/helm.js';
import { applyManifests } from '../stack/kubectl.js';
import { gatewayCrdsYaml, installCrdsYaml, traefikCrdsYaml } from '../stack/controller-crds.js';

const VALUES_DIR = join(repoRoot, 'deploy', 'values');
const EXAMPLES = readdirSync(VALUES_DIR).filter((f) => f.endsWith('.yaml')).sort();
const example = (file: string): Record<string, unknown> => load(readFileSync(join(VALUES_DIR, file), 'utf8')) as Record<string, unknown>;
/** deploy/'s worked examples, by the values that render them. */
const DEPLOY: Record<string, string[]> = {
  'ingress-nginx.yaml': ['ingress-nginx/ingress.yaml', 'ingress-nginx/auth-request-headers.yaml', 'ingress-nginx/pages-route.yaml'],
  'traefik.yaml': ['traefik/middleware.yaml'],
  'envoy-gateway.yaml': ['gateway-api/envoy-gateway-securitypolicy.yaml'],
  'gateway-api.yaml': ['gateway-api/httproute-externalauth.yaml'],
};

const HOSTS = [
  { host: 'data.example.org', paths: [{ path: '/data', service: 'waf', port: 80 }, { path: '/oapi', service: 'oapi', port: 8080 }] },
  { host: 'files.example.org', paths: [{ path: '/', service: 'files', port: 80 }] },
];
const SIGN_IN = {
  oidc: { issuers: ['https://login.example.org/realms/wis2'], audiences: ['svc-data'] },
  signIn: { enabled: true, externalURLs: ['https://data.example.org', 'https://www.example.org:8443'], clientId: 'svc-browser', sessionKeys: { existingSecret: 'keys', key: 'k' } },
};
const EG = { parentRefs: [{ name: 'eg', namespace: 'envoy-gateway-system', sectionName: 'https' }], annotations: { 'example.org/team': 'data' } };
/** Values that change the objects: the examples, and each setting a user may change. */
const VARIANTS: [string, Record<string, unknown>][] = [
  ...EXAMPLES.map((f): [string, Record<string, unknown>] => [`deploy/values/${f}`, example(f)]),
  ['ingress-nginx: two hosts, another namespace, TLS, no cache, a class, annotations, auth URL and port', {
    auth: { port: 8081, cacheMaxAge: 0 },
    protect: { controller: 'ingress-nginx', namespace: 'data', hosts: HOSTS, tlsSecretName: 'data-tls', authURL: 'http://auth.example.internal:8081', ingressNginx: { ingressClassName: 'public-nginx', authCache: true, annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '10m' } } },
  }],
  ['Traefik\'s ingress-nginx provider with sign-in on two hosts, one not protected', { auth: SIGN_IN, protect: { controller: 'ingress-nginx', hosts: HOSTS, ingressNginx: { readBy: 'traefik' } } }],
  ['traefik: entry points, TLS, annotations, another namespace, sign-in', { auth: SIGN_IN, protect: { controller: 'traefik', namespace: 'data', hosts: HOSTS, tlsSecretName: 't', traefik: { entryPoints: ['web', 'websecure'], annotations: { a: 'b' } } } }],
  ['envoy-gateway: two hosts in another namespace (a ReferenceGrant), sign-in', { auth: { ...SIGN_IN, port: 9000 }, protect: { controller: 'envoy-gateway', namespace: 'data', hosts: HOSTS, envoyGateway: EG } }],
  ['gateway-api: two hosts in another namespace (a ReferenceGrant)', { protect: { controller: 'gateway-api', namespace: 'data', hosts: HOSTS, gatewayApi: EG } }],
];

const wiringOf = (m: readonly Manifest[]): Manifest[] => m.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'wiring');
const byKindName = (m: readonly Manifest[]): Manifest[] => [...m].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
const withoutLabels = (m: Manifest): Manifest => {
  const { labels: _labels, ...metadata } = m.metadata;
  return { ...m, metadata } as Manifest;
};

describe('chart protect.* (the wiring)', () => {
  let helm: string;
  const work = mkdtempSync(join(tmpdir(), 'svc-wiring-'));
  beforeAll(async () => {
    helm = await helmBinary();
  }, 15 * 60_000);
  const render = (values: Record<string, unknown>, namespace = 'svc'): Manifest[] => {
    const r = helmTemplate(helm, { namespace, values });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.manifests;
  };

  it.each(EXAMPLES)('helm lint --strict passes with deploy/values/%s, without warnings', (file) => {
    const r = helmLint(helm, { namespace: 'svc', values: example(file) });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it.each(Object.entries(DEPLOY))('deploy/values/%s renders exactly the objects of deploy/ (%j), labels aside', (file, manifests) => {
    const rendered = byKindName(wiringOf(render(example(file)))).map(withoutLabels);
    const deploy = manifests.flatMap((f) => loadAll(readFileSync(join(repoRoot, 'deploy', f), 'utf8')) as Manifest[]).filter(Boolean);
    expect(rendered).toEqual(byKindName(deploy).map(withoutLabels));
  });

  it('deploy/values/traefik-ingress-nginx.yaml: deploy/ingress-nginx/ingress.yaml with auth-url at /authz/forward-auth, nothing else changed', () => {
    const [traefik, nginx] = ['traefik-ingress-nginx.yaml', 'ingress-nginx.yaml'].map((f) => ofKind(render(example(f)), 'Ingress', 'svc-data')[0]!);
    expect(traefik!.metadata.annotations!['nginx.ingress.kubernetes.io/auth-url']).toBe('http://svc-auth.svc.svc.cluster.local:8080/authz/forward-auth');
    expect({ ...traefik, metadata: { ...traefik!.metadata, annotations: { ...traefik!.metadata.annotations, 'nginx.ingress.kubernetes.io/auth-url': '' } } })
      .toEqual({ ...nginx, metadata: { ...nginx!.metadata, annotations: { ...nginx!.metadata.annotations, 'nginx.ingress.kubernetes.io/auth-url': '' } } });
  });

  it.each(VARIANTS)('svc auth wiring prints what helm template renders: %s', async (_n, values) => {
    const file = join(work, `values-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, JSON.stringify(values));
    const cli = await svc(['-n', 'svc', 'auth', 'wiring', '-f', file]);
    expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: '' });
    const printed = (loadAll(cli.stdout) as Manifest[]).filter(Boolean);
    const rendered = wiringOf(render(values));
    expect(rendered.length).toBeGreaterThan(1);
    expect(byKindName(printed)).toEqual(byKindName(rendered));
  });

  it.each([
    ['ingress-nginx', 'ingress-nginx.yaml', 'ingress-nginx', { 'app.kubernetes.io/name': 'ingress-nginx', 'app.kubernetes.io/component': 'controller' }],
    ['Traefik (its ingress-nginx provider)', 'traefik-ingress-nginx.yaml', 'traefik', { 'app.kubernetes.io/name': 'traefik' }],
    ['Traefik', 'traefik.yaml', 'traefik', { 'app.kubernetes.io/name': 'traefik' }],
    ['Envoy Gateway', 'envoy-gateway.yaml', 'envoy-gateway-system', { 'app.kubernetes.io/name': 'envoy', 'app.kubernetes.io/component': 'proxy', 'app.kubernetes.io/managed-by': 'envoy-gateway' }],
    ['the Gateway API Gateway', 'gateway-api.yaml', 'gateway-system', { 'gateway.networking.k8s.io/gateway-name': 'gateway' }],
  ])('the NetworkPolicy lets exactly %s\'s pods reach svc-auth\'s port', (_n, file, namespace, podLabels) => {
    const policy = ofKind(render(example(file)), 'NetworkPolicy', 'svc-auth')[0]!.spec as { ingress: { from: unknown[]; ports: unknown[] }[] };
    expect(policy.ingress).toEqual([{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } }, podSelector: { matchLabels: podLabels } }], ports: [{ port: 'http', protocol: 'TCP' }] }]);
  });

  it('the NetworkPolicy takes the controller\'s namespace and labels from the values (a default label dropped with null, as helm merges maps), and adds proxyNamespaces while moving', () => {
    const values = { ...example('traefik.yaml'), networkPolicy: { proxyNamespaces: ['ingress-nginx'], controllerPods: { traefik: { namespace: 'edge', podLabels: { 'app.kubernetes.io/name': null, app: 'edge-traefik' } } } } };
    const policy = ofKind(render(values), 'NetworkPolicy', 'svc-auth')[0]!.spec as { ingress: { from: unknown[] }[] };
    expect(policy.ingress[0]!.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'edge' } }, podSelector: { matchLabels: { app: 'edge-traefik' } } },
      { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['ingress-nginx'] }] } },
    ]);
  });

  /** A NetworkPolicy peer as plain data: namespaces by name (a name label is a name) or by labels, and the pods' labels. */
  const byName = (labels: Record<string, string>) => (Object.keys(labels).join() === 'kubernetes.io/metadata.name' ? { names: [labels['kubernetes.io/metadata.name']!] } : { labels });
  const normal = (p: Peer) => ({ namespaces: 'names' in p.namespaces ? { names: [...p.namespaces.names] } : byName({ ...p.namespaces.labels }), podLabels: { ...p.podLabels } });
  interface From { namespaceSelector: { matchLabels?: Record<string, string>; matchExpressions?: { values: string[] }[] }; podSelector?: { matchLabels: Record<string, string> } }
  const rendered = (f: From) => ({
    namespaces: f.namespaceSelector.matchExpressions ? { names: f.namespaceSelector.matchExpressions[0]!.values } : byName(f.namespaceSelector.matchLabels!),
    podLabels: f.podSelector?.matchLabels ?? {},
  });

  it.each([
    ['the defaults, hand-wired', {}, false],
    ['proxyNamespaces and a pod selector, hand-wired', { networkPolicy: { proxyNamespaces: ['traefik', 'kube-system'], ingressPodSelector: { app: 'edge' } } }, false],
    ['another namespace selector, hand-wired', { networkPolicy: { ingressNamespaceSelector: { team: 'edge' } } }, false],
    ...EXAMPLES.map((f): [string, Record<string, unknown>, boolean] => [`deploy/values/${f}`, example(f), true]),
    ['Traefik in kube-system, moving from ingress-nginx', { ...example('traefik.yaml'), networkPolicy: { proxyNamespaces: ['ingress-nginx'], controllerPods: { traefik: { namespace: 'kube-system' } } } }, true],
  ])('svc auth wiring\'s prerequisites name the peers the NetworkPolicy renders: %s', (_n, values, wired) => {
    const policy = ofKind(render(values), 'NetworkPolicy', 'svc-auth')[0]!.spec as { ingress: { from: From[]; ports: { port: string }[] }[] };
    const peers = admittedPeers(wiringValues([values], (m) => new Error(m)), 'svc', wired)!;
    expect(peers.map(normal)).toEqual(policy.ingress.filter((i) => i.ports[0]!.port === 'http').flatMap((i) => i.from.map(rendered)));
  });

  it('with protect on, auth.signIn.route renders nothing: svc-auth-pages carries the sign-in paths', () => {
    const m = render({ auth: { ...SIGN_IN, signIn: { ...SIGN_IN.signIn, route: { controller: 'traefik', ingressClassName: '', parentRefs: [], tlsSecretName: '', annotations: {} } } }, protect: { controller: 'ingress-nginx', hosts: HOSTS } });
    expect(m.filter((o) => o.metadata.name === 'svc-auth-sign-in')).toEqual([]);
    const pages = ofKind(m, 'Ingress', 'svc-auth-pages')[0]!.spec as { rules: { host: string; http: { paths: { path: string }[] } }[] };
    expect(pages.rules.map((r) => r.host)).toEqual(['data.example.org', 'files.example.org', 'www.example.org']);
    for (const r of pages.rules) expect(r.http.paths.map((p) => p.path)).toEqual(['/authz/sign-in', '/authz/callback', '/authz/sign-out', '/authz/v1/session', '/authz/v1/protected']);
  });

  it.each([
    ['no hosts', { protect: { controller: 'traefik' } }, /hosts/, /protect.hosts: needs at least 1 entry/],
    ['a host twice', { protect: { controller: 'traefik', hosts: [HOSTS[0], { ...HOSTS[0], paths: [{ path: '/x', service: 'x', port: 1 }] }] } }, /data.example.org is listed twice/, /data.example.org is listed twice/],
    ['a path twice', { protect: { controller: 'traefik', hosts: [{ host: 'a.example.org', paths: [HOSTS[0]!.paths[0], { ...HOSTS[0]!.paths[0], service: 'other' }] }] } }, /a.example.org has the path \/data twice/, /a.example.org has the path \/data twice/],
    ['auth-signin among the annotations', { protect: { controller: 'ingress-nginx', hosts: HOSTS, ingressNginx: { annotations: { 'nginx.ingress.kubernetes.io/auth-signin': 'https://x/' } } } }, /auth-signin/, /auth-signin is set by the chart/],
    ['envoy-gateway without a Gateway', { protect: { controller: 'envoy-gateway', hosts: HOSTS } }, /parentRefs/, /protect.envoyGateway.parentRefs: needs at least 1 entry/],
    ['a port name', { protect: { controller: 'traefik', hosts: [{ host: 'a.example.org', paths: [{ path: '/', service: 'a', port: 'http' }] }] } }, /port/, /port: must be a port number/],
    ['an unknown controller', { protect: { controller: 'haproxy' } }, /controller/, /protect.controller: must be one of/],
    ['an auth URL with a path', { protect: { authURL: 'http://svc-auth:8080/authz' } }, /authURL/, /protect.authURL/],
  ])('helm and svc auth wiring both refuse %s', async (_n, values, helmSays, cliSays) => {
    const r = helmTemplate(helm, { namespace: 'svc', values });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(helmSays);
    const file = join(work, `bad-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, JSON.stringify(values));
    const cli = await svc(['-n', 'svc', 'auth', 'wiring', '-f', file]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(cliSays);
  });
});

describeCluster('chart protect.* on the real API server, with each controller\'s CRDs', () => {
  let helm: string;
  beforeAll(async () => {
    helm = await helmBinary();
    installCrdsYaml(kubeconfigPath(), traefikCrdsYaml(), ['middlewares.traefik.io', 'ingressroutes.traefik.io']);
    installCrdsYaml(kubeconfigPath(), gatewayCrdsYaml(helm), ['httproutes.gateway.networking.k8s.io', 'referencegrants.gateway.networking.k8s.io', 'securitypolicies.gateway.envoyproxy.io']);
  }, 15 * 60_000);

  it.each(VARIANTS)('every object rendered with %s passes a server-side dry-run with strict field validation', async (_n, values) => {
    const ns = await newNamespace('chart-wiring');
    // The routes' namespace of the variants (data) is the test's own: one namespace per test.
    const protect = values.protect as Record<string, unknown>;
    const routed = { ...values, protect: { ...protect, ...(protect.namespace ? { namespace: await newNamespace('chart-wiring-data') } : {}) } };
    const r = helmTemplate(helm, { namespace: ns, values: routed });
    expect(r.status).toBe(0);
    const applied = applyManifests(kubeconfigPath(), wiringOf(r.manifests), { dryRun: true });
    expect({ status: applied.status, stderr: applied.stderr.replace(/^Warning: .*\n?/gm, '') }).toEqual({ status: 0, stderr: '' });
  });
});
