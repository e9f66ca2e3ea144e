import { mainConf } from './nginx-conf.js';

/**
 * nginx in front of svc-auth with browser sign-in, for test/e2e/sign-in.test.ts: the shape deploy/'s nginx
 * configuration takes for sign-in (the names are the contract: X-Svc-Sign-In and X-Svc-Denied).
 *
 * - The data locations ask svc-auth with `auth_request` (X-Original-URL, X-Original-Method). A 401 to a navigation
 *   carries X-Svc-Sign-In: `auth_request_set` keeps it, `error_page 401 = @svc_sign_in` sends that 401 to a named
 *   location that redirects there when it is set and answers the 401 (with its challenge) otherwise. A 403 to a
 *   signed-in navigation carries X-Svc-Denied, redirected the same way to svc-auth's "no access" page.
 * - One plain route to svc-auth for its browser endpoints and the public list, path by path; every other /authz/ path
 *   is a 404 here (the decision endpoints must not become a public oracle).
 * - svc-auth is an upstream of several replicas (round robin): a sign-in begun on one finishes on another.
 * - A second server asks through the auth cache as deploy/ingress-nginx documents it (auth-cache-key
 *   "$request_method $request_uri $http_authorization $arg_token", 200 202 30s, 401 403 0s), and reports the cache
 *   status of each auth subrequest in X-Auth-Cache. It also ignores Cache-Control (as bench:e2e's cache does): the
 *   most willing cache there is, so that X-Accel-Expires alone is what keeps a session's allow out of it.
 */
export interface SignInConfOptions {
  readonly prefix: string;
  readonly wafRoot: string;
  readonly port: number;
  readonly cachePort: number;
  readonly replicas: readonly number[];
  readonly oapi: number;
}

const AUTH_HEADERS = `
            proxy_pass_request_body off;
            proxy_set_header        Content-Length "";
            proxy_set_header        X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header        X-Original-Method $request_method;
            proxy_set_header        X-Original-URI "";
            proxy_set_header        X-Forwarded-Uri "";
            proxy_set_header        X-Forwarded-Method "";
            proxy_http_version      1.1;
            proxy_set_header        Connection "";`;

/** What a protected location adds: ask svc-auth, keep the sign-in and denied URLs, branch on them. */
const PROTECTED = `
            auth_request_set        $svc_sign_in $upstream_http_x_svc_sign_in;
            auth_request_set        $svc_denied $upstream_http_x_svc_denied;
            auth_request_set        $svc_challenge $upstream_http_www_authenticate;
            error_page 401 = @svc_sign_in;
            error_page 403 = @svc_denied;`;

const NAMED = `
        location @svc_sign_in {
            if ($svc_sign_in) {
                return 302 $svc_sign_in;
            }
            # auth_request's 401 keeps its WWW-Authenticate through error_page; its 403 does not: re-added below.
            return 401;
        }

        location @svc_denied {
            if ($svc_denied) {
                return 302 $svc_denied;
            }
            add_header WWW-Authenticate $svc_challenge always;
            return 403;
        }`;

const SIGN_IN_ROUTES = ['/authz/sign-in', '/authz/callback', '/authz/sign-out', '/authz/v1/session', '/authz/v1/protected'];

function route(path: string): string {
  return `
        location = ${path} {
            proxy_pass              http://svc_auth;
            proxy_set_header        Host $http_host;
            proxy_set_header        X-Forwarded-Host $http_host;
            proxy_set_header        X-Forwarded-Proto $scheme;
            proxy_http_version      1.1;
            proxy_set_header        Connection "";
        }`;
}

function dataLocations(authLocation: string, o: SignInConfOptions): string {
  return `
        location /data/ {
            auth_request            ${authLocation};${PROTECTED}
            root                    ${o.wafRoot};
        }

        location /oapi/ {
            auth_request            ${authLocation};${PROTECTED}
            proxy_set_header        Host $http_host;
            proxy_pass              http://127.0.0.1:${o.oapi};
        }
${NAMED}`;
}

export function signInNginxConf(o: SignInConfOptions): string {
  const servers = `
    upstream svc_auth {
${o.replicas.map((p) => `        server 127.0.0.1:${p};`).join('\n')}
        keepalive 16;
    }
    proxy_cache_path ${o.prefix}/cache levels=1:2 keys_zone=svc_auth_cache:1m max_size=16m inactive=60s use_temp_path=off;

    server {
        listen 127.0.0.1:${o.port};
        server_name _;
${SIGN_IN_ROUTES.map(route).join('\n')}

        location /authz/ {
            return 404;
        }

        location = /_svc_auth {
            internal;
            proxy_pass              http://svc_auth/authz/auth-request;${AUTH_HEADERS}
        }
${dataLocations('/_svc_auth', o)}

        location / {
            return 404;
        }
    }

    # the auth cache as ingress-nginx's auth-cache-key / auth-cache-duration configure it (deploy/ingress-nginx)
    server {
        listen 127.0.0.1:${o.cachePort};
        server_name _;

        location = /_svc_auth_cached {
            internal;
            proxy_pass              http://svc_auth/authz/auth-request;${AUTH_HEADERS}
            proxy_cache             svc_auth_cache;
            proxy_cache_key         "$host$request_method $request_uri $http_authorization $arg_token";
            proxy_cache_valid       200 202 30s;
            proxy_cache_valid       401 403 0s;
            proxy_ignore_headers    Cache-Control Expires Set-Cookie;
        }

        location /data/ {
            auth_request            /_svc_auth_cached;
            auth_request_set        $svc_auth_cache $upstream_cache_status;
            add_header              X-Auth-Cache $svc_auth_cache always;
            root                    ${o.wafRoot};
        }
    }`;
  return mainConf(o.prefix, servers);
}
