// `svc auth wiring` against the chart's own files (its defaults in values.yaml, its patterns in values.schema.json) and
// the contract of each controller's objects; the objects themselves are diffed against `helm template` in
// test/integration/chart-wiring.test.ts.
import { describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { removeDir, repoRoot, svc, tempDir } from '../../test/cli/harness.js';
import { ANSWER_HEADERS } from '../../core/index.js';
import { CHART_DEFAULTS, wiringObjects, type KubeObject, type WiringValues } from './wiring-objects.js';
import { mergeValues, PATTERNS, wiringValues } from './wiring-values.js';
import { routesOf } from './wiring.js';

const chart = join(repoRoot, 'charts', 'svc');
const values = load(readFileSync(join(chart, 'values.yaml'), 'utf8')) as { protect: unknown; auth: { port: number; cacheMaxAge: number; signIn: { enabled: boolean; externalURLs: string[] } }; networkPolicy: Record<string, unknown> };
const schema = JSON.parse(readFileSync(join(chart, 'values.schema.json'), 'utf8')) as { properties: Record<string, { properties: Record<string, Schema> }> };
interface Schema { pattern?: string; properties?: Record<string, Schema>; items?: Schema }

const fail = (m: string) => new Error(m);
const HOSTS = [{ host: 'data.example.org', paths: [{ path: '/data', service: 'waf', port: 80 }, { path: '/oapi', service: 'oapi', port: 80 }] }];
const of = (over: Record<string, unknown>): WiringValues => wiringValues([over], fail);
const protect = (p: Record<string, unknown>, rest: Record<string, unknown> = {}): WiringValues => of({ protect: { hosts: HOSTS, ...p }, ...rest });
const find = (objects: KubeObject[], kind: string, name?: string): KubeObject => objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name))!;

describe('the chart is the one source', () => {
  it('CHART_DEFAULTS are values.yaml\'s protect and the auth values the wiring reads', () => {
    expect(CHART_DEFAULTS.protect).toEqual(values.protect);
    expect(CHART_DEFAULTS.auth).toEqual({ port: values.auth.port, cacheMaxAge: values.auth.cacheMaxAge, signIn: { enabled: values.auth.signIn.enabled, externalURLs: values.auth.signIn.externalURLs } });
    const { metricsNamespaceSelector: _metrics, ...networkPolicy } = values.networkPolicy;
    expect(CHART_DEFAULTS.networkPolicy).toEqual(networkPolicy);
  });

  it('PATTERNS are values.schema.json\'s', () => {
    const p = schema.properties.protect!.properties;
    const path = p.hosts!.items!.properties!.paths!.items!.properties!;
    expect({
      namespace: p.namespace!.pattern, host: p.hosts!.items!.properties!.host!.pattern, path: path.path!.pattern, service: path.service!.pattern,
      tlsSecretName: p.tlsSecretName!.pattern, authURL: p.authURL!.pattern, ingressClassName: p.ingressNginx!.properties!.ingressClassName!.pattern,
      entryPoint: p.traefik!.properties!.entryPoints!.items!.pattern,
    }).toEqual(PATTERNS);
  });
});

describe('values', () => {
  it('merge as helm merges them: maps key by key, lists replaced, null removes', () => {
    expect(mergeValues({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: null })).toEqual({ a: { b: 1, c: [3] } });
  });

  it.each([
    ['an unknown controller', { protect: { controller: 'haproxy' } }, /protect.controller: must be one of none, ingress-nginx/],
    ['a controller without hosts', { protect: { controller: 'traefik' } }, /protect.hosts: needs at least 1 entry/],
    ['a host twice', { protect: { controller: 'traefik', hosts: [...HOSTS, HOSTS[0]] } }, /data.example.org is listed twice/],
    ['a path twice', { protect: { controller: 'traefik', hosts: [{ host: 'a.example.org', paths: [HOSTS[0]!.paths[0], HOSTS[0]!.paths[0]] }] } }, /a.example.org has the path \/data twice/],
    ['a host with a port', { protect: { controller: 'traefik', hosts: [{ ...HOSTS[0], host: 'a.example.org:443' }] } }, /protect.hosts\[0\].host/],
    ['a path with a trailing slash', { protect: { controller: 'traefik', hosts: [{ host: 'a.example.org', paths: [{ path: '/data/', service: 'waf', port: 80 }] }] } }, /paths\[0\].path/],
    ['a port name', { protect: { controller: 'traefik', hosts: [{ host: 'a.example.org', paths: [{ path: '/data', service: 'waf', port: 'http' }] }] } }, /paths\[0\].port: must be a port number/],
    ['an auth annotation', { protect: { controller: 'ingress-nginx', hosts: HOSTS, ingressNginx: { annotations: { 'nginx.ingress.kubernetes.io/auth-signin': 'https://x' } } } }, /auth-signin is set by the chart/],
    ['envoy-gateway without a Gateway', { protect: { controller: 'envoy-gateway', hosts: HOSTS } }, /protect.envoyGateway.parentRefs: needs at least 1 entry/],
    ['gateway-api without a Gateway', { protect: { controller: 'gateway-api', hosts: HOSTS } }, /protect.gatewayApi.parentRefs: needs at least 1 entry/],
    ['an auth URL with a path', { protect: { authURL: 'http://svc-auth:8080/authz' } }, /protect.authURL/],
    ['an unknown reader', { protect: { ingressNginx: { readBy: 'haproxy' } } }, /readBy: must be one of ingress-nginx, traefik/],
  ])('refuses %s, naming the value', (_n, over, message) => {
    expect(() => of(over)).toThrow(message);
  });

  it('says in words what a value must look like, never the regular expression', () => {
    expect(() => of({ protect: { controller: 'traefik', hosts: [{ ...HOSTS[0], host: 'Data.example.org:443' }] } }))
      .toThrow('protect.hosts[0].host: "Data.example.org:443" is not a host name in lower case, such as data.example.org: no scheme, port or path');
    expect(() => of({ protect: { authURL: 'http://svc-auth:8080/authz' } })).toThrow(/protect.authURL: "http:\/\/svc-auth:8080\/authz" is not http:\/\/ or https:\/\/ and a host with an optional port, nothing after it/);
    const path = (p: string) => [{ host: 'a.example.org', paths: [{ path: p, service: 'waf', port: 80 }] }];
    const bad: Record<keyof typeof PATTERNS, Record<string, unknown>> = {
      namespace: { namespace: 'Data' },
      host: { hosts: [{ ...HOSTS[0], host: 'Bad!' }] },
      path: { hosts: path('data') },
      service: { hosts: [{ host: 'a.example.org', paths: [{ path: '/', service: 'Waf', port: 80 }] }] },
      tlsSecretName: { tlsSecretName: 'Bad!' },
      authURL: { authURL: 'svc-auth:8080' },
      ingressClassName: { ingressNginx: { ingressClassName: 'Bad!' } },
      entryPoint: { traefik: { entryPoints: ['bad entry'] } },
    };
    for (const [key, over] of Object.entries(bad)) {
      let message = '';
      try {
        of({ protect: { controller: 'traefik', hosts: HOSTS, ...over } });
      } catch (e) {
        message = (e as Error).message;
      }
      expect({ key, words: / is not [a-z]/.test(message), regex: message.includes(PATTERNS[key as keyof typeof PATTERNS]) }).toEqual({ key, words: true, regex: false });
    }
  });

  it('routes from flags, grouped by host in the order given; a host alone is its root', () => {
    expect(routesOf(['a.example.org/data=waf:80', 'b.example.org=web:8080', 'a.example.org/oapi/v1=oapi:80'], 'svc auth wiring')).toEqual([
      { host: 'a.example.org', paths: [{ path: '/data', service: 'waf', port: 80 }, { path: '/oapi/v1', service: 'oapi', port: 80 }] },
      { host: 'b.example.org', paths: [{ path: '/', service: 'web', port: 8080 }] },
    ]);
    expect(() => routesOf(['a.example.org/data=waf'], 'svc auth wiring')).toThrow(/write HOST\/PATH=SERVICE:PORT/);
  });

  it('a route written as a URL is answered in words: leave out the scheme, and what a route is', () => {
    expect(() => routesOf(['https://data.example.org/data=waf:80'], 'svc auth wiring')).toThrow(
      '--route https://data.example.org/data=waf:80: leave out https://: write HOST/PATH=SERVICE:PORT, e.g. data.example.org/data=waf:80: the host name alone (no scheme, no port), the path prefix it protects (none: the whole host), then the Service in the routes\' namespace and its port number');
  });
});

describe('the objects', () => {
  it('none renders nothing', () => {
    expect(wiringObjects(of({}), 'svc')).toEqual([]);
  });

  it('ingress-nginx: auth-url to /authz/auth-request, never auth-signin; Traefik\'s provider: /authz/forward-auth; no cache at cacheMaxAge 0', () => {
    const nginx = find(wiringObjects(protect({ controller: 'ingress-nginx' }), 'svc'), 'Ingress', 'svc-data').metadata.annotations!;
    expect(nginx['nginx.ingress.kubernetes.io/auth-url']).toBe('http://svc-auth.svc.svc.cluster.local:8080/authz/auth-request');
    expect(Object.keys(nginx).filter((k) => k.includes('auth-signin'))).toEqual([]);
    const traefik = find(wiringObjects(protect({ controller: 'ingress-nginx', ingressNginx: { readBy: 'traefik' } }), 'svc'), 'Ingress', 'svc-data').metadata.annotations!;
    expect(traefik['nginx.ingress.kubernetes.io/auth-url']).toBe('http://svc-auth.svc.svc.cluster.local:8080/authz/forward-auth');
    const uncached = find(wiringObjects(protect({ controller: 'ingress-nginx' }, { auth: { cacheMaxAge: 0 } }), 'svc'), 'Ingress', 'svc-data').metadata.annotations!;
    expect(Object.keys(uncached).filter((k) => k.includes('auth-cache'))).toEqual([]);
  });

  it('traefik: ForwardAuth passes the session headers and the method overrides, and nothing of the answer but its answer headers (X-Auth-Request-*, X-Svc-*)', () => {
    const fa = (find(wiringObjects(protect({ controller: 'traefik' }), 'svc'), 'Middleware').spec as { forwardAuth: Record<string, unknown> }).forwardAuth;
    expect(fa).toMatchObject({ trustForwardHeader: false, authResponseHeaders: [...ANSWER_HEADERS] });
    expect(fa.authRequestHeaders).toEqual(['Authorization', 'X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override', 'Cookie', 'Accept', 'Sec-Fetch-Mode', 'Sec-Fetch-Site', 'Sec-Fetch-Dest', 'Origin']);
  });

  it('the pages route: the public list alone, or the five sign-in paths on the protected and the external URLs\' hosts', () => {
    const alone = find(wiringObjects(protect({ controller: 'traefik' }), 'svc'), 'IngressRoute', 'svc-auth-pages').spec as { routes: { match: string }[] };
    expect(alone.routes[0]!.match).toBe('Host(`data.example.org`) && Path(`/authz/v1/protected`)');
    const signIn = { auth: { signIn: { enabled: true, externalURLs: ['https://data.example.org:8443', 'https://files.example.org'] } } };
    const both = find(wiringObjects(protect({ controller: 'traefik' }, signIn), 'svc'), 'IngressRoute', 'svc-auth-pages').spec as { routes: { match: string }[] };
    expect(both.routes[0]!.match).toBe('(Host(`data.example.org`) || Host(`files.example.org`)) && (Path(`/authz/sign-in`) || Path(`/authz/callback`) || Path(`/authz/sign-out`) || Path(`/authz/v1/session`) || Path(`/authz/v1/protected`))');
  });

  it('envoy-gateway in another namespace: svc-auth named with its namespace, and the ReferenceGrant that allows it', () => {
    const objects = wiringObjects(protect({ controller: 'envoy-gateway', namespace: 'data', envoyGateway: { parentRefs: [{ name: 'eg' }] } }), 'svc');
    const policy = find(objects, 'SecurityPolicy').spec as { targetRefs: { name: string }[]; extAuth: { failOpen: boolean; http: { backendRefs: unknown[] } } };
    expect(policy.targetRefs.map((t) => t.name)).toEqual(['svc-data.data.example.org']);
    expect(policy.extAuth.failOpen).toBe(false);
    expect(policy.extAuth.http.backendRefs).toEqual([{ name: 'svc-auth', namespace: 'svc', port: 8080 }]);
    expect(find(objects, 'ReferenceGrant').metadata.namespace).toBe('svc');
    expect(find(objects, 'HTTPRoute', 'svc-auth-pages').metadata.namespace).toBe('svc');
  });
});

describe('svc auth wiring', () => {
  it('prints the objects as YAML documents, or a List in JSON', async () => {
    const dir = tempDir('svc-wiring-');
    try {
      const file = join(dir, 'values.yaml');
      writeFileSync(file, 'protect:\n  controller: traefik\n  hosts:\n    - {host: data.example.org, paths: [{path: /data, service: waf, port: 80}]}\n');
      const yaml = await svc(['-n', 'svc', 'auth', 'wiring', '-f', file]);
      expect({ code: yaml.code, stderr: yaml.stderr }).toEqual({ code: 0, stderr: '' });
      expect(yaml.stdout.split('---\n').map((d) => (load(d) as KubeObject).kind)).toEqual(['Middleware', 'IngressRoute', 'IngressRoute']);
      expect(yaml.stdout.split('\n')[0]).toBe('# svc auth wiring for traefik: what these objects assume, and what changes it.');
      const json = await svc(['auth', 'wiring', '-f', file, '--controller', 'ingress-nginx', '-o', 'json']);
      expect(json.code).toBe(0);
      expect((JSON.parse(json.stdout) as { items: KubeObject[] }).items.map((o) => o.kind)).toEqual(['Ingress', 'ConfigMap', 'Ingress']);
      expect(json.stderr).toContain('svc-auth\'s namespace: default (give -n NAMESPACE');
    } finally {
      removeDir(dir);
    }
  });

  it.each([
    [['auth', 'wiring'], /choose the controller: --controller ingress-nginx\|traefik\|envoy-gateway\|gateway-api/],
    [['auth', 'wiring', '--controller', 'traefik'], /protect.hosts: needs at least 1 entry/],
    [['auth', 'wiring', '--controller', 'envoy-gateway', '--route', 'a.example.org/x=y:1'], /protect.envoyGateway.parentRefs: needs at least 1 entry/],
    [['auth', 'wiring', '--controller', 'haproxy'], /argument 'haproxy' is invalid/],
    [['auth', 'wiring', '-f', '/nonexistent/values.yaml'], /-f \/nonexistent\/values.yaml: no such file/],
    [['auth', 'wiring', '--controller', 'gateway-api', '--gateway', 'eg', '--route', 'a.example.org/x=y:1'], /--gateway eg: write NAMESPACE\/NAME/],
    [['auth', 'wiring', '--controller', 'traefik', '--route', 'https://a.example.org/x=y:1'], /--route https:\/\/a.example.org\/x=y:1: leave out https:\/\/: write HOST\/PATH=SERVICE:PORT/],
  ])('%j is a usage error (exit 2) saying what to do', async (args, message) => {
    const r = await svc(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});
