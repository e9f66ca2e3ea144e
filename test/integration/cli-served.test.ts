// Issue 41, "never say closed when nothing enforces it", against a real kube-apiserver: the CLI reads the cluster to
// tell whether an svc-operator serves the namespace before it writes (the chart's record in kube-public, rendered by
// helm and read by a user with no other right there; the snapshot ConfigMap; the operator's Lease; the objects'
// status), finds the namespace from the record when neither -n nor the context names one, marks in show what no
// operator has compiled, and --wait returns once a real svc-operator's status says the change is compiled
// (docs/cli-safety.md). Every refusal: exit 2, one line, the namespace's objects unchanged (same resourceVersions).
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { hashToken, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { svc } from '../cli/harness.js';
import { describeCluster, kubeConfig, kubeconfigFor, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { helmBinary, helmTemplate, type Manifest } from '../stack/helm.js';
import { until } from '../support/wait.js';
import { markServed } from './cli-served-support.js';
import { OperatorProcess } from './operator-support.js';

const group = 'auth.svc.io';
const version = 'v1alpha1';
const plural = 'protectedscopes';
const T1 = 'token-of-served-it-0001';
const T2 = 'token-of-served-it-0002';
const CORE = 'origin.a.wis2.mw-met.data.core';

async function list(namespace: string): Promise<ProtectedScope[]> {
  const r = (await kubeConfig().makeApiClient(k8s.CustomObjectsApi).listNamespacedCustomObject({ group, version, namespace, plural })) as { items: ProtectedScope[] };
  return r.items.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}
const state = async (namespace: string) => (await list(namespace)).map((o) => [o.metadata.name, o.metadata.resourceVersion]);
const admin = (namespace: string, ...args: string[]) => svc(['--kubeconfig', kubeconfigPath(), '-n', namespace, ...args]);

describeCluster('the CLI on a real API server: served namespaces, the chart\'s record, show and --wait', () => {
  let served = '';
  let record: Manifest[] = [];
  const operators: OperatorProcess[] = [];

  beforeAll(async () => {
    // The namespace a chart release serves: its record in kube-public, as helm renders it, created as helm would.
    served = await newNamespace('cli-served');
    const helm = await helmBinary();
    const rendered = helmTemplate(helm, { namespace: served, showOnly: ['templates/served-namespace.yaml'] });
    if (rendered.status !== 0) throw new Error(rendered.stderr);
    record = rendered.manifests;
    const kc = kubeConfig();
    for (const m of record) {
      if (m.kind === 'ConfigMap') await kc.makeApiClient(k8s.CoreV1Api).createNamespacedConfigMap({ namespace: 'kube-public', body: m as unknown as k8s.V1ConfigMap });
      if (m.kind === 'Role') await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRole({ namespace: 'kube-public', body: m as unknown as k8s.V1Role });
      if (m.kind === 'RoleBinding') await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({ namespace: 'kube-public', body: m as unknown as k8s.V1RoleBinding });
    }
    // A data owner there: ProtectedScopes and nothing else (no ConfigMaps, no Leases, nothing in other namespaces).
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: served, body: { metadata: { name: 'owner' }, rules: [{ apiGroups: [group], resources: [plural], verbs: ['get', 'list', 'create', 'update'] }] } });
    await rbac.createNamespacedRoleBinding({
      namespace: served,
      body: { metadata: { name: 'owner' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'owner' }, subjects: [{ kind: 'User', name: 'dora', apiGroup: 'rbac.authorization.k8s.io' }] },
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await Promise.all(operators.map((p) => p.stop()));
    const kc = kubeConfig();
    const name = `svc-served.${served}`;
    await kc.makeApiClient(k8s.CoreV1Api).deleteNamespacedConfigMap({ name, namespace: 'kube-public' }).catch(() => undefined);
    await kc.makeApiClient(k8s.RbacAuthorizationV1Api).deleteNamespacedRoleBinding({ name, namespace: 'kube-public' }).catch(() => undefined);
    await kc.makeApiClient(k8s.RbacAuthorizationV1Api).deleteNamespacedRole({ name, namespace: 'kube-public' }).catch(() => undefined);
  });

  it('a namespace nothing serves (the issue\'s "default"): every write refused, exit 2, naming the served namespace; nothing written', async () => {
    const ns = await newNamespace('cli-unserved');
    await admin(ns, '--allow-unserved', 'auth', 'add-token', '--path', 'processes/svc', T1);
    const before = await state(ns);
    for (const args of [
      ['auth', 'add-token', '--topic-hierarchy', CORE, T2],
      ['auth', 'remove-token', '--path', 'processes/svc', T1],
      ['auth', 'add-network', '--path', 'data', '--cidr', '203.0.113.7/32'],
      ['auth', 'close', '--metadata-id', 'urn:wmo:md:mw-met:x'],
    ]) {
      const r = await admin(ns, ...args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr).toBe(`error: no svc-operator serves namespace ${ns} (no snapshot ConfigMap there, no record for it in kube-public, no object with an operator's status): nothing would enforce this change, and show would call the scope closed. svc-operator serves namespace ${served}: did you mean -n ${served}? If an svc-operator is being set up for namespace ${ns}, add --allow-unserved (nothing was changed)\n`);
    }
    expect(await state(ns)).toEqual(before);
    // What --allow-unserved wrote shows as not enforced.
    expect((await admin(ns, 'auth', 'show')).stdout).toMatch(/^path +processes\/svc +Closed \(not enforced\) +1 /m);
  });

  it('a user who may only edit ProtectedScopes, with no namespace anywhere: the chart\'s record names it, and says it is served', async () => {
    const dora = kubeconfigFor('dora');
    const r = await svc(['--kubeconfig', dora, 'auth', 'add-token', '--topic-hierarchy', CORE, T1]);
    expect(r.code).toBe(0);
    expect(r.stderr.split('\n')[0]).toBe(`Namespace ${served}: the one an svc-operator serves (kube-public/svc-served.${served}); the context names none. Give -n to choose another.`);
    expect(r.stderr).toMatch(/Not in force yet: svc-operator compiles it [^\n]* for up to 30 s more \(auth\.cacheMaxAge, from the chart's record\)\.\n$/);
    expect((await list(served)).map((o) => o.spec.topicHierarchy)).toEqual([CORE]);
    // No operator runs here (the record says one should): show says no operator has compiled it.
    expect((await svc(['--kubeconfig', dora, 'auth', 'show', '-o', 'text'])).stdout).toContain(`topic ${CORE}: Closed, 1 token`);
    expect((await svc(['--kubeconfig', dora, 'auth', 'show'])).stdout).toMatch(/^topic +origin\.a\.wis2\.mw-met\.data\.core +Closed \(not enforced\) +1 /m);
    // The typo of an existing scope, read from the cluster, is warned.
    const typo = await svc(['--kubeconfig', dora, 'auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.cor', T2]);
    expect(typo.code).toBe(0);
    expect(typo.stderr).toContain(`warning: topic origin.a.wis2.mw-met.data.cor is 1 edit from the existing topic ${CORE}`);
    expect(typo.stderr).not.toContain(T2);
  });

  it('a Lease its operator stopped renewing: refused, whatever snapshot and statuses remain', async () => {
    const ns = await newNamespace('cli-stale');
    await markServed(ns);
    await kubeConfig().makeApiClient(k8s.CoordinationV1Api).createNamespacedLease({
      namespace: ns,
      body: { metadata: { name: 'svc-auth-snapshot-operator' }, spec: { holderIdentity: 'svc-operator-gone', leaseDurationSeconds: 15, renewTime: new k8s.V1MicroTime(Date.now() - 10 * 60_000) } },
    });
    const r = await admin(ns, 'auth', 'add-token', '--path', 'processes/svc', T1);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(new RegExp(`^error: svc-operator's Lease svc-auth-snapshot-operator in namespace ${ns} is held by svc-operator-gone but last renewed 10 min ago: the operator is not running \\(check kubectl -n ${ns} get deploy,pods\\): nothing would enforce this change`));
    expect(await list(ns)).toEqual([]);
  });

  it('--wait with a real svc-operator: returns once its status says the new generation is compiled and Ready', async () => {
    const ns = await newNamespace('cli-wait');
    const operator = new OperatorProcess(kubeconfigPath(), ns).start();
    operators.push(operator);
    await operator.started();
    // Served once it has published its first snapshot (what the CLI reads; no Lease without --leader-elect).
    await until('the operator\'s first snapshot', async () => (await kubeConfig().makeApiClient(k8s.CoreV1Api).listNamespacedConfigMap({ namespace: ns, labelSelector: 'auth.svc.io/snapshot-role=index' })).items.length > 0);
    const added = await admin(ns, 'auth', 'add-token', '--path', 'processes/svc', T1, '--wait', '-o', 'json');
    expect({ code: added.code, stderr: added.stderr.replace(/\d+\.\d s/, 'N s') }).toEqual({
      code: 0,
      stderr: expect.stringMatching(/\nIn force: svc-operator has compiled it into the snapshot \(Ready, N s\); svc-auth loads the snapshot within about a second\.[^\n]*\n$/),
    });
    const [object] = await list(ns);
    expect(object!.status?.observedGeneration).toBe(object!.metadata.generation);
    expect(object!.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const removed = await admin(ns, 'auth', 'remove-token', '--path', 'processes/svc', '--id', tokenIdOf(hashToken(T1)), '--wait-timeout', '20s');
    expect(removed.code).toBe(0);
    expect(removed.stderr).toMatch(/^In force: .*A proxy caching svc-auth's answers may allow what this takes away for up to 30 s more/);
    const [after] = await list(ns);
    expect([after!.metadata.generation, after!.status?.observedGeneration]).toEqual([2, 2]);
    expect((await admin(ns, 'auth', 'show')).stdout).not.toMatch(/not enforced|pending/);
  }, 120_000);

  it('--wait where no operator comes: exit 1 after --wait-timeout, the change written and staying, said so', async () => {
    const ns = await newNamespace('cli-wait-none');
    const r = await admin(ns, '--allow-unserved', 'auth', 'add-token', '--path', 'processes/svc', T1, '--wait-timeout', '2s');
    expect({ code: r.code }).toEqual({ code: 1 });
    expect(r.stdout).toContain(`Id:      ${tokenIdOf(hashToken(T1))}`);
    expect(r.stderr).toMatch(new RegExp(`^warning: no svc-operator serves namespace ${ns} [^\\n]*written anyway \\(--allow-unserved\\)[^\\n]*\\nNew scope: [^\\n]*\\nerror: svc-operator has not compiled path-processes-svc-[0-9a-f]{8} \\(generation 1; its status says no operator has observed it\\) within 2 s: the change is written in namespace ${ns} \\(context [^)]+\\) and stays there, but is not in force until svc-operator compiles it`));
    expect((await list(ns)).map((o) => o.spec.tokens?.map((t) => t.id))).toEqual([[tokenIdOf(hashToken(T1))]]);
    expect(r.stdout + r.stderr).not.toContain(T1);
  }, 60_000);
});
