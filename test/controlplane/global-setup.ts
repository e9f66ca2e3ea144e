// Jest globalSetup of the `integration` project: one control plane per run, shared by every test file.
//
// Jest loads this file as CommonJS through its own transform, without moduleNameMapper, so it can import nothing of
// ours (our relative imports end in .js and name .ts files). It therefore only launches test/controlplane/supervisor.ts
// as a child process (node --import tsx) and waits for its IPC report. What it publishes (env vars set here reach every
// test worker):
//   KUBECONFIG_SVC_TEST     admin kubeconfig of the cluster
//   SVC_TEST_CLUSTER_STATE  its state.json (server, CA for kubeconfigFor(), pids, versions)
//   SVC_TEST_CLUSTER_SKIP   set instead (outside CI only) when no binaries exist and Go is missing
// and copies the kubeconfig to .cache/test-cluster/kubeconfig for a human to poke at the cluster while tests run.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

interface ProjectConfigLike {
  rootDir?: string;
}

interface Report {
  type: 'ready' | 'error';
  message?: string;
  unavailable?: boolean;
  stateFile?: string;
  state?: { kubeconfig: string; server: string; versions?: Record<string, string> };
}

export interface SupervisorHandle {
  child: ChildProcess;
  pid: number;
  runDir: string;
  sharedKubeconfig: string;
}

declare global {
  var __SVC_TEST_SUPERVISOR__: SupervisorHandle | undefined;
}

export default async function globalSetup(globalConfig: ProjectConfigLike, projectConfig?: ProjectConfigLike): Promise<void> {
  const root = projectConfig?.rootDir ?? globalConfig.rootDir ?? process.cwd();
  const base = join(root, '.cache', 'test-cluster');
  const runDir = join(base, `run-${process.pid}`);
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const ci = process.env.CI === 'true';

  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'controlplane', 'supervisor.ts'),
    '--state-dir', runDir, '--watch-parent', String(process.pid), '--remove-state-dir'], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Not jest's flags: the supervisor is a plain tsx process.
    env: { ...process.env, NODE_OPTIONS: (process.env.NODE_OPTIONS ?? '').replace('--experimental-vm-modules', '').trim() },
  });

  const report = await new Promise<Report>((resolve) => {
    child.once('message', (m) => resolve(m as Report));
    child.once('error', (e) => resolve({ type: 'error', message: `cannot start the supervisor: ${e.message}` }));
    child.once('exit', (code, signal) => resolve({ type: 'error', message: `supervisor exited (${signal ?? code}) before it was ready` }));
  });

  if (report.type !== 'ready' || !report.state || !report.stateFile) {
    child.kill('SIGTERM');
    rmSync(runDir, { recursive: true, force: true });
    const message = report.message ?? 'unknown error';
    if (report.unavailable && !ci) {
      process.env.SVC_TEST_CLUSTER_SKIP = message;
      process.stderr.write(`\n[controlplane] SKIPPING the integration suites (allowed outside CI only): ${message}\n`);
      return;
    }
    throw new Error(`test control plane did not start: ${message}`);
  }

  child.unref();
  child.channel?.unref();
  const sharedKubeconfig = join(base, 'kubeconfig');
  copyFileSync(report.state.kubeconfig, sharedKubeconfig);
  process.env.KUBECONFIG_SVC_TEST = report.state.kubeconfig;
  process.env.SVC_TEST_CLUSTER_STATE = report.stateFile;
  delete process.env.SVC_TEST_CLUSTER_SKIP;
  globalThis.__SVC_TEST_SUPERVISOR__ = { child, pid: child.pid ?? 0, runDir, sharedKubeconfig };
}
