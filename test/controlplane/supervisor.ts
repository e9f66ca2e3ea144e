// The process that owns one control plane: finds/builds the binaries, starts etcd + kube-apiserver (or takes the
// cluster of KUBECONFIG when USE_EXISTING_CLUSTER=true), installs the CRDs, writes <state-dir>/state.json and
// <state-dir>/kubeconfig, reports over IPC (when it has a parent channel), then holds the control plane until
// SIGTERM/SIGINT/SIGHUP, or until the process named by --watch-parent is gone. With --node it also runs one node
// (../node/node.ts: kubelet on containerd, kube-proxy, scheduler, controller-manager) with the image built from the
// Dockerfile and Debian's nginx imported, and stops it before the control plane.
//
//   node --import tsx test/controlplane/supervisor.ts --state-dir DIR [--watch-parent PID] [--remove-state-dir] [--helm] [--node]
//
// It is a process of its own because jest loads globalSetup as CommonJS, outside its module mapper, where our ESM
// TypeScript (and client-node) cannot be imported; scripts/cluster.ts runs it detached for `cluster up`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AssetsUnavailableError, ensureAssets, type Assets } from './assets.js';
import { startNode, type Node } from '../node/node.js';
import { ensureNodeImages } from '../node/stack.js';
import { cachedBuildDir } from './assets.js';
import { isUseExistingCluster, startControlPlane, useExistingCluster, type ControlPlane } from './controlplane.js';
import type { ClusterState } from './state.js';

export type SupervisorMessage =
  | { type: 'ready'; state: ClusterState; stateFile: string }
  | { type: 'error'; message: string; unavailable: boolean };

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function log(m: string): void {
  process.stderr.write(`[controlplane] ${m}\n`);
}

function report(msg: SupervisorMessage): void {
  if (process.send && process.connected) process.send(msg);
}

/** What the binaries say they are (they may come from KUBEBUILDER_ASSETS rather than our go.mod pins). */
function binaryVersions(assets: Assets): Record<string, string> {
  const ask = (bin: string, args: string[], re: RegExp) => {
    try {
      return re.exec(execFileSync(bin, args, { encoding: 'utf8', timeout: 10_000 }))?.[1] ?? 'unknown';
    } catch {
      return 'unknown';
    }
  };
  const v: Record<string, string> = {
    'kube-apiserver': ask(assets.kubeApiserver, ['--version'], /Kubernetes (v\S+)/),
    etcd: `v${ask(assets.etcd, ['--version'], /etcd Version: (\S+)/)}`,
  };
  if (assets.helm) v.helm = ask(assets.helm, ['version', '--short'], /^(v[^+\s]+)/);
  return v;
}

async function main(): Promise<void> {
  const stateDir = resolve(arg('--state-dir') ?? '.cache/cluster');
  const watchParent = Number(arg('--watch-parent') ?? 0);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const stateFile = join(stateDir, 'state.json');
  rmSync(stateFile, { force: true });

  let cp: ControlPlane | undefined;
  let node: Node | undefined;
  let stopping = false;
  const withNode = process.argv.includes('--node');
  const shutdown = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log(`stopping (${why})`);
    try {
      await node?.stop();
      await cp?.stop();
    } finally {
      rmSync(process.argv.includes('--remove-state-dir') ? stateDir : stateFile, { recursive: true, force: true });
      process.exit(code);
    }
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => void shutdown(sig));
  if (watchParent > 0) {
    setInterval(() => {
      try {
        process.kill(watchParent, 0);
      } catch {
        void shutdown(`parent ${watchParent} gone`);
      }
    }, 2000);
  }

  try {
    let binaries: Assets | undefined;
    let nodeState: ClusterState['node'];
    if (isUseExistingCluster()) {
      cp = await useExistingCluster();
    } else {
      const assets = await ensureAssets({ helm: withNode || process.argv.includes('--helm') });
      binaries = assets;
      const images = withNode ? await ensureNodeImages() : undefined;
      if (stopping) return;
      // A node runs the chart, which installs (and owns) the CRD: the harness installs none there.
      const crdDir = withNode ? join(stateDir, 'no-crds') : undefined;
      if (crdDir) mkdirSync(crdDir, { recursive: true });
      cp = await startControlPlane({ assets, withNode, ...(crdDir ? { crdDir } : {}) });
      if (images) {
        node = await startNode({ cp, dir: join(stateDir, 'node'), k8sVersion: cachedBuildDir('kubelet').version, log });
        node.importImages([images.image.ref, images.nginxImage]);
        nodeState = { dir: node.dir, images: { svc: images.image.ref, nginx: images.nginxImage } };
        log(`node Ready; images imported: ${images.image.ref}, ${images.nginxImage}`);
      }
    }
    // Our own cluster: a copy of the admin kubeconfig in the state dir (0600). An existing one: KUBECONFIG itself
    // (a copy would break relative certificate paths).
    let kubeconfig = cp.kubeconfigPath;
    if (!cp.existing) {
      kubeconfig = join(stateDir, 'kubeconfig');
      writeFileSync(kubeconfig, readFileSync(cp.kubeconfigPath, 'utf8'), { mode: 0o600 });
    }
    const state: ClusterState = {
      supervisorPid: process.pid,
      server: cp.server,
      kubeconfig,
      existing: cp.existing,
      ...(cp.dir ? { dataDir: cp.dir } : {}),
      ...(cp.ca ? { ca: cp.ca } : {}),
      pids: cp.pids,
      ...(binaries ? { binaries } : {}),
      versions: binaries ? binaryVersions(binaries) : {},
      crds: cp.crds,
      ...(nodeState ? { node: nodeState } : {}),
      startedAt: new Date().toISOString(),
    };
    writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    log(`ready: ${cp.server} (kubeconfig ${kubeconfig})`);
    report({ type: 'ready', state, stateFile });
    if (process.connected) process.disconnect();
    // Hold the control plane until told to stop.
    setInterval(() => undefined, 1 << 30);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    log(`failed: ${message}`);
    report({ type: 'error', message, unavailable: e instanceof AssetsUnavailableError });
    await shutdown('start failed', 1);
  }
}

void main();
