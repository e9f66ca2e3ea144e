// The chart's browser sign-in values (auth.signIn.*) with helm built from its Go module and the real API server:
// `helm lint --strict` and `helm template` with each route controller; svc-auth's flags and the files they name (the
// session key file, the client secret) mounted from Secrets; the svc-auth-sign-in route carrying exactly deploy/'s five
// browser paths on the external URLs' hosts; the schema and the template refusing what svc-auth would refuse; and the
// session keys: from an existing Secret, refused with a clear message where the chart is rendered without a cluster,
// and generated with lookup when rendered against one, then kept. No test here prints a session key (they compare
// booleans), and none needs svc-auth's sign-in endpoints.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { repoRoot } from '../controlplane/controlplane.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { helmBinary, helmLint, helmTemplate, ofKind, parseManifests, runHelm, CHART_DIR, type Manifest } from '../stack/helm.js';
import { applyManifests } from '../stack/kubectl.js';

const ISSUER = 'https://login.example.org/realms/wis2';
const OIDC = { issuers: [ISSUER], audiences: ['svc-data'] };

/** Sign-in values: `over` is merged into auth.signIn (one level deep for route). */
function signIn(over: Record<string, unknown> = {}, oidc: Record<string, unknown> = OIDC): Record<string, unknown> {
  const { route, ...rest } = over as { route?: Record<string, unknown> };
  return {
    auth: {
      oidc,
      signIn: {
        enabled: true, externalURLs: ['https://data.example.org', 'https://data.example.org:8443', 'https://files.example.org'],
        clientId: 'svc-browser', clientSecret: { existingSecret: 'idp-client', key: 'secret' },
        sessionKeys: { existingSecret: 'svc-session-keys', key: 'keys' }, ...rest,
        route: { controller: 'ingress-nginx', ...route },
      },
    },
  };
}

/** The five browser paths, as deploy/ingress-nginx/pages-route.yaml routes them (the chart must route the same). */
const DEPLOY_PATHS = ((load(readFileSync(join(repoRoot, 'deploy', 'ingress-nginx', 'pages-route.yaml'), 'utf8')) as Ingress).spec.rules[0]!.http.paths).map((p) => p.path);
const HOSTS = ['data.example.org', 'files.example.org'];

interface Ingress { spec: { ingressClassName: string; tls?: { hosts: string[]; secretName: string }[]; rules: { host: string; http: { paths: { path: string; pathType: string; backend: { service: { name: string; port: { name: string } } } }[] } }[] } }
interface HTTPRoute { spec: { parentRefs: unknown[]; hostnames: string[]; rules: { matches: { path: { type: string; value: string } }[]; backendRefs: { name: string; port: number }[] }[] } }
interface Pod {
  containers: { args: string[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
  volumes: { name: string; secret?: { secretName: string; defaultMode?: number; items: { key: string; path: string }[] } }[];
}
const podOf = (m: Manifest[]): Pod => (ofKind(m, 'Deployment', 'svc-auth')[0]!.spec as { template: { spec: Pod } }).template.spec;
/** The value following `flag` in svc-auth's args, every time it occurs. */
const flagValues = (args: string[], flag: string): string[] => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
/** The file a mounted volume's item lands at. */
function mountedFile(pod: Pod, volume: string): { secret: string; key: string; path: string } {
  const v = pod.volumes.find((x) => x.name === volume)!;
  const mount = pod.containers[0]!.volumeMounts.find((x) => x.name === volume)!;
  expect(mount.readOnly).toBe(true);
  expect(v.secret!.items).toHaveLength(1);
  return { secret: v.secret!.secretName, key: v.secret!.items[0]!.key, path: `${mount.mountPath}/${v.secret!.items[0]!.path}` };
}

describe('chart auth.signIn.*', () => {
  let helm: string;
  beforeAll(async () => {
    helm = await helmBinary();
  }, 15 * 60_000);
  const render = (values: Record<string, unknown>): Manifest[] => {
    const r = helmTemplate(helm, { namespace: 'svc', values });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.manifests;
  };
  const refusal = (values: Record<string, unknown>): string => {
    const r = helmTemplate(helm, { namespace: 'svc', values });
    expect(r.status).not.toBe(0);
    return r.stderr;
  };

  it.each([
    ['ingress-nginx', {}],
    ['traefik, TLS and annotations', { route: { controller: 'traefik', tlsSecretName: 'data-tls', annotations: { 'traefik.ingress.kubernetes.io/router.entrypoints': 'websecure' } } }],
    ['envoy-gateway', { route: { controller: 'envoy-gateway', parentRefs: [{ name: 'eg', namespace: 'envoy-gateway-system' }] } }],
    ['no route, a public client, a chosen issuer', { route: { controller: 'none' }, clientSecret: { existingSecret: '', key: 'client-secret' }, issuer: ISSUER }],
  ])('helm lint --strict passes with %s, without warnings', (_n, over) => {
    const r = helmLint(helm, { namespace: 'svc', values: signIn(over) });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it('is off by default: no sign-in flag, Secret, volume or route', () => {
    const m = render({});
    expect(podOf(m).containers[0]!.args.join(' ')).not.toMatch(/--external-url|--sign-in-|--session-/);
    expect(podOf(m).volumes.map((v) => v.name)).toEqual(['tmp']);
    expect(m.filter((x) => ['Secret', 'Ingress', 'HTTPRoute'].includes(x.kind))).toEqual([]);
  });

  it('passes svc-auth its flags, each file flag naming the file its Secret is mounted at', () => {
    const pod = podOf(render(signIn({ issuer: ISSUER, sessionMaxAge: '12h' })));
    const args = pod.containers[0]!.args;
    expect(flagValues(args, '--external-url')).toEqual(['https://data.example.org', 'https://data.example.org:8443', 'https://files.example.org']);
    expect(flagValues(args, '--sign-in-client-id')).toEqual(['svc-browser']);
    expect(flagValues(args, '--sign-in-issuer')).toEqual([ISSUER]);
    expect(flagValues(args, '--session-max-age')).toEqual(['12h']);
    const keys = mountedFile(pod, 'session-keys');
    expect(flagValues(args, '--session-key-file')).toEqual([keys.path]);
    expect(keys).toMatchObject({ secret: 'svc-session-keys', key: 'keys' });
    const secret = mountedFile(pod, 'sign-in-client-secret');
    expect(flagValues(args, '--sign-in-client-secret-file')).toEqual([secret.path]);
    expect(secret).toMatchObject({ secret: 'idp-client', key: 'secret' });
    // Readable by the pod's group (fsGroup) only; never a key or a secret in an argument or the environment.
    for (const v of pod.volumes.filter((x) => x.secret)) expect(v.secret!.defaultMode).toBe(0o440);
    // The sign-in flags come before extraArgs, so an operator's own flag still has the last word.
    expect(args.indexOf('--session-max-age')).toBeGreaterThan(args.indexOf('--oidc-issuer'));
  });

  it('a public client gets no secret flag or volume; one issuer needs no --sign-in-issuer; the default session age is 8h', () => {
    const pod = podOf(render(signIn({ clientSecret: { existingSecret: '', key: 'client-secret' } })));
    const args = pod.containers[0]!.args;
    expect(args.join(' ')).not.toMatch(/--sign-in-client-secret-file|--sign-in-issuer/);
    expect(pod.volumes.map((v) => v.name)).toEqual(['tmp', 'session-keys']);
    expect(flagValues(args, '--session-max-age')).toEqual(['8h']);
  });

  it('several issuers (authenticationConfig): --sign-in-issuer names the one chosen', () => {
    const config = { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration',
      jwt: ['a', 'b'].map((p) => ({ issuer: { url: `https://${p}.example.org`, audiences: ['svc-data'] }, claimMappings: { username: { claim: 'sub', prefix: `${p}:` } } })) };
    const args = podOf(render(signIn({ issuer: 'https://b.example.org' }, { authenticationConfig: config }))).containers[0]!.args;
    expect(flagValues(args, '--sign-in-issuer')).toEqual(['https://b.example.org']);
    expect(refusal(signIn({}, { authenticationConfig: config }))).toContain('auth.oidc trusts 2 issuers: set auth.signIn.issuer to the one that signs browsers in (https://a.example.org, https://b.example.org)');
  });

  it.each([['ingress-nginx', 'nginx'], ['traefik', 'traefik']])('%s: an Ingress of class %s with exactly the five browser paths (Exact) to svc-auth on each host', (controller, cls) => {
    const m = render(signIn({ route: { controller } }));
    const ingress = ofKind(m, 'Ingress', 'svc-auth-sign-in') as unknown as Ingress[];
    expect(ingress).toHaveLength(1);
    expect(ingress[0]!.spec.ingressClassName).toBe(cls);
    expect(ingress[0]!.spec.tls).toBeUndefined();
    expect(ingress[0]!.spec.rules.map((r) => r.host)).toEqual(HOSTS);
    for (const rule of ingress[0]!.spec.rules) {
      expect(rule.http.paths.map((p) => [p.path, p.pathType, p.backend.service.name, p.backend.service.port.name])).toEqual(DEPLOY_PATHS.map((p) => [p, 'Exact', 'svc-auth', 'http']));
    }
    expect(ofKind(m, 'HTTPRoute')).toEqual([]);
  });

  it('the Ingress takes a class, a TLS Secret for its hosts and annotations from the values', () => {
    const m = render(signIn({ route: { ingressClassName: 'public-nginx', tlsSecretName: 'data-tls', annotations: { 'example.org/owner': 'data' } } }));
    const ingress = ofKind(m, 'Ingress', 'svc-auth-sign-in')[0]! as unknown as Ingress & Manifest;
    expect(ingress.spec.ingressClassName).toBe('public-nginx');
    expect(ingress.spec.tls).toEqual([{ hosts: HOSTS, secretName: 'data-tls' }]);
    expect(ingress.metadata.annotations).toEqual({ 'example.org/owner': 'data' });
  });

  it('envoy-gateway: an HTTPRoute on the parentRefs with the five paths (Exact) to svc-auth, as deploy/ has it', () => {
    const parentRefs = [{ name: 'eg', namespace: 'envoy-gateway-system', sectionName: 'https' }];
    const m = render(signIn({ route: { controller: 'envoy-gateway', parentRefs } }));
    const route = ofKind(m, 'HTTPRoute', 'svc-auth-sign-in') as unknown as HTTPRoute[];
    expect(route).toHaveLength(1);
    expect(route[0]!.spec.parentRefs).toEqual(parentRefs);
    expect(route[0]!.spec.hostnames).toEqual(HOSTS);
    const deploy = (loadAll(readFileSync(join(repoRoot, 'deploy', 'gateway-api', 'envoy-gateway-securitypolicy.yaml'), 'utf8')) as (Manifest & HTTPRoute)[])
      .find((d) => d.kind === 'HTTPRoute' && d.metadata.name === 'svc-auth-pages')!;
    expect(route[0]!.spec.rules.map((r) => r.matches)).toEqual(deploy.spec.rules.map((r) => r.matches));
    expect(route[0]!.spec.rules.flatMap((r) => r.backendRefs)).toEqual([{ name: 'svc-auth', port: 8080 }]);
    expect(ofKind(m, 'Ingress')).toEqual([]);
  });

  it('route.controller none renders no route', () => {
    const m = render(signIn({ route: { controller: 'none' } }));
    expect(m.filter((x) => ['Ingress', 'HTTPRoute'].includes(x.kind))).toEqual([]);
  });

  it('refuses, rendered without a cluster, to generate session keys: existingSecret is required, and the message says how', () => {
    const stderr = refusal(signIn({ sessionKeys: { existingSecret: '', key: 'session-keys' } }));
    expect(stderr).toContain('auth.signIn.sessionKeys.existingSecret is required where the chart is rendered without a cluster (helm template, helm install --dry-run, Argo CD)');
    expect(stderr).toContain('kubectl -n svc create secret generic svc-session-keys --from-literal=session-keys=');
    // helm lint renders without a cluster too, and logs a template's fail instead of failing: it names it all the same.
    const lint = helmLint(helm, { namespace: 'svc', values: signIn({ sessionKeys: { existingSecret: '', key: 'session-keys' } }) });
    expect(`${lint.stdout}${lint.stderr}`).toContain('Fail: auth.signIn.sessionKeys.existingSecret is required where the chart is rendered without a cluster');
  });

  it.each([
    ['no issuer at all', signIn({}, { issuers: [] }), 'auth.signIn.enabled=true needs the OpenID provider it signs browsers in with'],
    ['two issuers on the flags and none chosen', signIn({}, { issuers: [ISSUER, 'https://b.example.org'], audiences: ['svc-data'], groupsClaim: '' }), 'auth.oidc trusts 2 issuers'],
    ['an issuer svc-auth does not trust', signIn({ issuer: 'https://other.example.org' }), 'auth.signIn.issuer https://other.example.org is not one of the issuers svc-auth trusts'],
  ])('the template refuses %s, naming the value to set', (_n, values, message) => {
    expect(refusal(values)).toContain(message);
  });

  it.each([
    ['an unknown key', signIn({ cookieName: 'x' }), /additional properties 'cookieName' not allowed/],
    ['an unknown route key', signIn({ route: { host: 'x' } }), /additional properties 'host' not allowed/],
    ['an external URL with a path', signIn({ externalURLs: ['https://example.org/data'] }), /externalURLs/],
    ['an external URL with a trailing slash', signIn({ externalURLs: ['https://data.example.org/'] }), /externalURLs/],
    ['an external URL without a scheme', signIn({ externalURLs: ['data.example.org'] }), /externalURLs/],
    ['the same external URL twice', signIn({ externalURLs: ['https://data.example.org', 'https://data.example.org'] }), /externalURLs/],
    ['no external URL', signIn({ externalURLs: [] }), /externalURLs/],
    ['no client id', signIn({ clientId: '' }), /clientId/],
    ['a session age without a unit', signIn({ sessionMaxAge: '8' }), /sessionMaxAge/],
    ['a session age in two units', signIn({ sessionMaxAge: '1h30m' }), /sessionMaxAge/],
    ['an issuer that is no URL', signIn({ issuer: 'login.example.org' }), /issuer/],
    ['a Secret name that is no name', signIn({ sessionKeys: { existingSecret: 'Session_Keys', key: 'keys' } }), /existingSecret/],
    ['a Secret key with a slash', signIn({ clientSecret: { existingSecret: 'idp', key: 'a/b' } }), /key/],
    ['an unknown controller', signIn({ route: { controller: 'haproxy' } }), /controller/],
    ['envoy-gateway without a Gateway', signIn({ route: { controller: 'envoy-gateway' } }), /parentRefs/],
    ['a parentRef without a name', signIn({ route: { controller: 'envoy-gateway', parentRefs: [{ namespace: 'eg' }] } }), /name/],
    ['enabled as a string', { auth: { oidc: OIDC, signIn: { enabled: 'yes' } } }, /enabled/],
  ])('the schema refuses %s', (_n, values, message) => {
    const stderr = refusal(values);
    expect(stderr).toContain("values don't meet the specifications of the schema");
    expect(stderr).toMatch(message);
  });
});

describeCluster('chart auth.signIn.* on the real API server', () => {
  let helm: string;
  beforeAll(async () => {
    helm = await helmBinary();
  }, 15 * 60_000);

  /** `helm template --dry-run=server`: helm's lookup reads the cluster, as `helm install` and `helm upgrade` do. */
  function renderAgainstCluster(namespace: string, values: Record<string, unknown>): Manifest[] {
    const valuesArgs = ['--set-json', `auth=${JSON.stringify((values as { auth: unknown }).auth)}`];
    const r = runHelm(helm, ['template', 'svc', CHART_DIR, '--namespace', namespace, '--dry-run=server', '--kubeconfig', kubeconfigPath(), ...valuesArgs]);
    if (r.status !== 0) throw new Error(`helm template --dry-run=server failed:\n${r.stderr}`);
    return parseManifests(r.stdout);
  }
  const generated = signIn({ sessionKeys: { existingSecret: '', key: 'session-keys' } });
  const keyFile = (m: Manifest[]): string => Buffer.from((ofKind(m, 'Secret', 'svc-auth-session-keys')[0] as Manifest & { data: Record<string, string> }).data['session-keys']!, 'base64').toString('utf8');

  it('generates one session key at install, mounts it, and keeps it across upgrades (lookup)', async () => {
    const ns = await newNamespace('chart-sign-in');
    const first = renderAgainstCluster(ns, generated);
    const pod = podOf(first);
    expect(mountedFile(pod, 'session-keys')).toEqual({ secret: 'svc-auth-session-keys', key: 'session-keys', path: '/etc/svc-auth/session/session-keys' });
    const file = keyFile(first);
    // One line: the base64url (no padding) of 32 bytes. Compared as booleans: a key never reaches the test output.
    expect(/^[A-Za-z0-9_-]{43}\n$/.test(file)).toBe(true);
    expect(Buffer.from(file.trim(), 'base64url').length).toBe(32);
    // Another install elsewhere gets another key.
    const other = renderAgainstCluster(await newNamespace('chart-sign-in-other'), generated);
    expect(keyFile(other) === file).toBe(false);
    // Installed (the Secret stored), an upgrade renders the same key, and so does one after a rotation by hand.
    const secret = ofKind(first, 'Secret', 'svc-auth-session-keys')[0]!;
    const applied = applyManifests(kubeconfigPath(), [secret]);
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
    expect(keyFile(renderAgainstCluster(ns, generated)) === file).toBe(true);
    const rotated = `${Buffer.alloc(32, 7).toString('base64url')}\n${file}`;
    expect(applyManifests(kubeconfigPath(), [{ ...secret, data: { 'session-keys': Buffer.from(rotated).toString('base64') } } as Manifest]).status).toBe(0);
    expect(keyFile(renderAgainstCluster(ns, generated)) === rotated).toBe(true);
  });

  it('accepts every object rendered with sign-in on (server-side dry-run, strict field validation)', async () => {
    const ns = await newNamespace('chart-sign-in-dry');
    for (const values of [signIn({ route: { tlsSecretName: 'data-tls', annotations: { 'example.org/owner': 'data' } } }), signIn({ route: { controller: 'traefik' }, clientSecret: { existingSecret: '', key: 'k' } })]) {
      const r = helmTemplate(helm, { namespace: ns, values });
      expect(r.status).toBe(0);
      const applied = applyManifests(kubeconfigPath(), r.manifests, { dryRun: true });
      expect({ status: applied.status, stderr: applied.stderr.replace(/^Warning: .*\n?/gm, '') }).toEqual({ status: 0, stderr: '' });
      expect(applied.stdout).toContain('ingress.networking.k8s.io/svc-auth-sign-in serverside-applied (server dry run)');
    }
  });
});
