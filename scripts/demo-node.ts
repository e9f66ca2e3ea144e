// `npm run demo:cluster -- --node`: the chart as deployed, on the node of `npm run cluster:up -- --node`.
//
//   cluster     reuses the running control plane with a node, or starts one (and stops it again on exit)
//   chart       `helm install --wait` of charts/svc with the image built from the Dockerfile (never pulled)
//   nginx       a pod of Debian's nginx configured as ingress-nginx configures `auth-url`, its auth location on the
//               svc-auth Service, in front of the e2e suite's WAF files and a stand-in OGC API
//   svc CLI     `kubectl exec deploy/svc-management -- svc auth add-token …` closes an example topic; the token is
//               printed once, here
//
// Then it prints the curl commands to try (pod IPs are reachable from this host) and, on Ctrl-C, removes the nginx
// pod and the release (and the cluster, if it started it).
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readState } from '../test/controlplane/state.js';
import { TOPIC, WAF, API, type WafFile } from '../test/e2e/support/fixtures.js';
import { NGINX_POD, NGINX_PORT, nginxPodManifests } from '../test/node/nginx-pod.js';
import { installChart, NAMESPACE, RELEASE } from '../test/node/stack.js';
import { helmBinary, runHelm } from '../test/stack/helm.js';
import { kubectl } from '../test/stack/kubectl.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const say = (m: string) => process.stderr.write(`[demo] ${m}\n`);

function cluster(args: string[]): Promise<number> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'cluster.ts'), ...args], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => ok(code ?? 1));
    child.on('error', () => ok(1));
  });
}

export async function nodeDemo(keepCluster: boolean): Promise<void> {
  const before = readState(join(root, '.cache', 'cluster'));
  say(before?.node ? 'reusing the node of .cache/cluster' : 'starting a control plane with a node (npm run cluster:up -- --node; the first run builds the node binaries and the images: many minutes)');
  if ((await cluster(['up', '--node'])) !== 0) throw new Error('npm run cluster:up -- --node failed (see above)');
  const started = !before?.node;
  const state = readState(join(root, '.cache', 'cluster'));
  if (!state?.node) throw new Error('.cache/cluster/state.json names no node');
  const kubeconfig = state.kubeconfig;
  const k = (args: string[], input?: string) => {
    const r = kubectl(kubeconfig, args, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const helm = await helmBinary();

  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${why})`);
    kubectl(kubeconfig, ['delete', '-n', NAMESPACE, 'pod', NGINX_POD, 'configmap', `${NGINX_POD}-conf`, `${NGINX_POD}-waf`, '--ignore-not-found', '--wait=false']);
    runHelm(helm, ['--kubeconfig', kubeconfig, 'uninstall', RELEASE, '-n', NAMESPACE, '--wait']);
    if (started && !keepCluster) await cluster(['down']);
    else say('the cluster keeps running (stop it with: npm run cluster:down)');
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => void stop(sig));

  if (runHelm(helm, ['--kubeconfig', kubeconfig, 'status', RELEASE, '-n', NAMESPACE]).status !== 0) {
    say(`helm install --wait ${RELEASE} charts/svc (image ${state.node.images.svc})`);
    installChart(helm, kubeconfig, state.node.images.svc);
  }
  const markers = Object.fromEntries(Object.keys(WAF).map((name) => [name, `the WAF file ${name}`])) as Record<WafFile, string>;
  const service = JSON.parse(k(['get', 'service', '-n', NAMESPACE, 'svc-auth', '-o', 'json'])) as { spec: { clusterIP: string } };
  k(['apply', '-f', '-'], nginxPodManifests({ namespace: NAMESPACE, image: state.node.images.nginx, authHost: service.spec.clusterIP, authPort: 8080, markers }));
  k(['wait', '-n', NAMESPACE, `pod/${NGINX_POD}`, '--for=condition=Ready', '--timeout=120s']);
  const ip = (JSON.parse(k(['get', 'pod', '-n', NAMESPACE, NGINX_POD, '-o', 'json'])) as { status: { podIP: string } }).status.podIP;

  const exec = `kubectl -n ${NAMESPACE} exec deploy/svc-management -- svc auth`;
  say(`closing the example topic: ${exec} add-token --topic-hierarchy ${TOPIC.value}`);
  const added = JSON.parse(k(['exec', '-n', NAMESPACE, 'deploy/svc-management', '--', 'svc', 'auth', 'add-token', '--topic-hierarchy', TOPIC.value, '--description', 'demo', '-o', 'json'])) as { token: string; id: string };
  const base = `http://${ip}:${NGINX_PORT}`;
  process.stdout.write(`${[
    '',
    `svc access control runs on node svc-node (chart release ${RELEASE} in ${NAMESPACE}); nginx pod at ${base}`,
    '',
    `The topic ${TOPIC.value} is closed. Its token, shown once (it is stored only as a hash):`,
    '',
    `  TOKEN=${added.token}`,
    '',
    'Try:',
    '  # 401: closed',
    `  curl -i ${base}${WAF.topicFile}`,
    '  # 200: the file, with the token as a bearer token or as ?token=',
    `  curl -i -H "Authorization: Bearer $TOKEN" ${base}${WAF.topicFile}`,
    `  curl -i "${base}${WAF.topicFile}?token=$TOKEN"`,
    '  # 200: a neighbouring topic stays open; the stand-in API behind /oapi',
    `  curl -i ${base}${WAF.openTopicFile}`,
    `  curl -i ${base}${API.openItems}`,
    '',
    'Manage tokens as a user would:',
    `  export KUBECONFIG=${kubeconfig}`,
    `  ${exec} show`,
    `  ${exec} remove-token --topic-hierarchy ${TOPIC.value} --id ${added.id}    # that token is refused again`,
    `  ${exec} remove-tokens --topic-hierarchy ${TOPIC.value}    # the topic opens`,
    `  kubectl -n ${NAMESPACE} get pods -o wide; kubectl -n ${NAMESPACE} rollout restart deploy/svc-auth`,
    '',
    `Ctrl-C removes the nginx pod and the release${started && !keepCluster ? ', and stops the cluster' : ''}.`,
    '',
  ].join('\n')}\n`);
  setInterval(() => undefined, 1 << 30);
}
