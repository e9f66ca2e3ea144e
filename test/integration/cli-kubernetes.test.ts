// svc against a real kube-apiserver (the harness's control plane, CRD installed): the whole command suite of
// test/cli/suite.ts (same snapshots as on the fake API server), then what only a real server shows: 50 parallel
// add-token processes on one scope leave 50 tokens, RBAC denials, an unknown namespace, an unreachable or silent
// cluster. Every failure is one line, exit 1 (2 for bad configuration), and the server's objects are unchanged
// (same resourceVersions).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { hashToken, scopeObjectName, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { buildCli, removeDir, svc, svcProcess, tempDir } from '../cli/harness.js';
import { until } from '../support/wait.js';
import { makeWis2boxAuthStore } from '../support/wis2box-auth-store.js';
import { runSuite, T1, T2 } from '../cli/suite.js';
import { markServed, settleStatuses } from './cli-served-support.js';
import { describeCluster, kubeConfig, kubeconfigFor, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';

const group = 'auth.svc.io';
const version = 'v1alpha1';
const plural = 'protectedscopes';

async function list(namespace: string): Promise<ProtectedScope[]> {
  const api = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const r = (await api.listNamespacedCustomObject({ group, version, namespace, plural })) as { items: ProtectedScope[] };
  return r.items.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}

/** What a failed command must not change: every object with its resourceVersion. */
async function state(namespace: string): Promise<unknown> {
  return (await list(namespace)).map((o) => ({ name: o.metadata.name, resourceVersion: o.metadata.resourceVersion, spec: o.spec }));
}

async function create(namespace: string, object: ProtectedScope): Promise<void> {
  await kubeConfig().makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({ group, version, namespace, plural, body: object });
}

describeCluster('svc on a real API server', () => {
  let ns = '';
  runSuite({
    name: 'kubernetes',
    // Served as by an svc-operator (its snapshot ConfigMap, and the status it writes once it has compiled a change),
    // so the commands behave as in a namespace an operator serves: cli-served.test.ts covers the others.
    fresh: async () => {
      ns = await newNamespace('cli');
      await markServed(ns);
      return ['--kubeconfig', kubeconfigPath(), '-n', ns];
    },
    state: () => state(ns),
    objects: async () => (await list(ns)).map((o) => ({ name: o.metadata.name, spec: o.spec })),
    put: async (object) => {
      await create(ns, object);
      await settleStatuses(ns);
    },
    settle: () => settleStatuses(ns),
    dump: async () => JSON.stringify(await list(ns)),
    where: () => `namespace ${ns} (context ${kubeConfig().getCurrentContext()})`,
    namespace: () => ns,
    missingStoreArgs: () => ['--kubeconfig', kubeconfigPath(), '-n', 'no-such-namespace-cli'],
  });
});

describeCluster('svc on a real API server: concurrency and failures', () => {
  const dir = tempDir('svc-cli-k8s-');
  let built = '';
  beforeAll(async () => {
    built = await buildCli();
  });
  afterAll(() => [dir, built].forEach(removeDir));

  it('50 parallel add-token processes on one scope leave 50 tokens', async () => {
    const namespace = await newNamespace('cli-parallel');
    await markServed(namespace);
    const scope = 'origin.a.wis2.mw-met.data.core';
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        svcProcess(['--kubeconfig', kubeconfigPath(), '-n', namespace, 'auth', 'add-token', '--topic-hierarchy', scope, '--description', `writer ${i}`, '-o', 'json'], {
          timeoutMs: 560_000,
          built,
        }),
      ),
    );
    expect(results.filter((r) => r.code !== 0).map((r) => r.stderr)).toEqual([]);
    const printed = results.map((r) => JSON.parse(r.stdout) as { token: string; id: string });
    const objects = await list(namespace);
    expect(objects.map((o) => o.metadata.name)).toEqual([scopeObjectName({ kind: 'topic', value: scope })]);
    const tokens = objects[0]!.spec.tokens!;
    expect(tokens).toHaveLength(50);
    expect(new Set(tokens.map((t) => t.id))).toEqual(new Set(printed.map((p) => p.id)));
    const stored = JSON.stringify(objects);
    for (const p of printed) expect(stored).not.toContain(p.token);
    // The real server's answer for one of them, through a real process.
    const check = await svcProcess(['--kubeconfig', kubeconfigPath(), '-n', namespace, 'auth', 'has-access-topic', '--topic-hierarchy', `${scope}.weather`, printed[7]!.token]);
    expect([check.code, check.stdout]).toEqual([0, `granted: token ${printed[7]!.id} is a valid token of topic:${scope}, which governs topic:${scope}.weather\n`]);
  }, 600_000);

  describe('RBAC', () => {
    let namespace = '';
    let before: unknown;
    beforeAll(async () => {
      namespace = await newNamespace('cli-rbac');
      await create(namespace, {
        apiVersion: 'auth.svc.io/v1alpha1',
        kind: 'ProtectedScope',
        metadata: { name: 'existing' },
        spec: { path: 'processes/svc', tokens: [{ id: tokenIdOf(hashToken(T1)), hash: hashToken(T1), createdAt: '2026-01-01T00:00:00Z' }] },
      });
      // reader may get and list ProtectedScopes, nothing else.
      const rbac = kubeConfig().makeApiClient(k8s.RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({
        namespace,
        body: { metadata: { name: 'ps-reader' }, rules: [{ apiGroups: [group], resources: [plural], verbs: ['get', 'list'] }] },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: { metadata: { name: 'ps-reader' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ps-reader' }, subjects: [{ kind: 'User', name: 'reader', apiGroup: 'rbac.authorization.k8s.io' }] },
      });
      before = await state(namespace);
    });

    it('a user without any grant: show and add-token fail with what to ask for', async () => {
      const kubeconfig = kubeconfigFor('nobody');
      for (const args of [['auth', 'show'], ['auth', 'add-token', '--path', 'processes/svc', T2], ['auth', 'remove-tokens', '--path', 'processes/svc']]) {
        const r = await svc(['--kubeconfig', kubeconfig, '-n', namespace, ...args]);
        expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
        expect(r.stderr).toMatch(/^error: forbidden: [^\n]*User "nobody" cannot list resource "protectedscopes"[^\n]*\(ask a cluster admin for a Role granting get, list, create and update on protectedscopes\.auth\.svc\.io in namespace "cli-rbac-\w+"\)\n$/);
      }
      expect(await state(namespace)).toEqual(before);
    });

    it('a read-only user can show and check, but not add or remove', async () => {
      const kubeconfig = kubeconfigFor('reader');
      const args = ['--kubeconfig', kubeconfig, '-n', namespace];
      expect((await svc([...args, 'auth', 'show'])).code).toBe(0);
      expect((await svc([...args, 'auth', 'has-access-topic', '--path', 'processes/svc', T1])).code).toBe(0);
      for (const command of [
        ['auth', 'add-token', '--path', 'processes/svc', T2],
        ['auth', 'add-token', '--topic-hierarchy', 'new.scope', T2],
        ['auth', 'remove-token', '--path', 'processes/svc', '--id', tokenIdOf(hashToken(T1))],
        ['auth', 'remove-tokens', '--path', 'processes/svc'],
      ]) {
        const r = await svc([...args, ...command]);
        expect({ command, code: r.code, stdout: r.stdout }).toEqual({ command, code: 1, stdout: '' });
        expect(r.stderr).toMatch(/^error: forbidden: [^\n]*User "reader" cannot (update|create) resource "protectedscopes"[^\n]*\(ask a cluster admin[^\n]*\)\n$/);
        expect(r.stderr).not.toContain(T2);
      }
      expect(await state(namespace)).toEqual(before);
    });
  });

  it('an unknown namespace: exit 1, says which and what to check', async () => {
    for (const args of [['auth', 'show'], ['auth', 'add-token', '--path', 'processes/svc', T1], ['auth', 'has-access-topic', '--path', 'processes/svc', T1]]) {
      const r = await svc(['--kubeconfig', kubeconfigPath(), '-n', 'no-such-namespace-cli', ...args]);
      expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: namespace "no-such-namespace-cli" not found: check -n/--namespace or the context\'s namespace\n' });
    }
  });

  it('an unreachable cluster (connection refused) and a silent one (timeout): exit 1 with what to check', async () => {
    const kc = kubeConfig();
    const cluster = kc.getCurrentCluster()!;
    const silent: Server = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as { port: number }).port;
    const closed: Server = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    const withServer = (server: string, file: string) => {
      const path = join(dir, file);
      const copy = new k8s.KubeConfig();
      copy.loadFromOptions({
        clusters: [{ ...cluster, server }],
        users: kc.getUsers(),
        contexts: kc.getContexts(),
        currentContext: kc.getCurrentContext(),
      });
      writeFileSync(path, copy.exportConfig());
      return path;
    };
    try {
      const refused = await svc(['--kubeconfig', withServer(`https://127.0.0.1:${closedPort}`, 'refused'), 'auth', 'add-token', '--path', 'processes/svc', T1]);
      expect(refused).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: cannot reach the Kubernetes API at https://127.0.0.1:${closedPort} (connection refused): check the cluster is running and --kubeconfig/--context point at it, or use --dir DIR for a manifest directory\n`,
      });
      const hung = await svc(['--kubeconfig', withServer(`https://127.0.0.1:${silentPort}`, 'silent'), '--request-timeout', '1s', 'auth', 'show']);
      expect(hung).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: no answer from the API server at https://127.0.0.1:${silentPort} within 1 s: check the cluster is up and reachable (--request-timeout to wait longer)\n`,
      });
      // The same through a real process: it exits (no socket keeps it alive) with the same line.
      const proc = await svcProcess(['--kubeconfig', withServer(`https://127.0.0.1:${closedPort}`, 'refused'), 'auth', 'show']);
      expect(proc.code).toBe(1);
      expect(proc.stderr).toMatch(/^error: cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ \(connection refused\)/);
    } finally {
      silent.close();
    }
  }, 60_000);

  it('a hand-written object for the same scope: show merges it, remove-tokens empties both, add-token edits only the CLI\'s object', async () => {
    const namespace = await newNamespace('cli-merge');
    await markServed(namespace);
    const args = ['--kubeconfig', kubeconfigPath(), '-n', namespace];
    await create(namespace, {
      apiVersion: 'auth.svc.io/v1alpha1',
      kind: 'ProtectedScope',
      metadata: { name: 'by-hand' },
      spec: { topicHierarchy: 'a.b', tokens: [{ id: tokenIdOf(hashToken(T1)), hash: hashToken(T1), createdAt: '2026-01-01T00:00:00Z' }] },
    });
    expect((await svc([...args, 'auth', 'add-token', '--topic-hierarchy', 'a/b', T2])).code).toBe(0);
    const shown = JSON.parse((await svc([...args, 'auth', 'show', '-o', 'json'])).stdout) as { scopes: { value: string; tokenCount: number; objects: string[] }[] };
    // (and the stations collection, listed as closed by default)
    expect(shown.scopes.filter((s) => s.value !== 'collections/stations')).toEqual([expect.objectContaining({ value: 'a.b', tokenCount: 2, objects: ['by-hand', scopeObjectName({ kind: 'topic', value: 'a.b' })] })]);
    expect((await svc([...args, 'auth', 'remove-tokens', '--topic-hierarchy', 'a.b'])).code).toBe(0);
    expect((await list(namespace)).map((o) => [o.metadata.name, o.spec.tokens])).toEqual([
      ['by-hand', []],
      [scopeObjectName({ kind: 'topic', value: 'a.b' }), []],
    ]);
  });
});

/**
 * A ValidatingAdmissionPolicy that refuses ProtectedScopes by name in one namespace: every write (`always`), or only
 * real ones (`written`: a dry run passes, as when a write fails for a reason a dry run cannot see). A canary object
 * name in each tells when the API server enforces the current expression.
 */
async function refuseByName(namespace: string, always: readonly string[], written: readonly string[], canary: string): Promise<void> {
  const admission = kubeConfig().makeApiClient(k8s.AdmissionregistrationV1Api);
  const name = `refuse-${namespace}`;
  const list = (names: readonly string[]) => `[${names.map((n) => `'${n}'`).join(', ')}]`;
  const expression = `request.namespace != '${namespace}' || !(object.metadata.name in ${list([...always, canary])}) && !(request.dryRun != true && object.metadata.name in ${list(written)})`;
  const body = {
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: [group], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [plural] }] },
      validations: [{ expression, message: 'refused by the test\'s admission policy' }],
    },
  };
  const existing = await admission.readValidatingAdmissionPolicy({ name }).catch(() => undefined);
  if (existing) await admission.replaceValidatingAdmissionPolicy({ name, body: { ...body, metadata: { name, resourceVersion: existing.metadata!.resourceVersion! } } });
  else {
    await admission.createValidatingAdmissionPolicy({ body });
    await admission.createValidatingAdmissionPolicyBinding({ body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } } });
  }
  await until(`the admission policy refusing ${canary}`, async () => !(await canaryCreated(namespace, canary)));
}

/** Creates (and deletes again) an object named `canary`; false when admission refused it. */
async function canaryCreated(namespace: string, canary: string): Promise<boolean> {
  const api = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  try {
    await create(namespace, { apiVersion: `${group}/${version}`, kind: 'ProtectedScope', metadata: { name: canary }, spec: { path: 'canary', tokens: [] } });
  } catch (e) {
    if (/refused by the test's admission policy/.test(String((e as { body?: unknown }).body ?? e))) return false;
    throw e;
  }
  await api.deleteNamespacedCustomObject({ group, version, namespace, plural, name: canary });
  return true;
}

describeCluster('svc auth import on a real API server: no transaction, so a dry run first, and a failed write says what was written', () => {
  const dir = tempDir('svc-import-k8s-');
  afterAll(() => removeDir(dir));
  const ROWS = [
    { token: 'downloader-partner-0001', topic: 'wis2downloader' },
    { token: 'dataset-partner-token-2', topic: 'urn:wmo:md:mw-met:obs' },
    { token: 'processes-token-0000003', topic: 'processes/wis2box' },
    { token: 'stations-token-00000004', topic: 'collections/stations' },
  ];
  const scopes = [{ kind: 'path', value: 'wis2downloader' }, { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' }, { kind: 'path', value: 'processes/wis2box' }, { kind: 'path', value: 'collections/stations' }] as const;
  const names = scopes.map((s) => scopeObjectName(s));

  it('refused by admission: every refused scope named by the dry run, nothing written; refused midway: what was written named; run again: complete', async () => {
    const namespace = await newNamespace('cli-import');
    await markServed(namespace);
    const store = join(dir, 'auth.db');
    makeWis2boxAuthStore(store, ROWS);
    const args = ['--kubeconfig', kubeconfigPath(), '-n', namespace, 'auth', 'import', store];
    const admission = kubeConfig().makeApiClient(k8s.AdmissionregistrationV1Api);
    try {
      // 1. Two scopes refused for every write: the dry run names both, nothing is written.
      await refuseByName(namespace, [names[1]!, names[3]!], [], 'canary-one');
      const before = await state(namespace);
      const dry = await svc(args);
      expect({ code: dry.code, stdout: dry.stdout }).toEqual({ code: 1, stdout: '' });
      expect(dry.stderr).toMatch(new RegExp(`^error: 2 scopes refused by namespace ${namespace} \\(context [^)]+\\) \\(a dry run; nothing was written\\): dataset:urn:wmo:md:mw-met:obs: [^;]*refused by the test's admission policy[^;]*; path:collections/stations: [^\\n]*refused by the test's admission policy[^\\n]*\\n$`));
      expect(await state(namespace)).toEqual(before);

      // 2. The last scope refused only when really written (a dry run passes): the error names what was written.
      await refuseByName(namespace, [], [names[3]!], 'canary-two');
      const partial = await svc(args);
      expect({ code: partial.code, stdout: partial.stdout }).toEqual({ code: 1, stdout: '' });
      expect(partial.stderr).toMatch(/^error: writing path:collections\/stations failed: [^\n]*refused by the test's admission policy[^\n]*\. Written before it: /);
      expect(partial.stderr).toContain(`Written before it: path:wis2downloader (${names[0]}), dataset:urn:wmo:md:mw-met:obs (${names[1]}), path:processes/wis2box (${names[2]}); not written: path:collections/stations. Run the same import again once the cause is fixed: it adds only what is missing\n`);
      expect((await list(namespace)).map((o) => o.metadata.name).sort()).toEqual([names[0], names[1], names[2]].sort());

      // 3. The cause gone, the same import completes what is missing and leaves what is there.
      await admission.deleteValidatingAdmissionPolicyBinding({ name: `refuse-${namespace}` });
      await admission.deleteValidatingAdmissionPolicy({ name: `refuse-${namespace}` });
      await until('the admission policy gone', () => canaryCreated(namespace, 'canary-two'));
      const written = (await list(namespace)).filter((o) => o.metadata.name !== names[3]).map((o) => [o.metadata.name, o.metadata.resourceVersion]);
      const again = await svc(args);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^path collections\/stations \(topic collections\/stations\): 1 token imported/m);
      expect(again.stdout).toMatch(/^path wis2downloader \(topic wis2downloader\): nothing to import, 1 already there$/m);
      const after = await list(namespace);
      expect(after.map((o) => o.metadata.name).sort()).toEqual([...names].sort());
      expect(after.filter((o) => o.metadata.name !== names[3]).map((o) => [o.metadata.name, o.metadata.resourceVersion])).toEqual(written);
      const third = await state(namespace);
      expect((await svc(args)).code).toBe(0);
      expect(await state(namespace)).toEqual(third);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name: `refuse-${namespace}` }).catch(() => undefined);
      await admission.deleteValidatingAdmissionPolicy({ name: `refuse-${namespace}` }).catch(() => undefined);
    }
  }, 300_000);
});
