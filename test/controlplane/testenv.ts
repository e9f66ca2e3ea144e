// Helpers for integration tests, talking to the control plane the jest global setup started (or, with
// USE_EXISTING_CLUSTER=true, to the cluster of KUBECONFIG).
//
//   import { describeCluster, kubeConfig, newNamespace } from '../controlplane/testenv.js';
//   describeCluster('my suite', () => { it('...', async () => { const ns = await newNamespace(); ... }); });
//
// Without a controller-manager, deleted namespaces stay Terminating and owner references never cascade: use a fresh
// namespace per test and do not assert on garbage collection.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { issueKubeconfig, writeKubeconfig } from './controlplane.js';
import type { ClusterState } from './state.js';

/** Why the integration suites are skipped (outside CI, when no binaries exist and Go is missing), or undefined. */
export const skipReason: string | undefined = process.env.SVC_TEST_CLUSTER_SKIP || undefined;

/** `describe`, or `describe.skip` when the global setup could not provide a cluster (never under CI=true). */
export const describeCluster: typeof describe = (skipReason ? describe.skip : describe) as typeof describe;

function requireCluster(): void {
  if (skipReason) throw new Error(`no test cluster: ${skipReason}`);
}

/** The admin kubeconfig path of the test cluster. */
export function kubeconfigPath(): string {
  requireCluster();
  const p = process.env.KUBECONFIG_SVC_TEST;
  if (!p) {
    throw new Error('KUBECONFIG_SVC_TEST is not set: run the integration project through jest (its globalSetup '
      + 'starts the control plane), e.g. `node scripts/test.mjs --only integration`');
  }
  return p;
}

let state: ClusterState | undefined;
export function clusterState(): ClusterState {
  requireCluster();
  if (!state) {
    const file = process.env.SVC_TEST_CLUSTER_STATE;
    if (!file) throw new Error('SVC_TEST_CLUSTER_STATE is not set (see kubeconfigPath())');
    state = JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
  }
  return state;
}

/** A client-node KubeConfig for the admin user (or for another kubeconfig file). */
export function kubeConfig(path: string = kubeconfigPath()): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** Shorthand for kubeConfig().makeApiClient(api). */
export function api<T extends k8s.ApiType>(apiClass: new (config: k8s.Configuration) => T, kc: k8s.KubeConfig = kubeConfig()): T {
  return kc.makeApiClient(apiClass);
}

/** Creates a fresh namespace (generated name `<prefix>-xxxxx`, label svc.io/test=true) and returns its name. */
export async function newNamespace(prefix = 'test', kc: k8s.KubeConfig = kubeConfig()): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const ns = await core.createNamespace({
    body: { metadata: { generateName: `${prefix.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 40)}-`, labels: { 'svc.io/test': 'true' } } },
  });
  const name = ns.metadata?.name;
  if (!name) throw new Error('namespace created without a name');
  return name;
}

/** Deletes a namespace (it stays Terminating without a controller-manager; on a real cluster it goes away). */
export async function deleteNamespace(name: string, kc: k8s.KubeConfig = kubeConfig()): Promise<void> {
  try {
    await kc.makeApiClient(k8s.CoreV1Api).deleteNamespace({ name });
  } catch (e) {
    if ((e as { code?: number }).code !== 404) throw e;
  }
}

/**
 * A kubeconfig for `user` in `groups`: a client certificate signed by the harness CA (CN=user, O=group...).
 * RBAC then applies to that user exactly as to a real one. Needs the harness's own control plane.
 */
export function kubeconfigFor(user: string, groups: string[] = []): string {
  const s = clusterState();
  if (!s.ca) throw new Error('kubeconfigFor needs the harness CA; with USE_EXISTING_CLUSTER use serviceAccountKubeconfig()');
  return issueKubeconfig(s.server, s.ca, join(dirname(s.kubeconfig), 'users'), user, groups);
}

/**
 * A kubeconfig for ServiceAccount `name` in `namespace` (created when missing), holding a bound token from the
 * TokenRequest API. Works on the harness and on an existing cluster alike.
 */
export async function serviceAccountKubeconfig(namespace: string, name: string, expirationSeconds = 3600): Promise<string> {
  const kc = kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (e) {
    if ((e as { code?: number }).code !== 409) throw e;
  }
  const tr = await core.createNamespacedServiceAccountToken({
    name, namespace, body: { spec: { audiences: [], expirationSeconds } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${name}`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const caPem = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile ? readFileSync(cluster.caFile, 'utf8') : '';
  const dir = clusterState().existing ? join(process.cwd(), '.cache', 'test-cluster') : join(dirname(clusterState().kubeconfig), 'users');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return writeKubeconfig(join(dir, `sa-${namespace}-${name}-${process.pid}.kubeconfig`), cluster.server, caPem, { token },
    `system:serviceaccount:${namespace}:${name}`, namespace);
}
