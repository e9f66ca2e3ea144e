// What the CLI's Kubernetes suites need of "an svc-operator serves this namespace" without running one per test: the
// snapshot index ConfigMap an operator writes at start (the CLI's evidence that the namespace is served), and each
// object's status as the operator writes it once it has compiled a generation (observedGeneration, Ready=True), so
// `show` reads the same as on a served namespace. test/integration/cli-served.test.ts runs a real svc-operator where
// the operator's own answer matters (--wait).
import * as k8s from '@kubernetes/client-node';
import type { ProtectedScope } from '../../core/index.js';
import { kubeConfig } from '../controlplane/testenv.js';

const group = 'auth.svc.io';
const version = 'v1alpha1';
const plural = 'protectedscopes';

/** The snapshot index ConfigMap svc-operator writes (its name and labels, no content): the namespace reads as served. */
export async function markServed(namespace: string, snapshotName = 'svc-auth-snapshot'): Promise<void> {
  await kubeConfig().makeApiClient(k8s.CoreV1Api).createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: snapshotName, labels: { 'app.kubernetes.io/managed-by': 'svc-operator', 'auth.svc.io/snapshot': snapshotName, 'auth.svc.io/snapshot-role': 'index' } },
      data: { 'index.json': '{}' },
    },
  });
}

/** Writes, for every object whose status is behind its generation, the status svc-operator writes once it compiled it. */
export async function settleStatuses(namespace: string): Promise<void> {
  const api = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const list = (await api.listNamespacedCustomObject({ group, version, namespace, plural })) as { items: ProtectedScope[] };
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  for (const o of list.items) {
    const generation = o.metadata.generation ?? 1;
    if (o.status?.observedGeneration === generation) continue;
    const ready = { type: 'Ready', status: 'True', reason: 'Compiled', message: 'compiled (the test suite\'s stand-in for svc-operator)', observedGeneration: generation, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
    await api.patchNamespacedCustomObjectStatus({ group, version, namespace, plural, name: o.metadata.name, body: { status: { observedGeneration: generation, conditions: [ready] } } }, merge);
  }
}
