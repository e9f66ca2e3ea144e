// svc-operator and svc-auth as real processes on the test control plane: scopes created, updated and deleted
// show up in the snapshot ConfigMaps, in each ProtectedScope's status and in svc-auth's decisions; a snapshot too
// big for one ConfigMap is sharded and still loads; a restart writes nothing new; a token's expiry moves
// activeTokens and svc-auth denies it from that moment.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseSnapshotIndex } from '../../core/index.js';
import type { Kube } from '../../k8s/kube.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import {
  AuthProcess,
  OperatorProcess,
  createScope,
  deleteScope,
  getConfigMap,
  getScope,
  kubeFor,
  listSnapshotConfigMaps,
  newToken,
  topicFile,
  updateSpec,
} from './operator-support.js';
import { sleep, until, waitUntil } from '../support/wait.js';

const TIMEOUT = 120_000;

interface Status {
  state?: string;
  tokens?: number;
  networks?: number;
  activeTokens?: number;
  observedGeneration?: number;
  scope?: string;
  kind?: string;
  mergedWith?: string[];
  conditions?: { type: string; status: string; reason: string; message: string }[];
}

describeCluster('svc-operator + svc-auth on the control plane', () => {
  let kube: Kube;
  const started: { stop(signal?: NodeJS.Signals): Promise<void> }[] = [];

  beforeAll(async () => {
    kube = await kubeFor(kubeconfigPath());
  });

  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    kube?.close();
  });

  async function operator(namespace: string, extra: string[] = []): Promise<OperatorProcess> {
    const p = new OperatorProcess(kubeconfigPath(), namespace, extra).start();
    started.push(p);
    return p.started();
  }

  async function auth(namespace: string): Promise<AuthProcess> {
    const p = new AuthProcess(kubeconfigPath(), namespace).start();
    started.push(p);
    return p.started();
  }

  const status = async (ns: string, name: string) => (await getScope(kube, ns, name)).status as Status | undefined;

  async function events(ns: string): Promise<{ reason: string; name: string; note: string }[]> {
    const list = await kube.events.listNamespacedEvent({ namespace: ns });
    return list.items.map((e) => ({ reason: e.reason ?? '', name: e.regarding?.name ?? '', note: e.note ?? '' }));
  }

  it(
    'follows create, update and delete: snapshot, status, Events and svc-auth decisions',
    async () => {
      const ns = await newNamespace('op-life');
      const op = await operator(ns);
      const svc = await auth(ns);
      const a1 = newToken();
      const a2 = newToken();
      const b1 = newToken();
      const fileA = topicFile('origin.a.wis2.mw-met.data.core');
      const fileB = topicFile('origin.b.wis2.x.data.core');

      // svc-auth is not ready before the first snapshot exists; then it is, and everything is open.
      expect(await svc.ready()).toBe(false);
      await until('an (empty) snapshot index', () => getConfigMap(kube, ns, 'svc-auth-snapshot'));
      await until('svc-auth ready', () => svc.ready());
      expect(await svc.decide(fileA)).toBe(200);

      // Create: scope A closes.
      await createScope(kube, ns, 'scope-a', { topicHierarchy: 'origin.a.wis2.mw-met.data.core', tokens: [a1.record] });
      await until('A closed in svc-auth', async () => (await svc.decide(fileA)) === 401);
      expect(await svc.decide(fileA, a1.secret)).toBe(200);
      expect(await svc.decide(fileB)).toBe(200);
      const s1 = await until('status of A', async () => {
        const s = await status(ns, 'scope-a');
        return s?.state === 'Closed' ? s : undefined;
      });
      expect(s1).toMatchObject({ scope: 'origin.a.wis2.mw-met.data.core', kind: 'topicHierarchy', tokens: 1, activeTokens: 1, observedGeneration: 1 });
      expect(s1.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Compiled' });

      // Update: a second token for A, and B created.
      await updateSpec(kube, ns, 'scope-a', (spec) => ({ ...spec, tokens: [a1.record, a2.record] }));
      await createScope(kube, ns, 'scope-b', { topicHierarchy: 'origin.b.wis2.x.data.core', tokens: [b1.record] });
      await until('A2 granted', async () => (await svc.decide(fileA, a2.secret)) === 200);
      await until('B closed', async () => (await svc.decide(fileB)) === 401);
      expect(await svc.decide(fileB, a1.secret)).toBe(403); // a valid token of another scope
      await until('status of A at generation 2', async () => (await status(ns, 'scope-a'))?.observedGeneration === 2);
      expect(await status(ns, 'scope-a')).toMatchObject({ tokens: 2, activeTokens: 2 });

      // Revoke a1: denied from then on.
      await updateSpec(kube, ns, 'scope-a', (spec) => ({ ...spec, tokens: [a2.record] }));
      await until('a1 revoked', async () => (await svc.decide(fileA, a1.secret)) !== 200);
      expect(await svc.decide(fileA, a2.secret)).toBe(200);

      // Delete: A opens.
      await deleteScope(kube, ns, 'scope-a');
      await until('A open again', async () => (await svc.decide(fileA)) === 200);
      expect(await svc.decide(fileB)).toBe(401);

      const idx = parseSnapshotIndex((await getConfigMap(kube, ns, 'svc-auth-snapshot'))!.data!['index.json']!);
      expect(idx.ok && idx.value.scopes).toBe(1);
      await until('Events', async () => {
        const reasons = (await events(ns)).map((e) => `${e.reason}/${e.name}`);
        return ['ScopeClosed/scope-a', 'ScopeClosed/scope-b', 'ScopeOpened/scope-a'].every((r) => reasons.includes(r));
      });
      // No Event or status ever carries a token hash.
      const texts = JSON.stringify([await events(ns), await status(ns, 'scope-b')]);
      for (const t of [a1, a2, b1]) {
        expect(texts).not.toContain(t.record.hash.slice(7, 40));
        expect(texts).not.toContain(t.secret);
      }
      expect(op.running && svc.running).toBe(true);
    },
    TIMEOUT,
  );

  it(
    'closed: true and the default of path scopes: status, Events, and svc-auth from the snapshot ConfigMaps',
    async () => {
      const ns = await newNamespace('op-closed');
      await operator(ns);
      const a = await auth(ns);
      await createScope(kube, ns, 'embargo', { topicHierarchy: 'origin.embargo', tokens: [], closed: true });
      await createScope(kube, ns, 'stations', { path: 'collections/stations', tokens: [] });
      await until('embargo Closed', async () => (await status(ns, 'embargo'))?.state === 'Closed');
      expect((await status(ns, 'embargo'))?.conditions?.[0]?.message).toMatch(/^scope Closed \(closed: true\)/);
      await until('stations Closed (default)', async () => (await status(ns, 'stations'))?.state === 'Closed');
      expect((await status(ns, 'stations'))?.conditions?.[0]?.message).toMatch(/^scope Closed \(closed by default: /);
      await until('ScopeClosed Events', async () => (await events(ns)).filter((e) => e.reason === 'ScopeClosed').length === 2);
      expect((await events(ns)).find((e) => e.name === 'embargo')?.note).toMatch(/ \(closed: true\)$/);
      await until('svc-auth refuses the embargoed topic', async () => (await a.decide(topicFile('origin.embargo'))) === 401);
      // Lifting the embargo opens the topic; a path scope without tokens stays closed by default.
      await updateSpec(kube, ns, 'embargo', () => ({ topicHierarchy: 'origin.embargo', tokens: [] }));
      await until('svc-auth opens it', async () => (await a.decide(topicFile('origin.embargo'))) === 200);
      // The snapshot is published before any status patch (the reconciler's order), so status follows.
      await until('embargo Open in status', async () => (await status(ns, 'embargo'))?.state === 'Open');
      expect((await status(ns, 'stations'))?.state).toBe('Closed');
    },
    TIMEOUT,
  );

  it(
    'merges objects for one scope and flags them in status and Events',
    async () => {
      const ns = await newNamespace('op-merge');
      await operator(ns);
      const t1 = newToken();
      const t2 = newToken();
      await createScope(kube, ns, 'hand-written-1', { metadataId: 'urn:wmo:md:mw-met:obs', tokens: [t1.record] });
      await createScope(kube, ns, 'hand-written-2', { metadataId: 'urn:wmo:md:mw-met:obs', tokens: [t2.record] });
      // Each object's status is patched in its own turn of the status queue: wait for both.
      await until('mergedWith on 1', async () => (await status(ns, 'hand-written-1'))?.mergedWith?.[0] === 'hand-written-2');
      await until('mergedWith on 2', async () => (await status(ns, 'hand-written-2'))?.mergedWith !== undefined);
      expect((await status(ns, 'hand-written-2'))?.mergedWith).toEqual(['hand-written-1']);
      await until('ScopesMerged Events', async () => (await events(ns)).filter((e) => e.reason === 'ScopesMerged').length === 2);
      const idx = parseSnapshotIndex((await until('index', () => getConfigMap(kube, ns, 'svc-auth-snapshot'))).data!['index.json']!);
      expect(idx.ok && idx.value).toMatchObject({ scopes: 1, tokens: 2 });
    },
    TIMEOUT,
  );

  it(
    'splits a snapshot too big for one ConfigMap into immutable shards that svc-auth loads',
    async () => {
      const ns = await newNamespace('op-shards');
      // A small shard limit stands in for the 1 MiB object limit: 60 scopes of ~1 KiB each need many shards.
      await operator(ns, ['--shard-max-bytes', '4096']);
      const tokens = new Map<number, ReturnType<typeof newToken>[]>();
      for (let i = 0; i < 60; i++) {
        const ts = Array.from({ length: 8 }, () => newToken());
        tokens.set(i, ts);
        await createScope(kube, ns, `s${i}`, { topicHierarchy: `origin.s${i}.wis2.data.core`, tokens: ts.map((t) => t.record) });
      }
      const index = await until('an index of all 60 scopes', async () => {
        const cm = await getConfigMap(kube, ns, 'svc-auth-snapshot');
        const idx = cm && parseSnapshotIndex(cm.data!['index.json']!);
        return idx && idx.ok && idx.value.scopes === 60 ? idx.value : undefined;
      });
      expect(index.shards.length).toBeGreaterThan(5);
      const cms = await listSnapshotConfigMaps(kube, ns);
      const shards = cms.filter((c) => c.metadata?.labels?.['auth.svc.io/snapshot-role'] === 'shard');
      expect(shards.every((c) => c.immutable === true)).toBe(true);
      for (const ref of index.shards) expect(shards.some((c) => c.metadata?.name === `svc-auth-snapshot-${ref.digest.slice(0, 16)}`)).toBe(true);

      const svc = await auth(ns);
      await until('svc-auth ready', () => svc.ready());
      for (const i of [0, 17, 59]) {
        const file = topicFile(`origin.s${i}.wis2.data.core`);
        expect(await svc.decide(file)).toBe(401);
        expect(await svc.decide(file, tokens.get(i)![3]!.secret)).toBe(200);
      }
    },
    TIMEOUT,
  );

  it(
    'writes nothing new after a restart when nothing changed',
    async () => {
      const ns = await newNamespace('op-restart');
      const first = await operator(ns, ['--shard-max-bytes', '4096']);
      for (let i = 0; i < 20; i++) await createScope(kube, ns, `s${i}`, { topicHierarchy: `origin.r${i}`, tokens: [newToken().record, newToken().record] });
      await until('all statuses', async () => {
        const list = (await kube.custom.listNamespacedCustomObject({ group: 'auth.svc.io', version: 'v1alpha1', namespace: ns, plural: 'protectedscopes' })) as { items: { status?: Status }[] };
        return list.items.length === 20 && list.items.every((o) => o.status?.state === 'Closed');
      });
      await sleep(1000);
      await first.stop();
      const versions = async () => {
        const cms = await listSnapshotConfigMaps(kube, ns);
        const scopes = (await kube.custom.listNamespacedCustomObject({ group: 'auth.svc.io', version: 'v1alpha1', namespace: ns, plural: 'protectedscopes' })) as { items: { metadata: { name: string; resourceVersion: string } }[] };
        return [...cms.map((c) => `${c.metadata?.name}@${c.metadata?.resourceVersion}`), ...scopes.items.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)].sort();
      };
      const before = await versions();
      const eventsBefore = (await events(ns)).length;
      const second = await operator(ns, ['--shard-max-bytes', '4096']);
      await until('second operator ready', () => second.ready());
      await sleep(3000);
      expect(await versions()).toEqual(before);
      expect(await second.writes()).toBe(0);
      expect((await events(ns)).length).toBe(eventsBefore);
      const m = await second.metrics();
      expect(m.get('svc_operator_reconciles_total{result="success"}')).toBeGreaterThanOrEqual(1);
    },
    TIMEOUT,
  );

  it(
    'networks: a scope with only networks is Closed with status.networks, compiled into the snapshot, loaded by svc-auth; removing them opens it',
    async () => {
      const ns = await newNamespace('op-networks');
      await operator(ns);
      const svc = await auth(ns);
      const file = topicFile('origin.net.wis2.data.core');
      await until('svc-auth ready', () => svc.ready());
      const networks = [{ cidr: '203.0.113.7/32', description: 'Global Cache' }, { cidr: '2001:db8::/32' }];
      await createScope(kube, ns, 'net', { topicHierarchy: 'origin.net.wis2.data.core', tokens: [], networks });
      const s = await until('status of net', async () => {
        const st = await status(ns, 'net');
        return st?.state === 'Closed' ? st : undefined;
      });
      expect(s).toMatchObject({ tokens: 0, networks: 2 });
      expect(s.conditions?.find((c) => c.type === 'Ready')?.message).toMatch(/this object has 0 tokens \(0 active\) and 2 networks/);
      // svc-auth loads the line: the scope is closed to a request without a credential.
      await until('closed in svc-auth', async () => (await svc.decide(file)) === 401);
      const shards = (await listSnapshotConfigMaps(kube, ns)).flatMap((cm) => Object.values(cm.data ?? {}));
      expect(shards.join('\n')).toContain('{"kind":"topic","value":"origin.net.wis2.data.core","tokens":[],"networks":["2001:db8::/32","203.0.113.7/32"]}');
      await updateSpec(kube, ns, 'net', (spec) => ({ topicHierarchy: spec.topicHierarchy, tokens: [] }));
      await until('open again', async () => (await svc.decide(file)) === 200);
      await until('status of net open', async () => (await status(ns, 'net'))?.state === 'Open');
      expect((await status(ns, 'net'))?.networks).toBeUndefined();
    },
    TIMEOUT,
  );

  it(
    "moves activeTokens at a token's expiry, and svc-auth denies it from that moment",
    async () => {
      const ns = await newNamespace('op-expiry');
      await operator(ns);
      const svc = await auth(ns);
      const expiresAt = new Date(Date.now() + 6000);
      const short = newToken(expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'));
      const long = newToken();
      const file = topicFile('origin.exp.wis2.data.core');
      await createScope(kube, ns, 'exp', { topicHierarchy: 'origin.exp.wis2.data.core', tokens: [short.record, long.record] });
      await until('short token granted', async () => (await svc.decide(file, short.secret)) === 200);
      await until('status of exp', async () => (await status(ns, 'exp'))?.tokens === 2);
      expect(await status(ns, 'exp')).toMatchObject({ tokens: 2, activeTokens: 2 });
      const expiryMs = Date.parse(short.record.expiresAt!);
      // Granted up to the instant, denied from it on (svc-auth checks expiry itself, to the millisecond). An answer
      // counts for "before" only if it came back before the instant, and for "after" only if asked after it.
      let grantedBefore = 0;
      while (Date.now() < expiryMs - 100) {
        const code = await svc.decide(file, short.secret);
        if (Date.now() < expiryMs) {
          expect(code).toBe(200);
          grantedBefore++;
        }
        await sleep(100);
      }
      expect(grantedBefore).toBeGreaterThan(0); // at least one answer inside the window, whatever the machine's pace
      await sleep(Math.max(0, expiryMs - Date.now() + 1));
      expect(await svc.decide(file, short.secret)).toBe(401);
      expect(await svc.decide(file, long.secret)).toBe(200);
      // The operator reconciles at the expiry without any change to the object.
      const generation = (await getScope(kube, ns, 'exp')).metadata.generation;
      // Nothing else changes after the expiry, so only the operator's own wake-up at the expiry can move the status.
      const s = await waitUntil(async () => {
        const st = await status(ns, 'exp');
        return st?.activeTokens === 1 ? st : undefined;
      }, { what: 'activeTokens 1', timeoutMs: 15_000, intervalMs: 50 });
      expect(s).toMatchObject({ tokens: 2, state: 'Closed', observedGeneration: generation });
    },
    TIMEOUT,
  );
});

describe('operator-support', () => {
  it('builds WAF paths from topics', () => {
    expect(topicFile('a.b.c')).toBe('/data/2026-11-21/wis/a/b/c/x.bufr4');
  });
});
