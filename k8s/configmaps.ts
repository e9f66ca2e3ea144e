// ConfigMaps as the operator and svc-auth use them: read one, apply by server-side apply, delete with a precondition.
import { PatchStrategy, setHeaderOptions, type V1ConfigMap } from '@kubernetes/client-node';
import type { Kube } from './kube.js';
import { kubeListWatch } from './listwatch.js';
import type { ListWatch } from './informer.js';
import { isNotFound, unlessNotFound } from './errors.js';

/** The part of a ConfigMap this project reads and writes. */
export interface ConfigMapObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
  };
  data?: Record<string, string>;
  immutable?: boolean;
}

/** What the operator needs of ConfigMaps; the operator's unit tests supply a fake. */
export interface ConfigMapClient {
  get(name: string): Promise<ConfigMapObject | undefined>;
  /** Server-side apply with the given field manager, forced (we own these objects). Returns the stored object. */
  apply(cm: ConfigMapObject): Promise<ConfigMapObject>;
  /** Deletes; with uid, only that incarnation (a precondition). Missing is not an error. */
  delete(name: string, uid?: string): Promise<void>;
}

const toPlain = (cm: V1ConfigMap): ConfigMapObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: cm.metadata?.name ?? '',
    namespace: cm.metadata?.namespace,
    labels: cm.metadata?.labels,
    annotations: cm.metadata?.annotations,
    resourceVersion: cm.metadata?.resourceVersion,
    uid: cm.metadata?.uid,
  },
  data: cm.data,
  immutable: cm.immutable,
});

export function kubeConfigMapClient(kube: Pick<Kube, 'core'>, namespace: string, fieldManager: string): ConfigMapClient {
  const ssa = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
  return {
    async get(name) {
      const cm = await unlessNotFound(() => kube.core.readNamespacedConfigMap({ name, namespace }));
      return cm === undefined ? undefined : toPlain(cm);
    },
    async apply(cm) {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', ...cm, metadata: { ...cm.metadata, namespace } };
      delete body.metadata.resourceVersion;
      delete body.metadata.uid;
      const out = await kube.core.patchNamespacedConfigMap({ name: cm.metadata.name, namespace, body, fieldManager, force: true }, ssa);
      return toPlain(out);
    },
    async delete(name, uid) {
      try {
        await kube.core.deleteNamespacedConfigMap({ name, namespace, ...(uid ? { body: { preconditions: { uid } } } : {}) });
      } catch (e) {
        if (!isNotFound(e) && !(uid && (e as { code?: number }).code === 409)) throw e;
      }
    },
  };
}

/** List-watch of the ConfigMaps of a namespace matching selectors, as plain objects. */
export function configMapListWatch(kube: Pick<Kube, 'core' | 'watch'>, namespace: string, selectors: { labelSelector?: string; fieldSelector?: string }): ListWatch<ConfigMapObject> {
  const inner = kubeListWatch<V1ConfigMap>(
    kube.watch,
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
    (args) => kube.core.listNamespacedConfigMap({ namespace, ...args }),
    { ...selectors, pageSize: 50 },
  );
  return {
    async list() {
      const { items, resourceVersion } = await inner.list();
      return { items: items.map(toPlain), resourceVersion };
    },
    watch: (rv, timeout, onEvent, onDone) => inner.watch(rv, timeout, (type, obj) => onEvent(type, type === 'ERROR' || type === 'BOOKMARK' ? obj : toPlain(obj as V1ConfigMap)), onDone),
  };
}
