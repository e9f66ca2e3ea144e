/**
 * The load balancers docs/access-rules.md prescribes in front of each proxy ("Load balancers in front of the proxy"),
 * and the proxies behind them, from deploy/'s examples with only what that section says changed: an HTTP balancer
 * (nginx, appending the peer to X-Forwarded-For) in front of an ingress-nginx-like controller or Envoy, and a TCP
 * balancer speaking the PROXY protocol (nginx's stream module) in front of Traefik.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTraefik } from '../../controlplane/assets.js';
import { Supervised } from '../../support/process.js';
import { ensureEnvoy, envoyConfig, replaceExact, type Backends } from './envoy.js';
import { traefikDynamic, traefikStatic } from './traefik.js';
import { INGRESS_NGINX_EXAMPLE } from './traefik-kube.js';

/** An HTTP balancer (an nginx server block): proxies everything to `to`, appending the peer it saw to X-Forwarded-For. */
export function httpBalancer(listen: number, to: number): string {
  return `    server {
        listen 127.0.0.1:${listen};
        location / {
            proxy_pass http://127.0.0.1:${to};
            # Envoy refuses HTTP/1.0, nginx's default towards an upstream.
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
`;
}

/**
 * A TCP balancer (a server of nginx's stream {} block): passes the client's connection on with a PROXY protocol header
 * naming the client's address (`proxy_protocol on`; HAProxy's `send-proxy` and the cloud balancers' "proxy protocol"
 * do the same). It never reads or writes HTTP.
 */
export function proxyProtocolBalancer(listen: number, to: number): string {
  return `    server {
        listen 127.0.0.1:${listen};
        proxy_pass 127.0.0.1:${to};
        proxy_protocol on;
    }`;
}

/**
 * deploy/traefik's example behind the PROXY-protocol balancer, as docs/access-rules.md says: the entry point takes the
 * client's address from the PROXY protocol header of the balancer's connections (proxyProtocol.trustedIPs), trusts no
 * X-Forwarded-* header (no forwardedHeaders.trustedIPs) and ForwardAuth keeps trustForwardHeader: false, so every
 * X-Forwarded-* header svc-auth reads is Traefik's own, and svc-auth runs with --trusted-proxy-hops 0.
 */
export async function startTraefikBehindBalancer(dir: string, b: Backends): Promise<Supervised> {
  mkdirSync(dir, { recursive: true });
  const dynamicFile = join(dir, 'traefik-dynamic.yaml');
  const staticFile = join(dir, 'traefik.yaml');
  writeFileSync(dynamicFile, traefikDynamic(b));
  const listen = `address: "127.0.0.1:${b.listen}"`;
  writeFileSync(staticFile, replaceExact(traefikStatic(b, dynamicFile), listen, `${listen}\n    proxyProtocol:\n      trustedIPs: ["127.0.0.1/32"]`, 'deploy/traefik/traefik.yaml'));
  return Supervised.start('traefik', await ensureTraefik(), [`--configFile=${staticFile}`], { ports: [b.listen] });
}

/** deploy/gateway-api/envoy.yaml behind one HTTP balancer: `xff_num_trusted_hops: 1`, asking an svc-auth with --trusted-proxy-hops 1. */
export async function startEnvoyBehindBalancer(dir: string, b: Backends): Promise<Supervised> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'envoy.yaml');
  writeFileSync(file, replaceExact(envoyConfig(b), 'use_remote_address: true\n', 'use_remote_address: true\n                xff_num_trusted_hops: 1\n', 'deploy/gateway-api/envoy.yaml'));
  const binary = await ensureEnvoy();
  const args = ['-c', file, '--log-level', 'error', '--base-id', String(b.listen), '--concurrency', '1'];
  const check = spawnSync(binary, [...args, '--mode', 'validate'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`envoy rejected the config:\n${check.stdout}${check.stderr}`);
  return Supervised.start('envoy', binary, args, { ports: [b.listen] });
}

/** The `auth-response-headers` annotation of deploy/ingress-nginx/ingress.yaml, as ingress-nginx reads it. */
export function ingressNginxResponseHeaders(): string[] {
  const text = readFileSync(INGRESS_NGINX_EXAMPLE, 'utf8');
  const m = /nginx\.ingress\.kubernetes\.io\/auth-response-headers:\s*"([^"]*)"/.exec(text);
  if (m === null) throw new Error('deploy/ingress-nginx/ingress.yaml no longer has auth-response-headers: update the suite with the example');
  return m[1]!.split(',').map((h) => h.trim()).filter((h) => h.length > 0);
}

export interface ControllerPorts {
  readonly listen: number;
  /** svc-auth with --trusted-proxy-hops 1. */
  readonly auth: number;
  readonly oapi: number;
}

/**
 * An ingress-nginx-like controller behind an HTTP balancer, as docs/access-rules.md prescribes for ingress-nginx
 * (`use-forwarded-headers` with `proxy-real-ip-cidr` naming the balancer: nginx's realip module trusting 127.0.0.1
 * only) and as ingress-nginx renders an Ingress with deploy/ingress-nginx/ingress.yaml's annotations: the external
 * auth location (X-Original-URL, X-Original-Method, X-Real-IP from $remote_addr, the full X-Forwarded-For), and each
 * `auth-response-headers` entry copied from the answer into the request to the backend (`auth_request_set` and
 * `proxy_set_header`, an empty value sending none). /data is served from `wafRoot`, /oapi proxied.
 */
export function ingressNginxBehindBalancer(p: ControllerPorts, wafRoot: string, host: string): string {
  const copies = ingressNginxResponseHeaders().map((h, i) => `            auth_request_set $authHeader${i} $upstream_http_${h.toLowerCase().replaceAll('-', '_')};
            proxy_set_header '${h}' $authHeader${i};`).join('\n');
  return `    server {
        listen 127.0.0.1:${p.listen};
        server_name ${host};
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Forwarded-For;
        real_ip_recursive on;
        location /data/ {
            auth_request /_svc_auth;
            root ${wafRoot};
        }
        location /oapi/ {
            auth_request /_svc_auth;
${copies}
            proxy_set_header Host $http_host;
            proxy_pass http://127.0.0.1:${p.oapi};
        }
        location = /_svc_auth {
            internal;
            proxy_pass http://127.0.0.1:${p.auth}/authz/auth-request;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
`;
}
