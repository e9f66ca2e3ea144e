/**
 * NGINX Gateway Fabric's rendering of deploy/gateway-api/httproute-externalauth.yaml, as an nginx server
 * block, the way the e2e suites mirror ingress-nginx: Fabric is nginx configured by a controller, and its
 * controller cannot run here without its own image, so the suite writes what Fabric's templates write
 * (facts from its `internal/controller/nginx/config`, main branch, due in 2.7; no code of it):
 *
 * - per HTTPRoute rule with an ExternalAuth filter, an internal location `/_ngf-internal-ext-auth-<ns>_<name>_rule<i>`
 *   that proxies to `http://<backend><http.path>` (nginx replaces the location with that path, so svc-auth
 *   is asked exactly `http.path`), with `proxy_pass_request_headers off` and only `Host`,
 *   `Path: $request_uri`, `Method: $request_method`, `Authorization` and the filter's `allowedHeaders` set,
 *   `proxy_pass_request_body off` with an empty Content-Length;
 * - in the rule's location, `auth_request` to it and, per `allowedResponseHeaders`, `auth_request_set` and
 *   `proxy_set_header` to the backend.
 *
 * Everything route-specific is read from the deploy file, so the suite runs what the example says.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { REPO_ROOT } from './svc-auth.js';

export const GATEWAY_API_EXTERNAL_AUTH = join(REPO_ROOT, 'deploy', 'gateway-api', 'httproute-externalauth.yaml');

interface Rule {
  readonly matches: readonly { readonly path: { readonly type: string; readonly value: string } }[];
  readonly filters?: readonly {
    readonly type: string;
    readonly externalAuth?: {
      readonly protocol: string;
      readonly backendRef: { readonly name: string; readonly port: number };
      readonly http?: { readonly path?: string; readonly allowedHeaders?: readonly string[]; readonly allowedResponseHeaders?: readonly string[] };
    };
  }[];
  readonly backendRefs: readonly { readonly name: string; readonly port: number }[];
}

interface Route {
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: { readonly hostnames: readonly string[]; readonly rules: readonly Rule[] };
}

export interface FabricPorts {
  readonly listen: number;
  /** Every Service the route names (svc-auth, waf, oapi), by name, on 127.0.0.1. */
  readonly services: Readonly<Record<string, number>>;
}

/** `Allowed-Header` → `$http_allowed_header`, as nginx names a request header's variable. */
const headerVar = (name: string): string => `$http_${name.toLowerCase().replaceAll('-', '_')}`;
/** Fabric keeps each allowed response header in a variable of its own. */
const responseVar = (name: string): string => `$ngf_ext_auth_${name.toLowerCase().replaceAll('-', '_')}`;

/** The HTTPRoutes of a file (the data route and the route to svc-auth's pages). */
export function readRoutes(file = GATEWAY_API_EXTERNAL_AUTH): Route[] {
  return (loadAll(readFileSync(file, 'utf8')) as (Route & { kind?: string })[]).filter((d) => d?.kind === 'HTTPRoute');
}

/** The server block Fabric renders for the routes (one host), listening on 127.0.0.1:`listen`. */
export function gatewayFabricServer(p: FabricPorts, routes: readonly Route[] = readRoutes()): string {
  const port = (name: string): number => {
    const found = p.services[name];
    if (found === undefined) throw new Error(`${GATEWAY_API_EXTERNAL_AUTH} names Service ${name}, which the suite does not run`);
    return found;
  };
  const locations = routes.flatMap((route) => route.spec.rules.map((rule, i) => {
    const internal = (n: number): string => `/_ngf-internal-ext-auth-${route.metadata.namespace}_${route.metadata.name}_rule${n}`;
    const auth = rule.filters?.find((f) => f.type === 'ExternalAuth')?.externalAuth;
    const backend = rule.backendRefs[0]!;
    const main = (path: string): string => `
        location ${path} {
${auth ? `            auth_request ${internal(i)};
${(auth.http?.allowedResponseHeaders ?? []).map((h) => `            auth_request_set ${responseVar(h)} $upstream_http_${h.toLowerCase().replaceAll('-', '_')};
            proxy_set_header ${h} ${responseVar(h)};`).join('\n')}` : ''}
            proxy_http_version 1.1;
            proxy_set_header Host "$gw_api_compliant_host";
            proxy_set_header X-Forwarded-For "$proxy_add_x_forwarded_for";
            proxy_pass http://127.0.0.1:${port(backend.name)};
        }`;
    // Fabric renders a PathPrefix match as an exact location and a prefix location with a trailing slash, an
    // Exact match as an exact location.
    const blocks = rule.matches.flatMap(({ path: match }) => {
      if (match.type === 'Exact') return [main(`= ${match.value}`)];
      if (match.type !== 'PathPrefix') throw new Error(`the suite renders PathPrefix and Exact matches only, not ${match.type}`);
      return [main(`= ${match.value}`), main(`${match.value}/`)];
    });
    if (auth) {
      if (auth.protocol !== 'HTTP') throw new Error(`the suite renders the HTTP protocol only, not ${auth.protocol}`);
      const headers: [string, string][] = [
        ['Host', '$gw_api_compliant_host'],
        ['Path', '$request_uri'],
        ['Method', '$request_method'],
        ['Authorization', '$http_authorization'],
        ...(auth.http?.allowedHeaders ?? []).map((h): [string, string] => [h, headerVar(h)]),
      ];
      blocks.push(`
        location ${internal(i)} {
            internal;
${headers.map(([n, v]) => `            proxy_set_header ${n} "${v}";`).join('\n')}
            proxy_pass http://127.0.0.1:${port(auth.backendRef.name)}${auth.http?.path ?? ''};
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_pass_request_headers off;
        }`);
    }
    return blocks.join('\n');
  }));
  const hostnames = [...new Set(routes.flatMap((r) => r.spec.hostnames))];

  return `
    # NGINX Gateway Fabric's rendering of deploy/gateway-api/httproute-externalauth.yaml
    map $http_host $gw_api_compliant_host {
        '' $host;
        default $http_host;
    }
    server {
        listen 127.0.0.1:${p.listen};
        server_name ${hostnames.join(' ')};
${locations.join('\n')}

        location / {
            return 404;
        }
    }`;
}
