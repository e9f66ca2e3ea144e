// The GitOps recipe redirects `add-token --dry-run -o yaml` into the scope's file: whatever a valid
// ProtectedScope holds (subjects, networks, `closed`, labels, annotations, descriptions, expiries), the printed manifest
// must be that object plus the one new token, or the repository silently loses fields. Written with
// fast-check over generated objects, read back with core's parser.
import { afterAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  API_GROUP_VERSION,
  dumpManifests,
  formatGeneratedToken,
  hashToken,
  KIND,
  parseManifests,
  scopeObjectName,
  SPEC_FIELDS,
  tokenIdOf,
  validateProtectedScope,
  type ProtectedScope,
  type Subject,
  type TokenRecord,
} from '../../core/index.js';
import { removeDir, svc, tempDir } from '../../test/cli/harness.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const token = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes): TokenRecord => {
  const hash = hashToken(formatGeneratedToken(Buffer.from(bytes)));
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-02T03:04:05Z' };
});
const record = fc.record({
  t: token,
  description: fc.option(fc.string({ minLength: 1, maxLength: 40 }).filter((d) => d.trim() === d && !/[\n\r]/.test(d)), { nil: undefined }),
  expiresAt: fc.option(fc.constant('2030-01-01T00:00:00Z'), { nil: undefined }),
}).map(({ t, description, expiresAt }): TokenRecord => ({ ...t, ...(description !== undefined ? { description } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) }));
const subject = fc.record({ kind: fc.constantFrom('User', 'Group'), name: fc.stringMatching(/^[a-z][a-z0-9.@-]{0,20}$/) }) as fc.Arbitrary<Subject>;
const network = fc.record({
  cidr: fc.constantFrom('203.0.113.7/32', '198.51.100.0/24', '2001:db8::/32', '2001:db8:7::/48'),
  description: fc.option(fc.constantFrom('Global Cache', 'partner gateway'), { nil: undefined }),
}).map(({ cidr, description }) => ({ cidr, ...(description !== undefined ? { description } : {}) }));
const scopeValue = fc.constantFrom('origin.a.wis2.mw-met.data.core', 'origin.a.wis2.xx-met.data.core.weather');

const object = fc.record({
  value: scopeValue,
  tokens: fc.uniqueArray(record, { maxLength: 3, selector: (r) => r.hash }),
  closed: fc.option(fc.boolean(), { nil: undefined }),
  subjects: fc.option(fc.uniqueArray(subject, { minLength: 1, maxLength: 3, selector: (s) => `${s.kind}:${s.name}` }), { nil: undefined }),
  networks: fc.option(fc.uniqueArray(network, { minLength: 1, maxLength: 3, selector: (n) => n.cidr }), { nil: undefined }),
  labels: fc.option(fc.constant({ team: 'data' }), { nil: undefined }),
  annotations: fc.option(fc.constant({ 'example.org/owner': 'partner desk' }), { nil: undefined }),
  // `public: true` is only valid on a path scope without tokens; false is a valid field everywhere.
  isPublic: fc.option(fc.constant(false), { nil: undefined }),
}).map(({ value, tokens, closed, subjects, networks, labels, annotations, isPublic }): ProtectedScope => ({
  apiVersion: API_GROUP_VERSION,
  kind: KIND,
  metadata: { name: scopeObjectName({ kind: 'topic', value }), ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
  spec: { topicHierarchy: value, tokens, ...(closed !== undefined ? { closed } : {}), ...(subjects ? { subjects } : {}), ...(networks ? { networks } : {}), ...(isPublic !== undefined ? { public: isPublic } : {}) },
}));

describe('add-token --dry-run -o yaml keeps every field of the scope\'s object', () => {
  it('the generated objects cover every spec field (so the property below can see a dropped one)', () => {
    const seen = new Set<string>();
    fc.sample(object, 200).forEach((o) => Object.keys(o.spec).forEach((k) => seen.add(k)));
    expect([...seen].sort()).toEqual(SPEC_FIELDS.filter((f) => f !== 'metadataId' && f !== 'path').sort());
  });

  it('prints the object as stored plus exactly the new token', async () => {
    await fc.assert(
      fc.asyncProperty(object, async (stored) => {
        expect(validateProtectedScope(stored).ok).toBe(true);
        const dir = tempDir();
        dirs.push(dir);
        writeFileSync(join(dir, `${stored.metadata.name}.yaml`), dumpManifests([stored]));
        const r = await svc(['--dir', dir, 'auth', 'add-token', '--topic-hierarchy', stored.spec.topicHierarchy!, '--description', 'new one', '--dry-run', '-o', 'yaml']);
        expect(r.code).toBe(0);
        const printed = parseManifests(r.stdout);
        if (!printed.ok) throw new Error(printed.error);
        const [out] = printed.value as ProtectedScope[];
        const added = out!.spec.tokens!.filter((t) => !stored.spec.tokens!.some((s) => s.hash === t.hash));
        expect(added.map((t) => t.description)).toEqual(['new one']);
        expect(out).toEqual({ ...stored, spec: { ...stored.spec, tokens: [...stored.spec.tokens!, added[0]] } });
      }),
      { numRuns: 60 },
    );
  });
});
