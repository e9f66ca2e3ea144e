// svc-operator's Prometheus metrics: reconciles, snapshot writes, queue depths, scopes and tokens by state.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The operator's Prometheus metrics, on a registry of its own (served at /metrics). */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: 'svc_operator_reconciles_total', help: 'Namespace reconciles, by result (success, error).', labelNames: ['result'] as const, registers: [this.registry] });
  readonly errors = new Counter({ name: 'svc_operator_errors_total', help: 'Errors, by where they happened (reconcile, status, informer, lease, event).', labelNames: ['source'] as const, registers: [this.registry] });
  readonly duration = new Histogram({
    name: 'svc_operator_reconcile_duration_seconds',
    help: 'Time of one namespace reconcile: compile, snapshot writes, status patches.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({ name: 'svc_operator_queue_depth', help: 'Keys ready and waiting in a work queue (snapshot: the namespace; status: objects).', labelNames: ['queue'] as const, registers: [this.registry] });
  readonly objects = new Gauge({ name: 'svc_operator_protectedscopes', help: 'ProtectedScope objects in the watched namespace.', registers: [this.registry] });
  readonly scopes = new Gauge({ name: 'svc_operator_scopes', help: 'Scopes, by state (Closed scopes are the ones in the snapshot).', labelNames: ['state'] as const, registers: [this.registry] });
  readonly tokens = new Gauge({ name: 'svc_operator_tokens', help: 'Token records in the snapshot, by whether they have expired.', labelNames: ['state'] as const, registers: [this.registry] });
  readonly invalid = new Gauge({ name: 'svc_operator_invalid_objects', help: 'ProtectedScopes failing validation (Ready=False, reason Invalid).', registers: [this.registry] });
  readonly refusedPaths = new Gauge({
    name: 'svc_operator_refused_path_objects',
    help: 'Valid ProtectedScopes whose path svc-auth does not read as written (Ready=False): reason RefusedPath (spelt below the API prefix\'s processes/ or collections/: compiled as written, never public) or PublicRefused (public at or above a prefix: compiled as not public).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly writes = new Counter({ name: 'svc_operator_snapshot_writes_total', help: 'Snapshot ConfigMap writes, by kind (shard, index, delete).', labelNames: ['kind'] as const, registers: [this.registry] });
  readonly statusPatches = new Counter({ name: 'svc_operator_status_patches_total', help: 'ProtectedScope status patches sent.', registers: [this.registry] });
  readonly events = new Counter({ name: 'svc_operator_events_total', help: 'Kubernetes Events, by reason and outcome (emitted, dropped, failed).', labelNames: ['reason', 'outcome'] as const, registers: [this.registry] });
  readonly leader = new Gauge({ name: 'svc_operator_leader', help: '1 while this instance holds the lease (or leader election is off).', registers: [this.registry] });
  readonly snapshotBytes = new Gauge({ name: 'svc_operator_snapshot_bytes', help: 'Size of the current snapshot.', registers: [this.registry] });
  readonly shards = new Gauge({ name: 'svc_operator_snapshot_shards', help: 'Shards of the current snapshot.', registers: [this.registry] });
  readonly informerRestarts = new Counter({ name: 'svc_operator_informer_restarts_total', help: 'List/watch restarts after errors, by resource.', labelNames: ['resource'] as const, registers: [this.registry] });

  constructor(defaults = true) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'svc_operator_' });
  }
}
