/**
 * The chart's values as `svc auth wiring` reads them: the chart's defaults, the values files merged over them as helm
 * merges them (maps key by key, anything else replaced, null removes a key), then checked as the chart checks them —
 * the schema's patterns (PATTERNS, kept equal to charts/svc/values.schema.json by wiring-objects.test.ts) and the
 * template's own checks (a host or a path twice). A value the chart would refuse is refused here, naming the value.
 */
import { CHART_DEFAULTS, CONTROLLERS, type Controller, type ControllerPods, type GatewayValues, type NetworkPolicyValues, type ProtectedHost, type WiringValues } from './wiring-objects.js';

/** The schema's patterns, by the value they check. */
export const PATTERNS = {
  namespace: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$',
  host: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?\\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  path: "^/([A-Za-z0-9._~!$&'()*+,;=:@-]+(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)*)?$",
  service: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  tlsSecretName: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$',
  authURL: '^(https?://[^/?#\\s%;+]+)?$',
  ingressClassName: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
  entryPoint: '^[A-Za-z0-9_-]+$',
} as const;

/** A value that does not match is refused in these words: a regular expression tells a person nothing. */
const WORDS: Record<string, string> = {
  [PATTERNS.namespace]: 'a namespace name: lower-case letters, digits and -, or empty',
  [PATTERNS.host]: 'a host name in lower case, such as data.example.org: no scheme, port or path',
  [PATTERNS.path]: 'a path prefix that starts with /, such as /data: no trailing /, query or fragment',
  [PATTERNS.service]: 'a Service name: lower-case letters, digits and -, starting and ending with a letter or digit',
  [PATTERNS.tlsSecretName]: 'a Secret name: lower-case letters, digits, - and dots, or empty',
  [PATTERNS.authURL]: 'http:// or https:// and a host with an optional port, nothing after it, or empty',
  [PATTERNS.ingressClassName]: 'an IngressClass name: lower-case letters, digits, - and dots',
  [PATTERNS.entryPoint]: 'a Traefik entry point name: letters, digits, _ and -',
  '.': 'a name, not empty',
  '^https?://[^/]+$': 'http:// or https:// and a host with an optional port, no path (https://data.example.org)',
};

type Plain = Record<string, unknown>;
const isPlain = (x: unknown): x is Plain => typeof x === 'object' && x !== null && !Array.isArray(x);

/** helm's coalescing of a values file over the values so far. */
export function mergeValues(base: unknown, overlay: unknown): unknown {
  if (!isPlain(base) || !isPlain(overlay)) return overlay === undefined ? base : overlay;
  const out: Plain = { ...base };
  for (const [k, v] of Object.entries(overlay)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

class Reader {
  constructor(readonly fail: (message: string) => Error) {}

  at(value: unknown, where: string): Plain {
    if (!isPlain(value)) throw this.fail(`${where}: must be a map`);
    return value;
  }

  string(value: unknown, where: string, pattern?: string, maxLength = 253): string {
    if (typeof value !== 'string') throw this.fail(`${where}: must be a string`);
    if (value.length > maxLength) throw this.fail(`${where}: ${JSON.stringify(value)} is longer than ${maxLength} characters`);
    if (pattern !== undefined && !new RegExp(pattern).test(value)) throw this.fail(`${where}: ${JSON.stringify(value)} is not ${WORDS[pattern] ?? `of the form ${pattern}`}`);
    return value;
  }

  oneOf<T extends string>(value: unknown, where: string, choices: readonly T[]): T {
    if (!choices.includes(value as T)) throw this.fail(`${where}: must be one of ${choices.join(', ')}`);
    return value as T;
  }

  boolean(value: unknown, where: string): boolean {
    if (typeof value !== 'boolean') throw this.fail(`${where}: must be true or false`);
    return value;
  }

  port(value: unknown, where: string): number {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw this.fail(`${where}: must be a port number (1-65535)`);
    return value;
  }

  list(value: unknown, where: string, min = 0): unknown[] {
    if (!Array.isArray(value)) throw this.fail(`${where}: must be a list`);
    if (value.length < min) throw this.fail(`${where}: needs at least ${min} entr${min === 1 ? 'y' : 'ies'}`);
    return value;
  }

  strings(value: unknown, where: string): Record<string, string> {
    const map = this.at(value, where);
    for (const [k, v] of Object.entries(map)) this.string(v, `${where}.${k}`, undefined, Number.MAX_SAFE_INTEGER);
    return map as Record<string, string>;
  }
}

function hostsOf(r: Reader, value: unknown, min: number): ProtectedHost[] {
  const seen = new Set<string>();
  return r.list(value, 'protect.hosts', min).map((entry, i) => {
    const e = r.at(entry, `protect.hosts[${i}]`);
    const host = r.string(e.host, `protect.hosts[${i}].host`, PATTERNS.host);
    if (seen.has(host)) throw r.fail(`protect.hosts: ${host} is listed twice: give each host once, with all its paths`);
    seen.add(host);
    const paths = new Set<string>();
    return {
      host,
      paths: r.list(e.paths, `protect.hosts[${i}].paths`, 1).map((p, j) => {
        const at = `protect.hosts[${i}].paths[${j}]`;
        const x = r.at(p, at);
        const path = r.string(x.path, `${at}.path`, PATTERNS.path, 1024);
        if (paths.has(path)) throw r.fail(`protect.hosts: ${host} has the path ${path} twice`);
        paths.add(path);
        return { path, service: r.string(x.service, `${at}.service`, PATTERNS.service, 63), port: r.port(x.port, `${at}.port`) };
      }),
    };
  });
}

function gatewayOf(r: Reader, value: unknown, where: string, required: boolean): GatewayValues {
  const g = r.at(value, where);
  const parentRefs = r.list(g.parentRefs, `${where}.parentRefs`, required ? 1 : 0).map((ref, i) => {
    const x = r.at(ref, `${where}.parentRefs[${i}]`);
    r.string(x.name, `${where}.parentRefs[${i}].name`, '.');
    return x as Record<string, string | number>;
  });
  return { parentRefs, annotations: r.strings(g.annotations, `${where}.annotations`) };
}

function ingressNginxOf(r: Reader, value: unknown): WiringValues['protect']['ingressNginx'] {
  const n = r.at(value, 'protect.ingressNginx');
  const annotations = r.strings(n.annotations, 'protect.ingressNginx.annotations');
  const auth = Object.keys(annotations).find((k) => k.startsWith('nginx.ingress.kubernetes.io/auth-'));
  if (auth !== undefined) throw r.fail(`protect.ingressNginx.annotations: ${auth} is set by the chart (never add auth-signin: it sends every 401 to a sign-in page)`);
  return {
    ingressClassName: r.string(n.ingressClassName, 'protect.ingressNginx.ingressClassName', PATTERNS.ingressClassName),
    readBy: r.oneOf(n.readBy, 'protect.ingressNginx.readBy', ['ingress-nginx', 'traefik'] as const),
    authCache: r.boolean(n.authCache, 'protect.ingressNginx.authCache'),
    annotations,
  };
}

function protectOf(r: Reader, value: unknown): WiringValues['protect'] {
  const p = r.at(value, 'protect');
  const controller: Controller = r.oneOf(p.controller, 'protect.controller', CONTROLLERS);
  const t = r.at(p.traefik, 'protect.traefik');
  return {
    controller,
    namespace: r.string(p.namespace, 'protect.namespace', PATTERNS.namespace, 63),
    hosts: hostsOf(r, p.hosts, controller === 'none' ? 0 : 1),
    tlsSecretName: r.string(p.tlsSecretName, 'protect.tlsSecretName', PATTERNS.tlsSecretName),
    authURL: r.string(p.authURL, 'protect.authURL', PATTERNS.authURL, Number.MAX_SAFE_INTEGER),
    ingressNginx: ingressNginxOf(r, p.ingressNginx),
    traefik: {
      entryPoints: r.list(t.entryPoints, 'protect.traefik.entryPoints', 1).map((e, i) => r.string(e, `protect.traefik.entryPoints[${i}]`, PATTERNS.entryPoint)),
      annotations: r.strings(t.annotations, 'protect.traefik.annotations'),
    },
    envoyGateway: gatewayOf(r, p.envoyGateway, 'protect.envoyGateway', controller === 'envoy-gateway'),
    gatewayApi: gatewayOf(r, p.gatewayApi, 'protect.gatewayApi', controller === 'gateway-api'),
  };
}

function controllerPodsOf(r: Reader, value: unknown, where: string): ControllerPods {
  const c = r.at(value, where);
  return { namespace: r.string(c.namespace, `${where}.namespace`, PATTERNS.namespace, 63), podLabels: r.strings(c.podLabels, `${where}.podLabels`) };
}

function networkPolicyOf(r: Reader, value: unknown): NetworkPolicyValues {
  const n = r.at(value, 'networkPolicy');
  const pods = r.at(n.controllerPods, 'networkPolicy.controllerPods');
  const controllers = CONTROLLERS.filter((c): c is Exclude<Controller, 'none'> => c !== 'none');
  return {
    enabled: r.boolean(n.enabled, 'networkPolicy.enabled'),
    ingressNamespaceSelector: r.strings(n.ingressNamespaceSelector, 'networkPolicy.ingressNamespaceSelector'),
    proxyNamespaces: r.list(n.proxyNamespaces, 'networkPolicy.proxyNamespaces').map((x, i) => r.string(x, `networkPolicy.proxyNamespaces[${i}]`, PATTERNS.namespace, 63)),
    ingressPodSelector: r.strings(n.ingressPodSelector, 'networkPolicy.ingressPodSelector'),
    controllerPods: Object.fromEntries(controllers.map((c) => [c, controllerPodsOf(r, pods[c], `networkPolicy.controllerPods.${c}`)])) as NetworkPolicyValues['controllerPods'],
  };
}

/** The wiring's values: `files` (parsed values files, in order) merged over the chart's defaults, then checked. */
export function wiringValues(files: readonly unknown[], fail: (message: string) => Error): WiringValues {
  const merged = files.reduce<unknown>((acc, f) => mergeValues(acc, f ?? {}), CHART_DEFAULTS);
  const r = new Reader(fail);
  const all = r.at(merged, 'values');
  const auth = r.at(all.auth, 'auth');
  const signIn = r.at(auth.signIn, 'auth.signIn');
  const cacheMaxAge = auth.cacheMaxAge;
  if (typeof cacheMaxAge !== 'number' || !Number.isInteger(cacheMaxAge) || cacheMaxAge < 0) throw fail('auth.cacheMaxAge: must be a whole number of seconds');
  return {
    protect: protectOf(r, all.protect),
    auth: {
      port: r.port(auth.port, 'auth.port'),
      cacheMaxAge,
      signIn: {
        enabled: r.boolean(signIn.enabled, 'auth.signIn.enabled'),
        externalURLs: r.list(signIn.externalURLs, 'auth.signIn.externalURLs').map((u, i) => r.string(u, `auth.signIn.externalURLs[${i}]`, '^https?://[^/]+$')),
      },
    },
    networkPolicy: networkPolicyOf(r, all.networkPolicy),
  };
}
