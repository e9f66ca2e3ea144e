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
import { runSuite, T1, T2 } from '../cli/suite.js';
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
    fresh: async () => {
      ns = await newNamespace('cli');
      return ['--kubeconfig', kubeconfigPath(), '-n', ns];
    },
    state: () => state(ns),
    objects: async () => (await list(ns)).map((o) => ({ name: o.metadata.name, spec: o.spec })),
    put: (object) => create(ns, object),
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
