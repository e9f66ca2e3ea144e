// The chart's identities on a real API server: its ServiceAccounts, Roles and RoleBindings installed into a namespace,
// and kubeconfigs holding bound ServiceAccount tokens (TokenRequest API) for the programs to run under, so every API
// call they make goes through the real authenticator and RBAC authorizer as `system:serviceaccount:<ns>:<name>`.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { writeKubeconfig } from '../controlplane/controlplane.js';
import { renderIdentities, type Manifest } from './helm.js';
import { applyManifests } from './kubectl.js';

export const COMPONENTS = ['svc-operator', 'svc-auth', 'svc-management'] as const;
export type Component = (typeof COMPONENTS)[number];

/** Renders the chart's ServiceAccounts/Roles/RoleBindings for `namespace` and applies them (server-side, for real). */
export function installIdentities(helm: string, adminKubeconfig: string, namespace: string, values?: Record<string, unknown>): Manifest[] {
  const manifests = renderIdentities(helm, namespace, values);
  const r = applyManifests(adminKubeconfig, manifests);
  if (r.status !== 0) throw new Error(`applying the chart's identities to ${namespace} failed:\n${r.stderr}`);
  return manifests;
}

/**
 * A kubeconfig (mode 0600, in `dir`) for an existing ServiceAccount, holding a token from the TokenRequest API:
 * the credential a pod of that ServiceAccount would get.
 */
export async function serviceAccountKubeconfigIn(admin: k8s.KubeConfig, namespace: string, name: string, dir: string,
  expirationSeconds = 3600): Promise<string> {
  const tr = await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({
    name, namespace, body: { spec: { audiences: [], expirationSeconds } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${name}`);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('admin kubeconfig has no current cluster');
  const caPem = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8') : cluster.caFile ? readFileSync(cluster.caFile, 'utf8') : '';
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return writeKubeconfig(join(dir, `${namespace}-${name}.kubeconfig`), cluster.server, caPem, { token }, `system:serviceaccount:${namespace}:${name}`, namespace);
}

/** Kubeconfigs for each component's ServiceAccount (installed by installIdentities). */
export async function componentKubeconfigs(admin: k8s.KubeConfig, namespace: string, dir: string, expirationSeconds = 3600): Promise<Record<Component, string>> {
  const out = {} as Record<Component, string>;
  for (const c of COMPONENTS) out[c] = await serviceAccountKubeconfigIn(admin, namespace, c, dir, expirationSeconds);
  return out;
}
