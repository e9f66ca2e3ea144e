import type { ConfigMapObject } from '../../k8s/configmaps.js';
import { describeError } from '../../k8s/errors.js';
import type { ListWatchSource } from '../../k8s/informer.js';
import { SnapshotReader } from '../../k8s/snapshot-reader.js';
import { buildIndexInSlices, type SnapshotSink, type SnapshotSource } from './source.js';

/**
 * `--snapshot-configmap NAME [--namespace NS]`: the snapshot svc-operator writes as ConfigMaps. The index
 * ConfigMap is watched (with a periodic relist); every shard it names is fetched by name, verified against
 * its digest, and the whole against the generation (k8s/snapshot-reader.ts); the decision index is built in
 * slices between requests and swapped in one assignment. Shards are cached by digest, so a change to one
 * scope fetches one shard. While the API server is away the last good snapshot keeps serving (and svc-auth
 * stays ready if it had one); nothing unverified is ever served.
 *
 * The Kubernetes client (~0.4 s and ~75 MB to import) is loaded only here, when this source starts: the
 * other sources, and the request path, never load it.
 */
export interface ConfigMapSourceOptions {
  readonly snapshotName: string;
  /** Default: the pod's namespace, else the kube context's. */
  readonly namespace?: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly sliceMs?: number;
  /** Tests pass a transport (an in-memory API) instead of a kubeconfig. */
  readonly transport?: ConfigMapTransport;
}

export interface ConfigMapTransport {
  readonly namespace: string;
  readonly indexWatch: ListWatchSource<ConfigMapObject>;
  getConfigMap(name: string): Promise<ConfigMapObject | undefined>;
  close?(): void;
}

/** Connects with client-node, imported on demand. */
export async function kubeTransport(opts: Pick<ConfigMapSourceOptions, 'snapshotName' | 'namespace' | 'kubeconfig' | 'context'>): Promise<ConfigMapTransport> {
  const [{ connect }, { configMapListWatch, kubeConfigMapClient }] = await Promise.all([import('../../k8s/kube.js'), import('../../k8s/configmaps.js')]);
  const kube = await connect({ ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}), ...(opts.context ? { context: opts.context } : {}), requestTimeoutMs: 15_000 });
  const namespace = opts.namespace ?? kube.contextNamespace ?? 'default';
  const client = kubeConfigMapClient(kube, namespace, 'svc-auth');
  return {
    namespace,
    indexWatch: configMapListWatch(kube, namespace, { fieldSelector: `metadata.name=${opts.snapshotName}` }),
    getConfigMap: (name) => client.get(name),
    close: () => kube.close(),
  };
}

export class ConfigMapSource implements SnapshotSource {
  readonly kind = 'configmap';
  origin: string;
  private reader: SnapshotReader | undefined;
  private transport: ConfigMapTransport | undefined;
  private stopped = false;
  private watchFailing = false;

  constructor(private readonly options: ConfigMapSourceOptions) {
    this.origin = `configmap ${options.namespace ?? '(current namespace)'}/${options.snapshotName}`;
  }

  async start(sink: SnapshotSink): Promise<void> {
    let transport: ConfigMapTransport;
    try {
      transport = this.options.transport ?? (await kubeTransport(this.options));
    } catch (e) {
      sink.failed({ origin: this.origin, problems: [{ message: `cannot connect to the Kubernetes API: ${describeError(e)}` }] });
      return;
    }
    this.transport = transport;
    this.origin = `configmap ${transport.namespace}/${this.options.snapshotName}`;
    const origin = this.origin;
    const reader = new SnapshotReader({
      snapshotName: this.options.snapshotName,
      indexWatch: transport.indexWatch,
      getConfigMap: (name) => transport.getConfigMap(name),
      deliver: async (snapshot, startedMs) => {
        const built = await buildIndexInSlices(snapshot.lines, snapshot.index.generation, {
          ...(this.options.sliceMs !== undefined ? { sliceMs: this.options.sliceMs } : {}),
          cancelled: () => this.stopped,
        });
        if (!built.ok) throw new Error(`scope line ${built.error.line}: ${built.error.message}`);
        if (this.stopped) return;
        this.watchFailing = false;
        sink.loaded({ index: built.value, origin, loadMs: performance.now() - startedMs });
      },
      onFailure: (message) => {
        if (!this.stopped) sink.failed({ origin, problems: [{ message }] });
      },
      onSynced: () => {
        this.watchFailing = false;
      },
      onWatchError: (e) => {
        // Once per outage, not once per retry.
        if (this.stopped || this.watchFailing) return;
        this.watchFailing = true;
        sink.failed({ origin, problems: [{ message: `watching the index ConfigMap: ${describeError(e)}; retrying with backoff` }] });
      },
    });
    this.reader = reader;
    if (this.stopped) return;
    await reader.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reader?.stop();
    this.transport?.close?.();
  }
}
