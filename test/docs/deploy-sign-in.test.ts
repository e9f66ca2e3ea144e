// Browser sign-in in every proxy configuration of deploy/, read from the files themselves: each passes a browser
// session's headers to svc-auth's decision endpoint, routes exactly svc-auth's five browser paths to it (never its
// decision endpoints, which would answer anyone's question about any token), and lets no Set-Cookie of an auth answer
// reach a backend or a cache; plain nginx sends only browser navigations to sign in (X-Svc-Sign-In), and no
// controller is set to send every 401 to a sign-in page. The proxies themselves run these files in
// test/e2e/proxies.test.ts; the chart renders the same five paths (test/integration/chart-sign-in.test.ts).
import { describe, expect, it } from '@jest/globals';
import { load, loadAll } from 'js-yaml';
import { read } from './markdown.js';

/** svc-auth's browser-facing paths on the data host: the only ones a route to it may carry. */
const BROWSER_PATHS = ['/authz/sign-in', '/authz/callback', '/authz/sign-out', '/authz/v1/session', '/authz/v1/protected'];
/** The decision endpoints (and paths that look like browser ones) a route must not carry. */
const NOT_BROWSER = ['/authz/auth-request', '/authorize', '/authz/forward-auth', '/authz/ext-authz', '/authz/ext-authz/data/x', '/authz/sign-in/',
  '/authz/v1/protected/x', '/authz/sign-inx', '/xauthz/sign-in', '/authz/v1/session/../../auth-request', '/AUTHZ/SIGN-IN'];
/** What a decision needs from a browser besides the credentials and the method overrides. */
const SESSION_HEADERS = ['Cookie', 'Accept', 'Sec-Fetch-Mode', 'Sec-Fetch-Site', 'Sec-Fetch-Dest', 'Origin'];

const lower = (names: readonly string[]): string[] => names.map((n) => n.toLowerCase());
const docsOf = (file: string): Record<string, unknown>[] => (loadAll(read(file)) as Record<string, unknown>[]).filter((d) => d && typeof d === 'object');
const named = (file: string, kind: string, name: string): Record<string, unknown> =>
  docsOf(file).find((d) => d.kind === kind && (d.metadata as { name: string }).name === name)!;

/** The paths a Traefik rule `Host(...) && (Path(`a`) || Path(`b`))` matches, or the prefixes it opens (PathPrefix). */
function traefikPaths(rule: string): { paths: string[]; prefixes: string[] } {
  return {
    paths: [...rule.matchAll(/\bPath\(`([^`]*)`\)/g)].map((m) => m[1]!),
    prefixes: [...rule.matchAll(/\b(?:PathPrefix|PathRegexp)\(`([^`]*)`\)/g)].map((m) => m[1]!),
  };
}

interface ForwardAuth { authRequestHeaders: string[]; authResponseHeaders: string[]; addAuthCookiesToResponse?: string[] }

describe('Traefik (deploy/traefik: dynamic.yaml and middleware.yaml)', () => {
  const file = load(read('deploy/traefik/dynamic.yaml')) as { http: { middlewares: Record<string, { forwardAuth: ForwardAuth }>; routers: Record<string, { rule: string; service: string; middlewares?: string[] }>; services: Record<string, unknown> } };
  const crd = (named('deploy/traefik/middleware.yaml', 'Middleware', 'svc-auth').spec as { forwardAuth: ForwardAuth }).forwardAuth;

  it.each([['dynamic.yaml', file.http.middlewares['svc-auth']!.forwardAuth], ['middleware.yaml', crd]])('%s: ForwardAuth passes the session headers, and no Set-Cookie on', (_f, fa) => {
    expect(fa.authRequestHeaders).toEqual(expect.arrayContaining(['Authorization', ...SESSION_HEADERS]));
    expect(lower(fa.authResponseHeaders)).not.toContain('set-cookie');
    expect(fa.addAuthCookiesToResponse).toBeUndefined();
  });

  it('dynamic.yaml: the sign-in router carries exactly the five browser paths to svc-auth, without the middleware', () => {
    const signIn = Object.values(file.http.routers).filter((r) => r.service === 'svc-auth');
    expect(signIn).toHaveLength(1);
    expect(traefikPaths(signIn[0]!.rule)).toEqual({ paths: BROWSER_PATHS, prefixes: [] });
    expect(signIn[0]!.middlewares).toBeUndefined();
    for (const r of Object.values(file.http.routers).filter((x) => x.service !== 'svc-auth')) expect(r.middlewares).toEqual(['svc-auth']);
  });

  it('middleware.yaml: the sign-in IngressRoute carries exactly the five browser paths to svc-auth, without the middleware', () => {
    const route = named('deploy/traefik/middleware.yaml', 'IngressRoute', 'svc-auth-pages').spec as { routes: { match: string; middlewares?: unknown[]; services: { name: string }[] }[] };
    expect(route.routes).toHaveLength(1);
    expect(traefikPaths(route.routes[0]!.match)).toEqual({ paths: BROWSER_PATHS, prefixes: [] });
    expect(route.routes[0]!.middlewares).toBeUndefined();
    expect(route.routes[0]!.services.map((s) => s.name)).toEqual(['svc-auth']);
  });
});

describe('Envoy (deploy/gateway-api/envoy.yaml)', () => {
  type Route = { match: { prefix?: string; safe_regex?: { regex: string } }; route: { cluster: string }; typed_per_filter_config?: Record<string, { disabled?: boolean }> };
  type Filter = { name: string; typed_config: { allowed_headers?: { patterns: { exact: string }[] }; http_service?: { authorization_response: Record<string, { patterns: { exact: string }[] } | undefined> } } };
  const hcm = ((load(read('deploy/gateway-api/envoy.yaml')) as { static_resources: { listeners: { filter_chains: { filters: { typed_config: unknown }[] }[] }[] } })
    .static_resources.listeners[0]!.filter_chains[0]!.filters[0]!.typed_config) as { route_config: { virtual_hosts: { routes: Route[] }[] }; http_filters: Filter[] };
  const extAuthz = hcm.http_filters.find((f) => f.name === 'envoy.filters.http.ext_authz')!.typed_config;
  const routes = hcm.route_config.virtual_hosts[0]!.routes;

  it('ext_authz passes the session headers, and copies no Set-Cookie to the backend or, on an allow, to the client', () => {
    expect(extAuthz.allowed_headers!.patterns.map((p) => p.exact)).toEqual(expect.arrayContaining(['authorization', ...lower(SESSION_HEADERS)]));
    const response = extAuthz.http_service!.authorization_response;
    for (const list of ['allowed_upstream_headers', 'allowed_upstream_headers_to_append', 'allowed_client_headers_on_success']) {
      expect(lower((response[list]?.patterns ?? []).map((p) => p.exact))).not.toContain('set-cookie');
    }
  });

  it('the sign-in route matches the five browser paths whole and nothing else, goes to svc-auth, with ext_authz off', () => {
    const signIn = routes.filter((r) => r.route.cluster === 'svc_auth');
    expect(signIn).toHaveLength(1);
    // Envoy's safe_regex matches the whole path (RE2).
    const re = new RegExp(`^(?:${signIn[0]!.match.safe_regex!.regex})$`);
    expect(BROWSER_PATHS.filter((p) => re.test(p))).toEqual(BROWSER_PATHS);
    expect(NOT_BROWSER.filter((p) => re.test(p))).toEqual([]);
    expect(signIn[0]!.typed_per_filter_config?.['envoy.filters.http.ext_authz']?.disabled).toBe(true);
    for (const r of routes.filter((x) => x !== signIn[0])) expect(r.typed_per_filter_config).toBeUndefined();
  });
});

describe('Envoy Gateway (deploy/gateway-api/envoy-gateway-securitypolicy.yaml)', () => {
  const file = 'deploy/gateway-api/envoy-gateway-securitypolicy.yaml';
  const policy = named(file, 'SecurityPolicy', 'svc-auth').spec as { targetRefs: { name: string }[]; extAuth: { headersToExtAuth: string[]; http: { headersToBackend: string[] } } };

  it('the SecurityPolicy passes the session headers and copies no Set-Cookie to the backend', () => {
    expect(policy.extAuth.headersToExtAuth).toEqual(expect.arrayContaining(['authorization', ...lower(SESSION_HEADERS)]));
    expect(lower(policy.extAuth.http.headersToBackend)).not.toContain('set-cookie');
  });

  it('the sign-in HTTPRoute carries exactly the five browser paths to svc-auth, and the SecurityPolicy does not target it', () => {
    const route = named(file, 'HTTPRoute', 'svc-auth-pages').spec as { rules: { matches: { path: { type: string; value: string } }[]; backendRefs: { name: string }[] }[] };
    expect(route.rules.flatMap((r) => r.matches.map((m) => m.path))).toEqual(BROWSER_PATHS.map((value) => ({ type: 'Exact', value })));
    expect(route.rules.flatMap((r) => r.backendRefs.map((b) => b.name))).toEqual(['svc-auth']);
    expect(policy.targetRefs.map((t) => t.name)).not.toContain('svc-auth-pages');
  });
});

describe('Gateway API ExternalAuth (deploy/gateway-api/httproute-externalauth.yaml)', () => {
  type Rule = { matches: { path: { type: string; value: string } }[]; backendRefs: { name: string }[]; filters?: { type: string; externalAuth: { http: { allowedHeaders: string[]; allowedResponseHeaders: string[] } } }[] };
  // The data route and the route to svc-auth's pages, each an HTTPRoute of the file.
  const rules = (docsOf('deploy/gateway-api/httproute-externalauth.yaml') as { spec: { rules: Rule[] } }[]).flatMap((d) => d.spec.rules);
  const authOf = (r: Rule) => r.filters?.find((f) => f.type === 'ExternalAuth')?.externalAuth;

  it('every data rule passes the session headers and copies no Set-Cookie to the backend', () => {
    const data = rules.filter((r) => r.backendRefs[0]!.name !== 'svc-auth');
    expect(data.length).toBeGreaterThan(0);
    for (const r of data) {
      expect(authOf(r)!.http.allowedHeaders).toEqual(expect.arrayContaining(SESSION_HEADERS));
      expect(lower(authOf(r)!.http.allowedResponseHeaders)).not.toContain('set-cookie');
    }
  });

  it('the one rule to svc-auth carries exactly the five browser paths, without the filter', () => {
    const signIn = rules.filter((r) => r.backendRefs.some((b) => b.name === 'svc-auth'));
    expect(signIn).toHaveLength(1);
    expect(signIn[0]!.matches.map((m) => m.path)).toEqual(BROWSER_PATHS.map((value) => ({ type: 'Exact', value })));
    expect(authOf(signIn[0]!)).toBeUndefined();
  });
});

describe('ingress-nginx (deploy/ingress-nginx)', () => {
  type Ingress = { metadata: { annotations?: Record<string, string> }; spec: { rules: { http: { paths: { path: string; pathType: string; backend: { service: { name: string } } }[] } }[] } };
  const data = load(read('deploy/ingress-nginx/ingress.yaml')) as Ingress;
  const signIn = load(read('deploy/ingress-nginx/pages-route.yaml')) as Ingress;

  it('the data Ingress copies no Set-Cookie to the backend, and does not send every 401 to a sign-in page (auth-signin)', () => {
    const a = data.metadata.annotations!;
    expect(lower(a['nginx.ingress.kubernetes.io/auth-response-headers']!.split(/,\s*/))).not.toContain('set-cookie');
    expect(Object.keys(a).filter((k) => /auth-signin/.test(k))).toEqual([]);
  });

  it('the sign-in Ingress carries exactly the five browser paths (Exact) to svc-auth, without any auth annotation', () => {
    const paths = signIn.spec.rules.flatMap((r) => r.http.paths);
    expect(paths.map((p) => [p.path, p.pathType, p.backend.service.name])).toEqual(BROWSER_PATHS.map((p) => [p, 'Exact', 'svc-auth']));
    expect(signIn.metadata.annotations).toBeUndefined();
  });
});

describe('plain nginx (deploy/nginx/svc-auth.conf)', () => {
  const conf = read('deploy/nginx/svc-auth.conf');
  const live = conf.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
  /** The body of the location block opened by `head` (no nested blocks but `if`). */
  const block = (head: string): string => {
    const start = live.indexOf(`location ${head} {`);
    expect(start).toBeGreaterThanOrEqual(0);
    let depth = 0;
    for (let i = live.indexOf('{', start); i < live.length; i++) {
      if (live[i] === '{') depth++;
      else if (live[i] === '}' && --depth === 0) return live.slice(start, i + 1);
    }
    throw new Error(`no end to location ${head}`);
  };

  it('every auth_request location keeps X-Svc-Sign-In and sends its 401 to the named location, which redirects only when it is set', () => {
    const authed = [...live.matchAll(/location (\S+) \{[^}]*auth_request /g)].map((m) => m[1]!);
    expect(authed).toEqual(['/data/', '/oapi/']);
    for (const head of authed) {
      expect(block(head)).toContain('auth_request_set $svc_sign_in $upstream_http_x_svc_sign_in;');
      expect(block(head)).toContain('error_page 401 = @svc_sign_in;');
    }
    expect(block('@svc_sign_in').replace(/\s+/g, ' ')).toBe('location @svc_sign_in { if ($svc_sign_in) { return 302 $svc_sign_in; } return 401; }');
  });

  it('every auth_request location keeps X-Svc-Denied and sends its 403 to the named location, which redirects only when it is set', () => {
    const authed = [...live.matchAll(/location (\S+) \{[^}]*auth_request /g)].map((m) => m[1]!);
    for (const head of authed) {
      expect(block(head)).toContain('auth_request_set $svc_denied $upstream_http_x_svc_denied;');
      expect(block(head)).toContain('error_page 403 = @svc_denied;');
    }
    expect(block('@svc_denied').replace(/\s+/g, ' ')).toBe('location @svc_denied { if ($svc_denied) { return 302 $svc_denied; } add_header WWW-Authenticate $svc_auth_challenge always; return 403; }');
  });

  it('the browser location passes the host the browser opened (Host, X-Forwarded-Host, X-Forwarded-Proto): several external URLs work', () => {
    const route = /location ~ \S+ \{[^}]*\}/.exec(live)![0];
    for (const line of ['proxy_set_header Host $http_host;', 'proxy_set_header X-Forwarded-Host $http_host;', 'proxy_set_header X-Forwarded-Proto $scheme;']) expect(route).toContain(line);
  });

  it('the browser location matches the five paths whole and asks svc-auth the matched path, never the raw URI', () => {
    const m = /location ~ (\S+) \{\s*proxy_pass http:\/\/svc_auth\/authz\/\$1\$is_args\$args;/.exec(live);
    expect(m).not.toBeNull();
    const re = new RegExp(m![1]!);
    expect(BROWSER_PATHS.filter((p) => re.test(p))).toEqual(BROWSER_PATHS);
    expect(NOT_BROWSER.filter((p) => re.test(p))).toEqual([]);
    // No other location reaches svc-auth but the internal auth one.
    expect([...live.matchAll(/proxy_pass http:\/\/svc_auth[^\s;]*/g)].map((x) => x[0])).toEqual(['proxy_pass http://svc_auth/authz/$1$is_args$args', 'proxy_pass http://svc_auth/authz/auth-request']);
  });

  it('no Set-Cookie of an auth answer reaches a backend or the cache: none kept, and the optional cache does not ignore it', () => {
    expect(conf).not.toMatch(/\$upstream_http_set_cookie/);
    const ignore = /proxy_ignore_headers ([^;]*);/.exec(conf);
    expect(ignore?.[1]?.split(/\s+/)).toEqual(['Cache-Control', 'Expires']);
  });
});
