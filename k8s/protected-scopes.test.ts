import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { hashToken, newProtectedScope, tokenIdOf, type ProtectedScope } from '../core/index.js';
import { FakeApiServer } from '../test/cli/fake-apiserver.js';
import { removeDir, tempDir } from '../test/cli/harness.js';
import { KubeError, ProtectedScopeClient } from './protected-scopes.js';

const server = new FakeApiServer();
const dir = tempDir('svc-k8s-');
let kubeconfig = '';

beforeAll(async () => {
  await server.start();
  kubeconfig = server.writeKubeconfig(dir, 'team');
});
afterAll(async () => {
  await server.stop();
  removeDir(dir);
});
beforeEach(() => {
  server.fault = undefined;
  server.crdInstalled = true;
  server.objects.clear();
  server.namespaces.add('team');
});

const token = (t: string) => ({ id: tokenIdOf(hashToken(t)), hash: hashToken(t), createdAt: '2026-01-01T00:00:00Z' });
const scope = (name: string, tokens = [token(`token-for-${name}-0001`)]): ProtectedScope =>
  newProtectedScope({ kind: 'topic', value: `a.${name}` }, name, undefined, tokens);
const client = (options: Parameters<typeof ProtectedScopeClient.fromOptions>[0] = {}) => ProtectedScopeClient.fromOptions({ kubeconfig, ...options });

/** The KubeError a promise rejects with. */
async function failureOf(p: Promise<unknown>): Promise<KubeError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof KubeError) return e;
    throw e;
  }
  throw new Error('expected a KubeError');
}

describe('ProtectedScopeClient configuration', () => {
  it('takes the namespace from the option, else the context, else "default"', () => {
    expect(client().namespace).toBe('team');
    expect(client({ namespace: 'x' }).namespace).toBe('x');
    expect(client({ context: 'other' }).namespace).toBe('other');
    const bare = join(dir, 'bare');
    writeFileSync(bare, `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${server.url}", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n`);
    expect(ProtectedScopeClient.fromOptions({ kubeconfig: bare }).namespace).toBe('default');
    expect(client().server).toBe(server.url);
    expect(client().context).toBe('fake');
  });

  it('reads $KUBECONFIG as a list of files, as kubectl does', () => {
    const c = ProtectedScopeClient.fromOptions({ kubeconfigEnv: [join(dir, 'missing'), kubeconfig].join(':') });
    expect(c.namespace).toBe('team');
  });

  it.each([
    [{ kubeconfig: '/nonexistent' }, /kubeconfig \/nonexistent does not exist: check --kubeconfig/],
    [{ kubeconfigEnv: '/nonexistent:/also/not' }, /none of the files in KUBECONFIG \(\/nonexistent:\/also\/not\) exists/],
    [{ context: 'nope' }, /context "nope" is not in the kubeconfig \(contexts: fake, other\): check --context/],
  ])('configuration errors are KubeError("Config") with what to check: %j', (options, pattern) => {
    const options2 = 'kubeconfigEnv' in options ? options : { kubeconfig, ...options };
    let error: unknown;
    try {
      ProtectedScopeClient.fromOptions(options2);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).reason).toBe('Config');
    expect((error as KubeError).message).toMatch(pattern);
  });

  it('a kubeconfig without clusters says how to configure one (or what the program offers instead)', () => {
    const empty = join(dir, 'empty');
    writeFileSync(empty, 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');
    expect(() => ProtectedScopeClient.fromOptions({ kubeconfig: empty })).toThrow(/^no Kubernetes cluster configured: set --kubeconfig, KUBECONFIG or ~\/\.kube\/config \(or run inside a pod\)$/);
    expect(() => ProtectedScopeClient.fromOptions({ kubeconfig: empty, otherwise: 'use --dir DIR' })).toThrow(/no Kubernetes cluster configured: .*, or use --dir DIR$/);
  });
});

describe('ProtectedScopeClient operations', () => {
  it('get: the object, or undefined', async () => {
    server.put('team', scope('one') as never);
    expect((await client().get('one'))?.spec).toEqual(scope('one').spec);
    expect(await client().get('two')).toBeUndefined();
  });

  it('list reads every page', async () => {
    for (let i = 0; i < 7; i++) server.put('team', scope(`s${i}`) as never);
    const items = await client().list(3);
    expect(items.map((o) => o.metadata.name)).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6']);
    expect(server.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/protectedscopes')).length).toBeGreaterThanOrEqual(3);
  });

  it('create, then replace with the resourceVersion as precondition; a stale one is a Conflict', async () => {
    const c = client();
    const created = await c.create(scope('one'));
    expect(created.metadata.namespace).toBe('team');
    const updated = await c.replace({ ...created, spec: { ...created.spec, tokens: [] } as ProtectedScope['spec'] });
    expect(updated.spec.tokens).toEqual([]);
    const stale = await failureOf(c.replace({ ...created, spec: { ...created.spec, tokens: [token('another-token-00001')] } as ProtectedScope['spec'] }));
    expect([stale.reason, stale.status]).toEqual(['Conflict', 409]);
    expect(stale.message).toMatch(/protectedscopes\.auth\.svc\.io "one" was changed by someone else in namespace "team"/);
    const taken = await failureOf(c.create(scope('one')));
    expect(taken.reason).toBe('AlreadyExists');
    await expect(c.replace(scope('one'))).rejects.toThrow(/needs the resourceVersion/);
  });

  it('a dry run writes nothing', async () => {
    const c = client();
    await c.create(scope('one'), { dryRun: true });
    expect(await c.get('one')).toBeUndefined();
    const real = await c.create(scope('one'));
    await c.replace({ ...real, spec: { ...real.spec, tokens: [] } as ProtectedScope['spec'] }, { dryRun: true });
    expect((await c.get('one'))?.spec.tokens).toHaveLength(1);
  });

  it('delete: gone afterwards, and a missing object is not an error', async () => {
    const c = client();
    await c.create(scope('one'));
    await c.delete('one');
    expect(await c.get('one')).toBeUndefined();
    await c.delete('one');
  });

  it('namespaceExists: true, false, or undefined when we may not ask', async () => {
    expect(await client().namespaceExists()).toBe(true);
    expect(await client({ namespace: 'nope' }).namespaceExists()).toBe(false);
    server.fault = (_m, p) => (p.startsWith('/api/v1/namespaces') ? { status: 403, body: { kind: 'Status', code: 403, message: 'no' } } : undefined);
    expect(await client().namespaceExists()).toBeUndefined();
  });

  it('an object the schema refuses is Invalid, with the fields', async () => {
    const bad = { ...scope('one'), spec: { topicHierarchy: 'a..b', tokens: [] } } as unknown as ProtectedScope;
    const e = await failureOf(client().create(bad));
    expect(e.reason).toBe('Invalid');
    expect(e.message).toMatch(/the API server refused protectedscopes\.auth\.svc\.io "one": spec\.topicHierarchy: invalid topic hierarchy/);
  });
});

describe('ProtectedScopeClient failures', () => {
  const status = (code: number, message: string, extra: object = {}) => () => ({ status: code, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, message, ...extra } });
  it.each([
    ['403', status(403, 'protectedscopes.auth.svc.io is forbidden: User "bob" cannot list resource'), 'Forbidden', /^forbidden: protectedscopes\.auth\.svc\.io is forbidden: User "bob" cannot list resource \(ask a cluster admin for a Role granting get, list, create and update on protectedscopes\.auth\.svc\.io in namespace "team"\)$/],
    ['401', status(401, 'Unauthorized'), 'Unauthorized', /rejected our credentials \(401 Unauthorized\): log in again or check the kubeconfig user of context fake/],
    ['429', status(429, 'slow down'), 'ServerError', /failed to list protectedscopes\.auth\.svc\.io \(429\): slow down/],
    ['503', status(503, 'etcd unavailable'), 'ServerError', /\(503\): etcd unavailable/],
    ['418', status(418, 'teapot'), 'Other', /cannot list protectedscopes\.auth\.svc\.io in namespace "team" \(418\): teapot/],
    ['CRD missing', () => ({ status: 404, body: '404 page not found' }), 'CrdNotInstalled', /CRD \(protectedscopes\.auth\.svc\.io\) is not installed in this cluster: install crds\/protectedscope\.yaml or the Helm chart/],
    ['reset', () => 'reset' as const, 'Unreachable', /cannot reach the Kubernetes API at http:\/\/127\.0\.0\.1:\d+ \(ECONNRESET\)/],
  ])('%s', async (_name, fault, reason, pattern) => {
    server.fault = fault as never;
    const e = await failureOf(client().list());
    expect(e.reason).toBe(reason);
    expect(e.message).toMatch(pattern);
    expect(e.transient).toBe(reason === 'ServerError');
  });

  it('a create in a missing namespace is NamespaceNotFound', async () => {
    const e = await failureOf(client({ namespace: 'ghost' }).create(scope('one')));
    expect([e.reason, e.message]).toEqual(['NamespaceNotFound', 'namespace "ghost" not found: check -n/--namespace or the context\'s namespace']);
  });

  it('connection refused, and a server that never answers (request timeout)', async () => {
    const closed: Server = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    const refusedConfig = join(dir, 'refused');
    writeFileSync(refusedConfig, `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n`);
    const refused = await failureOf(ProtectedScopeClient.fromOptions({ kubeconfig: refusedConfig, otherwise: 'use --dir DIR for a manifest directory' }).list());
    expect([refused.reason, refused.message]).toEqual([
      'Unreachable',
      `cannot reach the Kubernetes API at http://127.0.0.1:${port} (connection refused): check the cluster is running and --kubeconfig/--context point at it, or use --dir DIR for a manifest directory`,
    ]);
    // The server never answers: only the 250 ms request timeout can end this call within the test's own timeout.
    server.fault = () => 'hang';
    const hung = await failureOf(client({ requestTimeoutMs: 250 }).get('x'));
    expect(hung.reason).toBe('Timeout');
  });
});
