// Helm for the chart tests and the whole-stack flow: the binary built from test/controlplane/go/helm (ensureAssets),
// run hermetically (its cache, config and data homes in a temp dir), and `helm template` parsed into objects.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { ensureAssets } from '../controlplane/assets.js';
import { repoRoot } from '../controlplane/controlplane.js';

export const CHART_DIR = join(repoRoot, 'charts', 'svc');

/** One rendered Kubernetes object, as plain data. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface RunResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

let helmPath: Promise<string> | undefined;

/** The helm binary (TEST_ASSET_HELM, KUBEBUILDER_ASSETS, the cache, or built from its Go module: minutes when cold). */
export function helmBinary(): Promise<string> {
  helmPath ??= ensureAssets({ helm: true }).then((a) => {
    if (!a.helm) throw new Error('ensureAssets({ helm: true }) returned no helm');
    return a.helm;
  });
  return helmPath;
}

let home: string | undefined;
function helmEnv(): NodeJS.ProcessEnv {
  home ??= mkdtempSync(join(tmpdir(), 'svc-helm-home-'));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, sub] of [['HELM_CACHE_HOME', 'cache'], ['HELM_CONFIG_HOME', 'config'], ['HELM_DATA_HOME', 'data']] as const) {
    env[k] = join(home, sub);
    mkdirSync(env[k]!, { recursive: true });
  }
  // Never reach a real cluster from `helm template` / `helm lint`.
  delete env.KUBECONFIG;
  return env;
}

export function runHelm(helm: string, args: readonly string[], timeoutMs = 120_000): RunResult {
  const r = spawnSync(helm, args, { encoding: 'utf8', env: helmEnv(), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}` };
}

export interface RenderOptions {
  readonly namespace: string;
  readonly release?: string;
  /** Values, written to a file and passed with -f. */
  readonly values?: Record<string, unknown>;
  /** `--set` expressions, in order. */
  readonly set?: readonly string[];
  /** `--show-only` templates (paths like templates/rbac.yaml). */
  readonly showOnly?: readonly string[];
}

function valuesArgs(opts: Pick<RenderOptions, 'values' | 'set'>): string[] {
  const args: string[] = [];
  if (opts.values) {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-values-')), 'values.json');
    writeFileSync(file, JSON.stringify(opts.values)); // JSON is YAML
    args.push('-f', file);
  }
  for (const s of opts.set ?? []) args.push('--set', s);
  return args;
}

export interface Rendered extends RunResult {
  /** The objects of stdout (empty when helm failed). */
  readonly manifests: Manifest[];
}

/** Parses a multi-document YAML stream into its non-empty objects. */
export function parseManifests(text: string): Manifest[] {
  return (loadAll(text) as unknown[]).filter((d): d is Manifest => typeof d === 'object' && d !== null && 'kind' in d);
}

/** `helm template <release> charts/svc --namespace <ns> ...`. */
export function helmTemplate(helm: string, opts: RenderOptions): Rendered {
  const args = ['template', opts.release ?? 'svc', CHART_DIR, '--namespace', opts.namespace, ...valuesArgs(opts)];
  for (const t of opts.showOnly ?? []) args.push('--show-only', t);
  const r = runHelm(helm, args);
  return { ...r, manifests: r.status === 0 ? parseManifests(r.stdout) : [] };
}

/** `helm lint --strict charts/svc ...`. */
export function helmLint(helm: string, opts: Pick<RenderOptions, 'values' | 'set'> & { namespace?: string } = {}): RunResult {
  return runHelm(helm, ['lint', '--strict', CHART_DIR, ...(opts.namespace ? ['--namespace', opts.namespace] : []), ...valuesArgs(opts)]);
}

/** The rendered objects of one kind (and name). */
export function ofKind(manifests: readonly Manifest[], kind: string, name?: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
}

/** The ServiceAccounts, Roles and RoleBindings of the chart rendered for `namespace`: what gives the components their identity. */
export function renderIdentities(helm: string, namespace: string, values?: Record<string, unknown>): Manifest[] {
  const r = helmTemplate(helm, { namespace, ...(values ? { values } : {}), showOnly: ['templates/serviceaccounts.yaml', 'templates/rbac.yaml'] });
  if (r.status !== 0) throw new Error(`helm template failed:\n${r.stderr}`);
  return r.manifests;
}
