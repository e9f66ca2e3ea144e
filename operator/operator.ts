/**
 * svc-operator put together: two resilient informers (the namespace's ProtectedScopes, and the snapshot's
 * ConfigMaps) whose handlers only enqueue the namespace key; a work queue that runs one reconcile per batch of
 * changes (a short debounce); the reconciler; an optional Lease elector deciding who writes. Everything that
 * talks to the API server comes in as `OperatorBackends`, so tests can run the whole operator on fakes.
 */
import type { PathPrefixes, ProtectedScope } from '../core/index.js';
import { type ConfigMapClient, type ConfigMapObject } from '../k8s/configmaps.js';
import { describeError } from '../k8s/errors.js';
import { EventRecorder, type EventSink } from '../k8s/events.js';
import { ResilientInformer, type InformerHandlers, type InformerOptions, type ListWatch } from '../k8s/informer.js';
import { LeaderElector, type LeaseClient } from '../k8s/lease.js';
import { ROLE_LABEL, SNAPSHOT_INDEX_KEY } from '../k8s/snapshot/objects.js';
import { SnapshotWriter } from '../k8s/snapshot/writer.js';
import type { ScopeStatusClient } from '../k8s/watched-scopes.js';
import { OperatorMetrics } from './metrics.js';
import { WorkQueue, type WorkQueueOptions } from './queue.js';
import { Reconciler, type Logger, type ReconcilerOptions } from './reconciler.js';

export interface OperatorBackends {
  readonly objectsWatch: ListWatch<ProtectedScope>;
  readonly configMapsWatch: ListWatch<ConfigMapObject>;
  readonly configMaps: ConfigMapClient;
  readonly status: ScopeStatusClient;
  readonly events: EventSink;
  /** Present when leader election is on. */
  readonly lease?: LeaseClient;
}

export interface OperatorConfig {
  readonly namespace: string;
  readonly snapshotName: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly shardMaxBytes: number;
  readonly staleGraceMs: number;
  readonly debounceMs: number;
  readonly statusConcurrency: number;
  readonly relistIntervalMs: number;
  readonly watchTimeoutSeconds?: number;
  readonly resyncMs: number;
  readonly backoffMaxMs?: number;
  /** svc-auth's --open-paths-by-default (status and Events say Open rather than Closed (default)). */
  readonly openPathsByDefault?: boolean;
  /** svc-auth's --waf-prefix and --api-prefix (case-folded segments; default /data and /oapi): how paths are read. */
  readonly prefixes?: PathPrefixes;
  /**
   * How long a new generation may wait for its snapshot before its status says Reconciling (default: the debounce
   * plus 1 s). Shorter than that, kstatus and Argo CD read the wait from status.observedGeneration alone, and an
   * edit costs one status patch, not two.
   */
  readonly reconcilingAfterMs?: number;
}

export class Operator {
  readonly metrics: OperatorMetrics;
  readonly objectInformer: ResilientInformer<ProtectedScope>;
  readonly configMapInformer: ResilientInformer<ConfigMapObject>;
  /** The namespace key: compile and write the snapshot (one at a time, debounced). */
  readonly queue: WorkQueue<string>;
  /** Object names: patch one status (many at a time, each key at most once at a time). */
  readonly statusQueue: WorkQueue<string>;
  readonly reconciler: Reconciler;
  readonly writer: SnapshotWriter;
  readonly recorder: EventRecorder;
  readonly elector: LeaderElector | undefined;
  private started = false;
  private stopping = false;

  /** Plain composition: each part built by a method of its own, wired to the others through this object. */
  constructor(
    backends: OperatorBackends,
    readonly config: OperatorConfig,
    private readonly log: Logger,
    metrics?: OperatorMetrics,
  ) {
    this.metrics = metrics ?? new OperatorMetrics();
    this.elector = backends.lease ? this.leaderElector(backends.lease) : undefined;
    if (!this.elector) this.metrics.leader.set(1);
    this.recorder = this.eventRecorder(backends.events);
    this.objectInformer = new ResilientInformer<ProtectedScope>(backends.objectsWatch, this.objectHandlers(), this.informerOptions());
    this.configMapInformer = new ResilientInformer<ConfigMapObject>(backends.configMapsWatch, this.configMapHandlers(), this.informerOptions());
    this.writer = new SnapshotWriter({
      snapshotName: config.snapshotName,
      client: backends.configMaps,
      cache: () => this.configMapInformer.list(),
      staleGraceMs: config.staleGraceMs,
      canWrite: () => this.mayWrite(),
      onWrite: (kind) => this.metrics.writes.inc({ kind }),
    });
    this.reconciler = new Reconciler(this.reconcilerOptions(backends.status));
    this.queue = new WorkQueue<string>(this.snapshotQueueOptions());
    this.statusQueue = new WorkQueue<string>(this.statusQueueOptions());
  }

  /** Leading and not stopping: the only state in which anything is written. */
  private mayWrite(): boolean {
    return !this.stopping && (this.elector ? this.elector.isLeader() : true);
  }

  private reconcilingAfterMs(): number {
    return this.config.reconcilingAfterMs ?? this.config.debounceMs + 1000;
  }

  /** Debounced: a burst of changes is one reconcile. */
  private enqueue(): void {
    this.queue.add(this.config.namespace, this.config.debounceMs);
  }

  private leaderElector(lease: NonNullable<OperatorBackends['lease']>): LeaderElector {
    const { config, log } = this;
    const m = this.metrics;
    return new LeaderElector(lease, {
      identity: config.identity,
      ...(config.leaseDurationMs !== undefined ? { leaseDurationMs: config.leaseDurationMs } : {}),
      ...(config.renewDeadlineMs !== undefined ? { renewDeadlineMs: config.renewDeadlineMs } : {}),
      ...(config.retryPeriodMs !== undefined ? { retryPeriodMs: config.retryPeriodMs } : {}),
      onStartedLeading: () => {
        m.leader.set(1);
        log.info({ identity: config.identity }, 'became the leader; writing');
        this.queue.add(config.namespace);
      },
      onStoppedLeading: () => {
        m.leader.set(0);
        log.warn({ identity: config.identity }, 'lost the lease; stopped writing');
      },
      onNewLeader: (holder) => log.info({ leader: holder ?? null }, 'lease holder observed'),
      onError: (e) => {
        m.errors.inc({ source: 'lease' });
        log.warn({ err: describeError(e) }, 'lease renewal failed');
      },
    });
  }

  private eventRecorder(events: OperatorBackends['events']): EventRecorder {
    const m = this.metrics;
    return new EventRecorder(events, {
      reportingController: 'auth.svc.io/svc-operator',
      reportingInstance: this.config.identity,
      onDropped: (e) => m.events.inc({ reason: e.reason, outcome: 'dropped' }),
      onError: (e, ev) => {
        m.events.inc({ reason: ev.reason, outcome: 'failed' });
        this.log.debug({ err: describeError(e) }, 'event not recorded');
      },
    });
  }

  private informerOptions(): InformerOptions {
    const { config } = this;
    return { relistIntervalMs: config.relistIntervalMs, ...(config.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: config.watchTimeoutSeconds } : {}) };
  }

  /** A list/watch failure of either informer: counted and logged, the informer retries by itself. */
  private informerError(resource: 'protectedscopes' | 'configmaps'): (e: unknown, attempt: number) => void {
    return (e, attempt) => {
      this.metrics.informerRestarts.inc({ resource });
      this.metrics.errors.inc({ source: 'informer' });
      this.log.warn({ resource, attempt, err: describeError(e) }, 'list/watch failed; retrying');
    };
  }

  private objectHandlers(): InformerHandlers<ProtectedScope> {
    return {
      onAdd: () => this.enqueue(),
      onDelete: () => this.enqueue(),
      onUpdate: (old, obj) => {
        const need = this.reconciler.needsReconcile(old, obj);
        if (need) this.log.debug({ name: obj.metadata.name, need, objectGeneration: obj.metadata.generation, oldObjectGeneration: old.metadata.generation }, 'update');
        if (need === 'snapshot') {
          this.enqueue();
          // A new generation: should no published snapshot hold it by then, its status work says Reconciling.
          if (old.metadata.generation !== obj.metadata.generation) this.statusQueue.add(obj.metadata.name, this.reconcilingAfterMs());
        } else if (need === 'status') this.statusQueue.add(obj.metadata.name);
      },
      onSynced: () => this.enqueue(),
      onError: this.informerError('protectedscopes'),
    };
  }

  private configMapHandlers(): InformerHandlers<ConfigMapObject> {
    return {
      // Our own writes echo back here; only a change we did not make (an edited or deleted snapshot index, a deleted
      // shard still in use) needs a reconcile.
      onAdd: (cm) => this.onConfigMap(cm),
      onUpdate: (_old, cm) => this.onConfigMap(cm),
      onDelete: (cm) => {
        this.writer.noteDeleted(cm.metadata.name);
        if (cm.metadata.name === this.config.snapshotName || this.writer.isWanted(cm.metadata.name)) this.enqueue();
      },
      onSynced: () => this.enqueue(),
      onError: this.informerError('configmaps'),
    };
  }

  private reconcilerOptions(status: OperatorBackends['status']): ReconcilerOptions {
    const { config } = this;
    const ns = config.namespace;
    return {
      namespace: ns,
      objects: () => this.objectInformer.list(),
      writer: this.writer,
      status,
      events: {
        emit: (ref, type, reason, note) => {
          this.metrics.events.inc({ reason, outcome: 'emitted' });
          this.recorder.emit(ref, type, reason, note);
        },
      },
      isLeader: () => this.mayWrite(),
      shardMaxBytes: config.shardMaxBytes,
      scope: (name) => this.objectInformer.get(`${ns}/${name}`) ?? this.objectInformer.get(name),
      enqueueStatus: (name) => this.statusQueue.add(name),
      resyncMs: config.resyncMs,
      ...(config.openPathsByDefault ? { openPathsByDefault: true } : {}),
      ...(config.prefixes ? { prefixes: config.prefixes } : {}),
      metrics: this.metrics,
      log: this.log,
    };
  }

  /** How both queues retry a failed key. */
  private retryBackoff(): Pick<WorkQueueOptions<string>, 'backoffBaseMs' | 'backoffMaxMs'> {
    return { backoffBaseMs: 250, backoffMaxMs: this.config.backoffMaxMs ?? 30_000 };
  }

  /** The namespace key: compile and write the snapshot, one at a time. */
  private snapshotQueueOptions(): WorkQueueOptions<string> {
    return {
      process: async () => {
        // Reconcile only from complete caches: a half-listed namespace would publish a snapshot missing scopes.
        if (!this.objectInformer.synced || !this.configMapInformer.synced) return {};
        return this.reconciler.reconcile();
      },
      concurrency: 1,
      ...this.retryBackoff(),
      onDepth: (d) => this.metrics.queueDepth.set({ queue: 'snapshot' }, d),
      onError: (key, e, failures, retryIn) => this.log.warn({ namespace: key, failures, retryInMs: retryIn, err: describeError(e) }, 'reconcile failed; will retry'),
    };
  }

  /** Object names: patch one status, many at a time, each key at most once at a time. */
  private statusQueueOptions(): WorkQueueOptions<string> {
    return {
      process: (name) => this.reconciler.reconcileStatus(name),
      concurrency: this.config.statusConcurrency,
      ...this.retryBackoff(),
      onDepth: (d) => this.metrics.queueDepth.set({ queue: 'status' }, d),
      onError: (name, e, failures, retryIn) => {
        this.metrics.errors.inc({ source: 'status' });
        if (failures === 1 || failures % 10 === 0) this.log.warn({ name, failures, retryInMs: retryIn, err: describeError(e) }, 'status patch failed; will retry');
      },
    };
  }


  private onConfigMap(cm: ConfigMapObject): void {
    const role = cm.metadata.labels?.[ROLE_LABEL];
    if (role === 'shard') return; // immutable and content-addressed: only its deletion matters
    if (cm.metadata.name === this.config.snapshotName && cm.data?.[SNAPSHOT_INDEX_KEY] === this.writer.currentSnapshotIndexText) return;
    this.queue.add(this.config.namespace, this.config.debounceMs);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.objectInformer.start();
    this.configMapInformer.start();
    this.elector?.start();
  }

  /** Both caches listed: the operator knows the namespace. A follower is ready too (a warm standby). */
  get ready(): boolean {
    return this.objectInformer.synced && this.configMapInformer.synced;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : true;
  }

  /** When the last reconcile succeeded (ms since epoch), or undefined before the first: what /readyz reports. */
  get lastReconcileAt(): number | undefined {
    return this.reconciler.lastSuccessAt > 0 ? this.reconciler.lastSuccessAt : undefined;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([this.queue.shutdown(), this.statusQueue.shutdown()]);
    await this.elector?.stop(true);
    await Promise.all([this.objectInformer.stop(), this.configMapInformer.stop()]);
    await Promise.race([this.recorder.flush(), new Promise((r) => setTimeout(r, 2000))]);
  }
}
