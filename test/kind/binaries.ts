// Every binary the kind node image and the kind run need, found or built into the version-keyed tool cache
// (../support/cache.ts) the way ../controlplane/assets.ts builds the control plane's:
//
//   kube-apiserver, etcd                      ensureAssets (test/controlplane/go/{kube-apiserver,etcd})
//   kubelet, kube-scheduler, kube-controller-manager, kube-proxy
//                                             ensureNodeAssets (test/controlplane/go/node)
//   kubeadm, kubectl                          ./go/kubeadm: the node module's pins plus these two tools
//   kind, coredns, local-path-provisioner, kube-router
//                                             their own Go modules, pinned by version and h1 sum
//
// One at a time: the machines have 2 cores.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AssetsUnavailableError, ensureAssets, ensureNodeAssets, ensurePinnedModuleBinary, ensureTraefik, goBuildIntoCache, goEnv, goVersion,
  kubeVersionFlags, requiredVersion, type PinnedModuleBinary,
} from '../controlplane/assets.js';
import { cacheEntryDir, isExecutable } from '../support/cache.js';

const here = dirname(fileURLToPath(import.meta.url));
const kubeadmModuleDir = join(here, 'go', 'kubeadm');

export const KIND_VERSION = 'v0.33.0';

const pinned: Record<'kind' | 'coredns' | 'local-path-provisioner' | 'kube-router', PinnedModuleBinary> = {
  kind: {
    name: 'kind', module: 'sigs.k8s.io/kind', version: KIND_VERSION, sum: 'h1:AjvDv3vOygb/VKLVQW87lfktIBzkxR8Ump9DjxC8+Lk=',
    target: '.', ldflags: '', envVar: 'TEST_ASSET_KIND', goNeeded: '1.17', coldMinutes: 1,
  },
  // kubeadm v1.37's CoreDNSVersion.
  coredns: {
    name: 'coredns', module: 'github.com/coredns/coredns', version: 'v1.14.6', sum: 'h1:V2g2JdCWJVqYGdX8tlBiK0iQo23Pnt8xs8gHqKyFYs8=',
    target: '.', ldflags: '', envVar: 'TEST_ASSET_COREDNS', goNeeded: '1.25.0', coldMinutes: 4,
  },
  'local-path-provisioner': {
    name: 'local-path-provisioner', module: 'github.com/rancher/local-path-provisioner', version: 'v0.0.30',
    sum: 'h1:OkiuofkCSscddl7tma/B9Ox1wu+JEVSrP7IcZI65Ggo=', target: '.', ldflags: '', envVar: 'TEST_ASSET_LOCAL_PATH_PROVISIONER',
    goNeeded: '1.23.0', coldMinutes: 2,
  },
  // The NetworkPolicy enforcer (iptables + ipset). kube-network-policies, kindnet's, needs the kernel's nft `queue`
  // expression (CONFIG_NFT_QUEUE), which these hosts' kernels lack; see README.md.
  'kube-router': {
    name: 'kube-router', module: 'github.com/cloudnativelabs/kube-router/v2', version: 'v2.1.0', sum: 'h1:xWsptKtmZ44L+NjwFKoFAFlVdxCz8fka9A/eYJe95Ok=',
    target: './cmd/kube-router', ldflags: '-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v2.1.0',
    envVar: 'TEST_ASSET_KUBE_ROUTER', goNeeded: '1.22', coldMinutes: 4,
  },
};

type KubeadmTool = 'kubeadm' | 'kubectl';

/** kubeadm or kubectl from ./go/kubeadm, at the k8s.io/kubernetes version it pins (the node harness's). */
async function kubeadmTool(name: KubeadmTool): Promise<string> {
  const goMod = readFileSync(join(kubeadmModuleDir, 'go.mod'), 'utf8');
  const version = requiredVersion(goMod, 'k8s.io/kubernetes');
  const ldflags = ['-s', '-w', ...kubeVersionFlags(version)].join(' ');
  const files = readdirSync(kubeadmModuleDir).filter((f) => f === 'go.mod' || f === 'go.sum').sort();
  const dir = cacheEntryDir(name, version, [...files.flatMap((f) => [`${f}\0`, readFileSync(join(kubeadmModuleDir, f)), '\0']), ldflags]);
  const binary = join(dir, name);
  if (isExecutable(binary)) return binary;
  const have = goVersion();
  if (!have) throw new AssetsUnavailableError(`no ${name}: install Go to build it from ${kubeadmModuleDir}`);
  return goBuildIntoCache(dir, name, version, have, 1, `k8s.io/kubernetes/cmd/${name}`, ldflags, kubeadmModuleDir, goEnv());
}

export interface KindBinaries {
  kubeVersion: string;
  'kube-apiserver': string;
  etcd: string;
  kubelet: string;
  'kube-scheduler': string;
  'kube-controller-manager': string;
  'kube-proxy': string;
  kubeadm: string;
  kubectl: string;
  kind: string;
  coredns: string;
  'local-path-provisioner': string;
  'kube-router': string;
  helm: string;
  traefik: string;
}

/** Finds or builds everything, one build at a time. */
export async function ensureKindBinaries(): Promise<KindBinaries> {
  const cp = await ensureAssets({ helm: true });
  const node = await ensureNodeAssets();
  const kubeadm = await kubeadmTool('kubeadm');
  const kubectl = await kubeadmTool('kubectl');
  const kind = await ensurePinnedModuleBinary(pinned.kind);
  const coredns = await ensurePinnedModuleBinary(pinned.coredns);
  const lpp = await ensurePinnedModuleBinary(pinned['local-path-provisioner']);
  const kubeRouter = await ensurePinnedModuleBinary(pinned['kube-router']);
  const traefik = await ensureTraefik();
  const kubeVersion = requiredVersion(readFileSync(join(kubeadmModuleDir, 'go.mod'), 'utf8'), 'k8s.io/kubernetes');
  return {
    kubeVersion, 'kube-apiserver': cp.kubeApiserver, etcd: cp.etcd, helm: cp.helm ?? '', ...node, kubeadm, kubectl, kind, coredns,
    'local-path-provisioner': lpp, 'kube-router': kubeRouter, traefik,
  };
}

/** The pinned versions, for image tags. */
export const pinnedVersions = {
  coredns: pinned.coredns.version, 'local-path-provisioner': pinned['local-path-provisioner'].version, 'kube-router': pinned['kube-router'].version,
} as const;
