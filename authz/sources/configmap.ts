/**
 * `--snapshot-configmap NAME [--namespace NS]`: the snapshot svc-operator writes as ConfigMaps. The index
 * ConfigMap is watched (with a periodic relist); every shard it names is fetched by name, verified against
 * its digest, and the whole against the generation (k8s/snapshot-reader.ts); the decision index is built in
 * slices between requests and swapped in one assignment. Shards are cached by digest, fetched and parsed,
 * and the new index is derived from the one in service by difference (configmap-index.ts), so a change to
 * one scope costs about one shard, not the whole snapshot. While the API server is away the last good snapshot keeps serving (and svc-auth
 * stays ready if it had one); nothing unverified is ever served.
 *
 * The Kubernetes client (~0.4 s and ~75 MB to import) is loaded only here, when this source starts: the
 * other sources, and the request path, never load it.
 */
import { parseScopeLine, type AccessIndex, type Result, type SnapshotScope } from '../../core/index.js';
import type { ConfigMapObject } from '../../k8s/configmaps.js';
import { describeError } from '../../k8s/errors.js';
import type { ListWatchSource } from '../../k8s/informer.js';
import { SnapshotReader, type VerifiedSnapshot } from '../../k8s/snapshot-reader.js';
import { IncrementalIndex, type IndexedShard } from './configmap-index.js';
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
        const built = await this.build(snapshot);
        if (!built.ok) throw new Error(built.error);
        if (this.stopped) return;
        this.watchFailing = false;
        sink.loaded({ index: built.value.index, origin, loadMs: performance.now() - startedMs });
        built.value.commit();
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

  /** Parsed scopes by shard digest: unchanged shards are not parsed again. */
  private readonly parsed = new Map<string, readonly SnapshotScope[]>();
  private readonly index = new IncrementalIndex();

  /**
   * Parses the shards not parsed before, then derives the new index from the one in service by difference
   * (or builds it whole), yielding to waiting requests every few milliseconds. Any bad line refuses the whole
   * generation. The caller commits the result once it is in service.
   */
  private async build(snapshot: VerifiedSnapshot): Promise<Result<{ index: AccessIndex; commit: () => void }>> {
    const clock = new SliceClock(this.options.sliceMs ?? DEFAULT_SLICE_MS);
    const tick = () => clock.pause();
    const shards: IndexedShard[] = [];
    let lineNo = 0;
    for (const [i, ref] of snapshot.index.shards.entries()) {
      const lines = snapshot.shardLines[i]!;
      let scopes = this.parsed.get(ref.digest);
      if (!scopes) {
        const parsed: SnapshotScope[] = [];
        for (const line of lines) {
          const r = parseScopeLine(line);
          if (!r.ok) return { ok: false, error: `scope line ${lineNo + parsed.length + 1}: ${r.error}` };
          parsed.push(r.value);
          if ((parsed.length & 15) === 0) await tick();
          if (this.stopped) return { ok: false, error: 'stopped' };
        }
        this.parsed.set(ref.digest, parsed);
        scopes = parsed;
      }
      lineNo += lines.length;
      shards.push({ digest: ref.digest, lines, scopes });
    }
    const built = await this.index.update(snapshot.index.generation, shards, tick);
    if (!built.ok) return built;
    const keep = new Set(snapshot.index.shards.map((s) => s.digest));
    for (const digest of [...this.parsed.keys()]) if (!keep.has(digest)) this.parsed.delete(digest);
    return { ok: true, value: { index: built.value.index, commit: built.value.commit } };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reader?.stop();
    this.transport?.close?.();
  }
}
