// The chart's wiring read by the real controllers: `helm template` of charts/svc with a controller's values, the objects
// it renders for protect.* applied to the harness's kube-apiserver (or, for Envoy Gateway's standalone mode, written for
// its file provider), and the controller routing through them to svc-auth and a WAF tree. Nothing of deploy/ is used:
// what the controllers read is what `helm install` would create.
//
// Backends are host processes on 127.0.0.1: the data Services the values name (waf, oapi) and svc-auth's Service are
// ExternalName Services to 127.0.0.1 on the same ports (Traefik resolves them to 127.0.0.1:<port>), Envoy Gateway
// Backends for its file provider. svc-auth's address is the value protect.authURL (http://127.0.0.1:<port>), its port
// auth.port: values a user sets too.
import { createServer, type Server } from 'node:http';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { dump } from 'js-yaml';
import type { ControlPlane } from '../../controlplane/controlplane.js';
import { helmTemplate, type Manifest } from '../../stack/helm.js';

/** The Host the values protect. */
export const WIRED_HOST = 'data.example.org';
/** svc-auth's external URL (its sign-in redirects name it). */
export const EXTERNAL_URL = `https://${WIRED_HOST}`;

export type WiredController = 'traefik-ingress-nginx' | 'traefik-crd' | 'envoy-gateway' | 'gateway-api';

export interface WiredPorts {
  readonly auth: number;
  readonly waf: number;
  readonly oapi: number;
}

/**
 * The chart values a user would write for `controller` (svc-auth reached at 127.0.0.1, its Services' ports the
 * processes' own), with browser sign-in on so the pages route carries every one of svc-auth's pages.
 */
export function wiredValues(controller: WiredController, namespace: string, p: WiredPorts, host = WIRED_HOST): Record<string, unknown> {
  const protect: Record<string, unknown> = {
    controller: controller.startsWith('traefik-ingress') ? 'ingress-nginx' : controller === 'traefik-crd' ? 'traefik' : controller,
    namespace,
    authURL: `http://127.0.0.1:${p.auth}`,
    hosts: [{ host, paths: [{ path: '/data', service: 'waf', port: p.waf }, { path: '/oapi', service: 'oapi', port: p.oapi }] }],
    ingressNginx: { readBy: 'traefik' },
    traefik: { entryPoints: ['web'] },
    envoyGateway: { parentRefs: [{ name: 'eg', namespace: 'envoy-gateway-system' }] },
    gatewayApi: { parentRefs: [{ name: 'eg', namespace: 'envoy-gateway-system' }] },
  };
  return {
    auth: {
      port: p.auth,
      oidc: { issuers: ['https://login.example.org/realms/wis2'], audiences: ['svc-data'] },
      signIn: { enabled: true, externalURLs: [EXTERNAL_URL], clientId: 'svc-browser', sessionKeys: { existingSecret: 'svc-session-keys', key: 'session-keys' } },
    },
    protect,
  };
}

/** What `helm template` renders for protect.* with these values (the objects labelled component=wiring). */
export function renderWiring(helm: string, namespace: string, values: Record<string, unknown>): Manifest[] {
  const r = helmTemplate(helm, { namespace, values });
  if (r.status !== 0) throw new Error(`helm template failed:\n${r.stderr}`);
  return r.manifests.filter((m) => m.metadata.labels?.['app.kubernetes.io/component'] === 'wiring');
}

export function yamlStream(objects: readonly object[]): string {
  return objects.map((o) => dump(JSON.parse(JSON.stringify(o)), { noRefs: true, lineWidth: -1 })).join('---\n');
}

/** The Services the values name, as ExternalName Services to 127.0.0.1 on the processes' ports. */
export function loopbackServices(namespace: string, p: WiredPorts): string {
  return yamlStream(Object.entries({ waf: p.waf, oapi: p.oapi, 'svc-auth': p.auth }).map(([name, port]) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'http', port, protocol: 'TCP' }] },
  })));
}

/** A backend that counts what reaches it: the WAF tree as files (404 for anything else), or 200 to everything. */
export interface CountingServer {
  readonly server: Server;
  /** Requests that reached it, by path. */
  readonly seen: string[];
}

export async function startCountingServer(port: number, root?: string, address = '127.0.0.1'): Promise<CountingServer> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    seen.push(`${req.method} ${path}`);
    let body: string | undefined;
    if (root === undefined) body = JSON.stringify({ method: req.method, path });
    else {
      try {
        body = readFileSync(join(root, normalize(path)), 'utf8');
      } catch {
        body = undefined;
      }
    }
    res.writeHead(body === undefined ? 404 : 200, { 'Content-Type': 'text/plain' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => resolve());
  });
  return { server, seen };
}

/** The kubeconfig's directory for a controller's own files. */
export function controllerDir(base: string, name: string): string {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export type { ControlPlane };
