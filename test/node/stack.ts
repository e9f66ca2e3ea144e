// The deployed stack on a real node: the control plane (with the Node authorizer and ServiceAccount admission), one
// node (./node.ts), the image built from the repository's Dockerfile and Debian's nginx imported into its containerd,
// and the chart installed with `helm install --wait` exactly as users install it (only the image and its pull policy
// set). Used by the node suite (node.test.ts), `npm run cluster:up -- --node` and `npm run demo:cluster -- --node`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cachedBuildDir, ensureAssets, ensureNodeAssets } from '../controlplane/assets.js';
import { repoRoot, startControlPlane, type ControlPlane } from '../controlplane/controlplane.js';
import { ensureBaseImage, nginxBase } from '../image/base.js';
import { buildImage, type BuiltImage } from '../image/build.js';
import { CHART_DIR, runHelm, type RunResult } from '../stack/helm.js';
import { kubectl } from '../stack/kubectl.js';
import { startNode, type Node } from './node.js';

export const RELEASE = 'svc';
export const NAMESPACE = 'svc-system';

export interface NodeStack {
  cp: ControlPlane;
  node: Node;
  image: BuiltImage;
  /** localhost/nginx-base:… (Debian's nginx), imported into the node's containerd. */
  nginxImage: string;
  helm: string;
  /** Seconds each phase took (assets and images, control plane, node, chart). */
  timings: Record<string, number>;
  kubectl(args: readonly string[], input?: string): RunResult;
  stop(): Promise<void>;
}

export interface NodeStackOptions {
  dir: string;
  log?: (m: string) => void;
  /** Install the chart (default true). */
  installChart?: boolean;
}

/** The helm arguments of the install: the chart's defaults but for the locally built image, which is never pulled. */
export function chartInstallArgs(kubeconfig: string, image: string): string[] {
  const i = image.lastIndexOf(':');
  return [
    '--kubeconfig', kubeconfig, 'install', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--create-namespace',
    '--set', `image.repository=${image.slice(0, i)}`, '--set', `image.tag=${image.slice(i + 1)}`, '--set', 'image.pullPolicy=Never',
    '--wait', '--timeout', '300s',
  ];
}

/** The images a node runs, built or assembled when missing: ours from the Dockerfile, Debian's nginx. */
export async function ensureNodeImages(): Promise<{ image: BuiltImage; nginxImage: string }> {
  await ensureNodeAssets();
  const image = await buildImage();
  const nginxImage = await ensureBaseImage(nginxBase);
  return { image, nginxImage };
}

/** `helm install --wait` of the chart with the local image; throws with what the cluster shows when it fails. */
export function installChart(helm: string, kubeconfig: string, image: string): void {
  const r = runHelm(helm, chartInstallArgs(kubeconfig, image), 330_000);
  if (r.status !== 0) throw new Error(`helm install failed (exit ${r.status}): ${r.stderr.trim().slice(-2000)}\n${diagnostics(kubeconfig)}`);
}

export async function startNodeStack(opts: NodeStackOptions): Promise<NodeStack> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[node-stack] ${m}\n`));
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const timings: Record<string, number> = {};
  let t = Date.now();
  const lap = (name: string) => {
    timings[name] = Math.round((Date.now() - t) / 100) / 10;
    t = Date.now();
  };
  // Go builds one at a time (2 cores); the image builds are mostly downloads and podman's layer cache.
  const assets = await ensureAssets({ helm: true });
  const { image, nginxImage } = await ensureNodeImages();
  lap('assets and images');
  // No CRDs from the harness: the chart installs (and owns) its own, as it does for users.
  const noCrds = join(opts.dir, 'no-crds');
  mkdirSync(noCrds, { recursive: true });
  const cp = await startControlPlane({ assets, withNode: true, dir: join(opts.dir, 'cp'), crdDir: noCrds, log: (m) => log(m) });
  lap('control plane');
  let node: Node | undefined;
  try {
    node = await startNode({ cp, dir: join(opts.dir, 'node'), k8sVersion: cachedBuildDir('kubelet').version, log });
    node.importImages([image.ref, nginxImage]);
    lap('node');
    const helm = assets.helm!;
    if (opts.installChart ?? true) {
      installChart(helm, cp.kubeconfigPath, image.ref);
      lap('chart');
      log(`chart installed in ${timings.chart}s: ${NAMESPACE}/${RELEASE}`);
    }
    writeFileSync(join(opts.dir, 'timings.json'), `${JSON.stringify(timings)}\n`);
    const n = node;
    return {
      cp, node: n, image, nginxImage, helm, timings,
      kubectl: (args, input) => kubectl(cp.kubeconfigPath, args, input),
      stop: async () => {
        await n.stop();
        await cp.stop();
      },
    };
  } catch (e) {
    await node?.stop().catch(() => undefined);
    await cp.stop();
    throw e;
  }
}

/** What a failed install leaves to read: the pods, their recent events, and each Deployment's last log lines. */
function diagnostics(kubeconfig: string): string {
  const out = (args: string[]) => {
    const r = kubectl(kubeconfig, args);
    return `$ kubectl ${args.join(' ')}\n${r.stdout}${r.stderr}`;
  };
  return [
    out(['get', 'pods', '-A', '-o', 'wide']),
    out(['get', 'events', '-n', NAMESPACE, '--sort-by=.lastTimestamp']).split('\n').slice(-25).join('\n'),
    ...['svc-operator', 'svc-auth'].map((d) => out(['logs', '-n', NAMESPACE, `deploy/${d}`, '--tail=15']).slice(-4000)),
  ].join('\n');
}

export { repoRoot };
