// The kind cluster `npm run demo:cluster -- --kind` leaves running (test/kind/run.sh with KEEP_CLUSTER=true), and its
// deletion: `npm run demo:cluster -- --kind --down`, or `npm run cluster:down`, which stops everything of the clone's.
//
// run.sh records the kept cluster in .cache/kind/ (kept.json, beside its kubeconfig and, on podman, its
// containers.conf): which provider, cluster name, kind binary (on podman the one built into the tool cache, not on
// PATH), podman network and the shim directory kind must find first on PATH. Deleting needs exactly those, which is
// why the command used to be printed as one long line of absolute paths; here it is read back and run.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const KEPT_DIR = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), '.cache', 'kind');

export interface KeptKind {
  readonly provider: 'docker' | 'podman';
  readonly cluster: string;
  /** The kind binary run.sh used. */
  readonly kind: string;
  /** podman: the cluster's own network, and what kind must run with. */
  readonly network?: string;
  readonly containersConf?: string;
  /** A directory kind must find first on PATH (run.sh's podman shim). */
  readonly path?: string;
  readonly kubeconfig: string;
}

/** The kept cluster's record in `dir`, or undefined when none is kept. Throws when the record is unreadable. */
export function readKept(dir = KEPT_DIR): KeptKind | undefined {
  const file = join(dir, 'kept.json');
  if (!existsSync(file)) return undefined;
  const k = JSON.parse(readFileSync(file, 'utf8')) as Partial<KeptKind>;
  if ((k.provider !== 'docker' && k.provider !== 'podman') || !k.cluster || !k.kind || !k.kubeconfig) throw new Error(`${file}: not a record of a kept kind cluster (provider, cluster, kind, kubeconfig)`);
  return k as KeptKind;
}

export interface Step {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Arguments of a check with the same command: the step runs only when it succeeds (there is something to remove). */
  readonly when?: readonly string[];
}

/** The commands that delete the kept cluster, as run.sh's own cleanup runs them. */
export function deleteSteps(k: KeptKind, env: NodeJS.ProcessEnv = process.env): Step[] {
  if (k.provider === 'docker') return [{ cmd: k.kind, args: ['delete', 'cluster', '--name', k.cluster], env }];
  const podman: NodeJS.ProcessEnv = {
    ...env,
    KIND_EXPERIMENTAL_PROVIDER: 'podman',
    ...(k.path ? { PATH: `${k.path}:${env.PATH ?? ''}` } : {}),
    ...(k.containersConf ? { CONTAINERS_CONF: k.containersConf } : {}),
  };
  return [
    { cmd: k.kind, args: ['delete', 'cluster', '--name', k.cluster], env: podman },
    ...(k.network ? [{ cmd: 'podman', args: ['network', 'rm', '-f', k.network], env: podman, when: ['network', 'exists', k.network] }] : []),
  ];
}

/**
 * Deletes the kept cluster and forgets it; false (with `say` naming what failed) when a step failed, the record then
 * kept for another try. True also when none was kept.
 */
export function deleteKept(say: (m: string) => void, dir = KEPT_DIR, env: NodeJS.ProcessEnv = process.env): boolean {
  const k = readKept(dir);
  if (!k) {
    say('no kind cluster kept (npm run demo:cluster -- --kind keeps one)');
    return true;
  }
  say(`deleting the kind cluster ${k.cluster} (${k.provider})`);
  for (const step of deleteSteps(k, env)) {
    if (step.when && spawnSync(step.cmd, [...step.when], { env: step.env, stdio: 'ignore', timeout: 60_000 }).status !== 0) continue;
    const r = spawnSync(step.cmd, [...step.args], { env: step.env, encoding: 'utf8', timeout: 300_000 });
    if (r.status !== 0) {
      say(`${[step.cmd, ...step.args].join(' ')} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}): ${(r.stderr ?? '').trim().split('\n').slice(-3).join(' ')}`);
      return false;
    }
  }
  for (const f of ['kept.json', 'kubeconfig', 'containers.conf']) rmSync(join(dir, f), { force: true });
  say(`kind cluster ${k.cluster} deleted`);
  return true;
}
