import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { allowed, indexOf, mutations, probes, saysSo } from '../test/mutations/manifest-mutations.js';
import { dumpManifests } from './manifest.js';
import { isScopeDocument, readManifestFile } from './manifest-file.js';
import { newProtectedScope, type ProtectedScope, type TokenRecord } from './protected-scope.js';
import type { Scope } from './scope.js';
import { formatGeneratedToken, hashToken, tokenIdOf } from './token.js';

// docs/access-rules.md: a manifest that cannot be read exactly is invalid (the reload is refused whole and the
// last good snapshot stays); only deleting a file removes a scope. Tokens are drawn from seeds and never
// printed: failures name the mutation and the probe's index.

const NOW = Date.parse('2026-11-24T12:00:00Z');
const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`manifest-file-test-${seed}`).digest());
const record = (token: string, extra: Partial<TokenRecord> = {}): TokenRecord => {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...extra };
};
const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const GOOD = dumpManifests([newProtectedScope(TOPIC, 'topic-a', undefined, [record(tok('a'))])]);

describe('readManifestFile', () => {
  it('reads a valid ProtectedScope and skips objects of other kinds', () => {
    const r = readManifestFile(`${GOOD}---\napiVersion: v1\nkind: Namespace\nmetadata: {name: svc}\n`);
    expect(r.ok && r.value.map((d) => d.object?.metadata.name ?? 'other')).toEqual(['topic-a', 'other']);
  });
  it.each([
    ['an empty file', ''],
    ['only ---', '---\n'],
    ['only null', 'null\n'],
    ['only comments', '# nothing here\n'],
  ])('%s holds no document: invalid (a scope goes away by deleting its file)', (_what, text) => {
    const r = readManifestFile(text);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error[0]!.message).toMatch(/holds no document/);
  });
  it.each([
    ['tokenz for tokens', GOOD.replace('tokens:', 'tokenz:'), 'spec.tokenz'],
    ['both apiVersion and kind misspelt', GOOD.replace('auth.svc.io/v1alpha1', 'auth.scv.io/v1alpha1').replace('kind: ProtectedScope', 'kind: ProtectedScop'), 'apiVersion'],
    ['a List of ProtectedScopes', `apiVersion: v1\nkind: List\nitems:\n${GOOD.replace(/^/gm, '  ').replace(/^ {2}apiVersion/, '- apiVersion')}`, 'items'],
  ])('%s is invalid, not "another kind" or "no tokens"', (_what, text, field) => {
    const r = readManifestFile(text);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.map((e) => e.field)).toContain(field);
  });
  it('what counts as a ProtectedScope document: ours by kind, group, missing kind or apiVersion, or a spec shaped like ours', () => {
    expect(isScopeDocument({ apiVersion: 'v1', kind: 'ConfigMap', data: {} })).toBe(false);
    expect(isScopeDocument({ apiVersion: 'apps/v1', kind: 'Deployment', spec: { replicas: 1 } })).toBe(false);
    expect(isScopeDocument({ apiVersion: 'x.io/v1', kind: 'Thing', spec: { topicHierarchy: 'a' } })).toBe(true);
    expect(isScopeDocument({ apiVersion: 'x.io/v1', kind: 'Thing', spec: { path: 'processes/svc' } })).toBe(true);
    expect(isScopeDocument({ apiVersion: 'AUTH.SVC.IO/v1', kind: 'Thing' })).toBe(true);
    expect(isScopeDocument({ apiVersion: 'x.io/v1', kind: 'protectedScope' })).toBe(true);
    expect(isScopeDocument({ kind: 'Thing' })).toBe(true);
    expect(isScopeDocument('a string')).toBe(true);
  });
});

// ---- generated broken edits ----

const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  fc.constantFrom('origin.a.wis2.mw-met.data.core', 'a.b', 'x').map((value): Scope => ({ kind: 'topic', value })),
  fc.constantFrom('urn:wmo:md:mw-met:obs', 'urn:x').map((value): Scope => ({ kind: 'dataset', value })),
  fc.constantFrom('processes/svc', 'processes/svc-synop2bufr', 'collections/stations').map((value): Scope => ({ kind: 'path', value })),
);
const recordArb = fc.record({
  seed: fc.nat({ max: 5 }),
  description: fc.option(fc.constantFrom('partner NMHS', 'x'), { nil: undefined }),
  expiresAt: fc.option(fc.constantFrom('2026-11-01T00:00:00Z', '2027-01-01T00:00:00Z'), { nil: undefined }),
});
/** A closed scope's manifest (1–3 tokens, some expired), written as the CLI writes it (YAML) or as JSON. */
const manifestArb = fc.record({
  scope: scopeArb,
  records: fc.uniqueArray(recordArb, { minLength: 1, maxLength: 3, selector: (r) => r.seed }),
  json: fc.boolean(),
});

/** Checks every mutation of one manifest; returns how many were refused and how many loaded. */
function judge(m: { scope: Scope; records: { seed: number; description?: string; expiresAt?: string }[]; json: boolean }): { refused: number; loaded: number } {
  const tokens = m.records.map((r) => tok(`t${r.seed}`));
  const original: ProtectedScope = newProtectedScope(
    m.scope,
    'scope-object',
    undefined,
    m.records.map((r, i) => record(tokens[i]!, { ...(r.description ? { description: r.description } : {}), ...(r.expiresAt ? { expiresAt: r.expiresAt } : {}) })),
  );
  const text = m.json ? `${JSON.stringify(original, null, 2)}\n` : dumpManifests([original]);
  const ps = probes(m.scope, tokens, tok('unknown'));
  const before = indexOf([original]);
  const was = ps.map((p) => allowed(before, p, NOW));
  let refused = 0;
  let loaded = 0;
  for (const mutation of mutations(text)) {
    const r = readManifestFile(mutation.text);
    if (!r.ok) {
      refused++;
      continue;
    }
    loaded++;
    const objects = r.value.flatMap((d) => (d.object ? [d.object] : []));
    const after = indexOf(objects);
    ps.forEach((p, i) => {
      if (allowed(after, p, NOW) && !was[i]) expect([mutation.what, i, saysSo(original, objects, p)]).toEqual([mutation.what, i, true]);
    });
  }
  return { refused, loaded };
}

describe('generated broken edits never open a scope unless the edited file is a valid manifest that says so', () => {
  it('every truncation, every deleted line, every renamed key, of YAML and JSON manifests of closed scopes', () => {
    let refused = 0;
    let loaded = 0;
    fc.assert(
      fc.property(manifestArb, (m) => {
        const r = judge(m);
        refused += r.refused;
        loaded += r.loaded;
      }),
      { numRuns: 40 },
    );
    // Nearly every mutation is refused; the few that load are valid manifests (a shorter token list, a
    // dropped description or expiry) and were judged above.
    expect(refused).toBeGreaterThan(10 * loaded);
  });
});
