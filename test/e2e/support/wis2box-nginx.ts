/**
 * nginx as wis2box configures it in front of wis2box-auth, written from wis2box's public nginx/nginx.conf
 * (World-Meteorological-Organization/wis2box; `current` as of bf75e1b, 2025-06; `older` as before a2545ff0,
 * 2023-09, wis2box < 1.0b5), with svc-auth's drop-in `GET /authorize` as the upstream and the stand-in API
 * playing every backend (MinIO for /data, wis2box-api for /oapi, wis2downloader):
 *
 * - the internal location is `/auth` (prefix), proxied to `.../authorize`, and it sets X-Original-URI, passes
 *   Authorization on, clears Content-Length, and sets `X-api-http-method $x_api_http_method`;
 * - `$x_api_http_method` is `set` only in /oapi and /wis2downloader: on /data it is empty, so nginx sends no
 *   such header (the method is not stated there);
 * - /wis2downloader is a prefix location (it also matches /wis2downloaderx) that strips `/wis2downloader/`;
 * - the server-level proxy_set_header lines are not inherited by /auth, which sets its own.
 *
 * `older` has no X-Api-Http-Method at all, `proxy_pass_request_body off`, and no /wis2downloader (added in
 * 1.0b8): svc-auth governs its requests as unsafe, so stations reads get 401 there (docs/wis2box.md).
 */
import { mainConf } from './nginx-conf.js';
export interface Wis2boxPorts {
  readonly current: number;
  readonly older: number;
  readonly auth: number;
  readonly backend: number;
}

/** The server-level lines both versions have (not inherited by /auth, which sets its own). */
const SERVER_LEVEL = `        server_name _;

        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Host $server_name;
`;

function currentServer(p: Wis2boxPorts): string {
  return `
    # wis2box nginx/nginx.conf (1.0): auth_request /auth -> /authorize
    server {
        listen 127.0.0.1:${p.current};
${SERVER_LEVEL}
        add_header 'Access-Control-Allow-Origin' '*';
        add_header 'WWW-Authenticate' 'Bearer' 'always';

        location /data {
            auth_request /auth;
            auth_request_set $auth_status $upstream_status;
            proxy_set_header Host $http_host;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://127.0.0.1:${p.backend};
        }
        location /oapi {
            set $x_api_http_method $request_method;
            auth_request /auth;
            auth_request_set $auth_status $upstream_status;
            proxy_pass http://127.0.0.1:${p.backend};
        }
        location /wis2downloader {
            set $x_api_http_method $request_method;
            auth_request /auth;
            auth_request_set $auth_status $upstream_status;
            rewrite  ^/wis2downloader/(.*)  /$1 break;
            proxy_pass http://127.0.0.1:${p.backend};
        }
        location /auth {
            internal;
            proxy_pass http://127.0.0.1:${p.auth}/authorize;
            proxy_set_header        Content-Length "";
            proxy_set_header        X-api-http-method $x_api_http_method;
            proxy_set_header        X-Original-URI $request_uri;
            proxy_set_header        Authorization $http_authorization;
            proxy_pass_header       Authorization;
        }
        location / {
            return 404;
        }
    }`;
}

function olderServer(p: Wis2boxPorts): string {
  return `
    # wis2box nginx/nginx.conf before 1.0b5: no X-Api-Http-Method, no /wis2downloader
    server {
        listen 127.0.0.1:${p.older};
${SERVER_LEVEL}
        location /data {
            auth_request /auth;
            auth_request_set $auth_status $upstream_status;
            proxy_pass http://127.0.0.1:${p.backend};
        }
        location /oapi {
            auth_request /auth;
            auth_request_set $auth_status $upstream_status;
            proxy_pass http://127.0.0.1:${p.backend};
        }
        location /auth {
            internal;
            proxy_pass http://127.0.0.1:${p.auth}/authorize;
            proxy_pass_request_body off;
            proxy_set_header        Content-Length "";
            proxy_set_header        X-Original-URI $request_uri;
            proxy_set_header        Authorization $http_authorization;
            proxy_pass_header       Authorization;
        }
        location / {
            return 404;
        }
    }`;
}

export function wis2boxNginxConf(prefix: string, ports: Wis2boxPorts): string {
  // No $request_uri in the access log: wis2box's tokens may travel as ?token=, and no token is written anywhere.
  return mainConf(prefix, `${currentServer(ports)}\n${olderServer(ports)}`, { workerConnections: 256, logFormat: '$status $request_method auth=$upstream_status' });
}
