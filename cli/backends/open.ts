// Which store a command works on: a manifest directory (--dir, SVC_SCOPES_DIR) or a Kubernetes namespace.
import { usageError } from '../errors.js';
import type { ScopeStore, StoreOptions } from './backend.js';
import { DirectoryStore } from './directory.js';

/**
 * Chooses the backend: `--dir` (or, without Kubernetes flags, SVC_SCOPES_DIR) means a manifest directory;
 * anything else the Kubernetes API through the kube context. client-node is imported only here, lazily.
 */
export async function openStore(options: StoreOptions, env: Readonly<Record<string, string | undefined>>): Promise<ScopeStore> {
  const kubeFlags = options.kubeconfig !== undefined || options.context !== undefined;
  if (options.dir !== undefined && kubeFlags) {
    throw usageError('--dir selects a manifest directory and --kubeconfig/--context a cluster: give one or the other');
  }
  const dir = options.dir ?? (kubeFlags ? undefined : env.SVC_SCOPES_DIR || undefined);
  if (dir !== undefined) {
    if (dir.trim() === '') throw usageError('--dir needs a directory path');
    return new DirectoryStore({ dir, ...(options.namespace !== undefined ? { namespace: options.namespace } : {}) });
  }
  const { KubernetesStore } = await import('./kubernetes.js');
  return KubernetesStore.open(options, env);
}
