// Two svc-operators with leader election on one namespace: exactly one writes; when it dies without releasing
// the lease the other takes over after the lease duration, and when it stops cleanly, at once.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Kube } from '../../k8s/kube.js';
import { kubeLeaseClient } from '../../k8s/lease.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { OperatorProcess, createScope, getScope, kubeFor, newToken } from './operator-support.js';
import { sleep, until } from '../support/wait.js';

const LEASE = ['--leader-elect', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];

describeCluster('svc-operator leader election', () => {
  let kube: Kube;
  const started: OperatorProcess[] = [];

  beforeAll(async () => {
    kube = await kubeFor(kubeconfigPath());
  });

  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    kube?.close();
  });

  async function operator(ns: string): Promise<OperatorProcess> {
    const p = new OperatorProcess(kubeconfigPath(), ns, LEASE).start();
    started.push(p);
    return p.started();
  }

  /** The Lease as the operator reads it (times in ms). */
  const lease = async (ns: string) => (await kubeLeaseClient(kube, ns, 'svc-auth-snapshot-operator').get())!;
  const holder = async (ns: string) => (await lease(ns)).holderIdentity;
  const closed = async (ns: string, name: string) => (await getScope(kube, ns, name)).status?.state === 'Closed';

  it('lets exactly one of two operators write, and hands over when the leader dies or stops', async () => {
    const ns = await newNamespace('op-leader');
    const one = await operator(ns);
    const two = await operator(ns);
    await until('a lease holder', async () => [one.identity, two.identity].includes((await holder(ns)) ?? ''));
    const leaderId = (await holder(ns))!;
    const [leader, follower] = leaderId === one.identity ? [one, two] : [two, one];

    for (let i = 0; i < 5; i++) await createScope(kube, ns, `s${i}`, { topicHierarchy: `origin.l${i}`, tokens: [newToken().record] });
    await until('statuses', async () => (await Promise.all([0, 1, 2, 3, 4].map((i) => closed(ns, `s${i}`)))).every(Boolean));
    await sleep(1000);
    expect(await leader.writes()).toBeGreaterThan(0);
    expect(await follower.writes()).toBe(0);
    expect((await leader.metrics()).get('svc_operator_leader')).toBe(1);
    expect((await follower.metrics()).get('svc_operator_leader')).toBe(0);
    expect(await follower.ready()).toBe(true); // a warm standby

    // The leader crashes (SIGKILL: no release). The follower takes over once the lease runs out (4 s), never
    // before: checked on the Lease's own instants, not on the test's clock. A renewal already sent when the
    // leader died still lands, so its last renewal is read after a pause.
    await leader.stop('SIGKILL');
    await sleep(1000);
    const crashed = await lease(ns);
    expect(crashed.holderIdentity).toBe(leader.identity);
    await createScope(kube, ns, 'after-crash', { topicHierarchy: 'origin.after.crash', tokens: [newToken().record] });
    await until('takeover after a crash', async () => (await holder(ns)) === follower.identity, 20_000);
    const taken = await lease(ns);
    expect(taken.acquireTimeMs! - crashed.renewTimeMs!).toBeGreaterThanOrEqual(4000 - 1); // MicroTime read to the ms
    await until('the new leader writes', () => closed(ns, 'after-crash'), 20_000);
    expect(await follower.writes()).toBeGreaterThan(0);

    // A third operator joins; the current leader stops cleanly (SIGTERM releases the lease): at once.
    const third = await operator(ns);
    await sleep(1500);
    expect(await third.writes()).toBe(0);
    // A clean stop releases the lease before the process exits (an empty holder): the third need not wait it out.
    await follower.stop('SIGTERM');
    expect(['', third.identity]).toContain((await holder(ns)) ?? '');
    await until('takeover after a release', async () => (await holder(ns)) === third.identity, 10_000);
    await createScope(kube, ns, 'after-release', { topicHierarchy: 'origin.after.release', tokens: [newToken().record] });
    await until('the third writes', () => closed(ns, 'after-release'), 20_000);
    expect((await lease(ns)).leaseTransitions).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
