import { describe, it, expect } from '@jest/globals';
import { compileSnapshot, hashToken, parseSnapshotIndex, shardSnapshot, tokenIdOf, verifyShard, type ProtectedScope } from '../../core/index.js';
import type { ConfigMapObject } from '../configmaps.js';
import { FakeApi, FakeStore, fakeConfigMapClient } from '../fake.js';
import { SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName } from './objects.js';
import { NotLeaderError, SnapshotWriter } from './writer.js';

function scopes(n: number, salt = ''): ProtectedScope[] {
  return Array.from({ length: n }, (_, i) => {
    const hash = hashToken(`secret-token-${salt}-${i}-abcdefgh`);
    return {
      apiVersion: 'auth.svc.io/v1alpha1',
      kind: 'ProtectedScope',
      metadata: { name: `s${i}` },
      spec: { topicHierarchy: `origin.t${String(i).padStart(4, '0')}`, tokens: [{ id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' }] },
    } as ProtectedScope;
  });
}

function setup(opts: { graceMs?: number; leader?: () => boolean; now?: () => number } = {}) {
  const api = new FakeApi();
  const store = new FakeStore<ConfigMapObject>(api, 'configmaps');
  const client = fakeConfigMapClient(store);
  const order: string[] = [];
  const writer = new SnapshotWriter({
    snapshotName: 'snap',
    client,
    cache: () => store.list(), // an informer that is always up to date
    staleGraceMs: opts.graceMs ?? 1000,
    canWrite: opts.leader ?? (() => true),
    ...(opts.now ? { now: opts.now } : {}),
    onWrite: (kind, name) => order.push(`${kind} ${name}`),
  });
  return { api, store, writer, order };
}

describe('SnapshotWriter', () => {
  it('writes immutable shards first and the snapshot index last; the result verifies', async () => {
    const { store, writer, order } = setup();
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(40)), 1500);
    expect(shards.length).toBeGreaterThan(2);
    const out = await writer.write(snapshotIndex, shards);
    expect(out).toMatchObject({ shardsWritten: shards.length, snapshotIndexWritten: true, deleted: 0 });
    expect(order.at(-1)).toBe('index snap');
    expect(order.slice(0, -1).every((w) => w.startsWith('shard '))).toBe(true);
    const stored = parseSnapshotIndex(store.get('snap')!.data![SNAPSHOT_INDEX_KEY]!);
    expect(stored.ok && stored.value.generation).toBe(snapshotIndex.generation);
    for (const ref of snapshotIndex.shards) {
      const cm = store.get(shardConfigMapName('snap', ref.digest))!;
      expect(cm.immutable).toBe(true);
      expect(cm.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'svc-operator', 'auth.svc.io/snapshot': 'snap' });
      expect(verifyShard(ref, cm.data![SHARD_KEY]!).ok).toBe(true);
    }
  });

  it('writes nothing when nothing changed (a restart too)', async () => {
    const { api, store, writer } = setup();
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(20)), 1500);
    await writer.write(snapshotIndex, shards);
    const before = api.count('apply');
    expect(await writer.write(snapshotIndex, shards)).toMatchObject({ shardsWritten: 0, snapshotIndexWritten: false });
    const restarted = new SnapshotWriter({ snapshotName: 'snap', client: fakeConfigMapClient(store), cache: () => store.list(), staleGraceMs: 1000, canWrite: () => true });
    expect(await restarted.write(snapshotIndex, shards)).toMatchObject({ shardsWritten: 0, snapshotIndexWritten: false });
    expect(api.count('apply')).toBe(before);
  });

  it('does not rewrite what it just wrote while the informer lags', async () => {
    const { api, store } = setup();
    const writer = new SnapshotWriter({ snapshotName: 'snap', client: fakeConfigMapClient(store), cache: () => [], staleGraceMs: 1000, canWrite: () => true });
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(20)), 1500);
    await writer.write(snapshotIndex, shards);
    const n = api.count('apply');
    await writer.write(snapshotIndex, shards);
    expect(api.count('apply')).toBe(n);
  });

  it('rewrites only the shards that changed, and deletes stale ones after the grace period', async () => {
    let now = 1_000_000;
    const { store, writer } = setup({ graceMs: 5000, now: () => now });
    const first = shardSnapshot(compileSnapshot(scopes(30)), 100_000);
    await writer.write(first.snapshotIndex, first.shards);
    const changed = scopes(30);
    changed[29] = scopes(30, 'rotated')[29]!;
    const second = shardSnapshot(compileSnapshot(changed), 100_000);
    const out = await writer.write(second.snapshotIndex, second.shards);
    expect(out.shardsWritten).toBe(second.snapshotIndex.shards.filter((s) => !first.snapshotIndex.shards.some((f) => f.digest === s.digest)).length);
    expect(out.deleted).toBe(0);
    expect(out.nextCleanupAtMs).toBe(now + 5000);
    const oldName = shardConfigMapName('snap', first.snapshotIndex.shards[0]!.digest);
    expect(store.get(oldName)).toBeDefined();
    now += 5000;
    const third = await writer.write(second.snapshotIndex, second.shards);
    expect(third.deleted).toBe(1);
    expect(store.get(oldName)).toBeUndefined();
    expect(third.nextCleanupAtMs).toBeUndefined();
  });

  it('never deletes ConfigMaps of other snapshots or without its labels', async () => {
    let now = 0;
    const { store, writer } = setup({ graceMs: 0, now: () => now });
    store.put({ metadata: { name: 'other-shard', labels: { 'auth.svc.io/snapshot': 'other', 'auth.svc.io/snapshot-role': 'shard' } }, data: {} });
    store.put({ metadata: { name: 'snap-unlabelled' }, data: {} });
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(3)), 100_000);
    now = 10;
    await writer.write(snapshotIndex, shards);
    expect(store.get('other-shard')).toBeDefined();
    expect(store.get('snap-unlabelled')).toBeDefined();
  });

  it('replaces a shard whose bytes were tampered with (immutable: delete, then create)', async () => {
    const { store, writer } = setup();
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(5)), 100_000);
    const name = shardConfigMapName('snap', shards[0]!.digest);
    store.put({ metadata: { name, labels: { 'auth.svc.io/snapshot': 'snap', 'auth.svc.io/snapshot-role': 'shard' } }, immutable: true, data: { shard: 'garbage\n' } });
    await writer.write(snapshotIndex, shards);
    expect(store.get(name)!.data![SHARD_KEY]).toBe(shards[0]!.text);
  });

  it('stops at once when it is not the leader', async () => {
    let leader = true;
    const { api, writer } = setup({ leader: () => leader });
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(scopes(40)), 1500);
    leader = false;
    await expect(writer.write(snapshotIndex, shards)).rejects.toBeInstanceOf(NotLeaderError);
    expect(api.count('apply')).toBe(0);
  });

  it('writes an empty snapshot (no closed scopes) as a snapshot index with no shards', async () => {
    const { store, writer } = setup();
    const { snapshotIndex, shards } = shardSnapshot(compileSnapshot([]), 1000);
    await writer.write(snapshotIndex, shards);
    const stored = parseSnapshotIndex(store.get('snap')!.data![SNAPSHOT_INDEX_KEY]!);
    expect(stored.ok && stored.value.shards).toEqual([]);
  });
});
