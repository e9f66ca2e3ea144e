// Jest globalTeardown of the `integration` project: stops the control plane global-setup.ts started.
// Self-contained for the same reason as global-setup.ts (jest loads it as CommonJS, without our module mapper).
import { rmSync } from 'node:fs';
import type { SupervisorHandle } from './global-setup.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export default async function globalTeardown(): Promise<void> {
  const handle: SupervisorHandle | undefined = (globalThis as { __SVC_TEST_SUPERVISOR__?: SupervisorHandle }).__SVC_TEST_SUPERVISOR__;
  if (!handle) return;
  (globalThis as { __SVC_TEST_SUPERVISOR__?: SupervisorHandle }).__SVC_TEST_SUPERVISOR__ = undefined;
  const { pid, runDir, sharedKubeconfig } = handle;
  if (pid > 0 && alive(pid)) {
    process.kill(pid, 'SIGTERM');
    // The supervisor stops kube-apiserver, then etcd (10 s grace each), then exits.
    const deadline = Date.now() + 30_000;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  rmSync(runDir, { recursive: true, force: true });
  rmSync(sharedKubeconfig, { force: true });
  delete process.env.KUBECONFIG_SVC_TEST;
  delete process.env.SVC_TEST_CLUSTER_STATE;
}
