// Who can change who gets in (docs/access-rules.md), on the real kube-apiserver: the chart's ValidatingAdmissionPolicy
// and binding (templates/snapshot-admission-policy.yaml) applied as rendered, then every write to the snapshot
// ConfigMaps tried as a user whose Role may write any ConfigMap in the namespace (refused: create by name or label,
// update, relabelling into and out of the snapshot, delete, delete-collection), as svc-operator's ServiceAccount
// (allowed; the real operator publishes, replaces and prunes its snapshot), and as users holding the built-in `edit` and
// `admin` roles (refused directly, allowed by impersonating svc-operator: the documented trust boundary). The chart's
// data owners' Role, bound with the documented command, gives ProtectedScopes and nothing else.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { newProtectedScope, scopeObjectName } from '../../core/index.js';
import { ROLE_LABEL, SNAPSHOT_LABEL, snapshotLabels } from '../../k8s/snapshot/objects.js';
import { repoRoot } from '../controlplane/controlplane.js';
import { deleteNamespace, describeCluster, kubeConfig, kubeconfigFor, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { PROCESSES } from '../e2e/support/fixtures.js';
import { newToken, tokenRecord } from '../e2e/support/scopes.js';
import { helmBinary, helmTemplate, ofKind, type Manifest } from '../stack/helm.js';
import { componentKubeconfigs, installIdentities } from '../stack/identities.js';
import { applyManifests, kubectlBinary } from '../stack/kubectl.js';
import { chartCommandLine, Program } from '../stack/processes.js';
import { freePorts } from '../support/ports.js';
import { runCommand } from '../support/process.js';
import { until } from '../support/wait.js';

const SNAPSHOT = 'svc-auth-snapshot';
const SHARD_LIKE = `${SNAPSHOT}-0123456789abcdef`;
const GROUP = 'auth.svc.io';
const VERSION = 'v1alpha1';
const PLURAL = 'protectedscopes';
const DOCS = join(repoRoot, 'docs', 'access-rules.md');

const tokens = [newToken(), newToken(), newToken()];

interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

describeCluster('only svc-operator writes the snapshot: the chart\'s admission policy on the real API server', () => {
  let ns: string;
  let policyName: string;
  let manifests: Manifest[];
  let workDir: string;
  let operator: Program | undefined;
  let editRole: string;
  const users = {} as Record<'mallory' | 'eddie' | 'adele' | 'dora', string>;
  const clusterRoles: string[] = [];
  const admin = () => kubeConfig();
  const core = () => admin().makeApiClient(k8s.CoreV1Api);
  const operatorUser = () => `system:serviceaccount:${ns}:svc-operator`;

  /** kubectl in the test namespace as the identity of `kubeconfig` (async: the operator's output keeps draining). */
  const kubectl = (kubeconfig: string, args: readonly string[], input?: string): Promise<Run> =>
    runCommand(kubectlBinary(), ['-n', ns, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig }, ...(input === undefined ? {} : { input }) })
      .then((r) => ({ status: r.code ?? -1, stdout: r.stdout, stderr: r.stderr }));
  const asOperator = (): string[] => ['--as', operatorUser()];
  const configMap = (name: string, labels: Record<string, string> = {}): string =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { 'index.json': '{"opens":"everything"}' } });
  const create = (kubeconfig: string, name: string, labels?: Record<string, string>, extra: string[] = []) =>
    kubectl(kubeconfig, ['create', ...extra, '-f', '-'], configMap(name, labels));
  const patchData = (kubeconfig: string, name: string, extra: string[] = []) =>
    kubectl(kubeconfig, ['patch', ...extra, 'configmap', name, '--type=merge', '-p', '{"data":{"index.json":"{\\"opens\\":\\"everything\\"}"}}']);
  const label = (kubeconfig: string, name: string, change: string, extra: string[] = []) => kubectl(kubeconfig, ['label', ...extra, '--overwrite', 'configmap', name, change]);
  const remove = (kubeconfig: string, name: string, extra: string[] = []) => kubectl(kubeconfig, ['delete', ...extra, 'configmap', name, '--wait=false']);

  const policyRefusal = () => new RegExp(`ValidatingAdmissionPolicy '${policyName.replace(/\./g, '\\.')}' with binding '[^']+' denied request`);
  function expectRefused(r: Run, who?: string): void {
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(policyRefusal());
    if (who) expect(r.stderr).toContain(`${who} may not`);
  }
  function expectAllowed(r: Run): void {
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.not.stringMatching(/error|denied|forbidden/i) });
  }
  const exists = async (name: string) => (await core().readNamespacedConfigMap({ name, namespace: ns }).catch(() => undefined)) !== undefined;
  const index = async () => {
    const cm = await core().readNamespacedConfigMap({ name: SNAPSHOT, namespace: ns }).catch(() => undefined);
    const text = cm?.data?.['index.json'];
    return text ? { cm, index: JSON.parse(text) as { tokens: number; shards: { digest: string }[] } } : undefined;
  };
  const shardNames = async () => (await core().listNamespacedConfigMap({ namespace: ns, labelSelector: `${SNAPSHOT_LABEL}=${SNAPSHOT},${ROLE_LABEL}=shard` }))
    .items.map((c) => c.metadata!.name!).sort();

  /**
   * A built-in ClusterRole (edit, admin) as the cluster has it. The test control plane runs no controller-manager, so
   * the aggregated roles are still empty there: their rules are then what the clusterrole-aggregation controller
   * would put in them (the union of the ClusterRoles their selectors match, themselves aggregated: edit takes view's,
   * admin edit's), in a ClusterRole of the test's own.
   */
  async function builtInRole(name: 'edit' | 'admin'): Promise<string> {
    const rbac = admin().makeApiClient(k8s.RbacAuthorizationV1Api);
    const role = await rbac.readClusterRole({ name });
    if ((role.rules ?? []).length > 0) return name;
    const rules = new Map<string, k8s.V1PolicyRule>();
    const seen = new Set<string>();
    const gather = async (r: k8s.V1ClusterRole): Promise<void> => {
      if (seen.has(r.metadata!.name!)) return;
      seen.add(r.metadata!.name!);
      for (const rule of r.rules ?? []) rules.set(JSON.stringify(rule), rule);
      for (const selector of r.aggregationRule?.clusterRoleSelectors ?? []) {
        const labelSelector = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
        for (const member of (await rbac.listClusterRole({ labelSelector })).items) await gather(member);
      }
    };
    await gather(role);
    if (rules.size === 0) throw new Error(`ClusterRole ${name} has no rules and aggregates none`);
    const copy = `svc-test-${name}-${ns}`;
    await rbac.createClusterRole({ body: { metadata: { name: copy }, rules: [...rules.values()] } });
    clusterRoles.push(copy);
    return copy;
  }

  async function bind(binding: string, roleRef: { kind: 'Role' | 'ClusterRole'; name: string }, user: string): Promise<void> {
    await admin().makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: ns,
      body: { metadata: { name: binding }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }] },
    });
  }

  beforeAll(async () => {
    const helm = await helmBinary();
    ns = await newNamespace('snapguard');
    // The operator prunes a replaced shard at once, so the test sees its delete go through the policy.
    const r = helmTemplate(helm, { namespace: ns, values: { operator: { extraArgs: ['--stale-shard-grace=0s'] } } });
    if (r.status !== 0) throw new Error(r.stderr);
    manifests = r.manifests;
    installIdentities(helm, kubeconfigPath(), ns);
    const policy = [...ofKind(manifests, 'ValidatingAdmissionPolicy'), ...ofKind(manifests, 'ValidatingAdmissionPolicyBinding'), ...ofKind(manifests, 'Role', 'svc-data-owner')];
    expect(policy.map((m) => m.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'Role']);
    policyName = policy[0]!.metadata.name;
    const applied = applyManifests(kubeconfigPath(), policy);
    if (applied.status !== 0) throw new Error(`applying the policy failed:\n${applied.stderr}`);

    // A user whose Role may write any ConfigMap in the namespace, and nothing else.
    await admin().makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'configmap-writer' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] }] },
    });
    users.mallory = kubeconfigFor('mallory');
    await bind('mallory', { kind: 'Role', name: 'configmap-writer' }, 'mallory');
    users.eddie = kubeconfigFor('eddie');
    editRole = await builtInRole('edit');
    await bind('eddie', { kind: 'ClusterRole', name: editRole }, 'eddie');
    users.adele = kubeconfigFor('adele');
    await bind('adele', { kind: 'ClusterRole', name: await builtInRole('admin') }, 'adele');

    // The policy is enforced once the API server's admission plugin has it (informers, type checking): probe with
    // a server-side dry run, which goes through admission and stores nothing, until it is refused.
    await until('the policy to refuse a snapshot ConfigMap written by a ConfigMap writer', async () => {
      const probe = await create(users.mallory, SNAPSHOT, {}, ['--dry-run=server']);
      return probe.status !== 0 && policyRefusal().test(probe.stderr);
    }, 60_000);
    workDir = mkdtempSync(join(tmpdir(), 'svc-snapguard-'));
  }, 15 * 60_000);

  afterAll(async () => {
    await operator?.stop();
    const reg = admin().makeApiClient(k8s.AdmissionregistrationV1Api);
    if (policyName) {
      await reg.deleteValidatingAdmissionPolicyBinding({ name: policyName }).catch(() => undefined);
      await reg.deleteValidatingAdmissionPolicy({ name: policyName }).catch(() => undefined);
    }
    for (const name of clusterRoles) await admin().makeApiClient(k8s.RbacAuthorizationV1Api).deleteClusterRole({ name }).catch(() => undefined);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('refuses a user who may write ConfigMaps to create the snapshot: by the index\'s or a shard\'s name, or by either label', async () => {
    expectRefused(await create(users.mallory, SNAPSHOT), 'mallory');
    expectRefused(await create(users.mallory, SHARD_LIKE), 'mallory');
    expectRefused(await create(users.mallory, 'looks-harmless', { [SNAPSHOT_LABEL]: SNAPSHOT }), 'mallory');
    expectRefused(await create(users.mallory, 'looks-harmless', { [SNAPSHOT_LABEL]: 'another-snapshot' }), 'mallory');
    expectRefused(await create(users.mallory, 'looks-harmless', { [ROLE_LABEL]: 'shard' }), 'mallory');
    for (const name of [SNAPSHOT, SHARD_LIKE, 'looks-harmless']) expect(await exists(name)).toBe(false);
  }, 120_000);

  it('lets the real svc-operator, as its ServiceAccount, publish the snapshot, replace it and prune the old shard', async () => {
    const [port] = await freePorts(1);
    const kubeconfigs = await componentKubeconfigs(admin(), ns, workDir);
    operator = new Program({ name: 'svc-operator', command: chartCommandLine(manifests, 'svc-operator', ns, { metricsListen: port! }), kubeconfig: kubeconfigs['svc-operator'], secrets: tokens });
    operator.start();
    await operator.waitForHttp(port!, '/healthz');
    const objects = admin().makeApiClient(k8s.CustomObjectsApi);
    const name = scopeObjectName(PROCESSES);
    await objects.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, body: newProtectedScope(PROCESSES, name, ns, [tokenRecord(tokens[0]!)]) });
    const first = await until('the snapshot with one token', async () => ((await index())?.index.tokens === 1 ? shardNames() : undefined), 60_000, () => operator!.tail());
    expect(first.length).toBeGreaterThan(0);
    expect((await index())!.cm!.metadata!.labels).toMatchObject(snapshotLabels(SNAPSHOT, 'index'));

    await objects.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name,
      body: { spec: { tokens: [tokenRecord(tokens[0]!), tokenRecord(tokens[1]!)] } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    const second = await until('the snapshot with two tokens, its old shard pruned', async () => {
      if ((await index())?.index.tokens !== 2) return undefined;
      const now = await shardNames();
      return first.every((s) => !now.includes(s)) ? now : undefined;
    }, 60_000, () => operator!.tail());
    expect(second.length).toBeGreaterThan(0);
    expect(operator.output).not.toMatch(/denied request|forbidden/i);
  }, 180_000);

  it('refuses the user\'s update, relabelling, delete and delete-collection of the snapshot the operator wrote', async () => {
    const [shard] = await shardNames();
    const before = (await index())!.cm!.metadata!.resourceVersion;
    expectRefused(await patchData(users.mallory, SNAPSHOT), 'mallory');
    expectRefused(await label(users.mallory, SNAPSHOT, 'team=mallory'), 'mallory');
    expectRefused(await label(users.mallory, SNAPSHOT, `${SNAPSHOT_LABEL}-`), 'mallory');
    expectRefused(await kubectl(users.mallory, ['replace', '-f', '-'], configMap(SNAPSHOT, snapshotLabels(SNAPSHOT, 'index'))), 'mallory');
    expectRefused(await remove(users.mallory, SNAPSHOT), 'mallory');
    expectRefused(await remove(users.mallory, shard!), 'mallory');
    const collection = await kubeConfigOf(users.mallory).makeApiClient(k8s.CoreV1Api).deleteCollectionNamespacedConfigMap({ namespace: ns }).then(() => undefined, (e: unknown) => e);
    expect(String((collection as { body?: unknown })?.body ?? collection)).toMatch(policyRefusal());
    expect((await index())!.cm!.metadata!.resourceVersion).toBe(before);
    expect(await shardNames()).toContain(shard);
  }, 120_000);

  it('refuses relabelling into the snapshot and out of it (the label on the object after, or before, the update)', async () => {
    expectAllowed(await create(users.mallory, 'plain'));
    expectRefused(await label(users.mallory, 'plain', `${SNAPSHOT_LABEL}=${SNAPSHOT}`), 'mallory');
    expectRefused(await label(users.mallory, 'plain', `${ROLE_LABEL}=shard`), 'mallory');
    // A ConfigMap only its label makes part of a snapshot (another snapshot's name, so the running operator ignores it).
    expectAllowed(await create(kubeconfigPath(), 'leaving', { [SNAPSHOT_LABEL]: 'another-snapshot' }, asOperator()));
    expectRefused(await label(users.mallory, 'leaving', `${SNAPSHOT_LABEL}-`), 'mallory');
    expectAllowed(await label(kubeconfigPath(), 'leaving', `${SNAPSHOT_LABEL}-`, asOperator()));
    expectAllowed(await patchData(users.mallory, 'leaving')); // no part of a snapshot any more
  }, 120_000);

  it('lets the user write every ConfigMap that is no part of the snapshot, even one named like it', async () => {
    for (const name of ['settings', `${SNAPSHOT}-settings`, `${SNAPSHOT}-0123456789abcdef0`]) {
      expectAllowed(await create(users.mallory, name, { team: 'data' }));
      expectAllowed(await patchData(users.mallory, name));
      expectAllowed(await label(users.mallory, name, 'team=mallory'));
      expectAllowed(await remove(users.mallory, name));
    }
  }, 120_000);

  it('lets svc-operator\'s ServiceAccount (impersonated) create, relabel, update and delete a snapshot ConfigMap', async () => {
    const name = `${SNAPSHOT}-00000000000000aa`;
    expectAllowed(await create(kubeconfigPath(), name, {}, asOperator()));
    expectAllowed(await label(kubeconfigPath(), name, `${ROLE_LABEL}=shard`, asOperator()));
    expectAllowed(await patchData(kubeconfigPath(), name, asOperator()));
    expectAllowed(await remove(kubeconfigPath(), name, asOperator()));
    expect(await exists(name)).toBe(false);
  }, 120_000);

  it.each(['eddie', 'adele'] as const)('built-in edit/admin (%s) stays full control: refused directly, writes the snapshot by impersonating svc-operator', async (user) => {
    const kc = users[user];
    expectRefused(await create(kc, SHARD_LIKE), user);
    expectRefused(await label(kc, SNAPSHOT, `written-by=${user}`), user);
    // The trust boundary docs/access-rules.md states: these roles may impersonate the operator's ServiceAccount.
    expectAllowed(await create(kc, SHARD_LIKE, {}, asOperator()));
    expectAllowed(await label(kc, SNAPSHOT, `written-by=${user}`, asOperator()));
    expectAllowed(await remove(kc, SHARD_LIKE, asOperator()));
    const canI = async (verb: string, resource: string, sub?: string) => {
      const r = await kubectl(kc, ['auth', 'can-i', verb, resource, ...(sub ? [`--subresource=${sub}`] : [])]);
      return r.stdout.trim().split('\n').at(-1);
    };
    const rights = {
      'impersonate svc-operator': await canI('impersonate', 'serviceaccounts/svc-operator'),
      'exec into pods': await canI('create', 'pods', 'exec'),
      'run pods': await canI('create', 'pods'),
      'change svc-auth\'s Deployment': await canI('patch', 'deployments.apps/svc-auth'),
      'read Secrets': await canI('get', 'secrets'),
      'grant roles in the namespace': await canI('create', 'rolebindings.rbac.authorization.k8s.io'),
      'write ProtectedScopes': await canI('create', `${PLURAL}.${GROUP}`),
    };
    expect(rights).toEqual({
      'impersonate svc-operator': 'yes', 'exec into pods': 'yes', 'run pods': 'yes', 'change svc-auth\'s Deployment': 'yes', 'read Secrets': 'yes',
      'grant roles in the namespace': user === 'adele' ? 'yes' : 'no',
      // Full control of access without any right on ProtectedScopes.
      'write ProtectedScopes': 'no',
    });
  }, 120_000);

  it('admin hands out edit in the namespace, but not svc-data-owner: RBAC binds no more than the granter holds', async () => {
    expectAllowed(await kubectl(users.adele, ['create', 'rolebinding', 'adele-grants-edit', `--clusterrole=${editRole}`, '--user=someone']));
    const owner = await kubectl(users.adele, ['create', 'rolebinding', 'adele-grants-data-owner', '--role=svc-data-owner', '--user=someone']);
    expect(owner.status).not.toBe(0);
    expect(owner.stderr).toMatch(/forbidden.*attempting to grant RBAC permissions not currently held/s);
  }, 60_000);

  it('svc-data-owner, bound with the command of docs/access-rules.md, may edit ProtectedScopes and nothing else', async () => {
    const command = /^kubectl -n NAMESPACE create rolebinding .*--role=svc-data-owner.*$/m.exec(readFileSync(DOCS, 'utf8'))?.[0];
    expect(command).toBeDefined();
    const group = /--group=(\S+)/.exec(command!)?.[1];
    expect(group).toBeDefined();
    const args = command!.replace('NAMESPACE', ns).split(/\s+/).slice(1);
    const bound = await runCommand(kubectlBinary(), args, { env: { ...process.env, KUBECONFIG: kubeconfigPath() } });
    expect({ code: bound.code, stderr: bound.stderr }).toEqual({ code: 0, stderr: '' });
    users.dora = kubeconfigFor('dora', [group!]);

    const scope = { kind: 'path' as const, value: 'collections/stations' };
    const name = scopeObjectName(scope);
    expectAllowed(await kubectl(users.dora, ['create', '-f', '-'], JSON.stringify(newProtectedScope(scope, name, ns, [tokenRecord(tokens[2]!)]))));
    expectAllowed(await kubectl(users.dora, ['patch', `${PLURAL}.${GROUP}`, name, '--type=merge', '-p', JSON.stringify({ spec: { tokens: [] } })]));
    expectAllowed(await kubectl(users.dora, ['delete', `${PLURAL}.${GROUP}`, name]));
    for (const r of [await create(users.dora, 'dora-settings'), await kubectl(users.dora, ['get', 'configmaps']), await kubectl(users.dora, ['get', 'secrets']),
      await patchData(users.dora, SNAPSHOT)]) {
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/forbidden/i);
      expect(r.stderr).not.toMatch(policyRefusal()); // refused by RBAC, before any admission
    }
    const canI = async (verb: string, resource: string, sub?: string) =>
      (await kubectl(users.dora, ['auth', 'can-i', verb, resource, ...(sub ? [`--subresource=${sub}`] : [])])).stdout.trim().split('\n').at(-1);
    expect({
      status: await canI('patch', `${PLURAL}.${GROUP}`, 'status'), impersonate: await canI('impersonate', 'serviceaccounts'), exec: await canI('create', 'pods', 'exec'),
      deployments: await canI('patch', 'deployments.apps'), other: (await kubectl(users.dora, ['auth', 'can-i', 'list', `${PLURAL}.${GROUP}`, '-n', 'default'])).stdout.trim(),
    }).toEqual({ status: 'no', impersonate: 'no', exec: 'no', deployments: 'no', other: 'no' });
  }, 120_000);

  it('lets deletes through once the namespace itself is being deleted, and nothing else', async () => {
    await operator?.stop();
    await deleteNamespace(ns);
    const [shard] = await shardNames();
    await until('a delete of a snapshot ConfigMap in the terminating namespace to go through', async () => (await remove(users.mallory, shard!)).status === 0, 60_000);
    expect(await exists(shard!)).toBe(false);
    expectRefused(await patchData(users.mallory, SNAPSHOT), 'mallory');
  }, 120_000);
});

function kubeConfigOf(path: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
