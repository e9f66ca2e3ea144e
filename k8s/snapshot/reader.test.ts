import { describe, it, expect, afterEach } from '@jest/globals';
import { compileSnapshot, hashToken, shardSnapshot, tokenIdOf, type ProtectedScope, type Shard, type SnapshotIndex } from '../../core/index.js';
import type { ConfigMapObject } from '../configmaps.js';
import { FakeApi, FakeStore } from '../fake.js';
import { SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName, snapshotLabels } from './objects.js';
import { SnapshotReader, type VerifiedSnapshot } from './reader.js';
import { sleep, poll as until } from '../../test/support/wait.js';

function scopes(n: number, salt = ''): ProtectedScope[] {
  return Array.from({ length: n }, (_, i) => {
    const hash = hashToken(`secret-${i < n - 1 ? '' : salt}-${i}-abcdefghijkl`);
    return {
      apiVersion: 'auth.svc.io/v1alpha1',
      kind: 'ProtectedScope',
      metadata: { name: `s${i}` },
      spec: { topicHierarchy: `origin.t${String(i).padStart(3, '0')}`, tokens: [{ id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' }] },
    } as ProtectedScope;
  });
}

/** Writes a snapshot the way svc-operator does (shards, then the snapshot index) straight into the fake store. */
function publish(store: FakeStore<ConfigMapObject>, snap: { snapshotIndex: SnapshotIndex; shards: Shard[] }, opts: { skipShards?: number[]; corrupt?: number } = {}): void {
  snap.shards.forEach((s, i) => {
    if (opts.skipShards?.includes(i)) return;
    store.put({ metadata: { name: shardConfigMapName('snap', s.digest), labels: snapshotLabels('snap', 'shard') }, immutable: true, data: { [SHARD_KEY]: i === opts.corrupt ? s.text.replace('origin', 'ORIGIN') : s.text } });
  });
  store.put({ metadata: { name: 'snap', labels: snapshotLabels('snap', 'index') }, data: { [SNAPSHOT_INDEX_KEY]: JSON.stringify(snap.snapshotIndex) } });
}

const readers: SnapshotReader[] = [];
afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.stop()));
});

function setup() {
  const api = new FakeApi();
  const store = new FakeStore<ConfigMapObject>(api, 'configmaps');
  const delivered: VerifiedSnapshot[] = [];
  const failures: string[] = [];
  const reader = new SnapshotReader({
    snapshotName: 'snap',
    snapshotIndexWatch: store.listWatch((cm) => cm.metadata.name === 'snap'),
    getConfigMap: async (name) => {
      api.check(`get ${name}`);
      return store.get(name);
    },
    deliver: (s) => void delivered.push(s),
    onFailure: (m) => failures.push(m),
    retryInitialMs: 10,
    retryMaxMs: 50,
    informer: { backoffInitialMs: 10, backoffMaxMs: 50 },
  });
  readers.push(reader);
  return { api, store, reader, delivered, failures };
}

describe('SnapshotReader', () => {
  it('loads every shard of a generation, verified, and resolves start() after the first attempt', async () => {
    const { store, reader, delivered } = setup();
    const snap = shardSnapshot(compileSnapshot(scopes(50)), 1000);
    expect(snap.shards.length).toBeGreaterThan(3);
    publish(store, snap);
    await reader.start();
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.snapshotIndex.generation).toBe(snap.snapshotIndex.generation);
    expect(delivered[0]!.shards.flatMap((s) => s.lines)).toHaveLength(50);
    expect(delivered[0]!.fetched).toBe(snap.shards.length);
    expect(reader.generation).toBe(snap.snapshotIndex.generation);
  });

  it('fetches only the shards that changed', async () => {
    const { api, store, reader, delivered } = setup();
    const first = shardSnapshot(compileSnapshot(scopes(50)), 100_000);
    const many = shardSnapshot(compileSnapshot(scopes(50)), 1000);
    publish(store, many);
    await reader.start();
    const changed = shardSnapshot(compileSnapshot(scopes(50, 'rotated')), 1000);
    const gets = api.count('get');
    publish(store, changed);
    await until(() => delivered.length === 2);
    const newShards = changed.snapshotIndex.shards.filter((s) => !many.snapshotIndex.shards.some((m) => m.digest === s.digest)).length;
    expect(newShards).toBeLessThan(changed.shards.length);
    expect(api.count('get') - gets).toBe(newShards);
    expect(delivered[1]!.cached).toBe(changed.shards.length - newShards);
    expect(first.shards).toHaveLength(1);
  });

  it('keeps one cache: the verified lines of the generation delivered, each shard once, handed over as they are', async () => {
    const { store, reader, delivered } = setup();
    const first = shardSnapshot(compileSnapshot(scopes(50)), 1000);
    publish(store, first);
    await reader.start();
    expect(reader.cachedShards).toBe(first.shards.length);
    const changed = shardSnapshot(compileSnapshot(scopes(50, 'rotated')), 1000);
    publish(store, changed);
    await until(() => delivered.length === 2);
    expect(reader.cachedShards).toBe(changed.shards.length);
    // A shard kept from one generation to the next is the very same lines, not a copy.
    const kept = changed.snapshotIndex.shards.findIndex((r) => first.snapshotIndex.shards.some((f) => f.digest === r.digest));
    const before = delivered[0]!.shards.find((s) => s.digest === changed.snapshotIndex.shards[kept]!.digest)!;
    expect(delivered[1]!.shards[kept]!.lines).toBe(before.lines);
  });

  it('is not ready (delivers nothing) until the snapshot index exists, then loads it', async () => {
    const { store, reader, delivered, failures } = setup();
    await reader.start();
    expect(delivered).toHaveLength(0);
    expect(failures[0]).toMatch(/not found/);
    publish(store, shardSnapshot(compileSnapshot(scopes(3)), 1000));
    await until(() => delivered.length === 1);
  });

  it('never delivers a generation with a missing or corrupt shard; retries and loads once it is whole', async () => {
    const { store, reader, delivered, failures } = setup();
    const good = shardSnapshot(compileSnapshot(scopes(20)), 1000);
    publish(store, good);
    await reader.start();
    const next = shardSnapshot(compileSnapshot(scopes(20, 'x')), 1000);
    publish(store, next, { corrupt: next.shards.length - 1 });
    await until(() => failures.some((f) => /does not match its digest/.test(f)));
    expect(delivered).toHaveLength(1);
    expect(reader.generation).toBe(good.snapshotIndex.generation);
    // A shard missing entirely: also refused, retried.
    const third = shardSnapshot(compileSnapshot(scopes(20, 'y')), 1000);
    publish(store, third, { skipShards: [third.shards.length - 1] });
    await until(() => failures.some((f) => /not found/.test(f)));
    expect(reader.generation).toBe(good.snapshotIndex.generation);
    // The operator finishes writing: the retry picks it up without any new snapshot index event.
    const last = third.shards.at(-1)!;
    store.put({ metadata: { name: shardConfigMapName('snap', last.digest), labels: snapshotLabels('snap', 'shard') }, immutable: true, data: { [SHARD_KEY]: last.text } });
    await until(() => reader.generation === third.snapshotIndex.generation);
  });

  it('keeps the last good generation through an API outage and catches up after', async () => {
    const { api, store, reader, delivered, failures } = setup();
    publish(store, shardSnapshot(compileSnapshot(scopes(5)), 1000));
    await reader.start();
    api.outage = true;
    store.cutWatches(new Error('EOF'));
    const next = shardSnapshot(compileSnapshot(scopes(5, 'z')), 1000);
    publish(store, next);
    await sleep(100);
    expect(delivered).toHaveLength(1);
    api.outage = false;
    await until(() => reader.generation === next.snapshotIndex.generation, 3000, 'catch up');
    expect(failures.every((f) => !/deleted/.test(f))).toBe(true);
  });

  it('start() resolves even when the API server is unreachable', async () => {
    const { api, reader, delivered } = setup();
    api.outage = true;
    await reader.start();
    expect(delivered).toHaveLength(0);
  });

  it('keeps serving when the snapshot index is deleted', async () => {
    const { store, reader, failures } = setup();
    const snap = shardSnapshot(compileSnapshot(scopes(5)), 1000);
    publish(store, snap);
    await reader.start();
    store.remove('snap');
    await until(() => failures.some((f) => /deleted/.test(f)));
    expect(reader.generation).toBe(snap.snapshotIndex.generation);
  });
});
