// Every svc auth command, flag and output format on the Kubernetes backend, against the in-memory fake
// API server (test/cli/fake-apiserver.ts); test/integration/cli-kubernetes.test.ts runs the same suite
// against a real kube-apiserver.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashToken, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { FakeApiServer } from '../../test/cli/fake-apiserver.js';
import { removeDir, svc, tempDir } from '../../test/cli/harness.js';
import { runSuite, T1 } from '../../test/cli/suite.js';

const server = new FakeApiServer();
const dir = tempDir();
let kubeconfig = '';
let ns = '';
let n = 0;

beforeAll(async () => {
  await server.start();
  kubeconfig = server.writeKubeconfig(dir, 'default');
});
afterAll(async () => {
  await server.stop();
  removeDir(dir);
});

const objectsOf = (namespace: string) => [...server.inNamespace(namespace).values()];

runSuite({
  name: 'kubernetes (fake API server)',
  fresh: async () => {
    ns = `ns-${++n}`;
    server.namespaces.add(ns);
    server.fault = undefined;
    return ['--kubeconfig', kubeconfig, '-n', ns];
  },
  state: async () => JSON.parse(JSON.stringify(objectsOf(ns))),
  objects: async () => objectsOf(ns).map((o) => ({ name: o.metadata.name, spec: o.spec })).sort((a, b) => (a.name < b.name ? -1 : 1)),
  put: async (object) => void server.put(ns, object as never),
  dump: async () => JSON.stringify(objectsOf(ns)),
  where: () => `namespace ${ns} (context fake)`,
  namespace: () => ns,
  missingStoreArgs: () => ['--kubeconfig', kubeconfig, '-n', 'no-such-namespace'],
});

describe('Kubernetes backend specifics (fake API server)', () => {
  const args = (namespace: string) => ['--kubeconfig', kubeconfig, '-n', namespace];

  it('concurrent add-token in one process: conflicts are retried, no token is lost', async () => {
    const namespace = 'concurrent';
    server.namespaces.add(namespace);
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => svc([...args(namespace), 'auth', 'add-token', '--topic-hierarchy', 'a.b', `concurrent-token-${String(i).padStart(4, '0')}`])),
    );
    expect(results.map((r) => r.code)).toEqual(results.map(() => 0));
    const [only] = objectsOf(namespace);
    expect((only!.spec as ProtectedScope['spec']).tokens).toHaveLength(25);
    expect(server.requests.some((r) => r.status === 409)).toBe(true);
  });

  it('concurrent add-subject and add-token on one scope: conflicts are retried, no grant is lost', async () => {
    const namespace = 'concurrent-subjects';
    server.namespaces.add(namespace);
    const results = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => svc([...args(namespace), 'auth', 'add-subject', '--topic-hierarchy', 'a.b', '--group', `group-${i}`])),
      ...Array.from({ length: 8 }, (_, i) => svc([...args(namespace), 'auth', 'add-token', '--topic-hierarchy', 'a.b', `concurrent-token-${String(i).padStart(4, '0')}`])),
    ]);
    expect(results.map((r) => r.code)).toEqual(results.map(() => 0));
    const [only] = objectsOf(namespace);
    const spec = only!.spec as ProtectedScope['spec'];
    expect(spec.subjects).toHaveLength(12);
    expect(spec.tokens).toHaveLength(8);
    expect(server.requests.some((r) => r.status === 409)).toBe(true);
  });

  it('the namespace comes from -n, else the context (--context picks another one)', async () => {
    server.namespaces.add('other');
    expect((await svc(['--kubeconfig', kubeconfig, 'auth', 'add-token', '--path', 'processes/svc', T1])).code).toBe(0);
    expect(objectsOf('default')).toHaveLength(1);
    expect((await svc(['--kubeconfig', kubeconfig, '--context', 'other', 'auth', 'add-token', '--path', 'processes/svc', T1])).code).toBe(0);
    expect(objectsOf('other')).toHaveLength(1);
  });

  it('KUBECONFIG is honoured when --kubeconfig is absent', async () => {
    const r = await svc(['auth', 'show', '-o', 'json'], { env: { KUBECONFIG: kubeconfig } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).store).toBe('namespace default (context fake)');
  });

  it('a server-side dry run writes nothing', async () => {
    const namespace = 'dry';
    server.namespaces.add(namespace);
    const r = await svc([...args(namespace), 'auth', 'add-token', '--path', 'processes/svc', T1, '--dry-run', '-o', 'yaml']);
    expect(r.code).toBe(0);
    expect(objectsOf(namespace)).toEqual([]);
    expect(server.requests.some((q) => q.method === 'POST' && q.path.includes(`/namespaces/${namespace}/`))).toBe(true);
  });

  describe('failures: one line saying what to do, exit 1 (2 for configuration), nothing written', () => {
    const cases: [string, () => void, string[], number, RegExp][] = [
      ['RBAC denial', () => (server.fault = () => ({ status: 403, body: { kind: 'Status', reason: 'Forbidden', code: 403, message: 'protectedscopes.auth.svc.io is forbidden: User "bob" cannot list resource "protectedscopes" in API group "auth.svc.io" in the namespace "f"' } })), ['auth', 'show'], 1,
        /^error: forbidden: protectedscopes\.auth\.svc\.io is forbidden: User "bob" cannot list .*\(ask a cluster admin for a Role granting get, list, create and update on protectedscopes\.auth\.svc\.io in namespace "f"\)\n$/],
      ['RBAC denial on write only', () => (server.fault = (m) => (m === 'GET' ? undefined : { status: 403, body: { kind: 'Status', reason: 'Forbidden', code: 403, message: 'cannot create' } })), ['auth', 'add-token', '--path', 'processes/svc', T1], 1, /^error: forbidden: cannot create/],
      ['401', () => (server.fault = () => ({ status: 401, body: { kind: 'Status', code: 401, message: 'Unauthorized' } })), ['auth', 'show'], 1, /rejected our credentials \(401 Unauthorized\): log in again/],
      ['CRD missing', () => (server.fault = (_m, p) => (p.startsWith('/apis/') ? { status: 404, body: '404 page not found' } : undefined)), ['auth', 'show'], 1, /the ProtectedScope CRD \(protectedscopes\.auth\.svc\.io\) is not installed in this cluster/],
      ['server error', () => (server.fault = () => ({ status: 500, body: { kind: 'Status', code: 500, message: 'etcd is sad' } })), ['auth', 'add-token', '--path', 'processes/svc', T1], 1, /the API server failed to list protectedscopes\.auth\.svc\.io \(500\): etcd is sad/],
      ['connection reset', () => (server.fault = () => 'reset'), ['auth', 'show'], 1, /cannot reach the Kubernetes API at http:\/\/127\.0\.0\.1:\d+ \(ECONNRESET\)/],
      ['no answer', () => (server.fault = () => 'hang'), ['--request-timeout', '300ms', 'auth', 'show'], 1, /no answer from the API server at http:\/\/127\.0\.0\.1:\d+ within 0 s/],
      ['unknown context', () => undefined, ['--context', 'nope', 'auth', 'show'], 2, /context "nope" is not in the kubeconfig \(contexts: fake, other\): check --context/],
      ['both backends', () => undefined, ['--dir', '/tmp', 'auth', 'show'], 2, /--dir selects a manifest directory and --kubeconfig\/--context a cluster: give one or the other/],
    ];
    it.each(cases)('%s', async (_name, arrange, command, code, pattern) => {
      const namespace = 'f';
      server.namespaces.add(namespace);
      server.put(namespace, { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'keep' }, spec: { path: 'processes/svc', tokens: [{ id: tokenIdOf(hashToken('keep-this-token-0001')), hash: hashToken('keep-this-token-0001'), createdAt: '2026-01-01T00:00:00Z' }] } });
      const before = JSON.stringify(objectsOf(namespace));
      arrange();
      try {
        const r = await svc([...args(namespace), ...command]);
        expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
        expect(r.stderr).toMatch(/^error: [^\n]+\n$/);
        expect(r.stderr).toMatch(pattern);
        expect(r.stderr).not.toContain(T1);
      } finally {
        server.fault = undefined;
      }
      expect(JSON.stringify(objectsOf(namespace))).toBe(before);
    });

    it('a missing kubeconfig file (exit 2), and no configuration at all (exit 1, one line naming KUBECONFIG, --kubeconfig, --context and --dir)', async () => {
      const missing = await svc(['--kubeconfig', '/nonexistent/kubeconfig', 'auth', 'show']);
      expect(missing).toEqual({ code: 2, stdout: '', stderr: 'error: kubeconfig /nonexistent/kubeconfig does not exist: check --kubeconfig\n' });
      // No KUBECONFIG, no ~/.kube/config, not in a pod: one line naming every way out, exit 1.
      const none = await svc(['auth', 'show'], { env: { HOME: mkdtempSync(join(tmpdir(), 'svc-nohome-')) } });
      expect(none.code).toBe(1);
      expect(none.stdout).toBe('');
      expect(none.stderr).toMatch(/^error: no Kubernetes configuration found: set KUBECONFIG or pass --kubeconfig FILE \(and --context NAME\), or use --dir DIR for a manifest directory\n$/);
    });
  });
});
