// The Argo CD health check exists once: charts/svc/files/argocd/health.lua, with a byte-equal copy in Argo CD's own
// layout under contrib/argocd/ (health_test.yaml and testdata/ beside it, as Argo CD's resource_customizations hold
// them). These checks need no Go: the script names the operator's permanent reasons and its conditions, uses no library
// Argo CD does not open for an argocd-cm script, and the chart and docs/gitops.md name the argocd-cm key Argo CD reads.
// test/integration/gitops.test.ts runs the script itself, in Argo CD's sandbox, on the real operator's objects.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { API_GROUP, KIND } from '../../core/index.js';
import { PERMANENT_REASONS, READY, RECONCILING, STALLED } from '../../operator/conditions.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHART_COPY = join(root, 'charts', 'svc', 'files', 'argocd', 'health.lua');
const ARGO_LAYOUT = join(root, 'contrib', 'argocd', 'resource_customizations', API_GROUP, KIND);
const KEY = `resource.customizations.health.${API_GROUP}_${KIND}`;

const script = readFileSync(CHART_COPY, 'utf8');
/** The script without its comments (`--` to the end of the line; it has no long comments or strings holding `--`). */
const code = script.split('\n').map((l) => l.replace(/--.*$/, '')).join('\n');

describe('the Argo CD health check of ProtectedScopes', () => {
  it('is one file: the copy in Argo CD\'s layout is byte-equal to the chart\'s', () => {
    expect(readFileSync(join(ARGO_LAYOUT, 'health.lua'))).toEqual(readFileSync(CHART_COPY));
  });

  it('has a health_test.yaml whose every test names a testdata file, and every testdata file is tested', () => {
    const tests = (load(readFileSync(join(ARGO_LAYOUT, 'health_test.yaml'), 'utf8')) as { tests: { inputPath: string; healthStatus: { status: string; message: string } }[] }).tests;
    const inputs = tests.map((t) => t.inputPath);
    expect(inputs.every((p) => existsSync(join(ARGO_LAYOUT, p)))).toBe(true);
    expect(readdirSync(join(ARGO_LAYOUT, 'testdata')).map((f) => `testdata/${f}`).sort()).toEqual([...inputs].sort());
    expect(new Set(tests.map((t) => t.healthStatus.status))).toEqual(new Set(['Healthy', 'Progressing', 'Degraded']));
  });

  it('treats as permanent exactly the reasons svc-operator writes for a spec that cannot compile', () => {
    const table = /local permanent = \{([^}]*)\}/.exec(code)?.[1] ?? '';
    const reasons = [...table.matchAll(/(\w+) = true/g)].map((m) => m[1]);
    expect(reasons.sort()).toEqual([...PERMANENT_REASONS].sort());
    for (const type of [READY, RECONCILING, STALLED]) expect(code).toContain(`"${type}"`);
  });

  it('uses only what Argo CD opens for an argocd-cm script (base, table, package): no string, os, io, math, debug library, no string methods', () => {
    const libraries = [...code.matchAll(/\b(string|os|io|math|debug|coroutine|utf8)\s*\./g)].map((m) => m[1]);
    expect(libraries).toEqual([]);
    // `s:upper()` and the like need the string library's metatable.
    expect(code).not.toMatch(/[\w)\]"]:\w+\s*\(/);
  });

  it('is rendered by the chart under the argocd-cm key Argo CD reads, which docs/gitops.md names', () => {
    const template = readFileSync(join(root, 'charts', 'svc', 'templates', 'argocd-health-check.yaml'), 'utf8');
    expect(template).toContain(`${KEY}: |`);
    expect(template).toContain('.Files.Get "files/argocd/health.lua"');
    expect(readFileSync(join(root, 'docs', 'gitops.md'), 'utf8')).toContain(`${KEY}: |`);
  });
});
