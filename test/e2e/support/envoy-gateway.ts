// Envoy Gateway (the controller, built from its Go module) in front of svc-auth, in its standalone mode: the Custom
// provider reads the test's GatewayClass/Gateway "eg" and deploy/gateway-api/envoy-gateway-securitypolicy.yaml from
// a directory (resource type File; it validates them against its CRDs, CEL rules included, as the API server would)
// and runs Envoy as a host process (infrastructure type Host), configured over xDS like a pod would be.
//
// Not the Kubernetes resource provider against a private kube-apiserver: in v1.9.1 that mode (Custom provider,
// resource type Kubernetes, Host infrastructure) loads the xDS server's and the pod topology webhook's certificates
// from the fixed path /certs, as in a pod, and exits at start on a machine without them.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ensureEnvoyGateway } from '../../controlplane/assets.js';
import { ENVOY, ensureEnvoy, replaceExact, type Backends } from './envoy.js';
import { freePorts, httpGet, waitForPort } from '../../support/ports.js';
import { Supervised } from '../../support/process.js';
import { waitUntil } from '../../support/wait.js';
import { REPO_ROOT } from './svc-auth.js';

export const ENVOY_GATEWAY_EXAMPLE = join(REPO_ROOT, 'deploy', 'gateway-api', 'envoy-gateway-securitypolicy.yaml');

export interface EnvoyGatewayOptions {
  /** How long Envoy Gateway and Envoy together may take to serve the route with the policy on; default 60 s. */
  readonly timeoutMs?: number;
  /** Envoy Gateway's log level (its components' default); default info. */
  readonly logLevel?: 'debug' | 'info' | 'error';
  /** Progress messages; default stderr. */
  readonly log?: (message: string) => void;
  /**
   * The objects to serve instead of the example's (the chart's, say), Services already turned into Backends
   * (backendRefsToBackends); they come with envoyGatewayTestObjects(b) all the same.
   */
  readonly resources?: string;
  /**
   * What must be in force before the start resolves; default: ext_authz on /data and /oapi of data.example.org.
   * `listener`: only that Envoy listens (a route Envoy Gateway refuses has no filter to wait for).
   */
  readonly ready?: 'ext-authz' | 'listener';
  /** Envoy's access log (one JSON line per request on Envoy Gateway's output); default on. Off for benches. */
  readonly accessLog?: boolean;
}

export interface RunningEnvoyGateway {
  /** Where Envoy listens for the Gateway's HTTP listener (b.listen). */
  readonly port: number;
  /** Stops Envoy Gateway and with it Envoy; leaves no process behind. */
  stop(): Promise<void>;
  /** The last lines of Envoy Gateway's output (Envoy's included), for failure messages. */
  tail(lines?: number): string;
  /** Envoy Gateway's pid and its Envoys' (a bench pins them to a core). */
  pids(): number[];
}

function backendRef(name: string, port: number): string {
  return `        - group: gateway.envoyproxy.io\n          kind: Backend\n          name: ${name}\n          port: ${port}`;
}

/**
 * deploy/gateway-api/envoy-gateway-securitypolicy.yaml with only the three backendRefs changed: the Services
 * waf:80, oapi:80 and svc-auth:8080 become Envoy Gateway Backends of the same names (see envoyGatewayTestObjects)
 * on the test's ports. A Service reaches its pods through EndpointSlices, which the file provider does not read and
 * Kubernetes would refuse with loopback addresses; a Backend names 127.0.0.1 and a port itself, and Envoy Gateway
 * accepts loopback Backends with the Host infrastructure. Names, namespaces, hostnames, paths and the whole extAuth
 * block stay as written.
 */
export function envoyGatewayPolicy(b: Backends): string {
  const f = 'deploy/gateway-api/envoy-gateway-securitypolicy.yaml';
  let text = readFileSync(ENVOY_GATEWAY_EXAMPLE, 'utf8');
  text = replaceExact(text, '        - name: waf\n          port: 80', backendRef('waf', b.waf), f);
  text = replaceExact(text, '        - name: oapi\n          port: 80', backendRef('oapi', b.oapi), f);
  text = replaceExact(text, '        - name: svc-auth\n          port: 8080', backendRef('svc-auth', b.auth), f);
  return text;
}

/**
 * The chart's objects for the file provider: every backendRef to a Service (the HTTPRoutes' and the SecurityPolicy's)
 * becomes a reference to the Envoy Gateway Backend of the same name, for the reason envoyGatewayPolicy gives. Nothing
 * else changes.
 */
export function backendRefsToBackends(objects: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const backend = (ref: Record<string, unknown>) => ({ group: 'gateway.envoyproxy.io', kind: 'Backend', ...ref });
  return objects.map((o) => {
    const copy = JSON.parse(JSON.stringify(o)) as { kind: string; spec: { rules?: { backendRefs?: Record<string, unknown>[] }[]; extAuth?: { http: { backendRefs: Record<string, unknown>[] } } } };
    for (const rule of copy.spec.rules ?? []) rule.backendRefs = rule.backendRefs?.map(backend);
    if (copy.spec.extAuth) copy.spec.extAuth.http.backendRefs = copy.spec.extAuth.http.backendRefs.map(backend);
    return copy;
  });
}

/** Envoy Gateway Backends to 127.0.0.1, one per Service name, in `namespace`. */
export function loopbackBackends(namespace: string, ports: Readonly<Record<string, number>>): string {
  return Object.entries(ports).map(([name, port]) => `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  endpoints:
    - ip: { address: 127.0.0.1, port: ${port} }
`).join('---\n');
}

/**
 * What a cluster would have besides the example: the GatewayClass and Gateway "eg" the example
 * attaches to (listener on b.listen, routes from every namespace since the HTTPRoute lives in "svc"), an
 * EnvoyProxy that pins the host Envoy to the PyPI build's version, and the Backends standing in for the Services.
 */
export function envoyGatewayTestObjects(b: Backends, accessLog = true): string {
  const backend = (name: string, port: number) => `---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: { name: ${name}, namespace: svc }
spec:
  endpoints:
    - ip: { address: 127.0.0.1, port: ${port} }
`;
  return `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: { name: eg, namespace: envoy-gateway-system }
spec:
  provider:
    type: Host
    host: { envoyVersion: "${ENVOY.version}" }
  concurrency: 1${accessLog ? '' : '\n  telemetry: { accessLog: { disable: true } }'}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: eg }
spec:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
  parametersRef: { group: gateway.envoyproxy.io, kind: EnvoyProxy, name: eg, namespace: envoy-gateway-system }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: eg, namespace: envoy-gateway-system }
spec:
  gatewayClassName: eg
  listeners:
    - name: http
      protocol: HTTP
      port: ${b.listen}
      allowedRoutes: { namespaces: { from: All } }
${backend('waf', b.waf)}${backend('oapi', b.oapi)}${backend('svc-auth', b.auth)}`;
}

/** Envoy Gateway's own configuration: resources from `resources`, Envoy on the host, all its state under `dir`. */
function envoyGatewayConfig(dir: string, resources: string, adminPort: number, logLevel: string): string {
  return `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
provider:
  type: Custom
  custom:
    resource:
      type: File
      file:
        paths: [${resources}]
    infrastructure:
      type: Host
      host:
        configHome: ${join(dir, 'config')}
        dataHome: ${join(dir, 'data')}
        stateHome: ${join(dir, 'state')}
        runtimeDir: ${join(dir, 'run')}
extensionApis:
  enableBackend: true
admin:
  address: { host: 127.0.0.1, port: ${adminPort} }
telemetry:
  metrics:
    prometheus: { disable: true }
logging:
  level: { default: ${logLevel} }
`;
}

interface RouteDump { match?: { prefix?: string; path_separated_prefix?: string }; typed_per_filter_config?: Record<string, unknown> }

/**
 * Whether Envoy's own configuration has both routes with the ext_authz filter on. An open listener says nothing about
 * the policy: Envoy Gateway translates and pushes whatever it has, and a route without the filter passes unchecked.
 */
async function extAuthzInForce(adminPort: number): Promise<boolean> {
  const { status, body } = await httpGet(adminPort, '/config_dump?resource=dynamic_route_configs');
  if (status !== 200) return false;
  const dump = JSON.parse(body) as { configs?: { route_config?: { virtual_hosts?: { domains?: string[]; routes?: RouteDump[] }[] } }[] };
  const routes = (dump.configs ?? []).flatMap((c) => c.route_config?.virtual_hosts ?? [])
    .filter((vh) => vh.domains?.includes('data.example.org')).flatMap((vh) => vh.routes ?? []);
  return ['/data', '/oapi'].every((prefix) => routes.some((r) => (r.match?.path_separated_prefix ?? r.match?.prefix) === prefix
    && Object.keys(r.typed_per_filter_config ?? {}).some((k) => k.startsWith('envoy.filters.http.ext_authz'))));
}

/** Envoy's admin port, which func-e has Envoy write to admin-address.txt in its run directory (Envoy binds port 0). */
function envoyAdminPort(dirs: readonly string[]): number | undefined {
  const stack = [...dirs];
  while (stack.length > 0) {
    const d = stack.pop() ?? '';
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.isDirectory()) stack.push(join(d, e.name));
      else if (e.name === 'admin-address.txt') {
        const m = /:(\d+)\s*$/.exec(readFileSync(join(d, e.name), 'utf8'));
        if (m) return Number(m[1]);
      }
    }
  }
  return undefined;
}

/** Pids of Envoy processes started from under `dir` (func-e runs the envoy of its data directory). */
function envoysUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (/(^|\/)envoy\0/.test(cmdline) && cmdline.includes(dir)) pids.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Writes the test's objects and the example's HTTPRoute and SecurityPolicy into `dir`, starts Envoy Gateway on them
 * and returns once Envoy serves both routes with ext_authz on them. Some ports are fixed in this version: Envoy
 * Gateway binds :18000 (xDS), :18002 (Wasm cache) and :8081 (health), and Envoy :19003 (readiness), all on every
 * interface; so one of these runs on a machine at a time.
 */
export async function startEnvoyGateway(dir: string, b: Backends, opts: EnvoyGatewayOptions = {}): Promise<RunningEnvoyGateway> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[envoy-gateway] ${m}\n`));
  dir = resolve(dir);
  const binary = await ensureEnvoyGateway();
  const envoy = await ensureEnvoy();
  // Builds may take minutes on first use; the deadline is for starting only.
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);

  // func-e runs $dataHome/envoy-versions/<version>/bin/envoy and downloads it only when that is missing.
  const envoyLink = join(dir, 'data', 'envoy-versions', ENVOY.version, 'bin', 'envoy');
  mkdirSync(join(envoyLink, '..'), { recursive: true });
  symlinkSync(envoy, envoyLink);

  const resources = join(dir, 'resources');
  mkdirSync(resources, { recursive: true });
  writeFileSync(join(resources, 'test-objects.yaml'), envoyGatewayTestObjects(b, opts.accessLog ?? true));
  writeFileSync(join(resources, 'envoy-gateway-securitypolicy.yaml'), opts.resources ?? envoyGatewayPolicy(b));

  // The xDS server's and Envoy's certificates (one CA), where the Host infrastructure looks for them.
  const certgen = spawnSync(binary, ['certgen', '--local', '--config-home', join(dir, 'config')], { encoding: 'utf8', timeout: 60_000 });
  if (certgen.status !== 0) throw new Error(`envoy-gateway certgen --local failed (${certgen.error?.message ?? `exit ${certgen.status}`}):\n${certgen.stdout}${certgen.stderr}`);

  const [adminPort] = (await freePorts(1)) as [number];
  const configFile = join(dir, 'envoy-gateway.yaml');
  writeFileSync(configFile, envoyGatewayConfig(dir, resources, adminPort, opts.logLevel ?? 'info'));
  const proc = await Supervised.start('envoy-gateway', binary, ['server', '--config-path', configFile], { ports: [adminPort], timeoutMs: Math.max(1000, deadline - Date.now()) });
  const stop = async (): Promise<void> => {
    await proc.stop();
    // Envoy dies with Envoy Gateway (func-e sets Pdeathsig); this catches one that did not.
    for (const pid of envoysUnder(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
  };
  try {
    await waitForPort(b.listen, Math.max(1000, deadline - Date.now()), proc.exitReason);
    // The listener comes up with the routes; the policy's filter config may follow in a later xDS push, and until
    // then the routes would pass unchecked.
    await waitUntil(async () => {
      const port = envoyAdminPort([join(dir, 'state'), join(dir, 'run')]);
      return port !== undefined && (opts.ready === 'listener' || await extAuthzInForce(port));
    }, {
      what: 'ext_authz on the routes of data.example.org',
      timeoutMs: Math.max(1000, deadline - Date.now()),
      intervalMs: 250,
      abortIf: () => {
        const exited = proc.exitReason();
        if (exited) return `${exited}:\n${proc.tail(60)}`;
        // A file that does not validate is logged and skipped, which would otherwise only show as a timeout.
        const refused = proc.tail(400).split('\n').find((l) => l.includes('failed to load resources'));
        return refused === undefined ? undefined : `Envoy Gateway refused its resources:\n${refused}`;
      },
      describe: () => proc.tail(60),
    });
    log(`Envoy Gateway serves data.example.org on :${b.listen} (ext_authz to 127.0.0.1:${b.auth})`);
    return { port: b.listen, stop, tail: (lines?: number) => proc.tail(lines), pids: () => [...(proc.pid === undefined ? [] : [proc.pid]), ...envoysUnder(dir)] };
  } catch (e) {
    await stop();
    throw e;
  }
}
