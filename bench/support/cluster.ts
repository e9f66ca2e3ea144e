// The Kubernetes API a bench runs against: an existing cluster's, or a control plane of its own.
import { fromKubeConfig, loadKubeConfig, type Kube } from '../../k8s/kube.js';

export interface BenchCluster {
  readonly kubeconfig: string;
  readonly kube: Kube;
  /** Closes the connection, and stops the control plane if the bench started it. */
  stop(): Promise<void>;
}

/** `kubeconfig`'s cluster (left as it is), else etcd + kube-apiserver of the test harness, started here. */
export async function benchCluster(kubeconfig: string | undefined, log: (m: string) => void): Promise<BenchCluster> {
  let stopControlPlane = async (): Promise<void> => undefined;
  if (!kubeconfig) {
    const { startControlPlane } = await import('../../test/controlplane/controlplane.js');
    log('starting a control plane (etcd + kube-apiserver)');
    const cp = await startControlPlane({ log });
    kubeconfig = cp.kubeconfigPath;
    stopControlPlane = () => cp.stop();
  }
  try {
    const kube = await fromKubeConfig(loadKubeConfig({ kubeconfig }), { requestTimeoutMs: 60_000 });
    return { kubeconfig, kube, stop: async () => (kube.close(), await stopControlPlane()) };
  } catch (e) {
    await stopControlPlane();
    throw e;
  }
}
