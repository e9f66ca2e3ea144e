import type { ProtectedScope } from '../core/index.js';
import { type ConfigMapClient, type ConfigMapObject } from '../k8s/configmaps.js';
import { describeError } from '../k8s/errors.js';
import { EventRecorder, type EventSink } from '../k8s/events.js';
import { ResilientInformer, type ListWatchSource } from '../k8s/informer.js';
import { LeaderElector, type LeaseClient } from '../k8s/lease.js';
import { ROLE_LABEL } from '../k8s/snapshot-objects.js';
import type { ScopeStatusClient } from '../k8s/scopes.js';
import { OperatorMetrics } from './metrics.js';
import { WorkQueue } from './queue.js';
import { Reconciler, type Logger } from './reconciler.js';
import { SnapshotWriter } from './snapshot-writer.js';

/**
 * svc-operator put together: two resilient informers (the namespace's ProtectedScopes, and the snapshot's
 * ConfigMaps) whose handlers only enqueue the namespace key; a work queue that runs one reconcile per batch of
 * changes (a short debounce); the reconciler; an optional Lease elector deciding who writes. Everything that
 * talks to the API server comes in as `OperatorBackends`, so tests can run the whole operator on fakes.
 */
export interface OperatorBackends {
  readonly scopes: ListWatchSource<ProtectedScope>;
  readonly configMapsWatch: ListWatchSource<ConfigMapObject>;
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
}

export class Operator {
  readonly metrics: OperatorMetrics;
  readonly scopeInformer: ResilientInformer<ProtectedScope>;
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

  constructor(
    backends: OperatorBackends,
    readonly config: OperatorConfig,
    private readonly log: Logger,
    metrics?: OperatorMetrics,
  ) {
    this.metrics = metrics ?? new OperatorMetrics();
    const m = this.metrics;
    const ns = config.namespace;
    const enqueue = () => this.queue.add(ns, config.debounceMs);

    this.elector = backends.lease
      ? new LeaderElector(backends.lease, {
          identity: config.identity,
          ...(config.leaseDurationMs !== undefined ? { leaseDurationMs: config.leaseDurationMs } : {}),
          ...(config.renewDeadlineMs !== undefined ? { renewDeadlineMs: config.renewDeadlineMs } : {}),
          ...(config.retryPeriodMs !== undefined ? { retryPeriodMs: config.retryPeriodMs } : {}),
          onStartedLeading: () => {
            m.leader.set(1);
            log.info({ identity: config.identity }, 'became the leader; writing');
            this.queue.add(ns);
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
        })
      : undefined;
    if (!this.elector) m.leader.set(1);
    const isLeader = () => !this.stopping && (this.elector ? this.elector.isLeader() : true);

    this.recorder = new EventRecorder(backends.events, {
      reportingController: 'auth.svc.io/svc-operator',
      reportingInstance: config.identity,
      onDropped: (e) => m.events.inc({ reason: e.reason, outcome: 'dropped' }),
      onError: (e, ev) => {
        m.events.inc({ reason: ev.reason, outcome: 'failed' });
        log.debug({ err: describeError(e) }, 'event not recorded');
      },
    });

    const informerOpts = {
      relistIntervalMs: config.relistIntervalMs,
      ...(config.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: config.watchTimeoutSeconds } : {}),
    };
    this.scopeInformer = new ResilientInformer<ProtectedScope>(
      backends.scopes,
      {
        onAdd: enqueue,
        onDelete: enqueue,
        onUpdate: (old, obj) => {
          const need = this.reconciler.needsReconcile(old, obj);
          if (need) log.debug({ name: obj.metadata.name, need, generation: obj.metadata.generation, oldGeneration: old.metadata.generation }, 'update');
          if (need === 'snapshot') enqueue();
          else if (need === 'status') this.statusQueue.add(obj.metadata.name);
        },
        onSynced: enqueue,
        onError: (e, attempt) => {
          m.informerRestarts.inc({ resource: 'protectedscopes' });
          m.errors.inc({ source: 'informer' });
          log.warn({ resource: 'protectedscopes', attempt, err: describeError(e) }, 'list/watch failed; retrying');
        },
      },
      informerOpts,
    );
    this.configMapInformer = new ResilientInformer<ConfigMapObject>(
      backends.configMapsWatch,
      {
        // Our own writes echo back here; only a change we did not make (an edited or deleted index, a deleted
        // shard still in use) needs a reconcile.
        onAdd: (cm) => this.onConfigMap(cm),
        onUpdate: (_old, cm) => this.onConfigMap(cm),
        onDelete: (cm) => {
          this.writer.noteDeleted(cm.metadata.name);
          if (cm.metadata.name === config.snapshotName || this.writer.isWanted(cm.metadata.name)) enqueue();
        },
        onSynced: enqueue,
        onError: (e, attempt) => {
          m.informerRestarts.inc({ resource: 'configmaps' });
          m.errors.inc({ source: 'informer' });
          log.warn({ resource: 'configmaps', attempt, err: describeError(e) }, 'list/watch failed; retrying');
        },
      },
      informerOpts,
    );

    this.writer = new SnapshotWriter({
      snapshotName: config.snapshotName,
      client: backends.configMaps,
      cache: () => this.configMapInformer.list(),
      staleGraceMs: config.staleGraceMs,
      canWrite: isLeader,
      onWrite: (kind) => m.writes.inc({ kind }),
    });
    this.reconciler = new Reconciler({
      namespace: ns,
      scopes: () => this.scopeInformer.list(),
      writer: this.writer,
      status: backends.status,
      events: {
        emit: (ref, type, reason, note) => {
          m.events.inc({ reason, outcome: 'emitted' });
          this.recorder.emit(ref, type, reason, note);
        },
      },
      isLeader,
      shardMaxBytes: config.shardMaxBytes,
      scope: (name) => this.scopeInformer.get(`${ns}/${name}`) ?? this.scopeInformer.get(name),
      enqueueStatus: (name) => this.statusQueue.add(name),
      resyncMs: config.resyncMs,
      ...(config.openPathsByDefault ? { openPathsByDefault: true } : {}),
      metrics: m,
      log,
    });
    this.queue = new WorkQueue<string>({
      process: async () => {
        // Reconcile only from complete caches: a half-listed namespace would publish a snapshot missing scopes.
        if (!this.scopeInformer.synced || !this.configMapInformer.synced) return {};
        return this.reconciler.reconcile();
      },
      concurrency: 1,
      backoffBaseMs: 250,
      backoffMaxMs: config.backoffMaxMs ?? 30_000,
      onDepth: (d) => m.queueDepth.set({ queue: 'snapshot' }, d),
      onError: (key, e, failures, retryIn) => log.warn({ namespace: key, failures, retryInMs: retryIn, err: describeError(e) }, 'reconcile failed; will retry'),
    });
    this.statusQueue = new WorkQueue<string>({
      process: (name) => this.reconciler.reconcileStatus(name),
      concurrency: config.statusConcurrency,
      backoffBaseMs: 250,
      backoffMaxMs: config.backoffMaxMs ?? 30_000,
      onDepth: (d) => m.queueDepth.set({ queue: 'status' }, d),
      onError: (name, e, failures, retryIn) => {
        m.errors.inc({ source: 'status' });
        if (failures === 1 || failures % 10 === 0) log.warn({ name, failures, retryInMs: retryIn, err: describeError(e) }, 'status patch failed; will retry');
      },
    });
  }

  private onConfigMap(cm: ConfigMapObject): void {
    const role = cm.metadata.labels?.[ROLE_LABEL];
    if (role === 'shard') return; // immutable and content-addressed: only its deletion matters
    if (cm.metadata.name === this.config.snapshotName && cm.data?.['index.json'] === this.writer.currentIndexText) return;
    this.queue.add(this.config.namespace, this.config.debounceMs);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.scopeInformer.start();
    this.configMapInformer.start();
    this.elector?.start();
  }

  /** Both caches listed: the operator knows the namespace. A follower is ready too (a warm standby). */
  get ready(): boolean {
    return this.scopeInformer.synced && this.configMapInformer.synced;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : true;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([this.queue.shutdown(), this.statusQueue.shutdown()]);
    await this.elector?.stop(true);
    await Promise.all([this.scopeInformer.stop(), this.configMapInformer.stop()]);
    await Promise.race([this.recorder.flush(), new Promise((r) => setTimeout(r, 2000))]);
  }
}
