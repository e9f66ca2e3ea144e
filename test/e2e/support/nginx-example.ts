import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { replaceExact } from './envoy.js';
import { mainConf } from './nginx-conf.js';
import { REPO_ROOT } from './svc-auth.js';

export const NGINX_EXAMPLE = join(REPO_ROOT, 'deploy', 'nginx', 'svc-auth.conf');

export interface ExamplePorts {
  /** The example's server (auth_request in front of the WAF and pygeoapi). */
  readonly listen: number;
  /** A plain static server of the same WAF tree, no auth: the `waf` backend Traefik and Envoy route to. */
  readonly waf: number;
  readonly auth: number;
  readonly oapi: number;
}

/** deploy/nginx/svc-auth.conf with only the addresses, the listen port and the WAF root replaced. */
export function nginxExample(p: ExamplePorts, wafRoot: string): string {
  const f = 'deploy/nginx/svc-auth.conf';
  let text = readFileSync(NGINX_EXAMPLE, 'utf8');
  text = replaceExact(text, 'server 127.0.0.1:8080;', `server 127.0.0.1:${p.auth};`, f);
  text = replaceExact(text, 'listen 80;', `listen 127.0.0.1:${p.listen};`, f);
  text = replaceExact(text, 'root /srv/waf;', `root ${wafRoot};`, f);
  text = replaceExact(text, 'proxy_pass http://127.0.0.1:5000;', `proxy_pass http://127.0.0.1:${p.oapi};`, f);
  return text;
}

/** The whole nginx.conf: the example included in http {}, plus the plain WAF server and any `extraServers`. */
export function exampleNginxConf(prefix: string, p: ExamplePorts, wafRoot: string, extraServers = '', stream?: string): string {
  return mainConf(prefix, `    # --- deploy/nginx/svc-auth.conf ---
${nginxExample(p, wafRoot)}
    # --- the WAF as a plain static backend (for Traefik and Envoy) ---
    server {
        listen 127.0.0.1:${p.waf};
        location /data/ {
            root ${wafRoot};
        }
    }
${extraServers}`, { errorLevel: 'warn', workerConnections: 1024, ...(stream === undefined ? {} : { stream }) });
}
