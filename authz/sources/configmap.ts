/**
 * `--snapshot-configmap NAME [--namespace NS]`: the snapshot svc-operator writes as ConfigMaps. An adapter from the
 * reader to the decision index: k8s/snapshot/reader.ts watches the snapshot index ConfigMap (with a periodic relist),
 * fetches and verifies every new shard once and the whole against the generation; core's IncrementalIndex derives
 * the next decision index from the one in service by difference, parsing only the lines that changed, in slices
 * between requests; the sink swaps it in one assignment. So a change to one scope costs about one shard, not the
 * whole snapshot. While the API server is away the last good snapshot keeps serving (and svc-auth stays ready if
 * it had one); nothing unverified is ever served.
 *
 * The Kubernetes client (~0.4 s and ~75 MB to import) is loaded only here, when this source starts: the
 * other sources, and the request path, never load it.
 */
import { IncrementalIndex } from '../../core/index.js';
import type { ConfigMapObject } from '../../k8s/configmaps.js';
import { describeError } from '../../k8s/errors.js';
import type { ListWatch } from '../../k8s/informer.js';
import { SnapshotReader, type VerifiedSnapshot } from '../../k8s/snapshot/reader.js';
import { SliceClock } from '../../lib/time-slice.js';
import { DEFAULT_SLICE_MS, type SnapshotSink, type SnapshotSource } from './source.js';

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
  readonly snapshotIndexWatch: ListWatch<ConfigMapObject>;
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
    snapshotIndexWatch: configMapListWatch(kube, namespace, { fieldSelector: `metadata.name=${opts.snapshotName}` }),
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
      snapshotIndexWatch: transport.snapshotIndexWatch,
      getConfigMap: (name) => transport.getConfigMap(name),
      sliceMs: this.options.sliceMs ?? DEFAULT_SLICE_MS,
      deliver: (snapshot, startedMs) => this.deliver(snapshot, startedMs, sink),
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
        sink.failed({ origin, problems: [{ message: `watching the snapshot index ConfigMap: ${describeError(e)}; retrying with backoff` }] });
      },
    });
    this.reader = reader;
    if (this.stopped) return;
    await reader.start();
  }

  private readonly index = new IncrementalIndex();

  /**
   * The next decision index from a verified snapshot, derived from the one in service by difference (or built
   * whole), yielding to waiting requests every few milliseconds; handed to the sink, then made the base of the next
   * difference. A throw refuses the generation (the reader reports it and retries).
   */
  private async deliver(snapshot: VerifiedSnapshot, startedMs: number, sink: SnapshotSink): Promise<void> {
    const clock = new SliceClock(this.options.sliceMs ?? DEFAULT_SLICE_MS);
    const built = await this.index.update(snapshot.snapshotIndex.generation, snapshot.shards, () => clock.pause(), snapshot.snapshotIndex.tokens);
    if (!built.ok) throw new Error(built.error);
    if (this.stopped) return;
    this.watchFailing = false;
    sink.loaded({ index: built.value.index, origin: this.origin, loadMs: performance.now() - startedMs });
    built.value.commit();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reader?.stop();
    this.transport?.close?.();
  }
}
