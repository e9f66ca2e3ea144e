import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, Observable, type ConfigurationOptions, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { API_GROUP, API_VERSION, PLURAL, type ProtectedScope } from '../core/index.js';

/**
 * A typed client for ProtectedScope objects (auth.svc.io/v1alpha1) over client-node's CustomObjectsApi:
 * get, list, create, replace (with the object's resourceVersion as precondition) and delete, every
 * failure mapped to a KubeError whose reason a caller can act on and whose message says what to do.
 *
 * Importing this module loads client-node (~0.4 s): programs that only sometimes talk to Kubernetes
 * (the CLI) load it with a dynamic import().
 */

export type KubeErrorReason =
  | 'Config' // no usable kubeconfig / context
  | 'NoConfig' // no kube configuration at all (no KUBECONFIG, no ~/.kube/config, not in a pod)
  | 'Unreachable' // connection refused, DNS, TLS
  | 'Timeout'
  | 'Unauthorized' // 401
  | 'Forbidden' // 403 (RBAC)
  | 'NamespaceNotFound'
  | 'CrdNotInstalled'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict' // resourceVersion precondition failed
  | 'Invalid' // 422: schema / CEL validation
  | 'ServerError' // 429, 5xx
  | 'Other';

export class KubeError extends Error {
  constructor(
    readonly reason: KubeErrorReason,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'KubeError';
  }

  /** Worth another try as is (the caller's own conflict handling aside). */
  get transient(): boolean {
    return this.reason === 'ServerError';
  }
}

export interface ProtectedScopeClientOptions {
  /** Path of a kubeconfig file; default $KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig?: string;
  /** The value of $KUBECONFIG (the caller's environment), used when kubeconfig is not given; default process.env.KUBECONFIG. */
  readonly kubeconfigEnv?: string;
  /** A context of the kubeconfig; default its current context. */
  readonly context?: string;
  /** Default: the context's namespace, the pod's namespace in-cluster, else "default". */
  readonly namespace?: string;
  /** Per-request timeout; default 30 s. */
  readonly requestTimeoutMs?: number;
  /** The home directory whose .kube/config is the default; default os.homedir(). */
  readonly homeDir?: string;
}

export interface WriteOptions {
  /** Server-side dry run: the API server validates (schema, CEL) and admits, but persists nothing. */
  readonly dryRun?: boolean;
  readonly fieldManager?: string;
}

const DEFAULT_FIELD_MANAGER = 'svc-cli';
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

interface Status {
  kind?: string;
  reason?: string;
  message?: string;
  details?: { kind?: string; name?: string; group?: string; causes?: { field?: string; message?: string }[] };
}

export class ProtectedScopeClient {
  readonly namespace: string;
  readonly server: string;
  readonly context: string;
  private readonly api: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly timeoutMs: number;

  /** Loads the kube configuration as kubectl would; throws KubeError('Config') when there is none usable. */
  static fromOptions(options: ProtectedScopeClientOptions = {}): ProtectedScopeClient {
    const kc = new KubeConfig();
    options = { ...options, kubeconfigEnv: 'kubeconfigEnv' in options ? options.kubeconfigEnv : process.env.KUBECONFIG };
    try {
      if (options.kubeconfig !== undefined) {
        if (!existsSync(options.kubeconfig)) throw new KubeError('Config', `kubeconfig ${options.kubeconfig} does not exist: check --kubeconfig`);
        kc.loadFromFile(options.kubeconfig);
      } else if (options.kubeconfigEnv) {
        // $KUBECONFIG as kubectl reads it: a list of files, the first one's current context wins.
        const files = options.kubeconfigEnv.split(delimiter).filter((f) => f.length > 0 && existsSync(f));
        if (files.length === 0) throw new KubeError('Config', `none of the files in KUBECONFIG (${options.kubeconfigEnv}) exists: check KUBECONFIG or use --kubeconfig`);
        kc.loadFromFile(files[0]!);
        for (const file of files.slice(1)) {
          const more = new KubeConfig();
          more.loadFromFile(file);
          kc.mergeConfig(more, true);
        }
      } else {
        // client-node falls back to http://localhost:8080 when it finds nothing, whose error ("HTTP protocol is not
        // allowed when skipTLSVerify is not set") says nothing useful: say what is missing instead.
        const inPod = existsSync(IN_CLUSTER_TOKEN) && process.env.KUBERNETES_SERVICE_HOST !== undefined;
        if (!inPod && !existsSync(join(options.homeDir ?? homedir(), '.kube', 'config'))) {
          throw new KubeError('NoConfig', 'no Kubernetes configuration found: set KUBECONFIG or pass --kubeconfig FILE (and --context NAME), or use --dir DIR for a directory of manifests (nothing was changed)');
        }
        kc.loadFromDefault();
      }
    } catch (e) {
      if (e instanceof KubeError) throw e;
      throw new KubeError('Config', `cannot load the kubeconfig: ${firstLine((e as Error).message)} (check --kubeconfig or KUBECONFIG)`);
    }
    if (options.context !== undefined) {
      if (!kc.getContextObject(options.context)) {
        const known = kc.getContexts().map((c) => c.name);
        throw new KubeError('Config', `context "${options.context}" is not in the kubeconfig${known.length ? ` (contexts: ${known.join(', ')})` : ''}: check --context`);
      }
      kc.setCurrentContext(options.context);
    }
    const cluster = kc.getCurrentCluster();
    if (!cluster) {
      throw new KubeError(
        'Config',
        'no Kubernetes cluster configured: set --kubeconfig, KUBECONFIG or ~/.kube/config (or run inside a pod), or use --dir DIR / SVC_SCOPES_DIR for a manifest directory',
      );
    }
    const contextName = kc.getCurrentContext();
    const inCluster = contextName === 'inClusterContext' && existsSync(IN_CLUSTER_TOKEN);
    const namespace = options.namespace ?? (kc.getContextObject(contextName)?.namespace?.trim() || 'default');
    return new ProtectedScopeClient(kc, namespace, inCluster ? 'in-cluster' : contextName, cluster.server, options.requestTimeoutMs ?? 30_000);
  }

  constructor(kc: KubeConfig, namespace: string, context: string, server: string, timeoutMs: number) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.namespace = namespace;
    this.context = context;
    this.server = server;
    this.timeoutMs = timeoutMs;
  }

  /** The object, or undefined when it does not exist. */
  async get(name: string): Promise<ProtectedScope | undefined> {
    try {
      return (await this.call('get', name, (o) =>
        this.api.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: PLURAL, name }, o),
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
      const page = (await this.call('list', undefined, (o) =>
        this.api.listNamespacedCustomObject(
          { group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: PLURAL, limit: pageSize, ...(cont ? { _continue: cont } : {}) },
          o,
        ),
      )) as { items?: ProtectedScope[]; metadata?: { _continue?: string; continue?: string } };
      items.push(...(page.items ?? []));
      cont = page.metadata?._continue ?? page.metadata?.continue ?? undefined;
    } while (cont);
    return items;
  }

  async create(object: ProtectedScope, options: WriteOptions = {}): Promise<ProtectedScope> {
    const body = { ...object, metadata: { ...object.metadata, namespace: this.namespace } };
    return (await this.call('create', object.metadata.name, (o) =>
      this.api.createNamespacedCustomObject(
        {
          group: API_GROUP,
          version: API_VERSION,
          namespace: this.namespace,
          plural: PLURAL,
          body,
          fieldManager: options.fieldManager ?? DEFAULT_FIELD_MANAGER,
          ...(options.dryRun ? { dryRun: 'All' } : {}),
        },
        o,
      ),
    )) as ProtectedScope;
  }

  /** Replaces the object; its metadata.resourceVersion is the precondition (a stale one is a 'Conflict'). */
  async replace(object: ProtectedScope, options: WriteOptions = {}): Promise<ProtectedScope> {
    if (!object.metadata.resourceVersion) throw new Error('replace needs the resourceVersion the edit was based on');
    return (await this.call('update', object.metadata.name, (o) =>
      this.api.replaceNamespacedCustomObject(
        {
          group: API_GROUP,
          version: API_VERSION,
          namespace: this.namespace,
          plural: PLURAL,
          name: object.metadata.name,
          body: { ...object, metadata: { ...object.metadata, namespace: this.namespace } },
          fieldManager: options.fieldManager ?? DEFAULT_FIELD_MANAGER,
          ...(options.dryRun ? { dryRun: 'All' } : {}),
        },
        o,
      ),
    )) as ProtectedScope;
  }

  /** Deletes the object (with a resourceVersion precondition when given); a missing object is not an error. */
  async delete(name: string, options: { resourceVersion?: string; dryRun?: boolean } = {}): Promise<void> {
    try {
      await this.call('delete', name, (o) =>
        this.api.deleteNamespacedCustomObject(
          {
            group: API_GROUP,
            version: API_VERSION,
            namespace: this.namespace,
            plural: PLURAL,
            name,
            ...(options.dryRun ? { dryRun: 'All' } : {}),
            ...(options.resourceVersion ? { body: { preconditions: { resourceVersion: options.resourceVersion } } } : {}),
          },
          o,
        ),
      );
    } catch (e) {
      if (e instanceof KubeError && e.reason === 'NotFound') return;
      throw e;
    }
  }

  /** Whether the namespace exists; undefined when we may not ask (RBAC) or cannot tell. */
  async namespaceExists(): Promise<boolean | undefined> {
    try {
      await this.call('get', this.namespace, (o) => this.core.readNamespace({ name: this.namespace }, o), 'namespaces');
      return true;
    } catch (e) {
      if (e instanceof KubeError && (e.reason === 'NotFound' || e.reason === 'NamespaceNotFound')) return false;
      return undefined;
    }
  }

  /** Runs one API call with the request timeout, mapping every failure to a KubeError. */
  private async call<T>(verb: string, name: string | undefined, fn: (options: ConfigurationOptions) => Promise<T>, resource = `${PLURAL}.${API_GROUP}`): Promise<T> {
    // Per-call middleware is the observable kind in client-node 1.x (its ObjectParamAPI hands options to the ObservableAPI).
    const signal = AbortSignal.timeout(this.timeoutMs);
    const options: ConfigurationOptions = {
      middleware: [
        {
          pre: (ctx: RequestContext) => {
            ctx.setSignal(signal);
            return new Observable(Promise.resolve(ctx));
          },
          post: (rsp: ResponseContext) => new Observable(Promise.resolve(rsp)),
        },
      ],
      middlewareMergeStrategy: 'append',
    };
    try {
      return await fn(options);
    } catch (e) {
      throw this.toKubeError(e, verb, name, resource);
    }
  }

  private toKubeError(e: unknown, verb: string, name: string | undefined, resource: string): KubeError {
    if (e instanceof KubeError) return e;
    const what = name ? `${resource} "${name}"` : resource;
    const where = `namespace "${this.namespace}"`;
    if (e instanceof ApiException) {
      const status = parseStatus(e.body);
      const message = status?.message ?? firstLine(String(e.body ?? e.message));
      switch (e.code) {
        case 401:
          return new KubeError('Unauthorized', `the API server at ${this.server} rejected our credentials (401 Unauthorized): log in again or check the kubeconfig user of context ${this.context}`, 401);
        case 403:
          return new KubeError(
            'Forbidden',
            `forbidden: ${message} (ask a cluster admin for a Role granting get, list, create and update on ${PLURAL}.${API_GROUP} in ${where})`,
            403,
          );
        case 404:
          if (!status || status.kind !== 'Status') {
            return new KubeError('CrdNotInstalled', `the ProtectedScope CRD (${PLURAL}.${API_GROUP}) is not installed in this cluster: install crds/protectedscope.yaml or the Helm chart`, 404);
          }
          if (status.details?.kind === 'namespaces' && resource !== 'namespaces') {
            return new KubeError('NamespaceNotFound', `namespace "${this.namespace}" not found: check -n/--namespace or the context's namespace`, 404);
          }
          return new KubeError('NotFound', `${what} not found in ${where}`, 404);
        case 409:
          return status?.reason === 'AlreadyExists'
            ? new KubeError('AlreadyExists', `${what} already exists in ${where}`, 409)
            : new KubeError('Conflict', `${what} was changed by someone else in ${where}: ${message}`, 409);
        case 422:
        case 400: {
          const causes = (status?.details?.causes ?? []).map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join('; ');
          return new KubeError('Invalid', `the API server refused ${what}: ${causes || message}`, e.code);
        }
        default:
          if (e.code === 429 || e.code >= 500) return new KubeError('ServerError', `the API server failed to ${verb} ${what} (${e.code}): ${message}`, e.code);
          return new KubeError('Other', `cannot ${verb} ${what} in ${where} (${e.code}): ${message}`, e.code);
      }
    }
    const err = e as { name?: string; code?: string; type?: string; message?: string; cause?: { code?: string } };
    if (err?.name === 'AbortError' || err?.name === 'TimeoutError' || err?.type === 'aborted') {
      return new KubeError('Timeout', `no answer from the API server at ${this.server} within ${Math.round(this.timeoutMs / 1000)} s: check the cluster is up and reachable (--request-timeout to wait longer)`);
    }
    const code = err?.code ?? err?.cause?.code;
    if (code && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT|EPIPE)$/.test(code)) {
      const why = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code;
      return new KubeError('Unreachable', `cannot reach the Kubernetes API at ${this.server} (${why}): check the cluster is running and --kubeconfig/--context point at it, or use --dir DIR for a manifest directory`);
    }
    if (code && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO/.test(code)) {
      return new KubeError('Unreachable', `TLS failure talking to ${this.server} (${code}): check the kubeconfig's certificate-authority for context ${this.context}`);
    }
    return new KubeError('Other', `cannot ${verb} ${what} in ${where}: ${firstLine(err?.message ?? String(e))}`);
  }
}

function parseStatus(body: unknown): Status | undefined {
  if (typeof body === 'object' && body !== null) return body as Status;
  if (typeof body !== 'string') return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Status) : undefined;
  } catch {
    return undefined;
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
