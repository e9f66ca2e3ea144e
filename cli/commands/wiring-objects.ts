/**
 * The objects the chart renders from its `protect` values (charts/svc/templates/wiring-*.yaml and _wiring.tpl), built
 * here for `svc auth wiring`: the same objects, field for field, for people who write their own manifests or GitOps
 * overlays. test/integration/chart-wiring.test.ts diffs the two for every controller; wiring-objects.test.ts checks
 * the defaults and patterns below against the chart's values.yaml and values.schema.json. Pure: no I/O.
 */

import { ANSWER_HEADERS } from '../../core/index.js';

export const CONTROLLERS = ['none', 'ingress-nginx', 'traefik', 'envoy-gateway', 'gateway-api'] as const;
export type Controller = (typeof CONTROLLERS)[number];

export interface ProtectedPath {
  readonly path: string;
  readonly service: string;
  readonly port: number;
}
export interface ProtectedHost {
  readonly host: string;
  readonly paths: readonly ProtectedPath[];
}
export type ParentRef = Readonly<Record<string, string | number>>;
export interface GatewayValues {
  readonly parentRefs: readonly ParentRef[];
  readonly annotations: Readonly<Record<string, string>>;
}

/** The chart's `protect` values. */
export interface ProtectValues {
  readonly controller: Controller;
  readonly namespace: string;
  readonly hosts: readonly ProtectedHost[];
  readonly tlsSecretName: string;
  readonly authURL: string;
  readonly ingressNginx: { readonly ingressClassName: string; readonly readBy: 'ingress-nginx' | 'traefik'; readonly authCache: boolean; readonly annotations: Readonly<Record<string, string>> };
  readonly traefik: { readonly entryPoints: readonly string[]; readonly annotations: Readonly<Record<string, string>> };
  readonly envoyGateway: GatewayValues;
  readonly gatewayApi: GatewayValues;
}

/** The proxy pods of one controller, as `networkPolicy.controllerPods` names them. */
export interface ControllerPods {
  readonly namespace: string;
  readonly podLabels: Readonly<Record<string, string>>;
}

/** The chart's `networkPolicy` values: who may reach svc-auth's port (the wiring's prerequisites say it). */
export interface NetworkPolicyValues {
  readonly enabled: boolean;
  readonly ingressNamespaceSelector: Readonly<Record<string, string>>;
  readonly proxyNamespaces: readonly string[];
  readonly ingressPodSelector: Readonly<Record<string, string>>;
  readonly controllerPods: Readonly<Record<Exclude<Controller, 'none'>, ControllerPods>>;
}

/**
 * What of the chart's values the wiring reads: `protect`, of `auth` the port, the cache age and sign-in's hosts, and
 * `networkPolicy`, which renders no object here but decides whether the controller's proxies may ask svc-auth at all.
 */
export interface WiringValues {
  readonly protect: ProtectValues;
  readonly auth: { readonly port: number; readonly cacheMaxAge: number; readonly signIn: { readonly enabled: boolean; readonly externalURLs: readonly string[] } };
  readonly networkPolicy: NetworkPolicyValues;
}

/** charts/svc/values.yaml's defaults of those keys (wiring-objects.test.ts keeps the two equal). */
export const CHART_DEFAULTS: WiringValues = {
  protect: {
    controller: 'none',
    namespace: '',
    hosts: [],
    tlsSecretName: '',
    authURL: '',
    ingressNginx: { ingressClassName: 'nginx', readBy: 'ingress-nginx', authCache: true, annotations: {} },
    traefik: { entryPoints: ['websecure'], annotations: {} },
    envoyGateway: { parentRefs: [], annotations: {} },
    gatewayApi: { parentRefs: [], annotations: {} },
  },
  auth: { port: 8080, cacheMaxAge: 30, signIn: { enabled: false, externalURLs: [] } },
  networkPolicy: {
    enabled: true,
    ingressNamespaceSelector: { 'kubernetes.io/metadata.name': 'ingress-nginx' },
    proxyNamespaces: [],
    ingressPodSelector: {},
    controllerPods: {
      'ingress-nginx': { namespace: 'ingress-nginx', podLabels: { 'app.kubernetes.io/name': 'ingress-nginx', 'app.kubernetes.io/component': 'controller' } },
      traefik: { namespace: 'traefik', podLabels: { 'app.kubernetes.io/name': 'traefik' } },
      'envoy-gateway': { namespace: 'envoy-gateway-system', podLabels: { 'app.kubernetes.io/name': 'envoy', 'app.kubernetes.io/component': 'proxy', 'app.kubernetes.io/managed-by': 'envoy-gateway' } },
      'gateway-api': { namespace: '', podLabels: {} },
    },
  },
};

/** One rendered object, as plain data. */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
  readonly [field: string]: unknown;
}

const AUTH_NAME = 'svc-auth';
/** svc.wiringLabels: no release or tool names, so the chart and this print the very same objects. */
const LABELS = { 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/part-of': 'svc-access-control', 'app.kubernetes.io/component': 'wiring' } as const;
/** The answer headers, copied to the backend over any copy a client sent (core/answer-headers.ts). */
const RESPONSE_HEADERS: readonly string[] = ANSWER_HEADERS;
/** The client headers svc-auth reads besides the credentials: the method overrides and a browser session's. */
const CLIENT_HEADERS = ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override', 'Cookie', 'Accept', 'Sec-Fetch-Mode', 'Sec-Fetch-Site', 'Sec-Fetch-Dest', 'Origin'];
const SIGN_IN_PATHS = ['/authz/sign-in', '/authz/callback', '/authz/sign-out', '/authz/v1/session', '/authz/v1/protected'];

function meta(name: string, namespace: string, annotations?: Readonly<Record<string, string>>): KubeObject['metadata'] {
  return { name, namespace, labels: { ...LABELS }, ...(annotations && Object.keys(annotations).length > 0 ? { annotations: { ...annotations } } : {}) };
}

/** svc.protectNamespace */
export function routesNamespace(v: WiringValues, releaseNamespace: string): string {
  return v.protect.namespace || releaseNamespace;
}

/** svc.authURL */
export function authUrl(v: WiringValues, releaseNamespace: string): string {
  return v.protect.authURL || `http://${AUTH_NAME}.${releaseNamespace}.svc.cluster.local:${v.auth.port}`;
}

/** svc.ingressNginxAnnotations: auth-url's path is /authz/forward-auth for Traefik's provider. Never auth-signin. */
export function ingressNginxAnnotations(v: WiringValues, releaseNamespace: string): Record<string, string> {
  const p = v.protect;
  const endpoint = p.ingressNginx.readBy === 'traefik' ? '/authz/forward-auth' : '/authz/auth-request';
  const a: Record<string, string> = {
    'nginx.ingress.kubernetes.io/auth-url': `${authUrl(v, releaseNamespace)}${endpoint}`,
    'nginx.ingress.kubernetes.io/auth-method': 'GET',
    'nginx.ingress.kubernetes.io/auth-keepalive': '32',
    'nginx.ingress.kubernetes.io/auth-keepalive-requests': '10000',
    'nginx.ingress.kubernetes.io/auth-keepalive-timeout': '60',
    'nginx.ingress.kubernetes.io/auth-proxy-set-headers': `${routesNamespace(v, releaseNamespace)}/svc-auth-request-headers`,
  };
  const age = Math.trunc(v.auth.cacheMaxAge);
  if (p.ingressNginx.authCache && age > 0) {
    a['nginx.ingress.kubernetes.io/auth-cache-key'] = '$request_method $request_uri $http_authorization $arg_token';
    a['nginx.ingress.kubernetes.io/auth-cache-duration'] = `200 202 ${age}s, 401 403 0s`;
  }
  a['nginx.ingress.kubernetes.io/auth-response-headers'] = RESPONSE_HEADERS.join(', ');
  return a;
}

/** svc.forwardAuth */
export function forwardAuth(v: WiringValues, releaseNamespace: string): Record<string, unknown> {
  return {
    address: `${authUrl(v, releaseNamespace)}/authz/forward-auth`,
    trustForwardHeader: false,
    authRequestHeaders: ['Authorization', ...CLIENT_HEADERS],
    authResponseHeaders: [...RESPONSE_HEADERS],
    maxResponseBodySize: 4096,
  };
}

/** svc.authBackendRef */
function authBackendRef(v: WiringValues, releaseNamespace: string): Record<string, string | number> {
  const other = routesNamespace(v, releaseNamespace) !== releaseNamespace;
  return { name: AUTH_NAME, ...(other ? { namespace: releaseNamespace } : {}), port: v.auth.port };
}

/** svc.extAuth */
export function extAuth(v: WiringValues, releaseNamespace: string): Record<string, unknown> {
  return {
    failOpen: false,
    http: { backendRefs: [authBackendRef(v, releaseNamespace)], path: '/authz/ext-authz', headersToBackend: RESPONSE_HEADERS.map((h) => h.toLowerCase()) },
    // x-forwarded-for: the client address Envoy appended, which svc-auth reads for network grants (spec.networks).
    headersToExtAuth: ['authorization', 'x-forwarded-for', ...CLIENT_HEADERS.map((h) => h.toLowerCase())],
  };
}

/** svc.externalAuthFilter */
function externalAuthFilter(v: WiringValues, releaseNamespace: string): Record<string, unknown> {
  return {
    type: 'ExternalAuth',
    externalAuth: {
      protocol: 'HTTP',
      backendRef: authBackendRef(v, releaseNamespace),
      http: { path: '/authz/ext-authz', allowedHeaders: [...CLIENT_HEADERS], allowedResponseHeaders: [...RESPONSE_HEADERS] },
    },
  };
}

/** svc.pagesPaths */
export function pagesPaths(v: WiringValues): string[] {
  return v.auth.signIn.enabled ? [...SIGN_IN_PATHS] : ['/authz/v1/protected'];
}

/** svc.pagesHosts: the protected hosts, then sign-in's other external URLs' hosts (without port), each once. */
export function pagesHosts(v: WiringValues): string[] {
  const hosts = v.protect.hosts.map((h) => h.host);
  if (v.auth.signIn.enabled) for (const url of v.auth.signIn.externalURLs) hosts.push(url.replace(/^[a-z]+:\/\//i, '').replace(/:[0-9]+$/, ''));
  return [...new Set(hosts)];
}

/** svc.hostRouteName */
export function hostRouteName(host: string): string {
  return `svc-data.${host}`;
}

function tlsOf(p: ProtectValues, hosts: readonly string[]): Record<string, unknown> {
  return p.tlsSecretName ? { tls: [{ hosts: [...hosts], secretName: p.tlsSecretName }] } : {};
}

function ingressNginxObjects(v: WiringValues, releaseNamespace: string): KubeObject[] {
  const p = v.protect;
  const ns = routesNamespace(v, releaseNamespace);
  const ingress: KubeObject = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: meta('svc-data', ns, { ...p.ingressNginx.annotations, ...ingressNginxAnnotations(v, releaseNamespace) }),
    spec: {
      ingressClassName: p.ingressNginx.ingressClassName,
      ...tlsOf(p, p.hosts.map((h) => h.host)),
      rules: p.hosts.map((h) => ({
        host: h.host,
        http: { paths: h.paths.map((x) => ({ path: x.path, pathType: 'Prefix', backend: { service: { name: x.service, port: { number: x.port } } } })) },
      })),
    },
  };
  const headers: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta('svc-auth-request-headers', ns),
    data: { 'X-Original-URI': '$request_uri', 'X-Forwarded-Uri': '', 'X-Forwarded-Method': '' },
  };
  return [ingress, headers];
}

function traefikObjects(v: WiringValues, releaseNamespace: string): KubeObject[] {
  const p = v.protect;
  const ns = routesNamespace(v, releaseNamespace);
  const middleware: KubeObject = { apiVersion: 'traefik.io/v1alpha1', kind: 'Middleware', metadata: meta('svc-auth', ns), spec: { forwardAuth: forwardAuth(v, releaseNamespace) } };
  const routes = p.hosts.flatMap((h) => h.paths.map((x) => ({
    kind: 'Rule',
    match: `Host(\`${h.host}\`) && PathPrefix(\`${x.path}\`)`,
    middlewares: [{ name: 'svc-auth' }],
    services: [{ name: x.service, port: x.port }],
  })));
  const route: KubeObject = {
    apiVersion: 'traefik.io/v1alpha1',
    kind: 'IngressRoute',
    metadata: meta('svc-data', ns, p.traefik.annotations),
    spec: { entryPoints: [...p.traefik.entryPoints], routes, ...(p.tlsSecretName ? { tls: { secretName: p.tlsSecretName } } : {}) },
  };
  return [middleware, route];
}

function gatewayObjects(v: WiringValues, releaseNamespace: string): KubeObject[] {
  const p = v.protect;
  const ns = routesNamespace(v, releaseNamespace);
  const envoyGateway = p.controller === 'envoy-gateway';
  const gw = envoyGateway ? p.envoyGateway : p.gatewayApi;
  const objects: KubeObject[] = p.hosts.map((h) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: meta(hostRouteName(h.host), ns, gw.annotations),
    spec: {
      parentRefs: gw.parentRefs.map((r) => ({ ...r })),
      hostnames: [h.host],
      rules: h.paths.map((x) => ({
        matches: [{ path: { type: 'PathPrefix', value: x.path } }],
        ...(envoyGateway ? {} : { filters: [externalAuthFilter(v, releaseNamespace)] }),
        backendRefs: [{ name: x.service, port: x.port }],
      })),
    },
  }));
  if (envoyGateway) {
    objects.push({
      apiVersion: 'gateway.envoyproxy.io/v1alpha1',
      kind: 'SecurityPolicy',
      metadata: meta('svc-auth', ns),
      spec: { targetRefs: p.hosts.map((h) => ({ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: hostRouteName(h.host) })), extAuth: extAuth(v, releaseNamespace) },
    });
  }
  if (ns !== releaseNamespace) objects.push(referenceGrant(envoyGateway, ns, releaseNamespace));
  return objects;
}

function referenceGrant(envoyGateway: boolean, ns: string, releaseNamespace: string): KubeObject {
  const from = envoyGateway ? { group: 'gateway.envoyproxy.io', kind: 'SecurityPolicy', namespace: ns } : { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: ns };
  return {
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: meta('svc-auth-wiring', releaseNamespace),
    spec: { from: [from], to: [{ group: '', kind: 'Service', name: AUTH_NAME }] },
  };
}

/** Traefik's rule for the pages: `Host(a) && (Path(x) || Path(y))`, parenthesised only where there are several. */
export function traefikPagesMatch(hosts: readonly string[], paths: readonly string[]): string {
  const any = (terms: string[]) => (terms.length > 1 ? `(${terms.join(' || ')})` : terms.join(''));
  return `${any(hosts.map((h) => `Host(\`${h}\`)`))} && ${any(paths.map((x) => `Path(\`${x}\`)`))}`;
}

/** wiring-pages-route.yaml: svc-auth's pages, each an exact path, on every host, in the release namespace. */
function pagesRoute(v: WiringValues, releaseNamespace: string): KubeObject {
  const p = v.protect;
  const paths = pagesPaths(v);
  const hosts = pagesHosts(v);
  const metadata = meta(`${AUTH_NAME}-pages`, releaseNamespace);
  const backend = { name: AUTH_NAME, port: v.auth.port };
  if (p.controller === 'ingress-nginx') {
    const rules = hosts.map((host) => ({ host, http: { paths: paths.map((path) => ({ path, pathType: 'Exact', backend: { service: { name: AUTH_NAME, port: { number: v.auth.port } } } })) } }));
    return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata, spec: { ingressClassName: p.ingressNginx.ingressClassName, ...tlsOf(p, hosts), rules } };
  }
  if (p.controller === 'traefik') {
    const spec = { entryPoints: [...p.traefik.entryPoints], routes: [{ kind: 'Rule', match: traefikPagesMatch(hosts, paths), services: [backend] }], ...(p.tlsSecretName ? { tls: { secretName: p.tlsSecretName } } : {}) };
    return { apiVersion: 'traefik.io/v1alpha1', kind: 'IngressRoute', metadata, spec };
  }
  const parentRefs = (p.controller === 'envoy-gateway' ? p.envoyGateway : p.gatewayApi).parentRefs.map((r) => ({ ...r }));
  const rules = [{ matches: paths.map((value) => ({ path: { type: 'Exact', value } })), backendRefs: [backend] }];
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata, spec: { parentRefs, hostnames: hosts, rules } };
}

/** Everything the chart renders from `protect` for its controller (none: nothing), with svc-auth in `releaseNamespace`. */
export function wiringObjects(v: WiringValues, releaseNamespace: string): KubeObject[] {
  switch (v.protect.controller) {
    case 'none':
      return [];
    case 'ingress-nginx':
      return [...ingressNginxObjects(v, releaseNamespace), pagesRoute(v, releaseNamespace)];
    case 'traefik':
      return [...traefikObjects(v, releaseNamespace), pagesRoute(v, releaseNamespace)];
    default:
      return [...gatewayObjects(v, releaseNamespace), pagesRoute(v, releaseNamespace)];
  }
}
