// Issue 41 on the Kubernetes backend, against the fake API server (test/cli/fake-apiserver.ts): the CLI refuses to
// write where no svc-operator serves the namespace (--allow-unserved while one is set up), finds the namespace from the
// chart's record when neither -n nor the context names one, marks in show what no operator has compiled, and --wait
// returns once svc-operator's status says the change is compiled (docs/cli-safety.md). The same against a real
// kube-apiserver (and a real svc-operator for --wait): test/integration/cli-served.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { hashToken, tokenIdOf } from '../../core/index.js';
import { FakeApiServer } from '../../test/cli/fake-apiserver.js';
import { makeWis2boxAuthStore } from '../../test/support/wis2box-auth-store.js';
import { removeDir, svc, tempDir, type Result } from '../../test/cli/harness.js';

const server = new FakeApiServer();
const dir = tempDir();
let kubeconfig = '';
let bare = '';
let n = 0;
const T1 = 'token-of-served-00001';

beforeAll(async () => {
  await server.start();
  kubeconfig = server.writeKubeconfig(dir, 'default');
  // A context that names no namespace.
  bare = server.writeKubeconfig(dir, undefined, 'bare-kubeconfig');
});
afterAll(async () => {
  await server.stop();
  removeDir(dir);
});
beforeEach(() => {
  server.fault = undefined;
  server.records = [];
  server.operator = { delayMs: 0, ready: 'True' };
});

/** A fresh namespace; `served`: an svc-operator serves it (its snapshot ConfigMap, its status on each write). */
function namespace(served: boolean): string {
  const ns = `ns-${++n}`;
  server.namespaces.add(ns);
  if (!served) server.unserved.add(ns);
  return ns;
}
const state = (ns: string) => JSON.stringify([...server.inNamespace(ns).values()]);
const cli = (ns: string, ...args: string[]): Promise<Result> => svc(['--kubeconfig', kubeconfig, '-n', ns, ...args]);

describe('writing where no svc-operator serves the namespace', () => {
  const WRITES: string[][] = [
    ['auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.core', T1],
    ['auth', 'add-subject', '--path', 'processes/svc', '--group', 'ops'],
    ['auth', 'add-network', '--path', 'data', '--cidr', '203.0.113.7/32'],
    ['auth', 'close', '--metadata-id', 'urn:wmo:md:mw-met:x'],
    ['auth', 'public', '--path', 'processes/station-info'],
    ['auth', 'add-token', '--path', 'processes/svc', '--dry-run', '-o', 'yaml'],
  ];

  it.each(WRITES)('%s %s is refused (exit 2): what to do, the namespaces that are served, nothing written', async (...args) => {
    const ns = namespace(false);
    server.records = [{ namespace: 'svc' }];
    const before = state(ns);
    const r = await cli(ns, ...args);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toBe(`error: no svc-operator serves namespace ${ns} (no snapshot ConfigMap there, no record for it in kube-public, no object with an operator's status): nothing would enforce this change, and show would call the scope closed. svc-operator serves namespace svc: did you mean -n svc? If an svc-operator is being set up for namespace ${ns}, add --allow-unserved (nothing was changed)\n`);
    expect(state(ns)).toEqual(before);
    expect(r.stderr).not.toContain(T1);
  });

  it('removals and import too; without records, the namespaces whose snapshot the user may list are named', async () => {
    const ns = namespace(false);
    server.put(ns, { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'hand' }, spec: { path: 'processes/svc', tokens: [{ id: tokenIdOf(hashToken(T1)), hash: hashToken(T1), createdAt: '2026-01-01T00:00:00Z' }] } as never });
    const before = state(ns);
    const store = `${dir}/auth.db`;
    makeWis2boxAuthStore(store, [{ token: 'import-token-000000001', topic: 'processes/wis2box' }]);
    for (const args of [['auth', 'remove-token', '--path', 'processes/svc', T1], ['auth', 'remove-tokens', '--path', 'processes/svc'], ['auth', 'open', '--path', 'processes/svc'], ['auth', 'import', store]]) {
      const r = await cli(ns, ...args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr).toMatch(new RegExp(`^error: no svc-operator serves namespace ${ns} \\(no snapshot ConfigMap there, no object with an operator's status\\): .* svc-operator serves namespace default: did you mean -n default\\? `));
    }
    expect(state(ns)).toEqual(before);
  });

  it('--allow-unserved writes, and says nothing enforces it; show then marks the scope not enforced', async () => {
    const ns = namespace(false);
    const r = await svc(['--kubeconfig', kubeconfig, '-n', ns, '--allow-unserved', 'auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.core', T1]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`warning: no svc-operator serves namespace ${ns} (no snapshot ConfigMap there, no object with an operator's status); written anyway (--allow-unserved): nothing enforces it until an svc-operator serves namespace ${ns}\n`);
    const table = (await cli(ns, 'auth', 'show')).stdout;
    expect(table).toMatch(/^topic +origin\.a\.wis2\.mw-met\.data\.core +Closed \(not enforced\) +1 /m);
    expect((await cli(ns, 'auth', 'show', '-o', 'text')).stdout).toContain('  not enforced: no svc-operator has observed its objects (is one serving this namespace?)');
    expect(JSON.parse((await cli(ns, 'auth', 'show', '-o', 'json')).stdout).scopes).toContainEqual(expect.objectContaining({ value: 'origin.a.wis2.mw-met.data.core', state: 'Closed', enforcement: 'not enforced' }));
  });

  it('show marks a scope whose latest change svc-operator has not compiled yet as pending', async () => {
    const ns = namespace(true);
    expect((await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1)).code).toBe(0);
    expect((await cli(ns, 'auth', 'show')).stdout).toMatch(/^path +processes\/svc +Closed +1 /m);
    server.operator = { delayMs: 0, ready: 'True', off: true };
    expect((await cli(ns, 'auth', 'close', '--path', 'processes/svc')).code).toBe(0);
    expect((await cli(ns, 'auth', 'show')).stdout).toMatch(/^path +processes\/svc +Closed \(pending\) +1 /m);
    expect((await cli(ns, 'auth', 'show', '--path', 'processes/svc', '-o', 'text')).stdout).toContain('  pending: svc-operator has not compiled the latest change of all its objects yet');
  });

  it('a Lease its operator stopped renewing: not served, whatever else remains of it', async () => {
    const ns = namespace(true);
    server.leases.set(`${ns}/svc-auth-snapshot-operator`, { holderIdentity: 'svc-operator-0', renewTime: new Date(Date.now() - 10 * 60_000).toISOString() });
    const r = await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^error: svc-operator's Lease svc-auth-snapshot-operator in namespace ${ns} is held by svc-operator-0 but last renewed 10 min ago: the operator is not running`));
    server.leases.set(`${ns}/svc-auth-snapshot-operator`, { holderIdentity: 'svc-operator-0', renewTime: new Date().toISOString() });
    expect((await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1)).code).toBe(0);
  });

  it('where the user may read none of the evidence: written, with a warning that nobody could tell', async () => {
    const ns = namespace(false);
    server.fault = (_m, p) => (p.includes('/configmaps') || p.includes('/leases/') ? { status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'configmaps is forbidden' } } : undefined);
    const r = await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`^warning: cannot tell whether an svc-operator serves namespace ${ns} \\(the ConfigMaps of namespace ${ns}: not allowed to read them; the records in kube-public: not allowed to read them\\): the change is enforced only if one does`));
  });

  it('the record says how long a proxy may cache an allow', async () => {
    const ns = namespace(true);
    server.records = [{ namespace: ns, cacheMaxAge: 5 }];
    expect((await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1)).code).toBe(0);
    const r = await cli(ns, 'auth', 'remove-tokens', '--path', 'processes/svc');
    expect(r.stderr).toBe("Not in force yet: svc-operator compiles it into the snapshot and svc-auth loads that, usually within a second or two (--wait waits for it). A proxy caching svc-auth's answers may allow what this takes away for up to 5 s more (auth.cacheMaxAge, from the chart's record).\n");
  });
});

describe('the namespace, when neither -n nor the context names one', () => {
  it('the one namespace the chart\'s record names, said on stderr; several: exit 2; none: "default"', async () => {
    const ns = namespace(true);
    server.records = [{ namespace: ns }];
    const r = await svc(['--kubeconfig', bare, 'auth', 'add-token', '--path', 'processes/svc', T1]);
    expect(r.code).toBe(0);
    expect(r.stderr.split('\n')[0]).toBe(`Namespace ${ns}: the one an svc-operator serves (kube-public/svc-served.${ns}); the context names none. Give -n to choose another.`);
    expect([...server.inNamespace(ns).keys()]).toHaveLength(1);
    server.records = [{ namespace: ns }, { namespace: 'other' }];
    const several = await svc(['--kubeconfig', bare, 'auth', 'show']);
    expect(several).toEqual({ code: 2, stdout: '', stderr: `error: the context fake names no namespace and svc-operator serves several (${ns}, other, from kube-public): give -n NAMESPACE\n` });
    server.records = [];
    expect((await svc(['--kubeconfig', bare, 'auth', 'show', '-o', 'json'])).stdout).toContain('"store": "namespace default (context fake)"');
    // A context with a namespace, or -n, is never second-guessed.
    server.records = [{ namespace: ns }];
    expect((await svc(['--kubeconfig', kubeconfig, 'auth', 'show', '-o', 'json'])).stdout).toContain('"store": "namespace default (context fake)"');
  });
});

describe('--wait', () => {
  it('returns once svc-operator says the new generation is compiled (Ready), and says it is in force', async () => {
    const ns = namespace(true);
    server.operator = { delayMs: 400, ready: 'True' };
    const started = Date.now();
    const r = await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1, '--wait');
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(r.stderr).toMatch(/^New scope: path processes\/svc[^\n]*\nIn force: svc-operator has compiled it into the snapshot \(Ready, \d+\.\d s\); svc-auth loads the snapshot within about a second\.[^\n]*\n$/);
    // The next generation is waited for, not the one already compiled.
    const second = await cli(ns, 'auth', 'remove-token', '--path', 'processes/svc', T1, '--wait-timeout', '5s');
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/^In force: .* A proxy caching svc-auth's answers may allow what this takes away for up to 30 s more/);
    expect(server.inNamespace(ns).values().next().value!.metadata.generation).toBe(2);
  });

  it('on time out: exit 1, the change written and staying, the status named', async () => {
    const ns = namespace(true);
    server.operator = { delayMs: 0, ready: 'True', off: true };
    const r = await cli(ns, 'auth', 'add-token', '--path', 'processes/svc', T1, '--wait-timeout', '1s', '-o', 'json');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: tokenIdOf(hashToken(T1)) });
    expect(r.stderr).toMatch(/^New scope: [^\n]*\nerror: svc-operator has not compiled path-processes-svc-[0-9a-f]{8} \(generation 1; its status says no operator has observed it\) within 1 s: the change is written in namespace ns-\d+ \(context fake\) and stays there, but is not in force until svc-operator compiles it \(kubectl get ps path-processes-svc-[0-9a-f]{8} -o wide; is svc-operator running and serving this namespace\?\)\n$/);
    expect([...server.inNamespace(ns).values()][0]!.spec).toMatchObject({ tokens: [expect.objectContaining({ id: tokenIdOf(hashToken(T1)) })] });
    expect(r.stdout + r.stderr).not.toContain(T1);
  });

  it('a spec svc-operator cannot compile: exit 1 at once, with what it says', async () => {
    const ns = namespace(true);
    server.operator = { delayMs: 100, ready: 'False' };
    const r = await cli(ns, 'auth', 'close', '--path', 'processes/svc', '--wait');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: svc-operator cannot compile path-processes-svc-[0-9a-f]{8} as it stands \(Invalid\): left out of the snapshot: the change is written/);
  });
});
