import { describe, it, expect, afterEach } from '@jest/globals';
import { compileSnapshot, decide, DEFAULT_CONFIG, generationOf, hashToken, shardSnapshot, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import type { ConfigMapObject } from '../../k8s/configmaps.js';
import { FakeApi, FakeStore } from '../../k8s/fake.js';
import { SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName, snapshotLabels } from '../../k8s/snapshot/objects.js';
import { ConfigMapSource } from './configmap.js';
import type { LoadedSnapshot, SourceFailure } from './source.js';
import { sleep, poll as until } from '../../test/support/wait.js';

function scope(i: number, secret: string): ProtectedScope {
  const hash = hashToken(secret);
  return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: `s${i}` }, spec: { topicHierarchy: `origin.t${i}`, tokens: [{ id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' }] } } as ProtectedScope;
}

function publish(store: FakeStore<ConfigMapObject>, objects: ProtectedScope[]): string {
  const { snapshotIndex, shards } = shardSnapshot(compileSnapshot(objects), 300);
  for (const s of shards) store.put({ metadata: { name: shardConfigMapName('snap', s.digest), labels: snapshotLabels('snap', 'shard') }, immutable: true, data: { [SHARD_KEY]: s.text } });
  store.put({ metadata: { name: 'snap', labels: snapshotLabels('snap', 'index') }, data: { [SNAPSHOT_INDEX_KEY]: JSON.stringify(snapshotIndex) } });
  return snapshotIndex.generation;
}

const sources: ConfigMapSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
});

function setup() {
  const api = new FakeApi();
  const store = new FakeStore<ConfigMapObject>(api, 'configmaps');
  const loaded: LoadedSnapshot[] = [];
  const failed: SourceFailure[] = [];
  const source = new ConfigMapSource({
    snapshotName: 'snap',
    transport: { namespace: 'ns', snapshotIndexWatch: store.listWatch((cm) => cm.metadata.name === 'snap'), getConfigMap: async (n) => (api.check('get'), store.get(n)) },
  });
  sources.push(source);
  return { api, store, source, loaded, failed, sink: { loaded: (s: LoadedSnapshot) => void loaded.push(s), failed: (f: SourceFailure) => void failed.push(f) } };
}

describe('ConfigMapSource', () => {
  it('loads a sharded snapshot whose decisions match the compiled scopes, and follows changes', async () => {
    const { store, source, loaded, sink } = setup();
    const objects = Array.from({ length: 12 }, (_, i) => scope(i, `secret-token-${i}-abcdefgh`));
    const generation = publish(store, objects);
    await source.start(sink);
    expect(source.origin).toBe('configmap ns/snap');
    expect(loaded).toHaveLength(1);
    const index = loaded[0]!.index;
    expect(index.generation).toBe(generation);
    expect(index.scopeCount).toBe(12);
    const target = '/data/2026-11-21/wis/origin/t3/x.bufr4';
    expect(decide(index, DEFAULT_CONFIG, { method: 'GET', target, authorization: 'Bearer secret-token-3-abcdefgh' }, Date.now()).outcome).toBe('granted');
    expect(decide(index, DEFAULT_CONFIG, { method: 'GET', target, authorization: 'Bearer secret-token-4-abcdefgh' }, Date.now()).outcome).toBe('insufficient-scope');
    objects[3] = scope(3, 'rotated-token-3-abcdefgh');
    publish(store, objects);
    await until(() => loaded.length === 2);
    expect(decide(loaded[1]!.index, DEFAULT_CONFIG, { method: 'GET', target, authorization: 'Bearer secret-token-3-abcdefgh' }, Date.now()).outcome).not.toBe('granted');
  });

  it('reports (once) that the API server is away, keeps the last snapshot, and reloads after', async () => {
    const { api, store, source, loaded, failed, sink } = setup();
    publish(store, [scope(1, 'secret-token-1-abcdefgh')]);
    await source.start(sink);
    api.outage = true;
    store.cutWatches(new Error('EOF'));
    await sleep(300);
    const watchFailures = failed.filter((f) => /watching the snapshot index/.test(f.problems[0]!.message));
    expect(watchFailures).toHaveLength(1);
    publish(store, [scope(1, 'secret-token-1-abcdefgh'), scope(2, 'secret-token-2-abcdefgh')]);
    api.outage = false;
    await until(() => loaded.length === 2, 15_000);
    expect(loaded[1]!.index.scopeCount).toBe(2);
  }, 20_000);

  it('refuses a generation with a line that is no scope line, naming it, keeps the last one and loads the next good one', async () => {
    const { store, source, loaded, failed, sink } = setup();
    const objects = Array.from({ length: 12 }, (_, i) => scope(i, `secret-token-${i}-abcdefgh`));
    const generation = publish(store, objects);
    await source.start(sink);
    // Digests and generation that add up, over a line that is no scope line: only parsing finds it.
    const lines = [...compileSnapshot(objects.map((o, i) => (i === 5 ? scope(5, 'rotated-token-5-abcdefgh') : o))).lines];
    lines[5] = '{"kind":"topic","value":"a..b","tokens":[]}';
    const bad = shardSnapshot({ generation: generationOf(lines), scopeCount: lines.length, tokenCount: 11, lines }, 300);
    for (const s of bad.shards) store.put({ metadata: { name: shardConfigMapName('snap', s.digest), labels: snapshotLabels('snap', 'shard') }, immutable: true, data: { [SHARD_KEY]: s.text } });
    store.put({ metadata: { name: 'snap', labels: snapshotLabels('snap', 'index') }, data: { [SNAPSHOT_INDEX_KEY]: JSON.stringify(bad.snapshotIndex) } });
    await until(() => failed.some((f) => /scope line 6: /.test(f.problems[0]!.message)));
    expect(failed.find((f) => /scope line 6: /.test(f.problems[0]!.message))!.problems[0]!.message).toMatch(new RegExp(`^generation ${bad.snapshotIndex.generation.slice(0, 12)}: scope line 6: .*; keeping generation ${generation.slice(0, 12)}$`));
    expect(loaded).toHaveLength(1);
    objects[5] = scope(5, 'rotated-token-5-abcdefgh');
    const next = publish(store, objects);
    await until(() => loaded.length === 2);
    expect(loaded[1]!.index.generation).toBe(next);
  });

  it('reports a failure, not a snapshot, when the snapshot index does not exist yet', async () => {
    const { source, loaded, failed, sink } = setup();
    await source.start(sink);
    expect(loaded).toHaveLength(0);
    expect(failed[0]!.problems[0]!.message).toMatch(/not found/);
  });
});

describe('svc-auth --snapshot-configmap', () => {
  const io = () => {
    const err: string[] = [];
    return { io: { out: () => undefined, err: (s: string) => void err.push(s) }, err };
  };

  it('selects the ConfigMap source with its namespace and kubeconfig', async () => {
    const { parseArgs } = await import('../args.js');
    const r = parseArgs(['--snapshot-configmap', 'svc-auth-snapshot', '--namespace', 'svc', '--kubeconfig', '/tmp/k', '--context', 'c'], io().io);
    expect('exit' in r).toBe(false);
    expect((r as { source: unknown }).source).toEqual({ kind: 'configmap', name: 'svc-auth-snapshot', namespace: 'svc', kubeconfig: '/tmp/k', context: 'c' });
  });

  it('refuses two sources, and Kubernetes flags without the ConfigMap source', async () => {
    const { parseArgs } = await import('../args.js');
    const a = io();
    expect(parseArgs(['--snapshot-configmap', 'x', '--scopes-dir', '.'], a.io)).toEqual({ exit: 2 });
    expect(a.err.join('')).toMatch(/exactly one snapshot source/);
    const b = io();
    expect(parseArgs(['--scopes-dir', '.', '--namespace', 'svc'], b.io)).toEqual({ exit: 2 });
    expect(b.err.join('')).toMatch(/go with --snapshot-configmap/);
    const c = io();
    expect(parseArgs(['--snapshot-configmap', 'Not_A_Name'], c.io)).toEqual({ exit: 2 });
  });
});
