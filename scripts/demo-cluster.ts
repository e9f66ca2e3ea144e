// `npm run demo:cluster`: the whole stack on this machine, the Kubernetes way, to try by hand.
//
//   control plane   reuses the one of `npm run cluster:up` (.cache/cluster), or starts it (and stops it again on exit)
//   namespace       a fresh svc-demo-xxxxx, with the chart's ServiceAccounts, Roles and RoleBindings
//   svc-operator    as its ServiceAccount, the chart's command line, health on 127.0.0.1
//   svc-auth        as its ServiceAccount, ConfigMap source (--snapshot-configmap), on 127.0.0.1
//   nginx           configured as ingress-nginx configures `auth-url`, on 127.0.0.1, in front of a static WAF tree
//                   and a stand-in OGC API
//   svc CLI         closes an example scope (add-token); the token is printed once, here
//
// Then it prints what to try, and stops everything it started on Ctrl-C.
//
//   tsx scripts/demo-cluster.ts [--keep-cluster] [--node | --kind [--down]]
//
// With --node: the chart installed for real on the node of `npm run cluster:up -- --node` instead (scripts/demo-node.ts).
// With --kind: a two-node kind cluster with the chart and Traefik, left running (test/kind/run.sh with KEEP_CLUSTER=true:
// Docker where there is a daemon, else podman with the node image built offline; test/kind/README.md).
// With --kind --down: that cluster deleted again (scripts/kind-kept.ts; `npm run cluster:down` does it too).
//
// Needs what `npm test` needs: the test binaries (built from their Go modules on first use, see
// test/controlplane/README.md) and nginx (installed from Debian's packages when missing and run as root).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { installCrds } from '../test/controlplane/controlplane.js';
import { pidAlive, readState, type ClusterState } from '../test/controlplane/state.js';
import { TOPIC, WAF, API, PROCESSES } from '../test/e2e/support/fixtures.js';
import { ensureNginx, nginxPlan } from '../test/e2e/support/nginx.js';
import { helmBinary } from '../test/stack/helm.js';
import { Stack } from '../test/stack/stack.js';
import { nodeDemo } from './demo-node.js';
import { deleteKept } from './kind-kept.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const clusterDir = join(root, '.cache', 'cluster');
const say = (m: string) => process.stderr.write(`[demo] ${m}\n`);

function clusterCommand(cmd: 'up' | 'down'): Promise<number> {
  // down: the control plane this demo started, never a kind cluster kept by another run (cluster.ts down's default).
  const args = cmd === 'down' ? [cmd, '--control-plane-only'] : [cmd];
  return new Promise((ok) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'cluster.ts'), ...args], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => ok(code ?? 1));
    child.on('error', () => ok(1));
  });
}

async function cluster(): Promise<{ state: ClusterState; started: boolean }> {
  const before = readState(clusterDir);
  const running = before !== undefined && pidAlive(before.supervisorPid);
  say(running ? `reusing the control plane of .cache/cluster (${before.server})` : 'starting a control plane (scripts/cluster.ts up; the first run builds etcd, kube-apiserver and helm: minutes)');
  if ((await clusterCommand('up')) !== 0) throw new Error('scripts/cluster.ts up failed (see above)');
  const state = readState(clusterDir);
  if (!state) throw new Error('scripts/cluster.ts up wrote no .cache/cluster/state.json');
  // Reused or not: the CRD as it is in crds/ now.
  await installCrds(state.kubeconfig, join(root, 'crds'), (m) => say(m));
  return { state, started: !running };
}

/** test/kind/run.sh, keeping its cluster; it prints how to reach and delete it. */
function kindDemo(): void {
  const r = spawnSync('bash', [join(root, 'test', 'kind', 'run.sh')], { cwd: root, stdio: 'inherit', env: { ...process.env, KEEP_CLUSTER: 'true', SKIP_SUITES: 'true' } });
  process.exit(r.status ?? 1);
}

async function main(): Promise<void> {
  const keepCluster = process.argv.includes('--keep-cluster');
  if (process.argv.includes('--node')) return nodeDemo(keepCluster);
  if (process.argv.includes('--kind')) {
    if (process.argv.includes('--down')) process.exit(deleteKept(say) ? 0 : 1);
    return kindDemo();
  }
  if (process.argv.includes('--down')) {
    say('--down goes with --kind (npm run demo:cluster -- --kind --down); the other demos stop on Ctrl-C');
    process.exit(2);
  }
  const plan = nginxPlan();
  const nginxBinary = ensureNginx(plan);
  const helm = await helmBinary();
  const { state, started } = await cluster();

  const admin = new k8s.KubeConfig();
  admin.loadFromFile(state.kubeconfig);
  const ns = await admin.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { generateName: 'svc-demo-', labels: { 'svc.io/demo': 'true' } } } });
  const namespace = ns.metadata?.name ?? '';
  const logDir = join(root, '.cache', 'demo', namespace);
  mkdirSync(logDir, { recursive: true });

  const secrets: string[] = [];
  let stack: Stack | undefined;
  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${why})`);
    await stack?.stop();
    if (started && !keepCluster) await clusterCommand('down');
    else say(`the control plane keeps running (stop it with: npm run cluster:down); namespace ${namespace} stays in it`);
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => void stop(sig));

  try {
    stack = await Stack.start({ helm, adminKubeconfig: state.kubeconfig, namespace, nginxBinary, secrets, tokenLifetimeSeconds: 24 * 3600, logDir, log: say });
  } catch (e) {
    say(`could not start the stack: ${e instanceof Error ? e.message : String(e)}`);
    await stop('start failed', 1);
    return;
  }

  say(`closing the example scope: svc auth add-token --topic-hierarchy ${TOPIC.value}`);
  const added = await stack.cli(['auth', 'add-token', '--topic-hierarchy', TOPIC.value, '--description', 'demo', '-o', 'json']);
  let token = '';
  let id = '';
  try {
    ({ token, id } = JSON.parse(added.stdout) as { token: string; id: string });
  } catch {
    // reported below
  }
  if (added.status !== 0 || !token) {
    say(`svc auth add-token failed (exit ${added.status}):\n${added.stderr}`);
    await stop('add-token failed', 1);
    return;
  }
  secrets.push(token);

  const base = `http://127.0.0.1:${stack.ports.ingress}`;
  const cliPath = relative(process.cwd(), join(root, 'cli', 'main.ts')) || 'cli/main.ts';
  const lines = [
    '',
    `svc access control is running in namespace ${namespace} of ${state.server}`,
    `  svc-operator  as system:serviceaccount:${namespace}:svc-operator, health http://127.0.0.1:${stack.ports.operatorMetrics}/readyz`,
    `  svc-auth      as system:serviceaccount:${namespace}:svc-auth, http://127.0.0.1:${stack.ports.auth} (metrics :${stack.ports.authMetrics})`,
    `  nginx         ingress-nginx auth-url mirror, ${base} (/data: WAF files, /oapi: stand-in API)`,
    `  logs          ${relative(process.cwd(), logDir)}/`,
    '',
    `The scope ${TOPIC.value} is closed. Its token, shown once (it is stored only as a hash):`,
    '',
    `  TOKEN=${token}`,
    '',
    'Try (in another terminal, after setting TOKEN as above):',
    '  # 401: closed',
    `  curl -i ${base}${WAF.topicFile}`,
    '  # 200: the file, with the token as a bearer token or as ?token=',
    `  curl -i -H "Authorization: Bearer $TOKEN" ${base}${WAF.topicFile}`,
    `  curl -i "${base}${WAF.topicFile}?token=$TOKEN"`,
    '  # 200: a neighbouring topic stays open',
    `  curl -i ${base}${WAF.openTopicFile}`,
    '  # 200 until you close the processes (then 401 without a token)',
    `  curl -i -X POST ${base}${API.execution}`,
    '',
    'Manage tokens with the CLI, as svc-management (the chart\'s identity for it); changes reach nginx within a second or two:',
    `  SVC="npx tsx ${cliPath} --kubeconfig ${stack.kubeconfigs['svc-management']} -n ${namespace}"`,
    '  $SVC auth show',
    `  $SVC auth add-token --path ${PROCESSES.value}`,
    `  $SVC auth add-token --topic-hierarchy ${TOPIC.value} --expires-in 1h`,
    `  $SVC auth remove-token --topic-hierarchy ${TOPIC.value} --id ${id}    # refused again`,
    `  $SVC auth remove-tokens --topic-hierarchy ${TOPIC.value}    # open`,
    '',
    'Look at the objects (admin):',
    `  export KUBECONFIG=${state.kubeconfig}`,
    `  kubectl -n ${namespace} get protectedscopes`,
    `  kubectl -n ${namespace} get configmaps -l auth.svc.io/snapshot`,
    `  kubectl -n ${namespace} get events`,
    '',
    `Ctrl-C stops svc-operator, svc-auth and nginx${started && !keepCluster ? ' and the control plane' : ''}.`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  // Hold until a signal.
  setInterval(() => {
    if (!stopping && (!stack?.operator?.running || !stack?.auth?.running)) void stop(`${stack?.operator?.running ? 'svc-auth' : 'svc-operator'} exited; see ${logDir}`, 1);
  }, 1000);
}

main().catch((e: unknown) => {
  say(e instanceof Error ? e.stack ?? e.message : String(e));
  process.exit(1);
});
