// A typed client for ProtectedScope objects, and the few reads the CLI makes besides (ConfigMaps, a Lease).
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLURAL, type ProtectedScope } from '../core/index.js';
import { KubeError, toKubeError, type ApiTarget } from './errors.js';
import { apiConfiguration, DEFAULT_REQUEST_TIMEOUT_MS, loadKubeConfig, targetOf, type KubeConfigOptions } from './kube.js';

export { KubeError } from './errors.js';

/**
 * A typed client for ProtectedScope objects (auth.svc.io/v1alpha1) over client-node's CustomObjectsApi:
 * get, list, create, replace (with the object's resourceVersion as precondition) and delete, every
 * failure mapped to a KubeError (k8s/errors.ts) whose reason a caller can act on and whose message says
 * what to do. The connection is kube.ts's, as for every program.
 *
 * Importing this module loads client-node (~0.4 s): programs that only sometimes talk to Kubernetes
 * (the CLI) load it with a dynamic import().
 */
interface ProtectedScopeClientOptions extends KubeConfigOptions {
  /** Default: the context's namespace, the pod's namespace in-cluster, else "default". */
  readonly namespace?: string;
  /** Per-request timeout; default 30 s. */
  readonly requestTimeoutMs?: number;
}

interface WriteOptions {
  /** Server-side dry run: the API server validates (schema, CEL) and admits, but persists nothing. */
  readonly dryRun?: boolean;
  readonly fieldManager?: string;
}

const DEFAULT_FIELD_MANAGER = 'svc-cli';

/** Where the client's namespace came from: `-n`, the kube context (or the pod's), or the fallback "default". */
export type NamespaceSource = 'flag' | 'context' | 'default';

/** The part of a ConfigMap the CLI reads to tell whether a namespace is served (the snapshot, the chart's record). */
export interface ConfigMapSummary {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
}

/** The part of a coordination.k8s.io Lease the CLI reads: who holds it and when it was last renewed. */
export interface LeaseSummary {
  readonly holderIdentity?: string;
  readonly renewTimeMs?: number;
  readonly leaseDurationSeconds?: number;
}

export class ProtectedScopeClient {
  readonly namespace: string;
  readonly server: string;
  readonly context: string;
  private readonly api: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;

  /** Loads the kube configuration as kubectl would; throws KubeError('Config') when there is none usable. */
  static fromOptions(options: ProtectedScopeClientOptions = {}): ProtectedScopeClient {
    const kc = loadKubeConfig(options);
    const { server, context, contextNamespace } = targetOf(kc);
    const target: ApiTarget = {
      server,
      context,
      namespace: options.namespace ?? contextNamespace ?? 'default',
      timeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(options.otherwise !== undefined ? { otherwise: options.otherwise } : {}),
    };
    return new ProtectedScopeClient(kc, target, options.namespace !== undefined ? 'flag' : contextNamespace !== undefined ? 'context' : 'default');
  }

  constructor(
    private readonly kc: KubeConfig,
    private readonly target: ApiTarget,
    /** Where the namespace came from; a caller may look for a better one than the fallback (withNamespace). */
    readonly namespaceSource: NamespaceSource = 'flag',
  ) {
    ({ namespace: this.namespace, server: this.server, context: this.context } = target);
    const config = apiConfiguration(kc, { timeoutMs: target.timeoutMs });
    this.api = new CustomObjectsApi(config);
    this.core = new CoreV1Api(config);
    this.coordination = new CoordinationV1Api(config);
  }

  /** The same connection on another namespace (one found for the user: the namespace source says so). */
  withNamespace(namespace: string, source: NamespaceSource): ProtectedScopeClient {
    return new ProtectedScopeClient(this.kc, { ...this.target, namespace }, source);
  }

  /**
   * The ConfigMaps matching a label selector in a namespace, or in every namespace (`namespace` undefined): names,
   * labels and data, nothing else. Failures are KubeErrors (403 for a user who may not list ConfigMaps there).
   */
  async listConfigMaps(namespace: string | undefined, labelSelector: string): Promise<ConfigMapSummary[]> {
    const list = await this.call('list', undefined, () =>
      namespace === undefined ? this.core.listConfigMapForAllNamespaces({ labelSelector, limit: 500 }) : this.core.listNamespacedConfigMap({ namespace, labelSelector, limit: 500 }),
    'configmaps', namespace);
    return (list.items ?? []).map((cm) => ({ name: cm.metadata?.name ?? '', namespace: cm.metadata?.namespace ?? '', labels: cm.metadata?.labels ?? {}, data: cm.data ?? {} }));
  }

  /** A Lease of a namespace (who holds it, when it was renewed), or undefined when there is none. */
  async getLease(namespace: string, name: string): Promise<LeaseSummary | undefined> {
    try {
      const lease = await this.call('get', name, () => this.coordination.readNamespacedLease({ name, namespace }), 'leases.coordination.k8s.io', namespace);
      const renew = lease.spec?.renewTime;
      const renewTimeMs = renew === undefined ? undefined : new Date(renew as unknown as string).getTime();
      return {
        ...(lease.spec?.holderIdentity ? { holderIdentity: lease.spec.holderIdentity } : {}),
        ...(renewTimeMs !== undefined && Number.isFinite(renewTimeMs) ? { renewTimeMs } : {}),
        ...(lease.spec?.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: lease.spec.leaseDurationSeconds } : {}),
      };
    } catch (e) {
      if (e instanceof KubeError && e.reason === 'NotFound') return undefined;
      throw e;
    }
  }

  /** The object, or undefined when it does not exist. */
  async get(name: string): Promise<ProtectedScope | undefined> {
    try {
      return (await this.call('get', name, () =>
        this.api.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: PLURAL, name }),
      )) as ProtectedScope;
    } catch (e) {
      if (e instanceof KubeError && e.reason === 'NotFound') return undefined;
      throw e;
    }
  }

  /** Every ProtectedScope of the namespace, read in pages. */
  async list(pageSize = 500): Promise<ProtectedScope[]> {
    const items: ProtectedScope[] = [];
    let cont: string | undefined;
    do {
      const page = (await this.call('list', undefined, () =>
        this.api.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: PLURAL, limit: pageSize, ...(cont ? { _continue: cont } : {}) }),
      )) as { items?: ProtectedScope[]; metadata?: { _continue?: string; continue?: string } };
      items.push(...(page.items ?? []));
      cont = page.metadata?._continue ?? page.metadata?.continue ?? undefined;
    } while (cont);
    return items;
  }

  async create(object: ProtectedScope, options: WriteOptions = {}): Promise<ProtectedScope> {
    const body = { ...object, metadata: { ...object.metadata, namespace: this.namespace } };
    return (await this.call('create', object.metadata.name, () =>
      this.api.createNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: this.namespace,
        plural: PLURAL,
        body,
        fieldManager: options.fieldManager ?? DEFAULT_FIELD_MANAGER,
        ...(options.dryRun ? { dryRun: 'All' } : {}),
      }),
    )) as ProtectedScope;
  }

  /** Replaces the object; its metadata.resourceVersion is the precondition (a stale one is a 'Conflict'). */
  async replace(object: ProtectedScope, options: WriteOptions = {}): Promise<ProtectedScope> {
    if (!object.metadata.resourceVersion) throw new Error('replace needs the resourceVersion the edit was based on');
    return (await this.call('update', object.metadata.name, () =>
      this.api.replaceNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: this.namespace,
        plural: PLURAL,
        name: object.metadata.name,
        body: { ...object, metadata: { ...object.metadata, namespace: this.namespace } },
        fieldManager: options.fieldManager ?? DEFAULT_FIELD_MANAGER,
        ...(options.dryRun ? { dryRun: 'All' } : {}),
      }),
    )) as ProtectedScope;
  }

  /** Deletes the object (with a resourceVersion precondition when given); a missing object is not an error. */
  async delete(name: string, options: { resourceVersion?: string; dryRun?: boolean } = {}): Promise<void> {
    try {
      await this.call('delete', name, () =>
        this.api.deleteNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace: this.namespace,
          plural: PLURAL,
          name,
          ...(options.dryRun ? { dryRun: 'All' } : {}),
          ...(options.resourceVersion ? { body: { preconditions: { resourceVersion: options.resourceVersion } } } : {}),
        }),
      );
    } catch (e) {
      if (e instanceof KubeError && e.reason === 'NotFound') return;
      throw e;
    }
  }

  /** Whether the namespace exists; undefined when we may not ask (RBAC) or cannot tell. */
  async namespaceExists(): Promise<boolean | undefined> {
    try {
      await this.call('get', this.namespace, () => this.core.readNamespace({ name: this.namespace }), 'namespaces');
      return true;
    } catch (e) {
      if (e instanceof KubeError && (e.reason === 'NotFound' || e.reason === 'NamespaceNotFound')) return false;
      return undefined;
    }
  }

  /** Runs one API call (kube.ts's configuration times each request out), mapping every failure to a KubeError. */
  private async call<T>(verb: string, name: string | undefined, fn: () => Promise<T>, resource = `${PLURAL}.${API_GROUP}`, namespace = this.target.namespace): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw toKubeError(e, { ...this.target, namespace }, { verb, resource, ...(name !== undefined ? { name } : {}) });
    }
  }
}
