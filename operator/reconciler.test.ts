// reconcileOnce step by step, on the in-memory API (k8s/fake.ts) and an injected clock: publish the snapshot,
// compute the desired statuses, announce what changed, queue the status patches, record metrics and the report,
// and say when to run again. operator.test.ts covers the whole operator (informers, queues, the lease).
import { describe, it, expect } from '@jest/globals';
import { hashToken, tokenIdOf, type ProtectedScope, type TokenRecord } from '../core/index.js';
import type { ConfigMapObject } from '../k8s/configmaps.js';
import type { EventType, ObjectReference } from '../k8s/events.js';
import { FakeApi, FakeStore, fakeConfigMapClient, fakeStatusClient } from '../k8s/fake.js';
import { SnapshotWriter } from '../k8s/snapshot/writer.js';
import type { ScopeStatus } from './desired-status.js';
import { OperatorMetrics } from './metrics.js';
import { Reconciler, type ReconcilerOptions } from './reconciler.js';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const HOUR = 3_600_000;
const RESYNC_MS = 10 * 60_000;
const STALE_GRACE_MS = 60_000;

function token(secret: string, expiresAt?: number): TokenRecord {
  const hash = hashToken(secret);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...(expiresAt !== undefined ? { expiresAt: new Date(expiresAt).toISOString() } : {}) };
}

/** One namespace on the fake API server, a reconciler over it, and what it emitted and queued. */
class World {
  readonly api = new FakeApi();
  readonly scopes = new FakeStore<ProtectedScope>(this.api, 'protectedscopes');
  readonly configMaps = new FakeStore<ConfigMapObject>(this.api, 'configmaps');
  readonly emitted: { ref: ObjectReference; type: EventType; reason: string; note: string }[] = [];
  readonly queued: string[] = [];
  readonly metrics = new OperatorMetrics(false);
  now = T0;
  leader = true;
  /** Set to a message: every snapshot write fails with it (an admission policy refusing the ConfigMaps, say). */
  refuseSnapshot: string | undefined;
  readonly reconciler: Reconciler;

  constructor(options: Partial<ReconcilerOptions> = {}) {
    this.reconciler = this.newReconciler(options);
  }

  /** Another reconciler on the same cluster: the operator restarted. */
  newReconciler(options: Partial<ReconcilerOptions> = {}): Reconciler {
    const configMaps = fakeConfigMapClient(this.configMaps);
    const writer = new SnapshotWriter({
      snapshotName: 'snap',
      client: {
        ...configMaps,
        apply: async (cm) => {
          if (this.refuseSnapshot !== undefined) throw new Error(this.refuseSnapshot);
          return configMaps.apply(cm);
        },
      },
      cache: () => this.configMaps.list(),
      staleGraceMs: STALE_GRACE_MS,
      canWrite: () => this.leader,
      now: () => this.now,
    });
    return new Reconciler({
      namespace: 'ns',
      objects: () => this.scopes.list(),
      writer,
      status: fakeStatusClient(this.scopes),
      events: { emit: (ref, type, reason, note) => void this.emitted.push({ ref, type, reason, note }) },
      isLeader: () => this.leader,
      shardMaxBytes: 2000,
      scope: (name) => this.scopes.get(name),
      enqueueStatus: (name) => void this.queued.push(name),
      resyncMs: RESYNC_MS,
      now: () => this.now,
      metrics: this.metrics,
      ...options,
    });
  }

  put(name: string, spec: Record<string, unknown>, generation = 1): void {
    this.scopes.put({ apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name, namespace: 'ns', generation }, spec: { tokens: [], ...spec } as unknown as ProtectedScope['spec'] });
  }

  /** A spec edit as the API server makes it: a new generation, the status kept. */
  edit(name: string, spec: Record<string, unknown>, generation: number): void {
    const status = this.status(name);
    this.put(name, spec, generation);
    if (status) this.scopes.put({ ...this.scopes.get(name)!, status });
  }

  status(name: string): ScopeStatus | undefined {
    return this.scopes.get(name)?.status;
  }

  reasons(): string[] {
    return this.emitted.map((e) => e.reason);
  }

  /** The status work the reconcile queued, run as the operator's status queue would; returns the names patched. */
  async drainStatuses(r = this.reconciler): Promise<string[]> {
    const names = this.queued.splice(0);
    for (const name of names) await r.reconcileStatus(name);
    return names;
  }

  /** Clears what was recorded, so a test reads one reconcile's effects. */
  forget(): void {
    this.api.calls.length = 0;
    this.emitted.length = 0;
    this.queued.length = 0;
  }

  async gauge(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const metric = (await this.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    const entries = Object.entries(labels);
    return metric?.values.find((v) => entries.every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x))?.value;
  }
}

describe('Reconciler.reconcile: publish the snapshot', () => {
  it('writes the shards, then the index; a second reconcile with nothing changed writes nothing', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    w.put('b', { metadataId: 'urn:wmo:md:x:y', tokens: [token('token-of-b-000001')] });
    await w.reconciler.reconcile();
    const report = w.reconciler.lastReport!;
    expect(report).toMatchObject({ scopes: 2, tokens: 2, snapshotIndexWritten: true, deleted: 0 });
    expect(report.shardsWritten).toBe(report.shards);
    const applies = w.configMaps.list().map((cm) => cm.metadata.name);
    expect(applies).toContain('snap');
    // The index is written last: a reader that follows it finds every shard it names.
    expect(w.api.calls.filter((c) => c === 'apply configmaps')).toHaveLength(report.shards + 1);
    expect(w.configMaps.list().at(-1)!.metadata.name).toBe('snap');

    w.forget();
    await w.reconciler.reconcile();
    expect(w.reconciler.lastReport).toMatchObject({ generation: report.generation, shardsWritten: 0, snapshotIndexWritten: false, deleted: 0 });
    expect(w.api.count('apply configmaps')).toBe(0);
  });

  it('writes nothing at all when not the leader', async () => {
    const w = new World();
    w.leader = false;
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    expect(await w.reconciler.reconcile()).toEqual({});
    expect([w.api.calls, w.queued, w.emitted, w.reconciler.lastReport]).toEqual([[], [], [], undefined]);
  });

  it('a lease lost during the reconcile stops it before any status work is queued or remembered', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    let checks = 0;
    // Leader when the reconcile starts, gone by the time the status work would be queued.
    const r = w.newReconciler({ isLeader: () => ++checks <= 1 });
    expect(await r.reconcile()).toEqual({});
    expect(w.queued).toEqual([]);
    expect(r.lastReport).toBeUndefined();
    // Nothing compiled was kept: the status work has nothing to go on.
    w.leader = true;
    expect(await r.reconcileStatus('a')).toEqual({});
    expect(w.status('a')).toBeUndefined();
  });
});

describe('Reconciler.reconcile: desired statuses, queued and patched', () => {
  it('queues each object whose status differs; the patches make them equal, and the next reconcile queues none', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    w.put('s', { path: 'collections/stations' });
    await w.reconciler.reconcile();
    expect(w.queued.sort()).toEqual(['a', 's']);
    expect(w.reconciler.lastReport!.statusQueued).toBe(2);
    await w.drainStatuses();
    expect(w.status('a')).toMatchObject({ state: 'Closed', tokens: 1, activeTokens: 1, scope: 'origin.a', kind: 'topicHierarchy' });
    expect(w.status('s')).toMatchObject({ state: 'Closed', tokens: 0 });
    expect(w.api.count('patch protectedscopes/status')).toBe(2);

    w.forget();
    await w.reconciler.reconcile();
    expect(w.queued).toEqual([]);
    expect(w.reconciler.lastReport!.statusQueued).toBe(0);
  });

  it('the informer predicate: a spec change needs a compile, our own status echo nothing, a foreign status the status work', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    const before = w.scopes.get('a')!;
    await w.reconciler.reconcile();
    await w.drainStatuses();
    const echo = w.scopes.get('a')!;
    expect(w.reconciler.needsReconcile(before, echo)).toBeUndefined();
    expect(w.reconciler.needsReconcile(echo, { ...echo, metadata: { ...echo.metadata, generation: 2 } })).toBe('snapshot');
    expect(w.reconciler.needsReconcile(echo, { ...echo, status: { ...echo.status, tokens: 7 } })).toBe('status');
    expect(w.reconciler.needsReconcile(undefined, echo)).toBe('snapshot');
  });
});

describe('Reconciler: Ready, Reconciling and Stalled as a new generation meets its snapshot', () => {
  const conditionTypes = (w: World, name: string) => (w.status(name)?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);

  it('a no-op resync of a Ready object patches nothing: it never flaps through Reconciling', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    await w.reconciler.reconcile();
    await w.drainStatuses();
    const written = w.status('a');
    for (const later of [T0 + RESYNC_MS, T0 + 2 * RESYNC_MS]) {
      w.now = later;
      w.forget();
      await w.reconciler.reconcile();
      // The status work of a resync (or an informer relist) finds nothing to say either.
      expect(await w.reconciler.reconcileStatus('a')).toEqual({});
      expect(w.api.count('patch protectedscopes/status')).toBe(0);
    }
    expect(w.status('a')).toEqual(written);
    expect(conditionTypes(w, 'a')).toEqual(['Ready=True/Compiled']);
  });

  it('a new generation not yet compiled: its status work says Reconciling; the compile replaces it with Ready', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    await w.reconciler.reconcile();
    await w.drainStatuses();
    const readySince = w.status('a')!.conditions![0]!.lastTransitionTime;
    w.forget();

    // The operator queues the status work of a new generation with a grace (operator.ts); here it runs before the compile.
    w.now = T0 + 5000;
    w.edit('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001'), token('token-of-a-000002')] }, 2);
    await w.reconciler.reconcileStatus('a');
    expect(conditionTypes(w, 'a')).toEqual(['Ready=False/SnapshotPending', 'Reconciling=True/SnapshotPending']);
    expect(w.status('a')).toMatchObject({ observedGeneration: 1, tokens: 1 });
    expect(w.status('a')!.conditions![1]).toMatchObject({ observedGeneration: 2, message: 'generation 2 is not in a published snapshot yet: svc-operator is compiling it' });
    // Our own echo needs nothing.
    const echo = w.scopes.get('a')!;
    expect(w.reconciler.needsReconcile(echo, echo)).toBeUndefined();

    w.now = T0 + 6000;
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(conditionTypes(w, 'a')).toEqual(['Ready=True/Compiled']);
    expect(w.status('a')).toMatchObject({ observedGeneration: 2, tokens: 2 });
    expect(w.status('a')!.conditions![0]!.lastTransitionTime).not.toBe(readySince);
    expect(w.reasons()).toEqual([]);
  });

  it('a snapshot write that fails: the waiting objects say Reconciling with the error; the next write clears it', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    w.put('b', { topicHierarchy: 'origin.b', tokens: [token('token-of-b-000001')] });
    await w.reconciler.reconcile();
    await w.drainStatuses();

    w.refuseSnapshot = 'configmaps "snap" is forbidden: denied by policy';
    w.edit('a', { topicHierarchy: 'origin.a', tokens: [] }, 2);
    await expect(w.reconciler.reconcile()).rejects.toThrow(/forbidden/);
    // Only the object whose generation waits; b's status already says what is published.
    expect(w.queued).toEqual(['a']);
    await w.drainStatuses();
    expect(conditionTypes(w, 'a')).toEqual(['Ready=False/SnapshotWriteFailed', 'Reconciling=True/SnapshotWriteFailed']);
    expect(w.status('a')!.conditions![1]!.message).toBe('generation 2 is not in a published snapshot yet: the snapshot write failed (configmaps "snap" is forbidden: denied by policy); svc-operator retries');
    expect(w.status('a')).toMatchObject({ observedGeneration: 1, state: 'Closed', tokens: 1 });
    expect(conditionTypes(w, 'b')).toEqual(['Ready=True/Compiled']);

    w.refuseSnapshot = undefined;
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(conditionTypes(w, 'a')).toEqual(['Ready=True/Compiled']);
    expect(w.status('a')).toMatchObject({ observedGeneration: 2, state: 'Open' });
  });

  it('a restart whose first write fails leaves published objects Ready: only unpublished generations turn Reconciling', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    w.put('b', { topicHierarchy: 'origin.b', tokens: [token('token-of-b-000001')] });
    await w.reconciler.reconcile();
    await w.drainStatuses();
    w.forget();
    // Edited while no operator ran; the restarted one cannot write the snapshot that would hold it.
    w.edit('b', { topicHierarchy: 'origin.b', tokens: [] }, 2);
    w.refuseSnapshot = 'HTTP 500';
    const restarted = w.newReconciler();
    await expect(restarted.reconcile()).rejects.toThrow();
    expect(w.queued).toEqual(['b']);
    await w.drainStatuses(restarted);
    expect(conditionTypes(w, 'a')).toEqual(['Ready=True/Compiled']);
    expect(conditionTypes(w, 'b')).toEqual(['Ready=False/SnapshotWriteFailed', 'Reconciling=True/SnapshotWriteFailed']);
  });

  it('Stalled appears with the compile of a broken spec and goes with the generation that fixes it', async () => {
    const w = new World();
    w.put('x', { topicHierarchy: 'origin.x', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] });
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(conditionTypes(w, 'x')).toEqual(['Ready=False/Invalid', 'Stalled=True/Invalid']);
    expect(w.reasons().filter((r) => r === 'CompileFailed')).toHaveLength(1);

    w.put('x', { topicHierarchy: 'origin.x', tokens: [token('token-of-x-000001')] }, 2);
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(conditionTypes(w, 'x')).toEqual(['Ready=True/Compiled']);
    expect(w.status('x')!.conditions![0]).toMatchObject({ observedGeneration: 2 });
  });
});

describe('Reconciler.reconcile: what it announces', () => {
  it('ScopeClosed with the first token, ScopeOpened with the last; a restart reads the previous state from the statuses', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a' });
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(w.reasons()).toEqual([]);

    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] }, 2);
    await w.reconciler.reconcile();
    await w.drainStatuses();
    expect(w.emitted).toEqual([{ ref: expect.objectContaining({ kind: 'ProtectedScope', name: 'a', namespace: 'ns' }), type: 'Normal', reason: 'ScopeClosed', note: 'topic:origin.a is closed: 1 token record in 1 object' }]);

    // A new process (after a restart) announces nothing the statuses already say.
    w.forget();
    await w.newReconciler().reconcile();
    expect(w.reasons()).toEqual([]);

    w.put('a', { topicHierarchy: 'origin.a' }, 3);
    await w.reconciler.reconcile();
    expect(w.emitted.map((e) => [e.reason, e.note])).toEqual([['ScopeOpened', 'topic:origin.a is open: nothing closes it any more (1 object)']]);
  });

  it('says why a scope is closed: closed: true, or the default of a path scope', async () => {
    const w = new World();
    w.put('e', { metadataId: 'urn:wmo:md:x:embargo', closed: true });
    w.put('p', { path: 'processes/svc' });
    await w.reconciler.reconcile();
    expect(w.emitted.map((e) => e.note).sort()).toEqual([
      'dataset:urn:wmo:md:x:embargo is closed: no grant in 1 object (closed: true)',
      'path:processes/svc is closed: no grant in 1 object (closed by default: nothing executes or writes until a token grants it)',
    ]);
  });

  it('a deleted closed topic scope is announced open; a deleted path scope stays closed by default', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    w.put('p', { path: 'processes/svc', tokens: [token('token-of-p-000001')] });
    await w.reconciler.reconcile();
    w.forget();
    w.scopes.remove('a');
    w.scopes.remove('p');
    await w.reconciler.reconcile();
    expect(w.emitted.map((e) => [e.reason, e.note])).toEqual([['ScopeOpened', 'topic:origin.a is open: its ProtectedScope was deleted']]);
  });

  it('warns once when objects are merged for one scope, and once when an object fails to compile', async () => {
    const w = new World();
    w.put('one', { topicHierarchy: 'origin.a', tokens: [token('token-of-one-00001')] });
    w.put('two', { topicHierarchy: 'origin.a', tokens: [token('token-of-two-00001')] });
    w.put('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] });
    await w.reconciler.reconcile();
    const warnings = w.emitted.filter((e) => e.type === 'Warning').map((e) => [e.reason, e.ref.name]).sort();
    expect(warnings).toEqual([['CompileFailed', 'bad'], ['ScopesMerged', 'one'], ['ScopesMerged', 'two']]);
    expect(w.emitted.find((e) => e.reason === 'ScopesMerged' && e.ref.name === 'one')!.note).toBe('merged with two: 2 objects protect topicHierarchy=origin.a; their tokens are combined');

    // Queued but not yet patched: a second reconcile does not repeat the merge warning.
    w.forget();
    await w.reconciler.reconcile();
    expect(w.emitted.filter((e) => e.reason === 'ScopesMerged')).toEqual([]);
    // Patched: the statuses say it, nothing is repeated.
    await w.drainStatuses();
    w.forget();
    await w.reconciler.reconcile();
    expect(w.emitted.filter((e) => e.type === 'Warning')).toEqual([]);
    expect(w.reconciler.lastReport!.events).toBe(0);
  });
});

describe('Reconciler.reconcile: metrics, report, next wake', () => {
  it('records objects, scopes by state, tokens by expiry, invalid and refused objects, the snapshot size', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001'), token('token-of-a-000002', T0 - HOUR)] });
    w.put('open', { topicHierarchy: 'origin.open' });
    w.put('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] });
    w.put('refused', { path: 'oapi/processes/x', tokens: [token('token-of-r-000001')] });
    await w.reconciler.reconcile();
    expect(await w.gauge('svc_operator_protectedscopes')).toBe(4);
    expect([await w.gauge('svc_operator_scopes', { state: 'Closed' }), await w.gauge('svc_operator_scopes', { state: 'Open' })]).toEqual([3, 1]);
    expect([await w.gauge('svc_operator_tokens', { state: 'active' }), await w.gauge('svc_operator_tokens', { state: 'expired' })]).toEqual([2, 2]);
    expect(await w.gauge('svc_operator_invalid_objects')).toBe(1);
    expect(await w.gauge('svc_operator_refused_path_objects', { reason: 'RefusedPath' })).toBe(1);
    expect(await w.gauge('svc_operator_snapshot_shards')).toBe(w.reconciler.lastReport!.shards);
    expect(await w.gauge('svc_operator_snapshot_bytes')).toBeGreaterThan(0);
    expect(await w.gauge('svc_operator_reconciles_total', { result: 'success' })).toBe(1);
    expect(w.reconciler.lastSuccessAt).toBe(T0);
  });

  it('runs again at the resync, at the next token expiry, or when a stale shard may go, whichever is first', async () => {
    const w = new World();
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001')] });
    expect(await w.reconciler.reconcile()).toEqual({ requeueAfterMs: RESYNC_MS });

    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000001', T0 + 60_000)] }, 2);
    expect(await w.reconciler.reconcile()).toEqual({ requeueAfterMs: 60_000 + 5 });

    // The second generation left the first one's shard stale at T0: it may go a grace period later.
    w.now = T0 + 1000;
    w.put('a', { topicHierarchy: 'origin.a', tokens: [token('token-of-a-000002', T0 + 2 * HOUR)] }, 3);
    expect(await w.reconciler.reconcile()).toEqual({ requeueAfterMs: STALE_GRACE_MS - 1000 + 5 });
  });
});
