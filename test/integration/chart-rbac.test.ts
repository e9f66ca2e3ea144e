// The chart's RBAC, minimal: its ServiceAccounts, Roles and RoleBindings installed into a namespace, then a table of
// questions (ServiceAccount × verb × resource × where → expected) put to the real RBAC authorizer twice, through
// `kubectl auth can-i --as=system:serviceaccount:...` and through a SubjectAccessReview. The table is printed (and
// written to .cache/rbac-matrix.md). That the rules are also sufficient is chart-identities.test.ts: the programs run
// under these identities.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from '@jest/globals';
import { repoRoot } from '../controlplane/controlplane.js';
import { describeCluster, kubeConfig, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { helmBinary } from '../stack/helm.js';
import { installIdentities } from '../stack/identities.js';
import { checkMatrix, formatMatrix, type AccessResult, type AccessRow, type Subject, type Where } from '../stack/rbac.js';

const LEASE = 'svc-auth-snapshot-operator';
const PS = 'protectedscopes.auth.svc.io';
const EVENTS = 'events.events.k8s.io';
const LEASES = 'leases.coordination.k8s.io';

type Spec = [verbs: string, resource: string, where: Where, expected: boolean, extra?: { subresource?: string; name?: string }];
const rows = (subject: Subject, specs: Spec[]): AccessRow[] =>
  specs.flatMap(([verbs, resource, where, expected, extra]) => verbs.split(',').map((verb) => ({ subject, verb, resource, where, expected, ...extra })));

const MATRIX: AccessRow[] = [
  ...rows('svc-operator', [
    // what it needs
    ['get,list,watch', PS, 'own', true],
    ['patch', PS, 'own', true, { subresource: 'status' }],
    ['get,list,watch,create,patch,delete', 'configmaps', 'own', true],
    ['create', EVENTS, 'own', true],
    ['create', LEASES, 'own', true],
    ['get,update', LEASES, 'own', true, { name: LEASE }],
    // and nothing else
    ['create,update,patch,delete,deletecollection', PS, 'own', false],
    ['update', PS, 'own', false, { subresource: 'status' }],
    ['update,deletecollection', 'configmaps', 'own', false],
    ['patch,delete', EVENTS, 'own', false],
    ['create', 'events', 'own', false],
    ['get,update', LEASES, 'own', false, { name: 'another-controller' }],
    ['delete', LEASES, 'own', false, { name: LEASE }],
    ['list', LEASES, 'own', false],
    ['get,list,watch', 'secrets', 'own', false],
    ['get,list,create', 'pods', 'own', false],
    ['create', 'pods', 'own', false, { subresource: 'exec' }],
    ['create', 'serviceaccounts', 'own', false, { subresource: 'token' }],
    ['create', 'deployments.apps', 'own', false],
    ['create,bind,escalate', 'roles.rbac.authorization.k8s.io', 'own', false],
    ['create', 'rolebindings.rbac.authorization.k8s.io', 'own', false],
    ['list', 'configmaps', 'other', false],
    ['list', PS, 'other', false],
    ['list', 'configmaps', 'all', false],
    ['list', PS, 'all', false],
    ['get,list', 'customresourcedefinitions.apiextensions.k8s.io', 'cluster', false],
    ['list', 'namespaces', 'cluster', false],
    ['list', 'nodes', 'cluster', false],
    ['create', 'clusterrolebindings.rbac.authorization.k8s.io', 'cluster', false],
  ]),
  ...rows('svc-auth', [
    ['get,list,watch', 'configmaps', 'own', true],
    ['create,update,patch,delete', 'configmaps', 'own', false],
    ['get,list', 'secrets', 'own', false],
    ['get,list', PS, 'own', false],
    ['get,list', 'pods', 'own', false],
    ['create', EVENTS, 'own', false],
    ['get', LEASES, 'own', false, { name: LEASE }],
    ['list', 'configmaps', 'other', false],
    ['list', 'configmaps', 'all', false],
    ['list', 'namespaces', 'cluster', false],
    ['get', 'customresourcedefinitions.apiextensions.k8s.io', 'cluster', false],
  ]),
  ...rows('svc-management', [
    ['get,list,watch,create,update,patch,delete', PS, 'own', true],
    ['update,patch', PS, 'own', false, { subresource: 'status' }],
    ['deletecollection', PS, 'own', false],
    ['get,list', 'configmaps', 'own', false],
    ['create,patch', 'configmaps', 'own', false],
    ['get,list', 'secrets', 'own', false],
    ['get', 'pods', 'own', false],
    ['create', 'pods', 'own', false, { subresource: 'exec' }],
    ['create', EVENTS, 'own', false],
    ['update', LEASES, 'own', false, { name: LEASE }],
    ['list', PS, 'other', false],
    ['list', PS, 'all', false],
    ['get', 'namespaces', 'cluster', false],
    ['delete', 'customresourcedefinitions.apiextensions.k8s.io', 'cluster', false],
  ]),
];

describeCluster('chart RBAC: least privilege, by the real authorizer', () => {
  let results: AccessResult[];

  beforeAll(async () => {
    const helm = await helmBinary();
    const own = await newNamespace('rbac');
    const other = await newNamespace('rbac-other');
    // The other namespace gets the same chart install: nothing granted in one may reach the other.
    installIdentities(helm, kubeconfigPath(), own);
    installIdentities(helm, kubeconfigPath(), other);
    results = await checkMatrix(kubeconfigPath(), kubeConfig(), MATRIX, own, other);
    const table = formatMatrix(results);
    const dir = join(repoRoot, '.cache');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'rbac-matrix.md'), `${table}\n`);
    console.log(`RBAC matrix (ServiceAccounts of namespace ${own}; "other" is ${other}), also in .cache/rbac-matrix.md:\n\n${table}\n`);
  }, 15 * 60_000);

  it('asks enough questions: every component, allowed and denied', () => {
    for (const subject of ['svc-operator', 'svc-auth', 'svc-management'] as const) {
      expect(MATRIX.some((r) => r.subject === subject && r.expected)).toBe(true);
      expect(MATRIX.filter((r) => r.subject === subject && !r.expected).length).toBeGreaterThanOrEqual(10);
    }
  });

  it('kubectl auth can-i and the SubjectAccessReview agree on every row', () => {
    expect(results.filter((r) => r.kubectl !== r.sar).map((r) => r.row)).toEqual([]);
  });

  it.each(['svc-operator', 'svc-auth', 'svc-management'] as const)('%s can do exactly what the table says', (subject) => {
    const wrong = results
      .filter((r) => r.row.subject === subject && (r.kubectl !== r.row.expected || r.sar !== r.row.expected))
      .map((r) => `${r.row.verb} ${r.row.resource}${r.row.subresource ? `/${r.row.subresource}` : ''}${r.row.name ? ` ${r.row.name}` : ''} (${r.row.where}): expected ${r.row.expected}, kubectl ${r.kubectl}, SAR ${r.sar}`);
    expect(wrong).toEqual([]);
  });
});
