// ProtectedScopes as the operator reads them: a list-watch of one namespace, and status patches.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLURAL, type ProtectedScope } from '../core/index.js';
import { unlessNotFound } from './errors.js';
import type { Kube } from './kube.js';
import { kubeListWatch, type ListPage } from './listwatch.js';
import type { ListWatch } from './informer.js';

/**
 * ProtectedScope access for the operator: a list-watch of one namespace and status patches. (The CLI has its
 * own typed client for spec edits in protected-scopes.ts.)
 */
export function protectedScopeListWatch(kube: Pick<Kube, 'custom' | 'watch'>, namespace: string): ListWatch<ProtectedScope> {
  return kubeListWatch<ProtectedScope>(
    kube.watch,
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}`,
    (args) => kube.custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: PLURAL, ...args }) as Promise<ListPage<ProtectedScope>>,
    { pageSize: 500 },
  );
}

/** A JSON merge patch of `.status`: fields set to null are removed. */
export type StatusPatch = Record<string, unknown>;

export interface ScopeStatusClient {
  /** Merge-patches the status subresource; resolves false when the object is gone. */
  patchStatus(name: string, patch: StatusPatch): Promise<boolean>;
}

export function kubeScopeStatusClient(kube: Pick<Kube, 'custom'>, namespace: string, fieldManager: string): ScopeStatusClient {
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return {
    async patchStatus(name, patch) {
      // false: the object is gone (deleted since it was read), which is no error.
      const patched = await unlessNotFound(async () => {
        await kube.custom.patchNamespacedCustomObjectStatus(
          { group: API_GROUP, version: API_VERSION, namespace, plural: PLURAL, name, body: { status: patch }, fieldManager },
          merge,
        );
        return true;
      });
      return patched === true;
    },
  };
}
