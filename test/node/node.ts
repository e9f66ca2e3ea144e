// One real node beside the test control plane: containerd (runc) with CNI bridge networking, a kubelet, kube-proxy,
// kube-scheduler and kube-controller-manager. Everything lives under one working dir and on names of our own
// (bridge svcnode0, pod CIDR 10.244.0.0/24, containerd's own socket and root), so stop() can take it all down again.
//
// Facts of these hosts that shape it (see README.md beside this file):
// - cgroup v1 hybrid: cgroupDriver cgroupfs, containerd SystemdCgroup=false, the kubelet's failCgroupV1=false;
//   no per-QoS cgroup tree (cgroupsPerQOS=false), so nothing of ours is left in /sys/fs/cgroup but pod cgroups,
//   which go with their pods.
// - runc, not crun (crun refuses the hybrid hierarchy).
// - No image registry: images are imported into containerd's k8s.io namespace; the sandbox ("pause") image is
//   Kubernetes' own build/pause/linux/pause.c compiled here.
// - The apiserver listens on 127.0.0.1 only. Pods reach it the way they reach it in any cluster, through the
//   `kubernetes` Service (10.0.0.1:443, kube-proxy's DNAT) whose EndpointSlice names a forwarder on the bridge's
//   own address: apiserver-relay.mjs, a process of its own, relays to the loopback listener.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNodeAssets, type NodeComponent } from '../controlplane/assets.js';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { podmanOk } from '../image/podman.js';
import { canConnect, freePorts } from '../support/ports.js';
import { Supervised, untilWhileRunning } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

export const BRIDGE = 'svcnode0';
export const POD_SUBNET = '10.244.0.0/24';
export const GATEWAY = '10.244.0.1';
export const NODE_NAME = 'svc-node';
const CNI_NETWORK = 'svc-node';
/** The first address of the control plane's --service-cluster-ip-range: the `kubernetes` Service. */
const KUBERNETES_SERVICE_IP = '10.0.0.1';

export interface Node {
  dir: string;
  containerdSocket: string;
  stop(): Promise<void>;
  /** Imports podman images into containerd (k8s.io namespace), so pods need no pull. */
  importImages(refs: readonly string[]): void;
}

function run(cmd: string, args: readonly string[], allowFail = false): string {
  const r = spawnSync(cmd, [...args], { encoding: 'utf8' });
  if (r.status !== 0 && !allowFail) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr ?? '').trim()}${r.error ? r.error.message : ''}`);
  return r.stdout ?? '';
}

// Each daemon logs into a file of the node's working dir, kept with SVC_CONTROLPLANE_KEEP=true.
function start(name: string, bin: string, args: string[], dir: string): Supervised {
  return Supervised.spawn(name, bin, args, { output: { file: join(dir, `${name}.log`) } });
}

function gomodcache(): string {
  return run('go', ['env', 'GOMODCACHE']).trim();
}

/** localhost/pause:<k8s version>: Kubernetes' pause.c, compiled statically here (the sandbox image). */
export function ensurePauseImage(k8sVersion: string, workDir: string): string {
  const ref = `localhost/pause:${k8sVersion}`;
  if (spawnSync('podman', ['image', 'exists', ref]).status === 0) return ref;
  const src = join(gomodcache(), `k8s.io/kubernetes@${k8sVersion}`, 'build/pause/linux/pause.c');
  if (!existsSync(src)) throw new Error(`${src} missing: build the node assets first (they download k8s.io/kubernetes ${k8sVersion})`);
  const root = join(workDir, 'pause-rootfs');
  mkdirSync(root, { recursive: true });
  run('cc', ['-Os', '-static', '-Wall', '-Werror', `-DVERSION=${k8sVersion}`, '-o', join(root, 'pause'), src]);
  run('strip', [join(root, 'pause')], true);
  const tar = spawnSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 64 * 1024 * 1024 });
  if (tar.status !== 0) throw new Error('tar of the pause rootfs failed');
  podmanOk(['import', '--change', 'ENTRYPOINT ["/pause"]', '--change', 'USER 65535:65535', '-', ref], { input: tar.stdout });
  rmSync(root, { recursive: true, force: true });
  return ref;
}

function containerdConfig(dir: string, socket: string, pauseImage: string): string {
  // containerd 1.6 (Debian 12), config version 2.
  return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pauseImage}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Root here lacks CAP_SYS_RESOURCE, so no process may lower its oom_score_adj (the kubelet asks -998 for
  # sandboxes, -997 for Guaranteed pods); runc's init would fail with "can't get final child's PID from pipe".
  # containerd's option for rootless hosts clamps the score to no lower than containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "${process.env.SVC_NODE_RUNC ?? '/usr/sbin/runc'}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${dir}/cni/net.d"
`;
}

function cniConfig(): string {
  // ipMasq off: pods have nothing to reach outside this host; no SNAT rule is added for them.
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: CNI_NETWORK,
    plugins: [
      {
        type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: false, hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET, gateway: GATEWAY }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: '@DATA@' },
      },
      { type: 'loopback' },
    ],
  }, null, 2);
}

function kubeletConfig(dir: string, socket: string, port: number, healthzPort: number, caFile: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${GATEWAY}
port: ${port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${healthzPort}
containerRuntimeEndpoint: unix://${socket}
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${caFile}}
authorization:
  mode: Webhook
resolvConf: ""
# A busy shared disk must not taint the node.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
registerNode: true
maxPods: 50
podPidsLimit: 4096
`;
}

function kubeProxyConfig(kubeconfig: string, healthPort: number, metricsPort: number): string {
  // masqueradeAll: a pod reaching a Service whose endpoint is on the same bridge gets its reply back through the
  // host (conntrack undoes the DNAT) without br_netfilter having to see bridged frames.
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: ${kubeconfig}}
hostnameOverride: ${NODE_NAME}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:${healthPort}
metricsBindAddress: 127.0.0.1:${metricsPort}
clusterCIDR: ${POD_SUBNET}
iptables: {masqueradeAll: true}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
nodePortAddresses: [${GATEWAY}/32]
`;
}

/** Polls `check` every 500 ms; fails early, with the logs, when one of `procs` exits. */
function waitFor(what: string, timeoutMs: number, procs: Supervised[], check: () => Promise<boolean> | boolean): Promise<boolean> {
  return untilWhileRunning(what, timeoutMs, procs, check, { intervalMs: 500 });
}

export interface StartNodeOptions {
  cp: ControlPlane;
  dir: string;
  log?: (m: string) => void;
  k8sVersion: string;
}

function kubectlJson(kubeconfig: string, args: string[]): unknown {
  return JSON.parse(run('kubectl', ['--kubeconfig', kubeconfig, ...args, '-o', 'json']));
}

/**
 * The kubelet's own iptables chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) and anything kube-proxy's
 * --cleanup left: every rule jumping to a KUBE-* chain, then the chains. One iptables-restore --noflush per table,
 * which parses the quoted comments as iptables-save wrote them.
 */
export function removeKubeChains(): void {
  for (const [save, restore] of [['iptables-save', 'iptables-restore'], ['ip6tables-save', 'ip6tables-restore']] as const) {
    for (const table of ['filter', 'nat', 'mangle', 'raw']) {
      const lines = run(save, ['-t', table], true).split('\n');
      const chains = lines.filter((l) => l.startsWith(':KUBE-')).map((l) => l.slice(1).split(' ')[0]!);
      if (chains.length === 0) continue;
      const jumps = lines.filter((l) => l.startsWith('-A ') && !l.startsWith('-A KUBE-') && /-j KUBE-/.test(l)).map((l) => `-D ${l.slice(3)}`);
      const input = [`*${table}`, ...jumps, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`), 'COMMIT', ''].join('\n');
      const r = spawnSync(restore, ['--noflush'], { input, encoding: 'utf8' });
      if (r.status !== 0) process.stderr.write(`[node] ${restore} (${table}) cleanup: ${r.stderr}\n`);
    }
  }
}

/** Removes what a node left behind: iptables rules of kube-proxy and the kubelet, the bridge, the mounts under dir. */
export function cleanupHost(dir: string, kubeProxy?: string): void {
  if (kubeProxy) run(kubeProxy, ['--cleanup', '--v=0'], true);
  removeKubeChains();
  // Whatever the kubelet or containerd still had mounted under our dir (pod volumes, rootfs, shm, netns).
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '')
    .map((m) => m.replace(/\\040/g, ' ')).filter((m) => m.startsWith(`${dir}/`));
  for (const m of mounts.sort((a, b) => b.length - a.length)) run('umount', ['-l', m], true);
  run('ip', ['link', 'del', BRIDGE], true);
}

/**
 * The working dir of the node this host runs, if any. The bridge, the pod CIDR and the iptables chains are host-wide,
 * so there is one node per host; the marker lets the next start (or `cluster:down`) take down a node whose owner was
 * killed before it could stop it.
 */
const MARKER = '/run/svc-access-control-node';

/** Stops what a killed owner left running of the node in `dir`: its processes, containers, mounts, bridge, rules. */
export function reapNode(dir: string, log: (m: string) => void = () => undefined): void {
  const socket = join(dir, 'containerd.sock');
  const ours = (cmd: string) => (cmd.includes(`${dir}/`) || cmd.includes('apiserver-relay.mjs')) && !cmd.includes('containerd-shim') && !/\bcontainerd\b --config/.test(cmd);
  const pids = (match: (cmd: string) => boolean) => readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid).filter((p) => {
    try {
      return match(readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      return false;
    }
  }).map(Number);
  const kill = (list: number[]) => list.forEach((pid) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  // The kubelet, kube-proxy, the controllers and the relay first (no restarts), then the containers through the
  // still-running containerd, then containerd and its shims.
  const found = pids(ours);
  kill(found);
  if (existsSync(socket)) removeAllContainers(socket);
  kill(pids((cmd) => cmd.startsWith('containerd --config') && cmd.includes(`${dir}/`)));
  killShims(socket);
  cleanupHost(dir);
  const existed = existsSync(dir);
  rmSync(dir, { recursive: true, force: true });
  if (existed || found.length > 0) log(`reaped a node left running in ${dir} (${found.length} processes)`);
}

function reapLeftNode(log: (m: string) => void): void {
  let left: string;
  try {
    left = readFileSync(MARKER, 'utf8').trim();
  } catch {
    return;
  }
  if (left.startsWith('/')) reapNode(left, log);
  rmSync(MARKER, { force: true });
}

export async function startNode(opts: StartNodeOptions): Promise<Node> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[node] ${m}\n`));
  const { cp, dir } = opts;
  if (!cp.ca || !cp.dir) throw new Error('the node needs the harness control plane (not USE_EXISTING_CLUSTER)');
  const bins = await ensureNodeAssets();
  reapLeftNode(log);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(MARKER, `${dir}\n`);
  for (const d of ['cni/net.d', 'cni/ipam', 'kubelet', 'containerd']) mkdirSync(join(dir, d), { recursive: true });
  const procs: Supervised[] = [];
  const socket = join(dir, 'containerd.sock');

  const stop = async (): Promise<void> => {
    const kubelet = procs.find((p) => p.name === 'kubelet');
    const containerd = procs.find((p) => p.name === 'containerd');
    // No new pods (controllers and scheduler stop), then every pod deleted while the kubelet still runs: it stops
    // each sandbox through CRI, which tears its network down through CNI (veth, IP, netns) as in any cluster.
    for (const p of procs.filter((x) => x.name === 'kube-controller-manager' || x.name === 'kube-scheduler')) await p.stop();
    if (kubelet?.running) {
      spawnSync('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'delete', 'pods', '--all', '-A', '--grace-period=0', '--force', '--wait=false'], { timeout: 30_000 });
      // Best effort: what is still running after a minute is removed with containerd below.
      await waitUntil(() => !/RUNNING/.test(run('ctr', ['-a', socket, '-n', 'k8s.io', 'tasks', 'ls'], true)),
        { what: 'the pods\' tasks to stop', timeoutMs: 60_000, intervalMs: 500 }).catch(() => undefined);
    }
    await kubelet?.stop();
    if (containerd?.running) removeAllContainers(socket);
    for (const p of [...procs].reverse()) await p.stop();
    // runc shims outlive containerd by design; any still here are ours (their -address is our socket).
    killShims(socket);
    cleanupHost(dir, bins['kube-proxy']);
    if ((process.env.SVC_CONTROLPLANE_KEEP ?? '') !== 'true') rmSync(dir, { recursive: true, force: true });
    rmSync(MARKER, { force: true });
  };

  try {
    // The bridge with its gateway address first: the relay listens on it before any pod exists.
    run('ip', ['link', 'add', BRIDGE, 'type', 'bridge'], true);
    run('ip', ['addr', 'replace', `${GATEWAY}/24`, 'dev', BRIDGE]);
    run('ip', ['link', 'set', BRIDGE, 'up']);

    const pauseImage = ensurePauseImage(opts.k8sVersion, dir);
    writeFileSync(join(dir, 'containerd.toml'), containerdConfig(dir, socket, pauseImage));
    writeFileSync(join(dir, 'cni/net.d/10-svc-node.conflist'), cniConfig().replace('@DATA@', join(dir, 'cni/ipam')));
    const containerd = start('containerd', 'containerd', ['--config', join(dir, 'containerd.toml')], dir);
    procs.push(containerd);
    await waitFor('containerd', 30_000, [containerd], () => spawnSync('ctr', ['-a', socket, 'version']).status === 0);
    log('containerd ready');

    const images = [pauseImage];
    importIntoContainerd(socket, images, dir);

    const apiPort = Number(new URL(cp.server).port);
    const [relayPort] = await freePorts(1);
    const relay = start('apiserver-relay', process.execPath, [fileURLToPath(new URL('./apiserver-relay.mjs', import.meta.url)), GATEWAY, String(relayPort), '127.0.0.1', String(apiPort)], dir);
    procs.push(relay);
    await waitFor('the apiserver relay', 10_000, [relay], () => canConnect(relayPort!, GATEWAY, 1000));
    // The kubernetes Service's endpoints (the apiserver runs with --endpoint-reconciler-type=none).
    const admin = cp.kubeconfigPath;
    const slice = {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
      metadata: { name: 'kubernetes-svc-node', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes', 'endpointslice.kubernetes.io/managed-by': 'svc-node-harness' } },
      addressType: 'IPv4', endpoints: [{ addresses: [GATEWAY], conditions: { ready: true } }],
      ports: [{ name: 'https', port: relayPort, protocol: 'TCP' }],
    };
    spawnSync('kubectl', ['--kubeconfig', admin, 'apply', '-f', '-'], { input: JSON.stringify(slice), encoding: 'utf8' });

    const [kubeletPort, kubeletHealthz, proxyHealth, proxyMetrics, schedPort, cmPort] = await freePorts(6);
    const nodeKubeconfig = cp.kubeconfigFor(`system:node:${NODE_NAME}`, ['system:nodes']);
    const proxyKubeconfig = cp.kubeconfigFor('system:kube-proxy', []);
    const schedKubeconfig = cp.kubeconfigFor('system:kube-scheduler', []);
    const cmKubeconfig = cp.kubeconfigFor('system:kube-controller-manager', []);

    const pkiDir = join(cp.dir, 'pki');
    const cm = start('kube-controller-manager', bins['kube-controller-manager'], [
      `--kubeconfig=${cmKubeconfig}`, `--authentication-kubeconfig=${cmKubeconfig}`, `--authorization-kubeconfig=${cmKubeconfig}`,
      '--bind-address=127.0.0.1', `--secure-port=${cmPort}`, '--leader-elect=false',
      `--root-ca-file=${cp.ca.cert}`, `--service-account-private-key-file=${join(pkiDir, 'sa.key')}`,
      '--use-service-account-credentials=true', '--service-cluster-ip-range=10.0.0.0/24',
      '--controllers=*,-nodeipam',
      `--cert-dir=${join(dir, 'kcm-certs')}`, '--v=1',
    ], dir);
    procs.push(cm);
    const sched = start('kube-scheduler', bins['kube-scheduler'], [
      `--kubeconfig=${schedKubeconfig}`, `--authentication-kubeconfig=${schedKubeconfig}`, `--authorization-kubeconfig=${schedKubeconfig}`,
      '--bind-address=127.0.0.1', `--secure-port=${schedPort}`, '--leader-elect=false', `--cert-dir=${join(dir, 'sched-certs')}`, '--v=1',
    ], dir);
    procs.push(sched);

    writeFileSync(join(dir, 'kubelet.yaml'), kubeletConfig(dir, socket, kubeletPort!, kubeletHealthz!, cp.ca.cert));
    const kubelet = start('kubelet', bins.kubelet, [
      `--config=${join(dir, 'kubelet.yaml')}`, `--kubeconfig=${nodeKubeconfig}`, `--root-dir=${join(dir, 'kubelet')}`,
      `--cert-dir=${join(dir, 'kubelet-certs')}`, `--hostname-override=${NODE_NAME}`, `--node-ip=${GATEWAY}`, '--v=1',
    ], dir);
    procs.push(kubelet);

    writeFileSync(join(dir, 'kube-proxy.yaml'), kubeProxyConfig(proxyKubeconfig, proxyHealth!, proxyMetrics!));
    const proxy = start('kube-proxy', bins['kube-proxy'], [`--config=${join(dir, 'kube-proxy.yaml')}`, '--v=1'], dir);
    procs.push(proxy);

    await waitFor(`node ${NODE_NAME} Ready`, 120_000, procs, () => {
      const node = kubectlJson(admin, ['get', 'node', NODE_NAME]) as { status?: { conditions?: { type: string; status: string }[] } };
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    });
    log(`node ${NODE_NAME} Ready`);
    // Pods reach the API through the kubernetes Service; until kube-proxy has programmed it their clients' first
    // connections go nowhere and wait out TCP's SYN retries. The host's own connections pass the same DNAT rules.
    await waitFor('kube-proxy: the kubernetes Service', 60_000, procs, () => canConnect(443, KUBERNETES_SERVICE_IP, 1000));
    await waitFor('the default ServiceAccount', 60_000, procs, () => spawnSync('kubectl', ['--kubeconfig', admin, 'get', 'sa', 'default', '-n', 'default']).status === 0);
    return {
      dir,
      containerdSocket: socket,
      stop,
      importImages: (refs) => importIntoContainerd(socket, refs, dir),
    };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}

export type NodeBinaries = Record<NodeComponent, string>;

function importIntoContainerd(socket: string, refs: readonly string[], dir: string): void {
  for (const ref of refs) {
    const archive = join(dir, 'image.tar');
    rmSync(archive, { force: true });
    podmanOk(['save', '--format', 'docker-archive', '-o', archive, ref]);
    run('ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', '--no-unpack', archive]);
    rmSync(archive, { force: true });
  }
}

/** Every CRI sandbox removed (network torn down by CNI, containers stopped), through containerd's CRI as the kubelet would. */
function removeAllContainers(socket: string): void {
  // ctr speaks containerd's own API; the CRI sandboxes are its containers in namespace k8s.io. Killing the tasks
  // stops the pods; the network namespaces are then removed with their veths below.
  const ids = run('ctr', ['-a', socket, '-n', 'k8s.io', 'containers', 'ls', '-q'], true).split('\n').filter(Boolean);
  for (const id of ids) run('ctr', ['-a', socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id], true);
  for (const id of ids) {
    for (let i = 0; i < 20; i++) {
      if (spawnSync('ctr', ['-a', socket, '-n', 'k8s.io', 'tasks', 'delete', id]).status === 0) break;
      spawnSync('sleep', ['0.2']);
    }
    run('ctr', ['-a', socket, '-n', 'k8s.io', 'containers', 'delete', id], true);
  }
}

function killShims(socket: string): void {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmd.startsWith('/usr/bin/containerd-shim') && cmd.includes(socket)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}
