// kubectl for the chart tests: server-side dry-run applies and `auth can-i`. kubectl here may be older than the
// API server (1.32 vs 1.37); both commands are stable across that skew. KUBECTL names another binary.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import type { Manifest, RunResult } from './helm.js';

export function kubectlBinary(): string {
  if (process.env.KUBECTL) return process.env.KUBECTL;
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    try {
      accessSync(join(dir, 'kubectl'), constants.X_OK);
      return join(dir, 'kubectl');
    } catch {
      // not here
    }
  }
  throw new Error('kubectl not found on PATH (set KUBECTL to its path); the chart tests use `kubectl apply --dry-run=server` and `kubectl auth can-i`');
}

export function kubectl(kubeconfig: string, args: readonly string[], input?: string): RunResult {
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  const r = spawnSync(kubectlBinary(), [...args], { encoding: 'utf8', env, input, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}` };
}

export function toYamlStream(manifests: readonly Manifest[]): string {
  // Through JSON first: plain data only (js-yaml refuses objects of another realm, e.g. jest's structuredClone).
  return manifests.map((m) => dump(JSON.parse(JSON.stringify(m)), { noRefs: true, lineWidth: -1 })).join('---\n');
}

/**
 * Server-side apply of the objects, with strict field validation (an unknown or mistyped field is an error, not a
 * warning). `dryRun: true` has the API server run defaulting, validation and admission and store nothing.
 */
export function applyManifests(kubeconfig: string, manifests: readonly Manifest[], opts: { dryRun?: boolean; fieldManager?: string } = {}): RunResult {
  const args = ['apply', '--server-side', '--force-conflicts', `--field-manager=${opts.fieldManager ?? 'svc-chart-test'}`, '--validate=strict', '-f', '-'];
  if (opts.dryRun) args.push('--dry-run=server');
  return kubectl(kubeconfig, args, toYamlStream(manifests));
}
