// The test harness itself: namespaces, per-user kubeconfigs under RBAC, ServiceAccount tokens, the kubeconfig file.
import { statSync } from 'node:fs';
import { beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { clusterState, describeCluster, kubeConfig, kubeconfigFor, kubeconfigPath, newNamespace, serviceAccountKubeconfig } from './testenv.js';
import { waitUntil } from '../support/wait.js';

const group = 'auth.svc.io';
const version = 'v1alpha1';
const plural = 'protectedscopes';

async function listScopes(kc: k8s.KubeConfig, namespace: string): Promise<number> {
  try {
    await kc.makeApiClient(k8s.CustomObjectsApi).listNamespacedCustomObject({ group, version, namespace, plural });
    return 200;
  } catch (e) {
    return (e as { code?: number }).code ?? 0;
  }
}

async function grantScopeReader(namespace: string, subject: k8s.RbacV1Subject): Promise<void> {
  const rbac = kubeConfig().makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: 'scope-reader' }, rules: [{ apiGroups: [group], resources: [plural], verbs: ['get', 'list', 'watch'] }] },
  }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { generateName: 'scope-reader-' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'scope-reader' },
      subjects: [subject],
    },
  });
}

/** RBAC caches nothing, but give the authorizer's informer a moment to see a fresh binding. */
async function eventually(fn: () => Promise<number>, want: number): Promise<number> {
  let got = 0;
  // Not fatal here: the caller's expect shows what was answered.
  await waitUntil(async () => (got = await fn()) === want, { what: `the answer ${want}`, timeoutMs: 5000 }).catch(() => undefined);
  return got;
}

describeCluster('test harness', () => {
  let namespace: string;
  beforeAll(async () => {
    namespace = await newNamespace('harness');
  });

  it('publishes a private admin kubeconfig with the CRDs installed', async () => {
    expect(statSync(kubeconfigPath()).mode & 0o777).toBe(0o600);
    expect(clusterState().crds).toContain('protectedscopes.auth.svc.io');
    expect(await listScopes(kubeConfig(), namespace)).toBe(200);
  });

  it('creates distinct namespaces', async () => {
    const a = await newNamespace('x');
    const b = await newNamespace('x');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^x-/);
  });

  it('kubeconfigFor(user, groups) authenticates a user that RBAC then governs', async () => {
    if (clusterState().existing) return; // needs the harness CA
    const user = kubeConfig(kubeconfigFor('jane', ['svc:readers']));
    expect(await listScopes(user, namespace)).toBe(403);
    await grantScopeReader(namespace, { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'svc:readers' });
    expect(await eventually(() => listScopes(user, namespace), 200)).toBe(200);
    const other = await newNamespace('harness-other');
    expect(await listScopes(user, other)).toBe(403);

    const review = await user.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe('jane');
    expect(review.status?.userInfo?.groups).toEqual(expect.arrayContaining(['svc:readers', 'system:authenticated']));
  });

  it('serviceAccountKubeconfig() authenticates a ServiceAccount by a bound token', async () => {
    const sa = kubeConfig(await serviceAccountKubeconfig(namespace, 'robot'));
    expect(await listScopes(sa, namespace)).toBe(403);
    await grantScopeReader(namespace, { kind: 'ServiceAccount', name: 'robot', namespace });
    expect(await eventually(() => listScopes(sa, namespace), 200)).toBe(200);
    const review = await sa.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${namespace}:robot`);
  });
});
