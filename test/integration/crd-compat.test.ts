// The CRD's compatibility rule (docs/architecture.md, "Compatibility of the ProtectedScope CRD"), on the real
// kube-apiserver: within v1alpha1 a new release accepts every object an older one accepted.
//
// The older one is the previous release (test/support/release-of.ts: its tag, else CHANGELOG.md's record of its
// commit). Its CRD is installed beside the working tree's under a group of its own, and every ProtectedScope shape
// found in its tree and in this one (test/support/scope-shapes.ts) is created against it with kubectl's strict field
// validation, status included; each one it accepts, the working tree's CRD (the harness's auth.svc.io) must accept.
// Two narrowed copies of the working tree's CRD must each refuse at least one of those shapes, or this test could not
// fail.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { dump, loadAll } from 'js-yaml';
import { installCrds } from '../controlplane/controlplane.js';
import { describeCluster, kubeConfig, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { previousRelease, repoRoot } from '../support/release-of.js';
import { canonicalJson, commitTree, scopeShapes, workingTree, type ScopeShape } from '../support/scope-shapes.js';

/**
 * The last commit before releases existed (the product as issue 40 found it), compared against only while this clone
 * can name no release at all: no tag vX.Y.Z and no commit CHANGELOG.md records that the clone holds.
 */
const BEFORE_RELEASES = '2dab875e92c40f9f0336ea7a338fd03f3f290cb0';
const VERSION = 'v1alpha1';
const PLURAL = 'protectedscopes';
const CURRENT = 'auth.svc.io';
const PREVIOUS = 'previous.crd-compat.svc.io';

interface SchemaNode {
  required?: string[];
  properties: Record<string, Record<string, unknown>>;
}

interface CrdDoc {
  kind: string;
  metadata: { name: string };
  spec: { group: string; names: Record<string, unknown>; versions: { name: string; schema: { openAPIV3Schema: { properties: { spec: SchemaNode } } } }[] };
}

/** A copy of a CRD under another group (no short names or categories: `kubectl get ps` stays the harness's), edited. */
function copyOfCrd(text: string, group: string, narrow: (spec: SchemaNode) => void = () => undefined): string {
  const crd = (loadAll(text) as CrdDoc[]).find((d) => d?.kind === 'CustomResourceDefinition');
  if (!crd) throw new Error('no CustomResourceDefinition in the CRD file');
  crd.metadata.name = `${PLURAL}.${group}`;
  crd.spec.group = group;
  delete crd.spec.names.shortNames;
  delete crd.spec.names.categories;
  const version = crd.spec.versions.find((v) => v.name === VERSION);
  if (!version) throw new Error(`the CRD serves no ${VERSION}`);
  narrow(version.schema.openAPIV3Schema.properties.spec);
  return dump(crd, { lineWidth: -1, noRefs: true });
}

/** Deliberately narrowed copies of the working tree's CRD: each must refuse at least one shape. */
const NARROWED: { group: string; what: string; narrow: (spec: SchemaNode) => void }[] = [
  {
    group: 'required.crd-compat.svc.io',
    what: 'a new required field, spec.owner',
    narrow: (spec) => {
      spec.required = [...(spec.required ?? []), 'owner'];
      spec.properties.owner = { type: 'string' };
    },
  },
  {
    group: 'shorter.crd-compat.svc.io',
    what: 'topicHierarchy, metadataId and path at most 8 characters',
    narrow: (spec) => ['topicHierarchy', 'metadataId', 'path'].forEach((f) => (spec.properties[f]!.maxLength = 8)),
  },
];

/** The commit to compare with, and how it was chosen. */
function baseline(): { commit: string; what: string } {
  const found = previousRelease(repoRoot);
  const chosen = found
    ? { commit: found.release.commit, what: `v${found.release.version} (${found.headOnly ? 'HEAD is the only release' : 'the previous release'}, by its ${found.release.via === 'tag' ? 'tag' : 'CHANGELOG.md record'})` }
    : { commit: BEFORE_RELEASES, what: `${BEFORE_RELEASES.slice(0, 12)} (this clone names no release)` };
  try {
    execFileSync('git', ['cat-file', '-e', `${chosen.commit}^{commit}`], { cwd: repoRoot, stdio: 'ignore' });
  } catch {
    throw new Error(`the clone lacks ${chosen.what}'s commit ${chosen.commit}: fetch the history (git fetch --unshallow --tags)`);
  }
  return chosen;
}

/** What the API server said when it refused (a 4xx), or undefined when it accepted. Anything else is thrown. */
async function refusal(call: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await call();
    return undefined;
  } catch (e) {
    const err = e as { code?: number; body?: unknown };
    if (typeof err.code !== 'number' || err.code < 400 || err.code >= 500) throw e;
    try {
      return (JSON.parse(String(err.body)) as { message?: string }).message ?? String(err.body);
    } catch {
      return String(err.body);
    }
  }
}

/** A CRD's verdict on one shape: why it refused the spec, or the status (undefined: accepted). */
interface Verdict {
  readonly spec: string | undefined;
  readonly status: string | undefined;
}

describeCluster('ProtectedScope CRD: within v1alpha1 a new release accepts every object an older one accepted', () => {
  let objects: k8s.CustomObjectsApi;
  let namespace: string;
  let base: { commit: string; what: string };
  let shapes: ScopeShape[];
  let previous: Verdict[];
  const crdDir = mkdtempSync(join(tmpdir(), 'svc-crd-compat-'));

  /** Creates each shape as an object of `group` (strict field validation, as kubectl), then sets its status if it has one. */
  async function verdicts(group: string): Promise<Verdict[]> {
    const out: Verdict[] = [];
    for (const [i, shape] of shapes.entries()) {
      const where = { group, version: VERSION, namespace, plural: PLURAL };
      let created: Record<string, unknown> = {};
      const body = { apiVersion: `${group}/${VERSION}`, kind: 'ProtectedScope', metadata: { name: `shape-${i}` }, spec: shape.spec };
      const spec = await refusal(async () => (created = await objects.createNamespacedCustomObject({ ...where, body, fieldValidation: 'Strict' }) as Record<string, unknown>));
      const status = spec !== undefined || shape.status === undefined ? undefined : await refusal(() => objects.replaceNamespacedCustomObjectStatus({
        ...where, name: `shape-${i}`, body: { ...created, status: shape.status }, fieldValidation: 'Strict',
      }));
      out.push({ spec, status });
    }
    return out;
  }

  beforeAll(async () => {
    base = baseline();
    const older = commitTree(base.commit, repoRoot);
    const byShape = new Map<string, ScopeShape>();
    for (const s of [...scopeShapes(older), ...scopeShapes(workingTree(repoRoot))]) {
      const key = canonicalJson([s.spec, s.status]);
      const seen = byShape.get(key);
      if (seen) seen.sources.push(...s.sources);
      else byShape.set(key, { ...s, sources: [...s.sources] });
    }
    shapes = [...byShape.values()];
    const current = readFileSync(join(repoRoot, 'crds', 'protectedscope.yaml'), 'utf8');
    writeFileSync(join(crdDir, 'previous.yaml'), copyOfCrd(older.read('crds/protectedscope.yaml'), PREVIOUS));
    for (const n of NARROWED) writeFileSync(join(crdDir, `${n.group}.yaml`), copyOfCrd(current, n.group, n.narrow));
    await installCrds(kubeconfigPath(), crdDir, () => undefined);
    objects = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    namespace = await newNamespace('crd-compat');
    previous = await verdicts(PREVIOUS);
  }, 180_000);

  afterAll(async () => {
    rmSync(crdDir, { recursive: true, force: true });
    const ext = kubeConfig().makeApiClient(k8s.ApiextensionsV1Api);
    for (const group of [PREVIOUS, ...NARROWED.map((n) => n.group)]) {
      await ext.deleteCustomResourceDefinition({ name: `${PLURAL}.${group}` }).catch(() => undefined);
    }
  });

  const accepted = () => shapes.filter((_, i) => previous[i]!.spec === undefined);

  it('the previous release\'s CRD accepts its own manifests, CLI outputs and npm start\'s example (so the rule is not vacuous)', () => {
    const own = new RegExp(`^${base.commit.slice(0, 12)}:(deploy/|.*\\.snap |scripts/start\\.mjs)`);
    const refused = shapes.flatMap((s, i) => (s.sources.some((w) => own.test(w)) && previous[i]!.spec !== undefined ? [`${s.sources[0]}: ${previous[i]!.spec}`] : []));
    expect({ base: base.what, refused }).toEqual({ base: base.what, refused: [] });
    expect(shapes.filter((s) => s.sources.some((w) => own.test(w))).length).toBeGreaterThanOrEqual(10);
  });

  it('the working tree\'s CRD accepts every shape the previous release\'s accepted, and every status it accepted', async () => {
    const now = await verdicts(CURRENT);
    const broken = shapes.flatMap((s, i) => {
      const [was, is] = [previous[i]!, now[i]!];
      if (was.spec !== undefined) return [];
      if (is.spec !== undefined) return [`${s.sources.join(', ')}: ${is.spec}`];
      return was.status === undefined && is.status !== undefined ? [`${s.sources.join(', ')} (status): ${is.status}`] : [];
    });
    expect({ base: base.what, compared: accepted().length, broken }).toEqual({ base: base.what, compared: accepted().length, broken: [] });
    expect(accepted().length).toBeGreaterThanOrEqual(10);
  });

  it.each(NARROWED)('a CRD narrowed by $what refuses at least one of them: the test can fail', async ({ group }) => {
    const narrowed = await verdicts(group);
    const refused = shapes.filter((_, i) => previous[i]!.spec === undefined && narrowed[i]!.spec !== undefined);
    expect(refused.length).toBeGreaterThan(0);
  });
});
