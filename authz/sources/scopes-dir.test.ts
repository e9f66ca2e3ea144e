import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, readManifestFile, tokenIdOf, type AccessIndex, type Scope, type TokenRecord } from '../../core/index.js';
import { allowed, indexOf, mutations, probes, saysSo } from '../../test/mutations/manifest-mutations.js';
import { ScopesDirSource } from './scopes-dir.js';
import type { SourceFailure } from './source.js';

// The real --scopes-dir source on real files: every generated broken edit of a closed scope's manifest is
// either refused (the server then keeps its last good snapshot: reload.test.ts) or loads an index that is no
// more open than before, unless the edited file is a valid manifest that says so. Tokens come from seeds and
// are never printed.

const NOW = Date.parse('2026-11-24T12:00:00Z');
const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`scopes-dir-test-${seed}`).digest());
const record = (token: string, extra: Partial<TokenRecord> = {}): TokenRecord => {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...extra };
};

const dir = mkdtempSync(join(tmpdir(), 'svc-scopes-dir-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One load of the directory by a fresh source: the index it built, or its failure. */
async function loadOnce(): Promise<{ index?: AccessIndex; failure?: SourceFailure }> {
  const out: { index?: AccessIndex; failure?: SourceFailure } = {};
  const source = new ScopesDirSource(dir, { debounceMs: 10_000, rescanMs: 600_000 });
  await source.start({ loaded: (s) => (out.index = s.index), failed: (f) => (out.failure = f) });
  await source.stop();
  return out;
}

describe('--scopes-dir under generated broken edits', () => {
  it.each<[string, Scope]>([
    ['a topic with an expiring and a described token', { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }],
    ['the stations collection', { kind: 'path', value: 'collections/stations' }],
  ])('%s: refused, or no more open unless the file says so', async (_what, scope) => {
    const tokens = [tok('a'), tok('b')];
    const original = newProtectedScope(scope, 'scope-object', undefined, [
      record(tokens[0]!, { description: 'partner NMHS' }),
      record(tokens[1]!, { expiresAt: '2026-11-01T00:00:00Z' }),
    ]);
    const text = dumpManifests([original]);
    const ps = probes(scope, tokens, tok('unknown'));
    const before = indexOf([original]);
    const was = ps.map((p) => allowed(before, p, NOW));
    let refused = 0;
    let loaded = 0;
    for (const mutation of mutations(text)) {
      writeFileSync(join(dir, 'scope.yaml'), mutation.text);
      const r = await loadOnce();
      // The source and the CLI read a file with the same function: their verdicts agree.
      expect([mutation.what, r.failure === undefined]).toEqual([mutation.what, readManifestFile(mutation.text).ok]);
      if (r.failure) {
        refused++;
        expect(r.failure.problems.every((p) => p.file === 'scope.yaml')).toBe(true);
        continue;
      }
      loaded++;
      const read = readManifestFile(mutation.text);
      const objects = read.ok ? read.value.flatMap((d) => (d.object ? [d.object] : [])) : [];
      ps.forEach((p, i) => {
        if (allowed(r.index!, p, NOW) && !was[i]) expect([mutation.what, i, saysSo(original, objects, p)]).toEqual([mutation.what, i, true]);
      });
    }
    expect(refused).toBeGreaterThan(10 * loaded);
  }, 120_000);
});

describe('--scopes-dir reads path scopes against svc-auth\'s prefixes', () => {
  it('a public path spelt below the API prefix\'s processes/ is compiled as not public (it never opens the execution)', async () => {
    const scope: Scope = { kind: 'path', value: 'api/v1/processes/x' };
    const object = newProtectedScope(scope, 'refused-form', undefined, []);
    writeFileSync(join(dir, 'scope.yaml'), dumpManifests([{ ...object, spec: { ...object.spec, public: true } }]));
    const load = async (prefixes?: { wafPrefix: string[]; apiPrefix: string[] }) => {
      const out: { index?: AccessIndex } = {};
      const source = new ScopesDirSource(dir, { debounceMs: 10_000, rescanMs: 600_000, ...(prefixes ? { prefixes } : {}) });
      await source.start({ loaded: (s) => (out.index = s.index), failed: () => undefined });
      await source.stop();
      return out.index!;
    };
    expect((await load({ wafPrefix: ['files'], apiPrefix: ['api', 'v1'] })).paths.size).toBe(0);
    // Under the default prefixes the same path is an ordinary prefix path, and may be public.
    expect((await load()).paths.get('api/v1/processes/x')?.public).toBe(true);
  });
});
