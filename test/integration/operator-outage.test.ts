// The API server goes away and comes back: svc-operator and svc-auth both recover on their own, and svc-auth
// keeps answering from its last good snapshot all along: it never allows a closed scope meanwhile. "Away" is a
// TCP proxy between them and kube-apiserver that refuses connections and cuts open ones (what clients see when
// kube-apiserver is stopped); the test control plane itself stays up for the other suites.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Kube } from '../../k8s/kube.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { ApiProxy, AuthProcess, OperatorProcess, createScope, getScope, kubeFor, newToken, serverOf, topicFile, updateSpec } from './operator-support.js';
import { sleep, until } from '../support/wait.js';

describeCluster('API server outage', () => {
  let kube: Kube;
  let proxy: ApiProxy;
  const started: { stop(): Promise<void> }[] = [];

  beforeAll(async () => {
    kube = await kubeFor(kubeconfigPath());
    const { host, port } = serverOf(kubeconfigPath());
    proxy = new ApiProxy(host, port);
    await proxy.up();
  });

  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await proxy?.down();
    kube?.close();
  });

  it('both recover, and svc-auth never allows a closed scope meanwhile', async () => {
    const ns = await newNamespace('op-outage');
    const viaProxy = proxy.kubeconfig(kubeconfigPath(), mkdtempSync(join(tmpdir(), 'svc-outage-')));
    // Short backoff caps so recovery is quick to observe; the defaults are the same mechanism, slower.
    const op = new OperatorProcess(viaProxy, ns, ['--request-timeout', '5s']).start();
    const svc = new AuthProcess(viaProxy, ns).start();
    started.push(op, svc);
    await op.started();
    await svc.started();

    const a = newToken();
    const revoked = newToken();
    const fileA = topicFile('origin.outage.a');
    const fileB = topicFile('origin.outage.b');
    await createScope(kube, ns, 'a', { topicHierarchy: 'origin.outage.a', tokens: [a.record, revoked.record] });
    await until('A closed', async () => (await svc.decide(fileA)) === 401);
    await updateSpec(kube, ns, 'a', (spec) => ({ ...spec, tokens: [a.record] }));
    await until('revocation served', async () => (await svc.decide(fileA, revoked.secret)) === 401);

    // Probe svc-auth continuously from now on.
    const seen = new Map<string, number>();
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const [anon, rev, ok] = await Promise.all([svc.decide(fileA), svc.decide(fileA, revoked.secret), svc.decide(fileA, a.secret)]);
        for (const [k, v] of [['anon', anon], ['revoked', rev], ['granted', ok]] as const) seen.set(`${k}:${v}`, (seen.get(`${k}:${v}`) ?? 0) + 1);
        await sleep(50);
      }
    })();

    // Outage.
    await proxy.down();
    await sleep(2000);
    // Changes made meanwhile (directly, not through the proxy) cannot reach them yet.
    const b = newToken();
    await createScope(kube, ns, 'b', { topicHierarchy: 'origin.outage.b', tokens: [b.record] });
    await sleep(6000);
    expect(await svc.ready()).toBe(true); // still serving the last good snapshot
    expect(await op.ready()).toBe(true); // caches kept
    expect(await svc.decide(fileB)).toBe(200); // B is not known yet: open, as before the outage

    // Back.
    await proxy.up();
    await until('B closed after recovery', async () => (await svc.decide(fileB)) === 401, 60_000);
    expect(await svc.decide(fileB, b.secret)).toBe(200);
    await until('B status', async () => (await getScope(kube, ns, 'b')).status?.state === 'Closed', 60_000);
    probing = false;
    await probe;

    expect(seen.get('anon:200') ?? 0).toBe(0);
    expect(seen.get('revoked:200') ?? 0).toBe(0);
    expect(seen.get('anon:0') ?? 0).toBe(0); // svc-auth answered every probe
    expect(seen.get('granted:200')).toBeGreaterThan(10);
    const m = await op.metrics();
    expect(m.get('svc_operator_informer_restarts_total{resource="protectedscopes"}')).toBeGreaterThan(0);
  }, 150_000);
});
