import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { STREAM_MODULE } from './nginx.js';
/**
 * The two nginx configurations the suite runs, in one nginx process (one server block each):
 *
 * - `ingressServer`: what ingress-nginx renders for an Ingress with paths /data and /oapi (pathType
 *   Prefix) and the annotation `nginx.ingress.kubernetes.io/auth-url: http://<svc-auth>/authz/auth-request`:
 *   one internal `/_external-auth-<base64url(path)>-Prefix` location per path with the controller's
 *   headers (rootfs/etc/nginx/template/nginx.tmpl), and `auth_request` in the path's location. Client
 *   headers pass through to svc-auth (`proxy_pass_request_headers on`), as in the real controller.
 * - `originalServer`: the shape of the original's nginx config: `auth_request /authorize;` and an
 *   internal `/authorize` location setting `X-Original-URI` and `X-Api-Http-Method`.
 * - `uriOnlyServer`: the most common `auth_request` recipe: an internal location that sets only
 *   `X-Original-URI` and clears nothing, so every other client header reaches svc-auth (a client's
 *   `X-Original-URL`, say) and the original method is not stated.
 *
 * The WAF is a static tree (`root`), the API a stand-in proxied without a URI part, so it receives the
 * request target as the client sent it.
 */
/** What deploy/ingress-nginx/auth-request-headers.yaml has ingress-nginx set on the auth subrequest. */
const AUTH_REQUEST_HEADERS: readonly [string, string][] = Object.entries(
  (load(readFileSync(fileURLToPath(new URL('../../../deploy/ingress-nginx/auth-request-headers.yaml', import.meta.url)), 'utf8')) as { data: Record<string, string> }).data,
);

export interface ConfPorts {
  readonly ingress: number;
  /** ingress-nginx again, with custom-http-errors 401,403 sent to a backend that answers 200. */
  readonly customErrors: number;
  readonly original: number;
  /** The common recipe's server; left out when not given. */
  readonly uriOnly?: number;
  readonly auth: number;
  readonly oapi: number;
}

export interface ConfOptions {
  readonly prefix: string;
  readonly wafRoot: string;
  readonly ports: ConfPorts;
  /**
   * Where the servers listen and where svc-auth and the API are: 127.0.0.1 for all three unless given (the node
   * suite runs ingressServer in a pod: listening on every address, svc-auth behind its Service's ClusterIP).
   */
  readonly hosts?: { readonly listen: string; readonly auth: string; readonly oapi: string };
}

const LOOPBACK = { listen: '127.0.0.1', auth: '127.0.0.1', oapi: '127.0.0.1' } as const;

/** ingress-nginx's name for the auth location of a path: base64url of the path, unpadded, and the path type. */
export function externalAuthLocation(path: string, pathType = 'Prefix'): string {
  return `/_external-auth-${Buffer.from(path).toString('base64url')}-${pathType}`;
}

/**
 * The upstream ingress-nginx renders for `auth-keepalive` (deploy/ingress-nginx/ingress.yaml sets it):
 * kept-alive connections to svc-auth, shared by the auth locations of both paths.
 */
function ingressAuthUpstream(authHost: string, authPort: number): string {
  return `
    upstream svc-data-external-auth {
        server ${authHost}:${authPort};
        keepalive 32;
        keepalive_requests 10000;
        keepalive_timeout 60s;
    }`;
}

function ingressAuthLocation(path: string, authHost: string, authPort: number): string {
  return `
        location = ${externalAuthLocation(path)} {
            internal;

            proxy_pass_request_body     off;
            proxy_set_header            Content-Length          "";

            proxy_set_header            Host                    ${authHost}:${authPort};
            proxy_set_header            X-Original-URL          $scheme://$http_host$request_uri;
            proxy_set_header            X-Original-Method       $request_method;
            proxy_set_header            X-Sent-From             "nginx-ingress-controller";
            proxy_set_header            X-Real-IP               $remote_addr;
            proxy_set_header            X-Forwarded-For         $remote_addr;
            proxy_set_header            X-Auth-Request-Redirect $request_uri;

            # auth-proxy-set-headers (deploy/ingress-nginx/auth-request-headers.yaml, read from the file)
${AUTH_REQUEST_HEADERS.map(([name, value]) => `            proxy_set_header            ${name.padEnd(23)} "${value}";`).join('\n')}

            proxy_buffering             off;
            proxy_pass_request_headers  on;

            # auth-keepalive
            proxy_http_version          1.1;
            proxy_set_header            Connection              "";
            set $target http://svc-data-external-auth/authz/auth-request;
            proxy_pass $target;
        }`;
}

export function ingressServer({ wafRoot, ports, hosts = LOOPBACK }: ConfOptions): string {
  const data = externalAuthLocation('/data');
  const oapi = externalAuthLocation('/oapi');
  return `
    # ingress-nginx, auth-url annotation (with auth-keepalive and auth-proxy-set-headers)
${ingressAuthUpstream(hosts.auth, ports.auth)}
    server {
        listen ${hosts.listen}:${ports.ingress};
        server_name _;
${ingressAuthLocation('/data', hosts.auth, ports.auth)}
${ingressAuthLocation('/oapi', hosts.auth, ports.auth)}

        location /data/ {
            # this location requires authentication
            auth_request        ${data};
            auth_request_set    $auth_cookie $upstream_http_set_cookie;
            add_header          Set-Cookie $auth_cookie;

            root ${wafRoot};
        }

        location /oapi/ {
            # this location requires authentication
            auth_request        ${oapi};
            auth_request_set    $auth_cookie $upstream_http_set_cookie;
            add_header          Set-Cookie $auth_cookie;

            client_max_body_size    1m;
            proxy_set_header        Host              $http_host;
            proxy_set_header        X-Forwarded-Host  $http_host;
            proxy_set_header        X-Forwarded-Proto $scheme;
            proxy_set_header        X-Real-IP         $remote_addr;
            proxy_http_version      1.1;
            proxy_pass              http://${hosts.oapi}:${ports.oapi};
        }

        # the controller's default backend
        location / {
            return 404;
        }
    }`;
}

/**
 * ingress-nginx with `custom-http-errors: "401,403"` and a custom default backend: the controller adds
 * `proxy_intercept_errors on` and `error_page <code> = @custom_<backend>_<code>` locations that proxy to the
 * error backend with X-Code and friends. The stand-in API plays that backend and answers 200 to
 * everything: the regression case of ANCHORS.md (CVE-2026-24513) — the client may get the error page with
 * a 200, but never the protected file.
 */
export function customErrorsServer({ wafRoot, ports }: ConfOptions): string {
  const data = externalAuthLocation('/data');
  const errorLocation = (code: number) => `
        location @custom_custom-default-backend_${code} {
            internal;
            proxy_intercept_errors off;
            proxy_set_header       X-Code             ${code};
            proxy_set_header       X-Format           $http_accept;
            proxy_set_header       X-Original-URI     $request_uri;
            proxy_set_header       X-Namespace        svc;
            proxy_set_header       X-Ingress-Name     svc-data;
            proxy_set_header       X-Service-Name     waf;
            proxy_set_header       X-Service-Port     80;
            proxy_set_header       X-Request-ID       $request_id;
            proxy_set_header       Host               $best_http_host;
            rewrite                (.*) / break;
            proxy_pass             http://127.0.0.1:${ports.oapi};
        }`;
  return `
    # ingress-nginx, auth-url plus custom-http-errors 401,403 (error backend answers 200)
    server {
        listen 127.0.0.1:${ports.customErrors};
        server_name _;
        set $best_http_host $http_host;
${errorLocation(401)}
${errorLocation(403)}
${ingressAuthLocation('/data', '127.0.0.1', ports.auth)}

        location /data/ {
            auth_request        ${data};
            auth_request_set    $auth_cookie $upstream_http_set_cookie;
            add_header          Set-Cookie $auth_cookie;

            proxy_intercept_errors on;
            error_page 401 = @custom_custom-default-backend_401;
            error_page 403 = @custom_custom-default-backend_403;

            root ${wafRoot};
        }

        location / {
            return 404;
        }
    }`;
}

export function originalServer({ wafRoot, ports }: ConfOptions): string {
  return `
    # the original's shape: auth_request /authorize
    server {
        listen 127.0.0.1:${ports.original};
        server_name _;

        location = /authorize {
            internal;
            proxy_pass              http://127.0.0.1:${ports.auth}/authorize;
            proxy_pass_request_body off;
            proxy_set_header        Content-Length "";
            proxy_set_header        X-Original-URI $request_uri;
            proxy_set_header        X-Api-Http-Method $request_method;
        }

        location /data/ {
            auth_request /authorize;
            root ${wafRoot};
        }

        location /oapi/ {
            auth_request /authorize;
            proxy_set_header Host $http_host;
            proxy_pass http://127.0.0.1:${ports.oapi};
        }

        location / {
            return 404;
        }
    }`;
}

export function uriOnlyServer({ wafRoot, ports }: ConfOptions): string {
  if (ports.uriOnly === undefined) return '';
  return `
    # the common auth_request recipe: only X-Original-URI set, nothing cleared
    server {
        listen 127.0.0.1:${ports.uriOnly};
        server_name _;

        location = /_auth {
            internal;
            proxy_pass              http://127.0.0.1:${ports.auth}/authz/auth-request;
            proxy_pass_request_body off;
            proxy_set_header        Content-Length "";
            proxy_set_header        X-Original-URI $request_uri;
        }

        location /data/ {
            auth_request /_auth;
            root ${wafRoot};
        }

        location /oapi/ {
            auth_request /_auth;
            proxy_set_header Host $http_host;
            proxy_pass http://127.0.0.1:${ports.oapi};
        }

        location / {
            return 404;
        }
    }`;
}

/**
 * A whole nginx.conf for one test run: one worker, everything (pid, logs, temp files) under `prefix`, the access
 * log showing each request's status and its auth subrequest's, and `servers` inside http {}.
 */
export function mainConf(prefix: string, servers: string, options: { errorLevel?: string; workerConnections?: number; logFormat?: string; stream?: string } = {}): string {
  return `# generated by test/e2e for one test run
${options.stream === undefined ? '' : `load_module ${STREAM_MODULE};\n`}worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log ${options.errorLevel ?? 'info'};

events {
    worker_connections ${options.workerConnections ?? 512};
}

http {
    default_type application/octet-stream;
    types {
        application/json json;
    }
    server_tokens off;
    log_format e2e '${options.logFormat ?? '$status $request_method "$request_uri" auth=$upstream_status'}';
    access_log ${prefix}/logs/access.log e2e;
    client_body_temp_path ${prefix}/temp/client_body;
    proxy_temp_path ${prefix}/temp/proxy;
    fastcgi_temp_path ${prefix}/temp/fastcgi;
    uwsgi_temp_path ${prefix}/temp/uwsgi;
    scgi_temp_path ${prefix}/temp/scgi;
${servers}
}
${options.stream === undefined ? '' : `\nstream {\n${options.stream}\n}\n`}`;
}

export function nginxConf(options: ConfOptions): string {
  return mainConf(options.prefix, [ingressServer(options), originalServer(options), uriOnlyServer(options), customErrorsServer(options)].join('\n'));
}
