import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTraefik } from '../../controlplane/assets.js';
import type { Backends } from './envoy.js';
import { replaceExact } from './envoy.js';
import { Supervised } from '../../support/process.js';
import { REPO_ROOT } from './svc-auth.js';

export const TRAEFIK_STATIC = join(REPO_ROOT, 'deploy', 'traefik', 'traefik.yaml');
export const TRAEFIK_DYNAMIC = join(REPO_ROOT, 'deploy', 'traefik', 'dynamic.yaml');

/** deploy/traefik/dynamic.yaml with svc-auth's and the backends' addresses moved to 127.0.0.1. */
export function traefikDynamic(b: Backends, host?: string): string {
  const f = 'deploy/traefik/dynamic.yaml';
  let text = readFileSync(TRAEFIK_DYNAMIC, 'utf8');
  // The browser suites open the routers on a loopback host name (the routers' Host rule).
  if (host !== undefined) text = text.replaceAll('Host(`data.example.org`)', `Host(\`${host}\`)`);
  text = replaceExact(text, 'http://svc-auth.svc.svc.cluster.local:8080/', `http://127.0.0.1:${b.auth}/`, f);
  text = replaceExact(text, 'url: http://waf.svc.svc.cluster.local:80', `url: http://127.0.0.1:${b.waf}`, f);
  text = replaceExact(text, 'url: http://oapi.svc.svc.cluster.local:80', `url: http://127.0.0.1:${b.oapi}`, f);
  // The browser sign-in route's backend: svc-auth itself.
  text = replaceExact(text, 'url: http://svc-auth.svc.svc.cluster.local:8080', `url: http://127.0.0.1:${b.auth}`, f);
  return text;
}

/** deploy/traefik/traefik.yaml with the listen address and the dynamic file's path replaced. */
export function traefikStatic(b: Backends, dynamicFile: string): string {
  const f = 'deploy/traefik/traefik.yaml';
  let text = readFileSync(TRAEFIK_STATIC, 'utf8');
  text = replaceExact(text, 'address: ":80"', `address: "127.0.0.1:${b.listen}"`, f);
  text = replaceExact(text, 'filename: /etc/traefik/dynamic.yaml', `filename: ${dynamicFile}`, f);
  return text;
}

export async function startTraefik(dir: string, b: Backends, host?: string): Promise<Supervised> {
  const binary = await ensureTraefik();
  const dynamicFile = join(dir, 'traefik-dynamic.yaml');
  const staticFile = join(dir, 'traefik.yaml');
  writeFileSync(dynamicFile, traefikDynamic(b, host));
  writeFileSync(staticFile, traefikStatic(b, dynamicFile));
  return Supervised.start('traefik', binary, [`--configFile=${staticFile}`], { ports: [b.listen] });
}
