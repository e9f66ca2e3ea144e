// The state file a supervisor writes (<state-dir>/state.json) and helpers to read it and to check its processes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../support/process.js';

export interface ClusterState {
  supervisorPid: number;
  server: string;
  /** Admin kubeconfig (mode 0600); for an existing cluster, the KUBECONFIG it came from. */
  kubeconfig: string;
  existing: boolean;
  /** Working dir of etcd/kube-apiserver (absent for an existing cluster). */
  dataDir?: string;
  /** The CA kubeconfigFor() signs client certificates with (absent for an existing cluster). */
  ca?: { cert: string; key: string };
  pids: { etcd?: number; kubeApiserver?: number };
  binaries?: { etcd: string; kubeApiserver: string; helm?: string };
  versions: Record<string, string>;
  crds: string[];
  /** The node of `cluster:up -- --node`: its working dir and the images imported into its containerd. */
  node?: { dir: string; images: { svc: string; nginx: string } };
  startedAt: string;
}

export function readState(stateDir: string): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

// Re-exported for scripts/ (cluster, demo-cluster), which read the state file.
export { pidAlive };

/** True when `pid` is alive and its command line mentions `needle` (guards against a recycled pid). */
export function pidRuns(pid: number | undefined, needle: string): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle);
  } catch {
    return true; // no /proc (macOS): trust the pid
  }
}
