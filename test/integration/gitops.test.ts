// What a GitOps controller reads of a ProtectedScope, judged by the tools' own code against the real svc-operator on
// the test control plane (test/gitops/README.md):
// - Flux: kustomize-controller's server-side apply and health check (fluxcd/pkg/ssa's ApplyAllStaged and
//   WaitForSetWithContext with Flux's kstatus poller), run by test/gitops/go: a valid object becomes Current; one the
//   operator can never compile becomes Failed as soon as it says so, with its reason (not at the wait's timeout); an
//   edit is InProgress, then Current; an unchanged re-apply stays Current (no flap); an invalid object replaced by a
//   valid one (scope fields are immutable: Flux's force recreates it) becomes Current; a refused snapshot write is
//   InProgress with the operator's reason until the write succeeds; a pruned object is gone. The healthCheckExprs of
//   docs/gitops.md, through Flux's CEL status reader, judge the same.
// - Argo CD: the shipped health.lua, run by gopher-lua with only the libraries Argo CD opens for an argocd-cm script and
//   its 1 s timeout, on the very objects the poller read in each state; and the fixtures in Argo CD's
//   resource_customizations layout, run the way Argo CD's own test runs them. The chart renders the script as an
//   argocd-cm patch that a server-side apply merges into an existing argocd-cm.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { dump, loadAll } from 'js-yaml';
import type { Kube } from '../../k8s/kube.js';
import { SNAPSHOT_LABEL } from '../../k8s/snapshot/objects.js';
import { svc } from '../cli/harness.js';
import { repoRoot } from '../controlplane/controlplane.js';
import { describeCluster, kubeConfig, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { ensureGitopsCheck } from '../gitops/tool.js';
import { helmBinary, helmTemplate, ofKind } from '../stack/helm.js';
import { applyManifests, kubectlBinary } from '../stack/kubectl.js';
import { runCommand } from '../support/process.js';
import { until } from '../support/wait.js';
import { GROUP, OperatorProcess, PLURAL, VERSION, getScope, kubeFor, newToken } from './operator-support.js';

const LUA = join(repoRoot, 'charts', 'svc', 'files', 'argocd', 'health.lua');
const FIXTURES = join(repoRoot, 'contrib', 'argocd', 'resource_customizations');
const DOCS = join(repoRoot, 'docs', 'gitops.md');
const API_GROUP_AND_KIND = join(GROUP, 'ProtectedScope');
// kustomize-controller polls every 5 s; the measured times below are svc-operator's, so the wait polls every second.
const WAIT = ['--interval', '1s', '--timeout', '90s'];
// kustomize-controller's default: give up at the first Failed object (unless --feature-gates=DisableFailFastBehavior=true).
const FAIL_FAST = ['--fail-fast'];

interface Observation {
  name: string;
  status: string;
  message: string;
  reason?: string;
  generation?: number;
  observedGeneration?: number;
  atMs: number;
  object?: Record<string, unknown>;
}

interface Applied {
  applyError?: string;
  changes: string[];
  wait?: { ok: boolean; error?: string; ms: number };
  observed: Observation[];
  final: Observation[];
}

interface Health {
  file: string;
  status?: string;
  message?: string;
  error?: string;
}

describeCluster('GitOps tools read svc-operator\'s conditions: Flux\'s wait and Argo CD\'s health check, against the real operator', () => {
  let kube: Kube;
  let ns: string;
  let bin: string;
  let dir: string;
  let operator: OperatorProcess;
  /** Objects as the poller read them, by state: what the Argo CD check is run on at the end. */
  const states = new Map<string, Record<string, unknown>>();
  const timings: string[] = [];
  const token = newToken();
  const second = newToken();

  beforeAll(async () => {
    // Built into the tool cache on first use: minutes when cold (test/gitops/tool.ts).
    bin = await ensureGitopsCheck();
    kube = await kubeFor(kubeconfigPath());
    ns = await newNamespace('gitops');
    dir = mkdtempSync(join(tmpdir(), 'svc-gitops-'));
    // Prefixes other than the CRD's defaults: objects the API server accepts that svc-operator cannot compile as asked
    // (api/processes/x is a refused form under --api-prefix /api, public files is public at the WAF prefix).
    operator = await new OperatorProcess(kubeconfigPath(), ns, ['--api-prefix', '/api', '--waf-prefix', '/files']).start().started();
  }, 1_200_000);

  afterAll(async () => {
    await operator?.stop();
    kube?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (timings.length > 0) process.stdout.write(`[gitops] ${timings.join('; ')}\n`);
  });

  async function check<T>(args: readonly string[], timeoutMs = 150_000): Promise<T> {
    const r = await runCommand(bin, args, { timeoutMs });
    if (r.code !== 0) throw new Error(`svc-gitops-check ${args[0]} exited ${r.code ?? r.signal}:\n${r.stderr}\n${r.stdout.slice(0, 4000)}`);
    return JSON.parse(r.stdout) as T;
  }

  /** The objects as one manifest file (as a Git repository holds them). */
  function manifests(name: string, objects: Record<string, Record<string, unknown>>): string {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, Object.entries(objects).map(([n, spec]) => dump({ apiVersion: `${GROUP}/${VERSION}`, kind: 'ProtectedScope', metadata: { name: n }, spec })).join('---\n'));
    return file;
  }

  const apply = (file: string, extra: readonly string[] = []) => check<Applied>(['apply', '--kubeconfig', kubeconfigPath(), '--namespace', ns, '--file', file, ...WAIT, ...extra]);
  const statusesOf = (a: Applied, name: string) => a.observed.filter((o) => o.name === name).map((o) => o.status);
  const finalOf = (a: Applied, name: string) => a.final.find((o) => o.name === name)!;
  /** When kstatus first reported `status` for the object, in ms after the apply (the recording poller polls every 100 ms). */
  const seenAt = (a: Applied, name: string, status: string) => a.observed.find((o) => o.name === name && o.status === status)?.atMs;

  const valid = () => ({ topicHierarchy: 'origin.a.wis2.mw-met.data.core', tokens: [token.record] });

  it('a valid object: InProgress until svc-operator compiled it, then Current (Flux\'s apply and wait)', async () => {
    const a = await apply(manifests('valid', { valid: valid() }), FAIL_FAST);
    expect(a.changes).toEqual([`ProtectedScope/${ns}/valid created`]);
    expect(a.wait).toMatchObject({ ok: true });
    // A new object is never Current before the operator wrote its status (the CRD's default Ready=Unknown).
    const seen = statusesOf(a, 'valid');
    expect(seen[0]).toBe('InProgress');
    expect(seen.at(-1)).toBe('Current');
    expect(finalOf(a, 'valid')).toMatchObject({ status: 'Current', reason: 'Compiled', generation: 1, observedGeneration: 1 });
    states.set('new', a.observed.find((o) => o.status === 'InProgress')!.object!);
    states.set('healthy', finalOf(a, 'valid').object!);
    // As docs/gitops.md writes it.
    expect(await kubectlWait('Ready', 'valid')).toMatchObject({ code: 0, stdout: 'protectedscope.auth.svc.io/valid condition met\n' });
    timings.push(`a new object: Current after ${seenAt(a, 'valid', 'Current')} ms (Flux's wait returned after ${a.wait!.ms} ms, polling every 1 s)`);
  });

  it('an unchanged re-apply stays Current: a Ready object never flaps through Reconciling', async () => {
    const before = (await getScope(kube, ns, 'valid')).metadata.resourceVersion;
    const a = await apply(join(dir, 'valid.yaml'));
    expect(a.changes).toEqual([`ProtectedScope/${ns}/valid unchanged`]);
    expect(a.wait).toMatchObject({ ok: true });
    expect(new Set(statusesOf(a, 'valid'))).toEqual(new Set(['Current']));
    expect((await getScope(kube, ns, 'valid')).metadata.resourceVersion).toBe(before);
  });

  it('objects svc-operator can never compile: Failed as soon as it says so (not at the timeout), with the reason', async () => {
    const file = manifests('stalled', {
      'refused-path': { path: 'api/processes/station-info', tokens: [] },
      'public-prefix': { path: 'files', public: true, tokens: [] },
    });
    const a = await apply(file, FAIL_FAST);
    expect(a.wait!.ok).toBe(false);
    // "failed early", not "timeout waiting for": the wait ended on the Failed statuses, long before its 90 s.
    expect(a.wait!.error).toMatch(/^failed early due to stalled resources: \[/);
    expect(a.wait!.error).toContain(`ProtectedScope/${ns}/refused-path status: 'Failed'`);
    const refused = finalOf(a, 'refused-path');
    expect(refused).toMatchObject({ status: 'Failed', reason: 'RefusedPath' });
    expect(refused.message).toMatch(/^spec\.path: compiled as written \(a prefix path\): api\/processes\/station-info /);
    expect(finalOf(a, 'public-prefix')).toMatchObject({ status: 'Failed', reason: 'PublicRefused' });
    expect(finalOf(a, 'public-prefix').message).toMatch(/^spec\.path: compiled as not public: /);
    states.set('stalled', refused.object!);
    expect(await kubectlWait('Stalled', 'refused-path')).toMatchObject({ code: 0, stdout: 'protectedscope.auth.svc.io/refused-path condition met\n' });
    states.set('stalled-public', finalOf(a, 'public-prefix').object!);
    timings.push(`a stalled object: Failed after ${seenAt(a, 'refused-path', 'Failed')} ms (Flux's wait failed after ${a.wait!.ms} ms, its timeout 90 s)`);

    // Without fail-fast (DisableFailFastBehavior=true) the wait ends as early: only Failed and Current are left.
    const again = await apply(file);
    expect(again.wait!.error).toMatch(/^failed early due to stalled resources: /);
  });

  it('kubectl get and svc auth show name a stalled object\'s reason', async () => {
    const t = await table();
    const col = t.columnDefinitions.findIndex((c) => c.name === 'Stalled');
    expect(t.columnDefinitions[col]!.priority).toBe(0);
    const byName = new Map(t.rows.map((r) => [r.object.metadata.name, r.cells[col]]));
    expect([byName.get('refused-path'), byName.get('public-prefix')]).toEqual(['RefusedPath', 'PublicRefused']);
    expect(byName.get('valid') ?? '').toBe('');

    const shown = await svc(['--kubeconfig', kubeconfigPath(), '-n', ns, 'auth', 'show', '--path', 'api/processes/station-info', '-o', 'text']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^ {2}stalled: refused-path \(RefusedPath\): spec\.path: compiled as written \(a prefix path\): /m);
    const asTable = await svc(['--kubeconfig', kubeconfigPath(), '-n', ns, 'auth', 'show', '--path', 'api/processes/station-info']);
    expect(asTable.stderr).toMatch(/^ProtectedScope refused-path is stalled \(RefusedPath\): spec\.path: compiled as written /m);
    const json = await svc(['--kubeconfig', kubeconfigPath(), '-n', ns, 'auth', 'show', '--path', 'files', '-o', 'json']);
    expect((JSON.parse(json.stdout) as { scopes: { stalled?: { object: string; reason: string }[] }[] }).scopes[0]!.stalled).toEqual([expect.objectContaining({ object: 'public-prefix', reason: 'PublicRefused' })]);
  });

  it('an edit (generation + 1) is InProgress, then Current', async () => {
    const a = await apply(manifests('valid', { valid: { ...valid(), tokens: [token.record, second.record] } }), FAIL_FAST);
    expect(a.changes).toEqual([`ProtectedScope/${ns}/valid configured`]);
    expect(a.wait).toMatchObject({ ok: true });
    const seen = a.observed.filter((o) => o.name === 'valid');
    expect(seen[0]).toMatchObject({ status: 'InProgress', generation: 2, observedGeneration: 1 });
    expect(seen.at(-1)).toMatchObject({ status: 'Current', generation: 2, observedGeneration: 2 });
    expect(finalOf(a, 'valid').message).toBe('Resource is Ready');
    states.set('edited', seen[0]!.object!);
    timings.push(`an edit: Current after ${seenAt(a, 'valid', 'Current')} ms (Flux's wait returned after ${a.wait!.ms} ms)`);
  });

  it('an invalid object replaced by a valid one becomes Current (scope fields are immutable: Flux recreates it with force)', async () => {
    const file = manifests('replaced', { 'refused-path': { path: 'processes/station-info', tokens: [] } });
    const refused = await apply(file);
    expect(refused.applyError).toMatch(/scope is immutable: create a new ProtectedScope/);
    const forced = await apply(file, ['--force', ...FAIL_FAST]);
    expect(forced.changes).toEqual([`ProtectedScope/${ns}/refused-path created`]);
    expect(forced.wait).toMatchObject({ ok: true });
    expect(finalOf(forced, 'refused-path')).toMatchObject({ status: 'Current', reason: 'Compiled', generation: 1 });
    const conditions = (finalOf(forced, 'refused-path').object!.status as { conditions: { type: string }[] }).conditions.map((c) => c.type);
    expect(conditions).toEqual(['Ready']);
    states.set('replaced', finalOf(forced, 'refused-path').object!);
  });

  it('a snapshot write refused: InProgress with svc-operator\'s reason (Reconciling) until a write succeeds, then Current', async () => {
    const admission = kubeConfig().makeApiClient(k8s.AdmissionregistrationV1Api);
    const name = `refuse-snapshot-${ns}`;
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
          validations: [{ expression: `request.namespace != '${ns}' || !has(object.metadata.labels) || !('${SNAPSHOT_LABEL}' in object.metadata.labels)`, message: 'snapshot writes refused by the test' }],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({ body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } } });
    try {
      await until('the admission policy enforced', async () => !(await snapshotWriteAllowed()));
      // A token revoked (server-side apply; the CRD defaults an emptied token list to [], crd.test.ts).
      const file = manifests('valid', { valid: { ...valid(), tokens: [second.record] } });
      // The wait cannot end well while the snapshot cannot be written: it times out, InProgress, with the reason.
      const a = await check<Applied>(['apply', '--kubeconfig', kubeconfigPath(), '--namespace', ns, '--file', file, '--interval', '1s', '--timeout', '8s', ...FAIL_FAST]);
      expect(a.applyError).toBeUndefined();
      // Flux's wait ends at its deadline: as a timeout naming the InProgress object, or, when its last poll would pass
      // the deadline on a loaded machine, as client-go's rate limiter refusing that poll. Either way it never succeeded;
      // the InProgress status itself is read below.
      expect(a.wait!.error).toMatch(new RegExp(`^(timeout waiting for: \\[ProtectedScope/${ns}/valid status: 'InProgress'|client rate limiter Wait returned an error: .*would exceed context deadline)`));
      const reconciling = await until('Reconciling=True in the status', async () => {
        const o = await getScope(kube, ns, 'valid');
        const c = ((o.status?.conditions ?? []) as { type: string; status: string; reason: string; message: string }[]).find((x) => x.type === 'Reconciling');
        return c?.status === 'True' ? { o, c } : undefined;
      });
      expect(reconciling.c).toMatchObject({ reason: 'SnapshotWriteFailed' });
      expect(reconciling.c.message).toMatch(/^generation 3 is not in a published snapshot yet: the snapshot write failed \(.*snapshot writes refused by the test.*\); svc-operator retries$/);
      // kstatus reads the older status.observedGeneration first (the other status fields still describe what svc-auth
      // enforces); the reason is in the Reconciling condition, which the Argo CD check shows.
      const seen = await apply(file, ['--timeout', '3s']);
      expect(finalOf(seen, 'valid')).toMatchObject({ status: 'InProgress', message: 'ProtectedScope generation is 3, but latest observed generation is 2' });
      states.set('reconciling', finalOf(seen, 'valid').object!);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
    }
    await until('the admission policy gone', snapshotWriteAllowed);
    const a = await apply(join(dir, 'valid.yaml'), FAIL_FAST);
    expect(a.wait).toMatchObject({ ok: true });
    const done = finalOf(a, 'valid');
    expect(done).toMatchObject({ status: 'Current', generation: 3, observedGeneration: 3 });
    expect(((done.object!.status as { conditions: { type: string }[] }).conditions).map((c) => c.type)).toEqual(['Ready']);
  });

  it('a pruned object is gone (Flux\'s DeleteAll and WaitForTermination); one a finalizer holds is Terminating meanwhile', async () => {
    const held = manifests('held', { held: { metadataId: 'urn:wmo:md:mw-met:held', tokens: [] } });
    expect((await apply(held)).wait).toMatchObject({ ok: true });
    await kube.custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name: 'held', body: { metadata: { finalizers: ['test.svc.io/hold'] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name: 'held' });
    const deleting = await getScope(kube, ns, 'held') as unknown as Record<string, unknown> & { metadata: { deletionTimestamp?: string } };
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    states.set('deleting', deleting);
    await kube.custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name: 'held', body: { metadata: { finalizers: null } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));

    const gone = await check<{ changes: string[]; final: Observation[] }>(['delete', '--kubeconfig', kubeconfigPath(), '--namespace', ns, '--file', join(dir, 'valid.yaml')]);
    expect(gone.changes).toEqual([`ProtectedScope/${ns}/valid deleted`]);
    expect(gone.final).toEqual([expect.objectContaining({ name: 'valid', status: 'NotFound' })]);
  });

  it('the healthCheckExprs of docs/gitops.md, through Flux\'s CEL status reader: Current for a compiled object, Failed for a stalled one', async () => {
    const exprs = join(dir, 'health-check-exprs.yaml');
    writeFileSync(exprs, dump(documentedHealthCheckExprs()));
    const ok = await apply(manifests('cel-valid', { 'cel-valid': { topicHierarchy: 'origin.cel', tokens: [token.record] } }), ['--health-check-exprs', exprs, ...FAIL_FAST]);
    expect(ok.wait).toMatchObject({ ok: true });
    expect(statusesOf(ok, 'cel-valid')[0]).toBe('InProgress');
    const stalled = await apply(manifests('cel-stalled', { 'cel-stalled': { path: 'api/collections/stations', tokens: [] } }), ['--health-check-exprs', exprs, ...FAIL_FAST]);
    expect(stalled.wait!.error).toMatch(/^failed early due to stalled resources: /);
    expect(finalOf(stalled, 'cel-stalled')).toMatchObject({ status: 'Failed', reason: 'RefusedPath' });
  });

  it('Argo CD\'s health check (the shipped health.lua in Argo CD\'s sandbox) reports each state the real operator wrote', async () => {
    const expected: Record<string, { status: string; message: RegExp | string }> = {
      new: { status: 'Progressing', message: 'Waiting for svc-operator to compile generation 1' },
      healthy: { status: 'Healthy', message: 'scope Closed; this object has 1 token (1 active)' },
      stalled: { status: 'Degraded', message: /^spec\.path: compiled as written \(a prefix path\): api\/processes\/station-info / },
      'stalled-public': { status: 'Degraded', message: /^spec\.path: compiled as not public: / },
      edited: { status: 'Progressing', message: 'Waiting for svc-operator to compile generation 2' },
      replaced: { status: 'Healthy', message: /^scope Closed \(closed by default: / },
      reconciling: { status: 'Progressing', message: /^generation 3 is not in a published snapshot yet: the snapshot write failed / },
      deleting: { status: 'Progressing', message: 'Deletion in progress' },
    };
    expect([...states.keys()].sort()).toEqual(Object.keys(expected).sort());
    const files = [...states].map(([state, object]) => {
      const file = join(dir, `state-${state}.json`);
      writeFileSync(file, JSON.stringify(object));
      return file;
    });
    const health = await check<Health[]>(['health', '--script', LUA, ...files]);
    for (const [i, state] of [...states.keys()].entries()) {
      const { status, message } = expected[state]!;
      expect({ state, status: health[i]!.status, error: health[i]!.error }).toEqual({ state, status, error: undefined });
      if (typeof message === 'string') expect(health[i]!.message).toBe(message);
      else expect(health[i]!.message).toMatch(message);
    }
    // kstatus (what Flux judges by) on the same objects agrees.
    const kstatus = await check<Health[]>(['kstatus', ...files]);
    expect(Object.fromEntries([...states.keys()].map((s, i) => [s, kstatus[i]!.status]))).toEqual({
      new: 'InProgress', healthy: 'Current', stalled: 'Failed', 'stalled-public': 'Failed', edited: 'InProgress', replaced: 'Current', reconciling: 'InProgress', deleting: 'Terminating',
    });
  });

  it('the sandbox is Argo CD\'s: no string library, and a script that runs past 1 s is stopped', async () => {
    const object = join(FIXTURES, API_GROUP_AND_KIND, 'testdata', 'healthy.yaml');
    const strings = join(dir, 'strings.lua');
    writeFileSync(strings, 'return { status = string.upper("healthy") }\n');
    const loop = join(dir, 'loop.lua');
    writeFileSync(loop, 'while true do end\n');
    const [s, l] = [await check<Health[]>(['health', '--script', strings, object]), await check<Health[]>(['health', '--script', loop, object])];
    expect(s[0]!.error).toMatch(/attempt to index a non-table object\(nil\) with key 'upper'/);
    expect(l[0]!.error).toMatch(/context deadline exceeded/);
  });

  it('the fixtures in Argo CD\'s resource_customizations layout pass the way Argo CD\'s own test runs them', async () => {
    const results = await check<{ inputPath: string; ok: boolean; expected: unknown; got: unknown; error?: string }[]>(['fixtures', '--dir', FIXTURES]);
    expect(results.length).toBeGreaterThanOrEqual(8);
    expect(results.filter((r) => !r.ok)).toEqual([]);
  });

  it('the chart\'s argocd-cm patch carries the script byte for byte and merges into an existing argocd-cm', async () => {
    const helm = await helmBinary();
    const argocd = await newNamespace('argocd');
    const r = helmTemplate(helm, { namespace: 'svc', values: { argocd: { healthCheck: { enabled: true, namespace: argocd } } }, showOnly: ['templates/argocd-health-check.yaml'] });
    expect(r.stderr).toBe('');
    const [patch] = ofKind(r.manifests, 'ConfigMap', 'argocd-cm');
    expect(patch!.metadata).toMatchObject({ namespace: argocd, labels: { 'app.kubernetes.io/part-of': 'argocd' } });
    expect(patch!.data).toEqual({ 'resource.customizations.health.auth.svc.io_ProtectedScope': readFileSync(LUA, 'utf8') });
    // Argo CD's own argocd-cm, as its install manifests leave it; the patch adds one key and takes none.
    await kube.core.createNamespacedConfigMap({ namespace: argocd, body: { metadata: { name: 'argocd-cm', labels: { 'app.kubernetes.io/name': 'argocd-cm', 'app.kubernetes.io/part-of': 'argocd' } }, data: { 'timeout.reconciliation': '180s' } } });
    const applied = applyManifests(kubeconfigPath(), [patch!], { fieldManager: 'svc-health-check' });
    expect(applied.stderr).toBe('');
    const cm = await kube.core.readNamespacedConfigMap({ name: 'argocd-cm', namespace: argocd });
    expect(Object.keys(cm.data ?? {}).sort()).toEqual(['resource.customizations.health.auth.svc.io_ProtectedScope', 'timeout.reconciliation']);
    expect(cm.data!['resource.customizations.health.auth.svc.io_ProtectedScope']).toBe(readFileSync(LUA, 'utf8'));
  });

  /** `kubectl wait --for=condition=<condition> protectedscope/<name>`, as docs/gitops.md writes it. */
  function kubectlWait(condition: string, name: string) {
    return runCommand(kubectlBinary(), ['wait', `--for=condition=${condition}`, `protectedscope/${name}`, '-n', ns, '--timeout=60s'], { env: { ...process.env, KUBECONFIG: kubeconfigPath() } });
  }

  /** Whether the API server lets a snapshot ConfigMap be written in the namespace now (a dry run). */
  async function snapshotWriteAllowed(): Promise<boolean> {
    try {
      await kube.core.createNamespacedConfigMap({ namespace: ns, dryRun: 'All', body: { metadata: { name: 'canary', labels: { [SNAPSHOT_LABEL]: 'canary' } } } });
      return true;
    } catch (e) {
      if (/snapshot writes refused by the test/.test(String((e as { body?: unknown }).body ?? e))) return false;
      throw e;
    }
  }

  /** The namespace's ProtectedScopes as `kubectl get` asks for them: the API server's Table, with the printer columns. */
  async function table(): Promise<{ columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[]; object: { metadata: { name: string } } }[] }> {
    const kc = kubeConfig();
    const url = new URL(`${kc.getCurrentCluster()!.server}/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}?includeObject=Metadata`);
    const opts: import('node:https').RequestOptions = { method: 'GET', hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } };
    await kc.applyToHTTPSOptions(opts);
    return new Promise((ok, fail) => {
      const req = request(opts, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? ok(JSON.parse(body) as never) : fail(new Error(`${res.statusCode}: ${body}`))));
      });
      req.on('error', fail);
      req.end();
    });
  }
});

/** spec.healthCheckExprs of the Kustomization docs/gitops.md shows (the yaml block that has them). */
function documentedHealthCheckExprs(): unknown[] {
  const blocks = [...readFileSync(DOCS, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  for (const block of blocks) {
    if (!block.includes('healthCheckExprs:')) continue;
    const kustomization = (loadAll(block) as { kind?: string; spec?: { healthCheckExprs?: unknown[] } }[]).find((d) => d?.kind === 'Kustomization' && d.spec?.healthCheckExprs);
    if (kustomization) return kustomization.spec!.healthCheckExprs!;
  }
  throw new Error(`${DOCS} shows no Kustomization with healthCheckExprs`);
}

