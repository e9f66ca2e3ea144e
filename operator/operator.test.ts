import { describe, it, expect, afterEach } from '@jest/globals';
import { buildIndex, closedAside, hashToken, hashTokenDigest, parseSnapshotIndex, tokenIdOf, verifyAssembled, verifyShard, type ProtectedScope, type TokenRecord } from '../core/index.js';
import type { ConfigMapClient, ConfigMapObject } from '../k8s/configmaps.js';
import { FakeApi, FakeEventSink, FakeLease, FakeStore, fakeConfigMapClient, fakeStatusClient } from '../k8s/fake.js';
import { SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName, snapshotSelector } from '../k8s/snapshot/objects.js';
import { OperatorMetrics } from './metrics.js';
import { Operator, type OperatorConfig } from './operator.js';
import type { Logger } from './reconciler.js';
import type { ScopeStatus } from './desired-status.js';
import { sleep, poll as until } from '../test/support/wait.js';

const quiet: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

function token(secret: string, expiresAt?: string): TokenRecord {
  const hash = hashToken(secret);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z', ...(expiresAt ? { expiresAt } : {}) };
}

class Cluster {
  readonly api = new FakeApi();
  readonly scopes = new FakeStore<ProtectedScope & { metadata: { name: string } }>(this.api, 'protectedscopes');
  readonly configMaps = new FakeStore<ConfigMapObject>(this.api, 'configmaps');
  readonly events = new FakeEventSink(this.api);
  readonly lease = new FakeLease();

  create(name: string, spec: Record<string, unknown>): void {
    this.scopes.put({ apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name, namespace: 'ns', generation: 1 }, spec: spec as ProtectedScope['spec'] });
  }

  updateSpec(name: string, spec: Record<string, unknown>): void {
    const o = this.scopes.get(name)!;
    this.scopes.put({ ...o, metadata: { ...o.metadata, generation: (o.metadata.generation ?? 1) + 1 }, spec: spec as ProtectedScope['spec'] });
  }

  status(name: string): ScopeStatus | undefined {
    return this.scopes.get(name)?.status as ScopeStatus | undefined;
  }

  /** The snapshot as svc-auth would load it: the snapshot index, every shard verified, assembled. */
  snapshot(snapshotName = 'svc-auth-snapshot') {
    const cm = this.configMaps.get(snapshotName);
    if (!cm) return undefined;
    const snapshotIndex = parseSnapshotIndex(cm.data![SNAPSHOT_INDEX_KEY]!);
    if (!snapshotIndex.ok) throw new Error(snapshotIndex.error);
    const lines: string[] = [];
    for (const ref of snapshotIndex.value.shards) {
      const shard = this.configMaps.get(shardConfigMapName(snapshotName, ref.digest));
      if (!shard) throw new Error(`missing shard ${ref.digest}`);
      const v = verifyShard(ref, shard.data![SHARD_KEY]!);
      if (!v.ok) throw new Error(v.error);
      lines.push(...v.value);
    }
    const whole = verifyAssembled(snapshotIndex.value, lines);
    if (!whole.ok) throw new Error(whole.error);
    const built = buildIndex(snapshotIndex.value.generation, lines);
    if (!built.ok) throw new Error(built.error);
    return built.value;
  }
}

const operators: Operator[] = [];
afterEach(async () => {
  await Promise.all(operators.splice(0).map((o) => o.stop()));
});

function start(cluster: Cluster, opts: { leaderElect?: boolean; identity?: string; configMaps?: ConfigMapClient; overrides?: Partial<OperatorConfig>; log?: Logger } = {}): Operator {
  const config: OperatorConfig = {
    namespace: 'ns',
    snapshotName: 'svc-auth-snapshot',
    identity: opts.identity ?? 'op-1',
    leaseDurationMs: 300,
    renewDeadlineMs: 200,
    retryPeriodMs: 40,
    shardMaxBytes: 2000,
    staleGraceMs: 200,
    debounceMs: 10,
    statusConcurrency: 4,
    relistIntervalMs: 60_000,
    resyncMs: 60_000,
    backoffMaxMs: 100,
    ...opts.overrides,
  };
  const op = new Operator(
    {
      objectsWatch: cluster.scopes.listWatch(),
      configMapsWatch: cluster.configMaps.listWatch((cm) => cm.metadata.labels?.['auth.svc.io/snapshot'] === 'svc-auth-snapshot'),
      configMaps: opts.configMaps ?? fakeConfigMapClient(cluster.configMaps),
      status: fakeStatusClient(cluster.scopes),
      events: cluster.events,
      ...(opts.leaderElect ? { lease: cluster.lease.client(config.identity) } : {}),
    },
    config,
    opts.log ?? quiet,
    new OperatorMetrics(false),
  );
  op.start();
  operators.push(op);
  return op;
}

/** Waits until the operator has nothing queued or running and the cluster is quiet. */
async function settle(op: Operator, cluster: Cluster): Promise<void> {
  let last = -1;
  let stable = 0;
  await until(
    () => {
      const n = cluster.api.calls.length;
      if (op.queue.depth === 0 && op.queue.inFlight === 0 && op.statusQueue.depth === 0 && op.statusQueue.inFlight === 0 && op.statusQueue.delayedCount === 0 && n === last) stable++;
      else stable = 0;
      last = n;
      return op.ready && stable >= 10;
    },
    5000,
    'settle',
  );
}

describe('svc-operator on a fake API server', () => {
  it('compiles, writes the snapshot, reports status and announces closed scopes', async () => {
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    c.create('b', { path: 'collections/stations', tokens: [] });
    const op = start(c);
    await settle(op, c);
    const snap = c.snapshot()!;
    expect(snap.scopeCount).toBe(1);
    expect(snap.tokens.first(hashTokenDigest('token-a-0123456789'))).toBeGreaterThanOrEqual(0);
    expect(c.status('a')).toMatchObject({ state: 'Closed', tokens: 1, activeTokens: 1, scope: 'origin.a', kind: 'topicHierarchy', observedGeneration: 1 });
    expect(c.status('a')!.conditions![0]).toMatchObject({ type: 'Ready', status: 'True', reason: 'Compiled' });
    expect(c.status('b')).toMatchObject({ state: 'Closed', tokens: 0 }); // a path scope: closed by default
    await op.recorder.flush();
    expect(c.events.reasons()).toEqual(['ScopeClosed', 'ScopeClosed']);
    expect(c.configMaps.list().map((cm) => cm.metadata.labels?.['auth.svc.io/snapshot-role']).sort()).toEqual(['index', 'shard']);
  });

  it('says why a scope is closed in core\'s one wording (closedAside), in the Ready message and the ScopeClosed Event alike', async () => {
    const c = new Cluster();
    c.create('embargo', { metadataId: 'urn:wmo:md:a', closed: true, tokens: [] });
    c.create('stations', { path: 'collections/stations', tokens: [] });
    const op = start(c);
    await settle(op, c);
    await op.recorder.flush();
    for (const [name, by] of [['embargo', 'flag'], ['stations', 'default']] as const) {
      const note = c.events.events.find((e) => e.regarding.name === name && e.reason === 'ScopeClosed')!.note;
      expect(note.endsWith(closedAside({ by }))).toBe(true);
      expect(c.status(name)!.conditions![0]!.message).toMatch(new RegExp(`^scope Closed${closedAside({ by }).replace(/[()]/g, '\\$&')};`));
    }
  });

  it('logs an object\'s metadata.generation as objectGeneration, never as generation (the snapshot\'s content hash)', async () => {
    const lines: Record<string, unknown>[] = [];
    const log: Logger = { ...quiet, debug: (obj) => void lines.push(obj as Record<string, unknown>) };
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const op = start(c, { log });
    await settle(op, c);
    c.updateSpec('a', { topicHierarchy: 'origin.a', tokens: [] });
    await settle(op, c);
    const update = lines.find((l) => l.name === 'a' && l.need !== undefined)!;
    expect(update).toMatchObject({ objectGeneration: 2, oldObjectGeneration: 1 });
    expect(update).not.toHaveProperty('generation');
  });

  it('follows updates and deletes; its own status echoes cause no more writes', async () => {
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const op = start(c);
    await settle(op, c);
    const patches = c.api.count('patch');
    c.updateSpec('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789'), token('token-b-0123456789')] });
    await settle(op, c);
    expect(c.status('a')).toMatchObject({ tokens: 2, observedGeneration: 2 });
    expect(c.snapshot()!.tokenCount).toBe(2);
    expect(c.api.count('patch')).toBe(patches + 1);
    c.updateSpec('a', { topicHierarchy: 'origin.a', tokens: [] });
    await settle(op, c);
    expect(c.status('a')).toMatchObject({ state: 'Open', tokens: 0 });
    expect(c.snapshot()!.scopeCount).toBe(0);
    c.updateSpec('a', { topicHierarchy: 'origin.a', tokens: [token('token-c-0123456789')] });
    await settle(op, c);
    c.scopes.remove('a');
    await settle(op, c);
    expect(c.snapshot()!.scopeCount).toBe(0);
    await op.recorder.flush();
    expect(c.events.reasons()).toEqual(['ScopeClosed', 'ScopeOpened', 'ScopeClosed', 'ScopeOpened']);
    expect(c.events.events.at(-1)!.note).toMatch(/deleted/);
  });

  it('a new generation whose snapshot cannot be written says Reconciling (with the error) until a write succeeds', async () => {
    const c = new Cluster();
    let refuse = false;
    const writes = fakeConfigMapClient(c.configMaps);
    const configMaps: ConfigMapClient = {
      ...writes,
      apply: async (cm) => {
        if (refuse) throw new Error('configmaps is forbidden: refused by policy');
        return writes.apply(cm);
      },
    };
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const op = start(c, { configMaps, overrides: { reconcilingAfterMs: 20 } });
    await settle(op, c);
    const types = () => (c.status('a')?.conditions ?? []).map((x) => `${x.type}=${x.status}`);
    expect(types()).toEqual(['Ready=True']);

    refuse = true;
    c.updateSpec('a', { topicHierarchy: 'origin.a', tokens: [] });
    await until(() => types().join() === 'Ready=False,Reconciling=True', 3000, 'Reconciling');
    expect(c.status('a')!.conditions![1]).toMatchObject({ reason: 'SnapshotWriteFailed', observedGeneration: 2 });
    expect(c.status('a')!.conditions![1]!.message).toMatch(/^generation 2 is not in a published snapshot yet: the snapshot write failed \(configmaps is forbidden: refused by policy\); svc-operator retries$/);
    expect(c.status('a')).toMatchObject({ observedGeneration: 1, state: 'Closed', tokens: 1 });

    refuse = false;
    await until(() => c.status('a')?.observedGeneration === 2, 3000, 'published');
    await settle(op, c);
    expect(types()).toEqual(['Ready=True']);
    expect(c.status('a')).toMatchObject({ state: 'Open', tokens: 0 });
  });

  it('merges objects for one scope and flags them', async () => {
    const c = new Cluster();
    c.create('x1', { metadataId: 'urn:wmo:md:a', tokens: [token('token-1-0123456789')] });
    c.create('x2', { metadataId: 'urn:wmo:md:a', tokens: [token('token-2-0123456789')] });
    const op = start(c);
    await settle(op, c);
    expect(c.status('x1')!.mergedWith).toEqual(['x2']);
    expect(c.status('x2')!.mergedWith).toEqual(['x1']);
    const merged = c.snapshot()!;
    const scope = merged.datasets.get('urn:wmo:md:a')!;
    expect(merged.tokens.records().filter((r) => r.owner === scope)).toHaveLength(2);
    await op.recorder.flush();
    expect(c.events.reasons().filter((r) => r === 'ScopesMerged')).toHaveLength(2);
    expect(c.events.reasons().filter((r) => r === 'ScopeClosed')).toHaveLength(1);
    c.scopes.remove('x2');
    await settle(op, c);
    expect(c.status('x1')!.mergedWith).toBeUndefined();
  });

  it('writes nothing new after a restart when nothing changed', async () => {
    const c = new Cluster();
    for (let i = 0; i < 30; i++) c.create(`s${i}`, { topicHierarchy: `origin.t${i}`, tokens: [token(`token-${i}-0123456789`)] });
    const first = start(c);
    await settle(first, c);
    expect(c.snapshot()!.scopeCount).toBe(30);
    await first.stop();
    await first.recorder.flush();
    const writes = c.api.calls.filter((x) => /^(apply|patch|delete|create)/.test(x)).length;
    const events = c.events.events.length;
    const second = start(c);
    await settle(second, c);
    expect(second.reconciler.lastReport).toMatchObject({ shardsWritten: 0, snapshotIndexWritten: false, statusQueued: 0, events: 0 });
    expect(c.api.calls.filter((x) => /^(apply|patch|delete|create)/.test(x)).length).toBe(writes);
    expect(c.events.events.length).toBe(events);
  });

  it('re-reconciles at the next token expiry: activeTokens drops without any object change', async () => {
    const c = new Cluster();
    const soon = new Date(Date.now() + 300).toISOString();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789', soon), token('token-b-0123456789')] });
    const op = start(c);
    await settle(op, c);
    expect(c.status('a')).toMatchObject({ tokens: 2, activeTokens: 2 });
    await until(() => c.status('a')?.activeTokens === 1, 3000, 'activeTokens 1');
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(soon));
    expect(c.status('a')!.state).toBe('Closed');
  });

  it('rewrites a shard someone deleted, and the snapshot index someone edited', async () => {
    const c = new Cluster();
    for (let i = 0; i < 10; i++) c.create(`s${i}`, { topicHierarchy: `origin.t${i}`, tokens: [token(`token-${i}-0123456789`)] });
    const op = start(c);
    await settle(op, c);
    const shard = c.configMaps.list().find((cm) => cm.metadata.labels?.['auth.svc.io/snapshot-role'] === 'shard')!;
    c.configMaps.remove(shard.metadata.name);
    await settle(op, c);
    expect(c.configMaps.get(shard.metadata.name)).toBeDefined();
    const snapshotIndex = c.configMaps.get('svc-auth-snapshot')!;
    c.configMaps.put({ ...snapshotIndex, data: { [SNAPSHOT_INDEX_KEY]: '{}' } });
    await settle(op, c);
    expect(c.snapshot()!.scopeCount).toBe(10);
  });

  it('recovers from an API outage and catches up on what changed meanwhile', async () => {
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const op = start(c);
    await settle(op, c);
    c.api.outage = true;
    c.scopes.cutWatches(new Error('EOF'));
    c.configMaps.cutWatches(new Error('EOF'));
    await sleep(100);
    expect(op.ready).toBe(true); // caches are kept
    c.create('b', { topicHierarchy: 'origin.b', tokens: [token('token-b-0123456789')] });
    await sleep(100);
    c.api.outage = false;
    await until(() => c.status('b')?.state === 'Closed', 5000, 'b closed');
    await settle(op, c);
    expect(c.snapshot()!.scopeCount).toBe(2);
  });

  it('with leader election, exactly one of two operators writes; the other takes over when it stops', async () => {
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const counts = { 'op-1': 0, 'op-2': 0 };
    const counting = (id: 'op-1' | 'op-2'): ConfigMapClient => {
      const inner = fakeConfigMapClient(c.configMaps);
      return {
        get: (n) => inner.get(n),
        apply: (cm) => {
          counts[id]++;
          return inner.apply(cm);
        },
        delete: (n, u) => {
          counts[id]++;
          return inner.delete(n, u);
        },
      };
    };
    const one = start(c, { leaderElect: true, identity: 'op-1', configMaps: counting('op-1') });
    const two = start(c, { leaderElect: true, identity: 'op-2', configMaps: counting('op-2') });
    await until(() => one.isLeader || two.isLeader);
    await until(() => c.status('a')?.state === 'Closed');
    const [leader, follower] = one.isLeader ? [one, two] : [two, one];
    c.create('b', { topicHierarchy: 'origin.b', tokens: [token('token-b-0123456789')] });
    await until(() => c.status('b')?.state === 'Closed');
    expect(counts[follower.config.identity as 'op-1' | 'op-2']).toBe(0);
    expect(follower.ready).toBe(true);
    await leader.stop();
    await until(() => follower.isLeader, 2000, 'takeover');
    c.create('c', { topicHierarchy: 'origin.c', tokens: [token('token-c-0123456789')] });
    await until(() => c.status('c')?.state === 'Closed');
    expect(c.snapshot()!.scopeCount).toBe(3);
  });

  it('publishes a change while a wave of status patches is still running', async () => {
    const c = new Cluster();
    for (let i = 0; i < 40; i++) c.create(`s${i}`, { topicHierarchy: `origin.w${i}`, tokens: [token(`token-${i}-0123456789`)] });
    const inner = fakeStatusClient(c.scopes);
    const slow = { patchStatus: async (n: string, p: Record<string, unknown>) => (await sleep(50), inner.patchStatus(n, p)) };
    const op = new Operator(
      { objectsWatch: c.scopes.listWatch(), configMapsWatch: c.configMaps.listWatch(), configMaps: fakeConfigMapClient(c.configMaps), status: slow, events: c.events },
      { namespace: 'ns', snapshotName: 'svc-auth-snapshot', identity: 'x', shardMaxBytes: 2000, staleGraceMs: 200, debounceMs: 10, statusConcurrency: 2, relistIntervalMs: 60_000, resyncMs: 60_000 },
      quiet,
      new OperatorMetrics(false),
    );
    operators.push(op);
    op.start();
    await until(() => c.snapshot()?.scopeCount === 40, 3000, 'first snapshot');
    expect(op.statusQueue.depth + op.statusQueue.inFlight).toBeGreaterThan(10); // the wave is under way
    c.create('late', { topicHierarchy: 'origin.late', tokens: [token('token-late-0123456789')] });
    await until(() => c.snapshot()?.scopeCount === 41, 3000, 'late scope published');
    // Published before the wave ended (event order, not elapsed time): statuses of the first 40 are still pending.
    expect(Array.from({ length: 40 }, (_, i) => c.status(`s${i}`)?.state).filter((s) => s === 'Closed').length).toBeLessThan(40);
    await until(() => c.status('late')?.state === 'Closed', 5000, 'late status');
  });

  it('rewrites one status someone else changed, without recompiling', async () => {
    const c = new Cluster();
    for (let i = 0; i < 5; i++) c.create(`s${i}`, { topicHierarchy: `origin.o${i}`, tokens: [token(`token-${i}-0123456789`)] });
    const op = start(c);
    await settle(op, c);
    const reconciles = op.reconciler.lastSuccessAt;
    const o = c.scopes.get('s2')!;
    c.scopes.put({ ...o, status: { state: 'Open' } } as never);
    await until(() => c.status('s2')?.state === 'Closed', 3000, 'status restored');
    expect(op.reconciler.lastSuccessAt).toBe(reconciles);
  });

  it('exposes metrics', async () => {
    const c = new Cluster();
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789'), token('token-b-0123456789', '2020-01-01T00:00:00Z')] });
    const op = start(c);
    await settle(op, c);
    const text = await op.metrics.registry.metrics();
    expect(text).toMatch(/svc_operator_reconciles_total\{result="success"\} [1-9]/);
    expect(text).toMatch(/svc_operator_scopes\{state="Closed"\} 1/);
    expect(text).toMatch(/svc_operator_tokens\{state="active"\} 1/);
    expect(text).toMatch(/svc_operator_tokens\{state="expired"\} 1/);
    expect(text).toMatch(/svc_operator_queue_depth\{queue="snapshot"\} 0/);
    expect(text).toMatch(/svc_operator_queue_depth\{queue="status"\} 0/);
    expect(text).toMatch(/svc_operator_status_patches_total 1/);
    expect(text).toMatch(/svc_operator_reconcile_duration_seconds_count [1-9]/);
    expect(text).toMatch(/svc_operator_refused_path_objects\{reason="RefusedPath"\} 0/);
  });

  it('counts objects stored in a refused form and flags them in their status; the snapshot still publishes', async () => {
    const c = new Cluster();
    c.create('pub', { path: 'oapi/collections/stations', tokens: [], public: true });
    c.create('top', { path: 'oapi', tokens: [], public: true });
    c.create('a', { topicHierarchy: 'origin.a', tokens: [token('token-a-0123456789')] });
    const op = start(c);
    await settle(op, c);
    expect(c.snapshot()?.scopeCount).toBe(1);
    expect(c.status('pub')).toMatchObject({ state: 'Closed', conditions: [{ type: 'Ready', status: 'False', reason: 'RefusedPath' }, { type: 'Stalled', status: 'True', reason: 'RefusedPath' }] });
    expect(c.status('top')).toMatchObject({ state: 'Open', conditions: [{ type: 'Ready', status: 'False', reason: 'PublicRefused' }, { type: 'Stalled', status: 'True', reason: 'PublicRefused' }] });
    const text = await op.metrics.registry.metrics();
    expect(text).toMatch(/svc_operator_refused_path_objects\{reason="RefusedPath"\} 1/);
    expect(text).toMatch(/svc_operator_refused_path_objects\{reason="PublicRefused"\} 1/);
  });
});

describe('snapshotSelector', () => {
  it('selects by the snapshot label', () => {
    expect(snapshotSelector('svc-auth-snapshot')).toBe('auth.svc.io/snapshot=svc-auth-snapshot');
  });
});
