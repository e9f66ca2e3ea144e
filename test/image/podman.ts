// podman as this harness runs it. Two facts of these machines decide the global flags (see
// ../../../shared/notes/containers-here.md): crun refuses the hybrid cgroup v1 hierarchy, so runc; and root lacks
// CAP_SYS_RESOURCE, so no container may ask for rlimits above the host's hard limits (podman's defaults do).
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Path of a tool on PATH, or undefined. */
export function which(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').filter(Boolean)) {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return join(dir, tool);
    } catch {
      // not here
    }
  }
  return undefined;
}

export const podmanGlobal = ['--runtime', 'runc', '--cgroup-manager', 'cgroupfs', '--events-backend', 'file'];

/** rlimits every container (and build step) gets: within the host's hard limits. */
export const ulimitFlags = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];

export function podman(args: readonly string[], options: SpawnSyncOptions = {}): RunResult {
  const r = spawnSync('podman', [...podmanGlobal, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...options });
  return {
    status: r.status ?? -1,
    stdout: String(r.stdout ?? ''),
    stderr: `${String(r.stderr ?? '')}${r.error ? `\n${r.error.message}` : ''}`,
  };
}

/** podman, failing with its stderr when it fails. */
export function podmanOk(args: readonly string[], options: SpawnSyncOptions = {}): string {
  const r = podman(args, options);
  if (r.status !== 0) throw new Error(`podman ${args.slice(0, 3).join(' ')} ... failed (exit ${r.status}): ${r.stderr.trim().slice(-2000)}`);
  return r.stdout;
}

export function imageExists(ref: string): boolean {
  return podman(['image', 'exists', ref]).status === 0;
}
