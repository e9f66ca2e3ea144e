// The chart's RBAC, sufficient: its CRD applied, its ServiceAccounts, Roles and RoleBindings installed into a namespace, then
// svc-operator and svc-auth run as real processes with bound ServiceAccount tokens of those identities and the command
// lines of the chart's Deployments. They must do their whole job (snapshot written, status patched, Event reported,
// Lease held; svc-auth ready and deciding) with nothing but what the Roles grant. The negative controls run each
// program under an identity that lacks its grants, to show the tokens carry no hidden privilege.
// chart-rbac.test.ts proves the same rules minimal.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { newProtectedScope, scopeObjectName } from '../../core/index.js';
import { describeCluster, kubeConfig, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { API, PROCESSES } from '../e2e/support/fixtures.js';
import { newToken, tokenRecord } from '../e2e/support/scopes.js';
import { helmBinary, helmTemplate, ofKind, type Manifest } from '../stack/helm.js';
import { applyManifests } from '../stack/kubectl.js';
import { componentKubeconfigs, installIdentities, type Component } from '../stack/identities.js';
import { chartCommandLine, Program } from '../stack/processes.js';
import { freePorts, httpStatus } from '../support/ports.js';
import { until } from '../support/wait.js';

const GROUP = 'auth.svc.io';
const VERSION = 'v1alpha1';
const PLURAL = 'protectedscopes';
const SNAPSHOT = 'svc-auth-snapshot';
const LEASE = 'svc-auth-snapshot-operator';
const FORBIDDEN = /forbidden|\b403\b/i;

const token = newToken();
const other = newToken();
const secrets = [token, other];

describeCluster('chart identities are sufficient: svc-operator and svc-auth run as their ServiceAccounts', () => {
  let namespace: string;
  let manifests: Manifest[];
  let kubeconfigs: Record<Component, string>;
  let workDir: string;
  let ports: number[];
  const programs: Program[] = [];
  const admin = () => kubeConfig();
  const scopeName = scopeObjectName(PROCESSES);

  function program(name: 'svc-operator' | 'svc-auth', identity: Component, listen: { listen?: number; metricsListen?: number }): Program {
    const p = new Program({ name: `${name} as ${identity}`, command: chartCommandLine(manifests, name, namespace, listen), kubeconfig: kubeconfigs[identity], secrets });
    programs.push(p);
    p.start();
    return p;
  }

  /** svc-auth's answer to ingress-nginx's auth subrequest for the process execution, with or without a token. */
  const decide = (port: number, bearer?: string) => httpStatus(port, '/authz/auth-request', {
    'X-Original-URL': `http://data.example.org${API.execution}`,
    'X-Original-Method': 'POST',
    ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
  });

  beforeAll(async () => {
    const helm = await helmBinary();
    namespace = await newNamespace('ident');
    installIdentities(helm, kubeconfigPath(), namespace);
    const r = helmTemplate(helm, { namespace });
    if (r.status !== 0) throw new Error(r.stderr);
    manifests = r.manifests;
    // The chart's CRD too (the harness installed crds/protectedscope.yaml; the chart's copy is the same schema plus
    // Helm's labels and the keep annotation): applied for real, it must stay Established and keep serving.
    const crd = applyManifests(kubeconfigPath(), ofKind(manifests, 'CustomResourceDefinition'));
    if (crd.status !== 0) throw new Error(`applying the chart's CRD failed:\n${crd.stderr}`);
    await until('the chart\'s CRD to be Established', async () => {
      const c = await admin().makeApiClient(k8s.ApiextensionsV1Api).readCustomResourceDefinition({ name: 'protectedscopes.auth.svc.io' });
      return c.metadata?.annotations?.['helm.sh/resource-policy'] === 'keep' && c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
    workDir = mkdtempSync(join(tmpdir(), 'svc-ident-'));
    kubeconfigs = await componentKubeconfigs(admin(), namespace, workDir);
    ports = await freePorts(8);
  }, 15 * 60_000);

  afterAll(async () => {
    await Promise.all(programs.map((p) => p.stop()));
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('each kubeconfig authenticates as its ServiceAccount (SelfSubjectReview)', async () => {
    for (const c of ['svc-operator', 'svc-auth', 'svc-management'] as const) {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(kubeconfigs[c]);
      const review = await kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${namespace}:${c}`);
      expect(review.status?.userInfo?.groups).toEqual(expect.arrayContaining(['system:serviceaccounts', `system:serviceaccounts:${namespace}`]));
    }
  });

  it('svc-operator, as svc-operator, compiles what svc-management created: snapshot ConfigMaps, status, Event, Lease', async () => {
    const operator = program('svc-operator', 'svc-operator', { metricsListen: ports[0]! });
    await operator.waitForHttp(ports[0]!, '/healthz');

    // The scope is created with svc-management's identity, as the CLI in the management pod would.
    const mgmt = new k8s.KubeConfig();
    mgmt.loadFromFile(kubeconfigs['svc-management']);
    await mgmt.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
      group: GROUP, version: VERSION, namespace, plural: PLURAL,
      body: newProtectedScope(PROCESSES, scopeName, namespace, [tokenRecord(token)]),
    });

    const core = admin().makeApiClient(k8s.CoreV1Api);
    // The operator may first write the empty snapshot of an empty namespace: wait for the one holding the token.
    const index = await until('the snapshot index ConfigMap with the scope\'s token', async () => {
      const cm = await core.readNamespacedConfigMap({ name: SNAPSHOT, namespace }).catch(() => undefined);
      const text = cm?.data?.['index.json'];
      return text && (JSON.parse(text) as { tokens?: number }).tokens === 1 ? cm : undefined;
    }, 30_000, () => operator.tail());
    expect(index.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'svc-operator', 'auth.svc.io/snapshot': SNAPSHOT });
    const shards = await core.listNamespacedConfigMap({ namespace, labelSelector: `auth.svc.io/snapshot=${SNAPSHOT},auth.svc.io/snapshot-role=shard` });
    expect(shards.items.length).toBeGreaterThan(0);
    expect(shards.items.every((s) => s.immutable === true)).toBe(true);

    type Scope = { metadata: { generation: number }; status?: { observedGeneration?: number; state?: string; conditions?: { type: string; status: string }[] } };
    const objects = admin().makeApiClient(k8s.CustomObjectsApi);
    const ps = await until('the ProtectedScope status (Closed, Ready)', async () => {
      const o = (await objects.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: scopeName })) as Scope;
      return o.status?.state === 'Closed' && o.status.observedGeneration === o.metadata.generation
        && o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? o : undefined;
    }, 30_000, () => operator.tail());
    expect(ps.status?.state).toBe('Closed');

    const event = await until('a ScopeClosed Event about the scope', async () => {
      const list = await admin().makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace });
      return list.items.find((e) => e.regarding?.name === scopeName && e.reason === 'ScopeClosed');
    }, 30_000, () => operator.tail());
    expect(event.reportingController).toBeTruthy();

    const lease = await admin().makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ name: LEASE, namespace });
    expect(lease.spec?.holderIdentity).toBeTruthy();
    await operator.waitForHttp(ports[0]!, '/readyz', 30_000);
    expect(operator.output).not.toMatch(FORBIDDEN);
  }, 120_000);

  it('svc-auth, as svc-auth, loads the snapshot from the ConfigMaps and decides', async () => {
    const auth = program('svc-auth', 'svc-auth', { listen: ports[1]!, metricsListen: ports[2]! });
    await auth.waitForHttp(ports[1]!, '/readyz', 60_000);
    expect(await decide(ports[1]!)).toBe(401);
    expect(await decide(ports[1]!, token)).toBe(200);
    expect([401, 403]).toContain(await decide(ports[1]!, other));

    // The last token removed (by svc-management): the operator recompiles, svc-auth follows; a path scope stays
    // closed by default, so the removed token stops working and nothing executes.
    const mgmt = new k8s.KubeConfig();
    mgmt.loadFromFile(kubeconfigs['svc-management']);
    const objects = mgmt.makeApiClient(k8s.CustomObjectsApi);
    const current = (await objects.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: scopeName })) as { spec: { tokens?: unknown[] } };
    current.spec.tokens = [];
    await objects.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: scopeName, body: current });
    await until('the removed token to stop working in svc-auth', async () => (await decide(ports[1]!, token)) === 401, 30_000, () => auth.tail());
    expect(await decide(ports[1]!)).toBe(401);
    expect(auth.output).not.toMatch(FORBIDDEN);
  }, 120_000);

  it('negative control: svc-operator under svc-auth\'s identity is forbidden and never ready', async () => {
    const operator = program('svc-operator', 'svc-auth', { metricsListen: ports[5]! });
    await until('svc-operator (as svc-auth) to report being forbidden', () => FORBIDDEN.test(operator.output), 30_000, () => operator.tail());
    expect(await httpStatus(ports[5]!, '/readyz')).not.toBe(200);
  }, 60_000);

  it('negative control: svc-auth under svc-management\'s identity is forbidden, never ready, allows nothing', async () => {
    const auth = program('svc-auth', 'svc-management', { listen: ports[3]!, metricsListen: ports[4]! });
    await until('svc-auth (as svc-management) to report being forbidden', () => FORBIDDEN.test(auth.output), 30_000, () => auth.tail());
    expect(await httpStatus(ports[3]!, '/readyz')).not.toBe(200);
    expect(await decide(ports[3]!)).not.toBe(200);
  }, 60_000);
});
