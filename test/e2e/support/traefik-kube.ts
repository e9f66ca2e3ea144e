// Traefik's Kubernetes providers run as host processes against a real kube-apiserver (test/controlplane), reading
// the deploy/ manifests the way a user applies them:
//   - kubernetesIngressNGINX: deploy/ingress-nginx/ingress.yaml (+ auth-request-headers.yaml, pages-route.yaml), the provider that
//     lets an ingress-nginx user move to Traefik without rewriting Ingresses;
//   - kubernetesCRD: deploy/traefik/middleware.yaml (the ForwardAuth Middleware and the IngressRoutes).
// Backends are Services of type ExternalName pointing at 127.0.0.1: nothing runs pods here, and EndpointSlices
// cannot hold loopback addresses. Traefik's CRDs and RBAC come from its Go module (the version the binary is built
// from), never from a copy in this repository, so they cannot drift from the binary.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { ensureTraefik, TRAEFIK } from '../../controlplane/assets.js';
import type { ControlPlane } from '../../controlplane/controlplane.js';
import { kubectl } from '../../stack/kubectl.js';
import { replaceExact } from './envoy.js';
import { rawRequest } from './net.js';
import { waitUntil } from '../../support/wait.js';
import { Supervised } from '../../support/process.js';
import { REPO_ROOT } from './svc-auth.js';

export const INGRESS_NGINX_EXAMPLE = join(REPO_ROOT, 'deploy', 'ingress-nginx', 'ingress.yaml');
export const INGRESS_NGINX_HEADERS = join(REPO_ROOT, 'deploy', 'ingress-nginx', 'auth-request-headers.yaml');
export const TRAEFIK_CRD_EXAMPLE = join(REPO_ROOT, 'deploy', 'traefik', 'middleware.yaml');
export const INGRESS_NGINX_SIGN_IN = join(REPO_ROOT, 'deploy', 'ingress-nginx', 'pages-route.yaml');

/** The Host the examples route on; the suites keep it (replacing it with itself proves nothing). */
export const KUBE_HOST = 'data.example.org';

export interface KubeBackends {
  /** Traefik's entry point port on 127.0.0.1. */
  readonly listen: number;
  /** svc-auth's port. */
  readonly auth: number;
  /** The WAF (/data) and OGC API (/oapi) backends' ports. */
  readonly waf: number;
  readonly oapi: number;
}

export interface TraefikKubeOptions {
  /** Namespace the example's objects go to (created); Traefik watches only it, so runs in one cluster stay apart. */
  readonly namespace?: string;
  readonly host?: string;
  /** A path that routes once Traefik has the configuration (anything but 404 counts); default `/oapi/`. */
  readonly probePath?: string;
  readonly routeTimeoutMs?: number;
  /**
   * ingress-nginx provider only: leave auth-url at `/authz/auth-request`, as a user who moves without reading
   * deploy/README.md would (svc-auth must refuse everything then, never let a client steer it).
   */
  readonly keepAuthRequestPath?: boolean;
}

export interface TraefikKube {
  readonly port: number;
  readonly namespace: string;
  /** The manifests applied (for failure messages and the docs). */
  readonly applied: string;
  stop(): Promise<void>;
  tail(lines?: number): string;
}

/** Where `go mod download` put Traefik's module (its source, CRDs and RBAC YAML). */
export function traefikModuleDir(): string {
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly', GOWORK: 'off' };
  const r = spawnSync('go', ['mod', 'download', '-json', `${TRAEFIK.module}@${TRAEFIK.version}`], { encoding: 'utf8', env, cwd: REPO_ROOT });
  const info = r.status === 0 ? (JSON.parse(r.stdout) as { Dir?: string; Sum?: string }) : {};
  // The same pinned sum ensureTraefik builds from: the CRDs and RBAC belong to the binary that runs.
  if (!info.Dir || info.Sum !== TRAEFIK.sum) throw new Error(`go mod download ${TRAEFIK.module}@${TRAEFIK.version} failed or its sum is not the pinned one:\n${r.stderr}`);
  return info.Dir;
}

function moduleFile(rel: string): string {
  const file = join(traefikModuleDir(), rel);
  if (!existsSync(file)) throw new Error(`${TRAEFIK.module}@${TRAEFIK.version} has no ${rel}: update the path to where this version keeps it`);
  return readFileSync(file, 'utf8');
}

const DYNAMIC_CONFIGURATION = 'docs/content/reference/dynamic-configuration';

/** ExternalName Services to 127.0.0.1, one port each: the providers resolve them to 127.0.0.1:<port>. */
export function externalNameServices(namespace: string, ports: Readonly<Record<string, number>>): string {
  return Object.entries(ports).map(([name, port]) => dump({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'http', port, protocol: 'TCP' }] },
  })).join('---\n');
}

/**
 * deploy/ingress-nginx/ingress.yaml as a migrating user applies it to Traefik: host, namespace, backends (their
 * port numbers become the loopback ports of the ExternalName Services) and svc-auth's address replaced, plus the
 * one documented change — `/authz/auth-request` becomes `/authz/forward-auth`, because Traefik's ForwardAuth sends
 * X-Forwarded-Method/-Uri, which only svc-auth's forward-auth endpoint reads.
 */
export function ingressNginxManifest(b: KubeBackends, namespace: string, host = KUBE_HOST, keepAuthRequestPath = false): string {
  const f = 'deploy/ingress-nginx/ingress.yaml';
  let text = readFileSync(INGRESS_NGINX_EXAMPLE, 'utf8');
  const path = keepAuthRequestPath ? 'auth-request' : 'forward-auth';
  text = replaceExact(text, '"http://svc-auth.svc.svc.cluster.local:8080/authz/auth-request"', `"http://127.0.0.1:${b.auth}/authz/${path}"`, f);
  text = replaceExact(text, '  namespace: svc\n', `  namespace: ${namespace}\n`, f);
  text = replaceExact(text, '"svc/svc-auth-request-headers"', `"${namespace}/svc-auth-request-headers"`, f);
  text = replaceExact(text, `- host: ${KUBE_HOST}\n`, `- host: ${host}\n`, f);
  for (const [name, port] of [['waf', b.waf], ['oapi', b.oapi]] as const) {
    text = replaceExact(text, `name: ${name}\n                port:\n                  number: 80\n`, `name: ${name}\n                port:\n                  number: ${port}\n`, f);
  }
  return text;
}

/** deploy/ingress-nginx/auth-request-headers.yaml in the namespace (the provider ignores it; applied as a user would). */
export function ingressNginxHeadersManifest(namespace: string): string {
  return replaceExact(readFileSync(INGRESS_NGINX_HEADERS, 'utf8'), '  namespace: svc\n', `  namespace: ${namespace}\n`, 'deploy/ingress-nginx/auth-request-headers.yaml');
}

/** deploy/ingress-nginx/pages-route.yaml (the browser route to svc-auth) with namespace, host and svc-auth's port replaced. */
export function ingressNginxSignInManifest(b: KubeBackends, namespace: string, host = KUBE_HOST): string {
  const f = 'deploy/ingress-nginx/pages-route.yaml';
  let text = readFileSync(INGRESS_NGINX_SIGN_IN, 'utf8');
  text = replaceExact(text, '  namespace: svc\n', `  namespace: ${namespace}\n`, f);
  text = replaceExact(text, `- host: ${KUBE_HOST}\n`, `- host: ${host}\n`, f);
  return replaceExact(text, 'name: svc-auth\n                port:\n                  number: 8080\n', `name: svc-auth\n                port:\n                  number: ${b.auth}\n`, f);
}

/** deploy/traefik/middleware.yaml with namespace, host, svc-auth's address, the entry point and the backends' ports replaced. */
export function crdManifest(b: KubeBackends, namespace: string, entryPoint: string, host = KUBE_HOST): string {
  const f = 'deploy/traefik/middleware.yaml';
  let text = readFileSync(TRAEFIK_CRD_EXAMPLE, 'utf8');
  text = replaceExact(text, 'address: http://svc-auth.svc.svc.cluster.local:8080/authz/forward-auth', `address: http://127.0.0.1:${b.auth}/authz/forward-auth`, f);
  text = replaceExact(text, '  namespace: svc\n', `  namespace: ${namespace}\n`, f);
  text = replaceExact(text, '    - websecure\n', `    - ${entryPoint}\n`, f);
  text = replaceExact(text, `Host(\`${KUBE_HOST}\`)`, `Host(\`${host}\`)`, f);
  text = replaceExact(text, '        - name: waf\n          port: 80\n', `        - name: waf\n          port: ${b.waf}\n`, f);
  text = replaceExact(text, '        - name: oapi\n          port: 80\n', `        - name: oapi\n          port: ${b.oapi}\n`, f);
  // The browser sign-in IngressRoute's backend: svc-auth itself.
  text = replaceExact(text, '        - name: svc-auth\n          port: 8080\n', `        - name: svc-auth\n          port: ${b.auth}\n`, f);
  return text;
}

function run(cp: ControlPlane, args: readonly string[], input?: string): string {
  const r = kubectl(cp.kubeconfigPath, args, input);
  if (r.status !== 0) throw new Error(`kubectl ${args.slice(0, 3).join(' ')} failed (${r.status}):\n${r.stderr}`);
  return r.stdout;
}

/** Server-side apply: Traefik's CRD file is larger than the last-applied annotation a client-side apply keeps. */
function apply(cp: ControlPlane, yaml: string): void {
  run(cp, ['apply', '--server-side', '--force-conflicts', '--field-manager=svc-e2e-traefik', '--validate=strict', '-f', '-'], yaml);
}

/**
 * Applies Traefik's RBAC YAML for the provider as shipped (a ClusterRole bound to a ServiceAccount in `default`),
 * creates that ServiceAccount and returns a token for it: Traefik then runs with exactly the rights its docs ask
 * for, so a missing one shows here as it would in a cluster.
 */
function providerToken(cp: ControlPlane, rbacFile: string): string {
  const rbac = moduleFile(`${DYNAMIC_CONFIGURATION}/${rbacFile}`);
  const subject = /kind: ServiceAccount\n\s+name: (\S+)\n\s+namespace: (\S+)/.exec(rbac);
  if (!subject) throw new Error(`${rbacFile} binds no ServiceAccount: update how the suite finds Traefik's identity`);
  const [, name, ns] = subject as unknown as [string, string, string];
  apply(cp, `${rbac}\n---\n${dump({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } })}`);
  return run(cp, ['create', 'token', name, '-n', ns, '--duration=12h']).trim();
}

function namespaceManifest(namespace: string): string {
  return dump({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
}

/** Writes Traefik's static configuration (0600: it names the token file) and starts it. */
async function startTraefikProcess(dir: string, name: string, listen: number, provider: Record<string, unknown>): Promise<Supervised> {
  const binary = await ensureTraefik();
  mkdirSync(dir, { recursive: true });
  const staticFile = join(dir, `${name}.yaml`);
  writeFileSync(staticFile, dump({
    // No forwardedHeaders.trustedIPs and no insecure mode, as in deploy/traefik/traefik.yaml: the entry point
    // drops the X-Forwarded-* headers a client sends before ForwardAuth sets its own.
    entryPoints: { web: { address: `127.0.0.1:${listen}` } },
    providers: provider,
    log: { level: 'INFO' },
  }), { mode: 0o600 });
  return Supervised.start(name, binary, [`--configFile=${staticFile}`], { ports: [listen] });
}

/** Waits until Traefik has loaded the route: it answers 404 until its provider has built the configuration. */
async function waitRouted(p: Supervised, port: number, host: string, path: string, timeoutMs: number): Promise<void> {
  let last = 0;
  try {
    await waitUntil(async () => {
      last = (await rawRequest(port, { target: path, host }).catch(() => ({ status: 0 }))).status;
      return last !== 0 && last !== 404;
    }, { what: `${p.name} to route ${host}${path}`, timeoutMs, intervalMs: 250, abortIf: p.exitReason, describe: () => `status ${last}` });
  } catch (e) {
    throw new Error(`${(e as Error).message}:\n${p.tail()}`, { cause: e });
  }
}

function tokenFile(dir: string, name: string, token: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.token`);
  // Traefik's `token` takes a value or a file path; a file keeps the token out of argv and the config.
  writeFileSync(file, token, { mode: 0o600 });
  return file;
}

function caFile(cp: ControlPlane): string {
  if (!cp.ca) throw new Error('the Traefik providers need the control plane CA file (not available for USE_EXISTING_CLUSTER)');
  return cp.ca.cert;
}

/** The started Traefik once it routes the example's host (stopped if it never does). */
async function routed(p: Supervised, port: number, namespace: string, applied: string, host: string, opts: TraefikKubeOptions): Promise<TraefikKube> {
  try {
    await waitRouted(p, port, host, opts.probePath ?? '/oapi/', opts.routeTimeoutMs ?? 60_000);
  } catch (e) {
    await p.stop();
    throw e;
  }
  return { port, namespace, applied, stop: () => p.stop(), tail: (lines?: number) => p.tail(lines) };
}

export type TraefikProvider = 'kubernetesIngressNGINX' | 'kubernetesCRD';

/**
 * Traefik with one Kubernetes provider, watching `namespace` only, in front of what `manifests` (applied to the
 * kube-apiserver first, with the namespace) describe; resolves once Traefik routes `host` `probePath`. Brings what the
 * provider needs: the IngressClass `nginx` (controller k8s.io/ingress-nginx, the one kubernetesIngressNGINX selects),
 * or Traefik's CRDs from its module; and the provider's RBAC as Traefik ships it. The CRD provider gets
 * `allowExternalNameServices: true`: without it it refuses every ExternalName Service ("externalName services not
 * allowed", pkg/provider/kubernetes/crd/kubernetes_http.go loadServers), unlike the ingress-nginx provider, which
 * allows them unless `disableSvcExternalName` is set.
 */
export async function startTraefikProvider(dir: string, cp: ControlPlane, provider: TraefikProvider, listen: number, namespace: string, manifests: string, opts: TraefikKubeOptions & { name?: string } = {}): Promise<TraefikKube> {
  const host = opts.host ?? KUBE_HOST;
  let token: string;
  if (provider === 'kubernetesCRD') {
    apply(cp, moduleFile(`${DYNAMIC_CONFIGURATION}/kubernetes-crd-definition-v1.yml`));
    run(cp, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/middlewares.traefik.io', 'crd/ingressroutes.traefik.io']);
    token = providerToken(cp, 'kubernetes-crd-rbac.yml');
  } else {
    token = providerToken(cp, 'kubernetes-ingress-nginx-rbac.yml');
    apply(cp, dump({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }));
  }
  apply(cp, namespaceManifest(namespace));
  apply(cp, manifests);
  const name = opts.name ?? (provider === 'kubernetesCRD' ? 'traefik-crd' : 'traefik-ingress-nginx');
  const common = { endpoint: cp.server, token: tokenFile(dir, `${name}-${namespace}`, token), certAuthFilePath: caFile(cp) };
  const p = await startTraefikProcess(dir, name, listen, provider === 'kubernetesCRD'
    ? { kubernetesCRD: { ...common, namespaces: [namespace], allowExternalNameServices: true } }
    : { kubernetesIngressNGINX: { ...common, watchNamespace: namespace } });
  return routed(p, listen, namespace, manifests, host, opts);
}

/**
 * Traefik's kubernetesIngressNGINX provider in front of svc-auth, from deploy/ingress-nginx/ingress.yaml: the
 * ExternalName Services `waf`, `oapi` and `svc-auth`, auth-request-headers.yaml, the Ingress and the pages route's
 * Ingress; resolves once Traefik routes.
 */
export async function startTraefikIngressNginx(dir: string, cp: ControlPlane, b: KubeBackends, opts: TraefikKubeOptions = {}): Promise<TraefikKube> {
  const namespace = opts.namespace ?? 'svc-traefik-ingress-nginx';
  const host = opts.host ?? KUBE_HOST;
  const applied = [externalNameServices(namespace, { waf: b.waf, oapi: b.oapi, 'svc-auth': b.auth }), ingressNginxHeadersManifest(namespace),
    ingressNginxManifest(b, namespace, host, opts.keepAuthRequestPath), ingressNginxSignInManifest(b, namespace, host)].join('---\n');
  return startTraefikProvider(dir, cp, 'kubernetesIngressNGINX', b.listen, namespace, applied, { ...opts, name: `traefik-ingress-nginx${opts.keepAuthRequestPath ? '-unchanged' : ''}` });
}

/** Traefik's kubernetesCRD provider in front of svc-auth, from deploy/traefik/middleware.yaml (Middleware + IngressRoutes). */
export async function startTraefikCrd(dir: string, cp: ControlPlane, b: KubeBackends, opts: TraefikKubeOptions = {}): Promise<TraefikKube> {
  const namespace = opts.namespace ?? 'svc-traefik-crd';
  const host = opts.host ?? KUBE_HOST;
  const applied = [externalNameServices(namespace, { waf: b.waf, oapi: b.oapi, 'svc-auth': b.auth }), crdManifest(b, namespace, 'web', host)].join('---\n');
  return startTraefikProvider(dir, cp, 'kubernetesCRD', b.listen, namespace, applied, opts);
}
