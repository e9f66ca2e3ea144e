// A control plane that outlives the command, for development (`npm run cluster:up` / `npm run cluster:down`).
//
//   tsx scripts/cluster.ts up       start etcd + kube-apiserver in the background (or reuse the running one),
//                                   install crds/, print `export KUBECONFIG=...`
//   tsx scripts/cluster.ts up --node   the same with one node (kubelet on containerd, kube-proxy, scheduler,
//                                   controller-manager) and the image built from the Dockerfile imported into it,
//                                   no CRDs (the chart brings them): root, Linux, the packages of test/node/README.md
//   tsx scripts/cluster.ts down     stop it, and delete the kind cluster `npm run demo:cluster -- --kind` kept
//                                   (scripts/kind-kept.ts); --control-plane-only leaves that one
//   tsx scripts/cluster.ts status   print the state (exit 1 when not running)
//
// State lives in .cache/cluster/ (state.json, kubeconfig, cluster.log). The background process is
// test/controlplane/supervisor.ts, the same one the jest global setup uses. USE_EXISTING_CLUSTER=true is honoured
// (then `up` only installs the CRDs into the cluster of KUBECONFIG).
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pidAlive, pidRuns, readState, type ClusterState } from '../test/controlplane/state.js';
import { reapNode } from '../test/node/node.js';
import { deleteKept, readKept } from './kind-kept.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const stateDir = join(root, '.cache', 'cluster');
const logFile = join(stateDir, 'cluster.log');
const supervisor = join(root, 'test', 'controlplane', 'supervisor.ts');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function err(m: string): void {
  process.stderr.write(`${m}\n`);
}

async function readyz(state: ClusterState): Promise<boolean> {
  try {
    const k8s = await import('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const health = new k8s.Health(kc);
    return await health.readyz({ timeout: 3000 });
  } catch {
    return false;
  }
}

/** The running cluster's state, or undefined (cleaning up after a supervisor that died without stopping). */
function running(): ClusterState | undefined {
  const state = readState(stateDir);
  if (!state) return undefined;
  if (pidAlive(state.supervisorPid)) return state;
  // The supervisor was killed (SIGKILL, reboot): stop what it left behind, if those pids are still ours.
  if (state.pids.kubeApiserver && state.binaries && pidRuns(state.pids.kubeApiserver, state.binaries.kubeApiserver)) {
    process.kill(state.pids.kubeApiserver, 'SIGKILL');
  }
  if (state.pids.etcd && state.binaries && pidRuns(state.pids.etcd, state.binaries.etcd)) process.kill(state.pids.etcd, 'SIGKILL');
  if (state.node) reapNode(state.node.dir, err);
  if (state.dataDir) rmSync(state.dataDir, { recursive: true, force: true });
  rmSync(join(stateDir, 'state.json'), { force: true });
  err(`cleaned up after a dead cluster supervisor (pid ${state.supervisorPid})`);
  return undefined;
}

function printExport(state: ClusterState): void {
  err(`cluster ready: ${state.server}${state.versions['kube-apiserver'] ? ` (kube-apiserver ${state.versions['kube-apiserver']}, etcd ${state.versions.etcd})` : ''}`);
  if (state.node) err(`node svc-node Ready (pods on 10.244.0.0/24, reachable from this host); images ${state.node.images.svc}, ${state.node.images.nginx}; no CRDs until the chart is installed (npm run demo:cluster -- --node)`);
  process.stdout.write(`export KUBECONFIG=${state.kubeconfig}\n`);
}

/** Echoes what the background process writes to its log while `up` waits for it. */
function follow(file: string): () => void {
  let offset = existsSync(file) ? statSync(file).size : 0;
  const buf = Buffer.alloc(64 * 1024);
  const timer = setInterval(() => {
    if (!existsSync(file)) return;
    const fd = openSync(file, 'r');
    try {
      for (let n; (n = readSync(fd, buf, 0, buf.length, offset)) > 0; offset += n) process.stderr.write(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
  }, 300);
  return () => clearInterval(timer);
}

const withNode = process.argv.includes('--node');

async function up(): Promise<number> {
  const existing = running();
  if (existing) {
    if (withNode && !existing.node) {
      err('a control plane without a node is running: `npm run cluster:down` first, then `npm run cluster:up -- --node`');
      return 2;
    }
    if (await readyz(existing)) {
      printExport(existing);
      return 0;
    }
    err(`cluster supervisor ${existing.supervisorPid} is running but the API server is not ready; try \`down\` then \`up\`. Log: ${logFile}`);
    return 1;
  }
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', supervisor, '--state-dir', stateDir, ...(withNode ? ['--node'] : [])], {
    cwd: root,
    detached: true,
    stdio: ['ignore', fd, fd, 'ipc'],
  });
  closeSync(fd);
  err(`starting the control plane in the background (pid ${child.pid}; log ${logFile})`);
  const stopFollowing = follow(logFile);
  const result = await new Promise<{ type: string; message?: string; state?: ClusterState }>((ok) => {
    child.once('message', (m) => ok(m as { type: string }));
    child.once('exit', (code, signal) => ok({ type: 'error', message: `supervisor exited (${signal ?? code})` }));
    child.once('error', (e) => ok({ type: 'error', message: e.message }));
  });
  await sleep(350); // let the follower print the last lines
  stopFollowing();
  if (child.connected) child.disconnect();
  child.unref();
  if (result.type !== 'ready' || !result.state) {
    err(`cluster did not start: ${result.message ?? 'unknown error'}`);
    return 1;
  }
  printExport(result.state);
  return 0;
}

/** The kind cluster a demo kept, when there is one and --control-plane-only does not leave it. */
function downKind(): number {
  if (process.argv.includes('--control-plane-only') || !readKept()) return 0;
  return deleteKept(err) ? 0 : 1;
}

async function down(): Promise<number> {
  const kind = downKind();
  const state = running();
  if (!state) {
    err('no cluster running');
    return kind;
  }
  process.kill(state.supervisorPid, 'SIGTERM');
  // A node takes longer: every pod is deleted through the kubelet before it stops.
  const deadline = Date.now() + (state.node ? 150_000 : 30_000);
  while (pidAlive(state.supervisorPid) && Date.now() < deadline) await sleep(100);
  if (pidAlive(state.supervisorPid)) {
    process.kill(state.supervisorPid, 'SIGKILL');
    await sleep(200);
    running(); // cleans up its children
  }
  if (!state.existing) rmSync(join(stateDir, 'kubeconfig'), { force: true });
  err(`cluster stopped (${state.server})`);
  return kind;
}

async function status(): Promise<number> {
  const state = running();
  if (!state) {
    err('no cluster running');
    return 1;
  }
  const ready = await readyz(state);
  process.stdout.write(`${JSON.stringify({ ...state, ready }, null, 2)}\n`);
  return ready ? 0 : 1;
}

const commands: Record<string, () => Promise<number>> = { up, down, status };
const cmd = process.argv[2] ?? '';
const run = commands[cmd];
if (!run) {
  err('usage: tsx scripts/cluster.ts up [--node] | down [--control-plane-only] | status');
  process.exit(2);
}
run().then((code) => process.exit(code), (e: unknown) => {
  err(e instanceof Error ? e.stack ?? e.message : String(e));
  process.exit(1);
});
