import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { manifestTextsInSnapshot, scopeShapes, scopesOfText, snapshotEntries, startExampleScopes, workingTree } from './scope-shapes.js';
import { repoRoot } from './release-of.js';

describe('scope shapes: the ProtectedScopes a tree holds', () => {
  it('reads a Jest snapshot\'s strings: a whole value, and a printed object\'s multi-line stdout', () => {
    const snap = [
      '// Jest Snapshot v1',
      '',
      'exports[`a \\`quoted\\` name 1`] = `',
      '"# a comment',
      'apiVersion: auth.svc.io/v1alpha1',
      'kind: ProtectedScope',
      'metadata: {name: a}',
      'spec: {topicHierarchy: a.b, tokens: []}',
      '"',
      '`;',
      '',
      'exports[`printed 1`] = `',
      '{',
      '  "code": 0,',
      '  "stderr": "",',
      '  "stdout": "apiVersion: auth.svc.io/v1alpha1',
      'kind: ProtectedScope',
      'metadata:',
      '  name: b',
      'spec:',
      '  path: processes/svc',
      '  tokens: []',
      '",',
      '}',
      '`;',
      '',
    ].join('\n');
    const entries = snapshotEntries(snap);
    expect(entries.map((e) => e.name)).toEqual(['a `quoted` name 1', 'printed 1']);
    expect(entries.flatMap((e) => manifestTextsInSnapshot(e.value)).flatMap(scopesOfText)).toEqual([
      { spec: { topicHierarchy: 'a.b', tokens: [] } },
      { spec: { path: 'processes/svc', tokens: [] } },
    ]);
  });

  it('keeps ProtectedScopes only (a List\'s items too), with their status; a text that does not parse gives none', () => {
    const text = 'apiVersion: v1\nkind: List\nitems:\n- {apiVersion: auth.svc.io/v1alpha1, kind: ProtectedScope, spec: {path: x, tokens: []}, status: {state: Open}}\n'
      + '- {apiVersion: v1, kind: ConfigMap, data: {}}\n---\n{apiVersion: auth.svc.io/v1beta9, kind: ProtectedScope, spec: {path: y, tokens: []}}\n';
    expect(scopesOfText(text)).toEqual([{ spec: { path: 'x', tokens: [] }, status: { state: 'Open' } }]);
    expect(scopesOfText('spec: {{ .Values.x }}\n')).toEqual([]);
  });

  it('builds npm start\'s example scopes as scripts/start.mjs lists them', () => {
    const start = "  const examples = [\n    [{ kind: 'path', value: 'processes/svc' }, record(token, 'example token')],\n  ];\n";
    const [scope] = startExampleScopes(start);
    expect(scope?.spec).toMatchObject({ path: 'processes/svc', tokens: [{ description: 'example token', createdAt: '2026-11-21T10:00:00Z' }] });
  });

  it('finds this tree\'s: the wis2box scopes, the fixtures, the CLI\'s snapshots, npm start\'s example; each shape once', () => {
    const shapes = scopeShapes(workingTree(repoRoot));
    const sources = shapes.flatMap((s) => s.sources);
    for (const where of ['deploy/wis2box/scopes/', 'test/integration/fixtures/protectedscopes.yaml', 'cli/commands/__snapshots__/commands-directory.test.ts.snap', 'scripts/start.mjs (npm start\'s example)']) {
      expect(sources.filter((s) => s.includes(where)).length).toBeGreaterThan(0);
    }
    const fixtures = execFileSync('git', ['grep', '-c', '--untracked', '^kind: ProtectedScope', '--', 'test/integration/fixtures/protectedscopes.yaml'], { cwd: repoRoot, encoding: 'utf8' });
    expect(sources.filter((s) => s.endsWith('test/integration/fixtures/protectedscopes.yaml'))).toHaveLength(Number(fixtures.trim().split(':').at(-1)));
    expect(new Set(shapes.map((s) => JSON.stringify([s.spec, s.status]))).size).toBe(shapes.length);
  });
});
