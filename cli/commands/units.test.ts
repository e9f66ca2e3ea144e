import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG, hashToken, MAX_TOKENS_PER_OBJECT, newProtectedScope, scopeObjectName, tokenIdOf, type ProtectedScope, type Scope } from '../../core/index.js';
import { FIXED_NOW, removeDir, svc, tempDir } from '../../test/cli/harness.js';
import { canonicalSpec, isoSeconds, table } from '../output.js';
import { addTokenMutation, expiryFrom } from './add-token.js';
import { explain } from './has-access.js';
import { removeAllMutation, removeOneMutation } from './remove.js';
import { summarize } from './show.js';

const topic: Scope = { kind: 'topic', value: 'a.b' };
const rec = (token: string, extra: { description?: string; createdAt?: string; expiresAt?: string } = {}) => {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z', ...extra };
};
const obj = (name: string, tokens: ReturnType<typeof rec>[], scope: Scope = topic): ProtectedScope => newProtectedScope(scope, name, undefined, tokens);

describe('durations and expiry', () => {
  it.each([
    ['30m', 30 * 60_000],
    ['12h', 12 * 3_600_000],
    ['90d', 90 * 86_400_000],
    ['2w', 14 * 86_400_000],
    [' 1d ', 86_400_000],
    // lib/duration.ts's grammar, which every program shares, also has fractions, seconds and milliseconds.
    ['1.5d', 36 * 3_600_000],
    ['90s', 90_000],
  ])('%s', (text, ms) => expect(Date.parse(expiryFrom({ expiresIn: text }, FIXED_NOW, 'x')!)).toBe(Math.floor((FIXED_NOW + ms) / 1000) * 1000));

  it.each([
    ['0d', /"0d" is not a positive duration/],
    ['90', /"90" is not a duration such as .*: the unit is required/],
    ['d', /"d" is not a duration such as 250ms, 30s, 5m, 1h or 90d/],
    ['1y', /not a duration/],
    ['-1d', /not a duration/],
    ['1D', /not a duration/],
    ['99999999999d', /is longer than 36500d/],
    ['36501d', /is longer than 36500d/],
  ])('%s is refused', (text, message) => {
    expect(() => expiryFrom({ expiresIn: text }, FIXED_NOW, 'x')).toThrow(message);
    expect(() => expiryFrom({ expiresIn: text }, FIXED_NOW, 'x')).toThrow(/^--expires-in: /);
  });

  it('expiryFrom: from now, or an RFC 3339 time in the future normalized to UTC', () => {
    expect(expiryFrom({ expiresIn: '90d' }, FIXED_NOW, 'svc auth add-token')).toBe('2027-02-19T10:00:00Z');
    expect(expiryFrom({ expiresAt: '2027-01-01T01:00:00+01:00' }, FIXED_NOW, 'x')).toBe('2027-01-01T00:00:00Z');
    expect(expiryFrom({ expiresAt: '2027-01-01T00:00:00.250Z' }, FIXED_NOW, 'x')).toBe('2027-01-01T00:00:00.250Z');
    expect(expiryFrom({}, FIXED_NOW, 'x')).toBeUndefined();
    expect(() => expiryFrom({ expiresAt: '2026-11-21T10:00:00Z' }, FIXED_NOW, 'x')).toThrow(/not in the future/);
    expect(() => expiryFrom({ expiresAt: '2027-02-30T00:00:00Z' }, FIXED_NOW, 'x')).toThrow(/not an RFC 3339 time/);
  });

  it('isoSeconds drops milliseconds', () => expect(isoSeconds(FIXED_NOW + 999)).toBe('2026-11-21T10:00:00Z'));
});

describe('edits', () => {
  it('add-token appends to the deterministic object, creating it; other objects are left alone', () => {
    const name = scopeObjectName(topic);
    const [created] = addTokenMutation(topic, rec('first-token-0000001'), 'svc')([obj('by-hand', [rec('hand-token-00000001')])], 0);
    expect(created!.metadata).toEqual({ name, namespace: 'svc' });
    expect(created!.spec.tokens).toEqual([rec('first-token-0000001')]);
    const [again] = addTokenMutation(topic, rec('second-token-000002'), undefined)([created!], 0);
    expect(again!.spec.tokens).toEqual([rec('first-token-0000001'), rec('second-token-000002')]);
    expect(again!.metadata).toEqual(created!.metadata);
  });

  it('add-token refuses a full object', () => {
    const full = obj(scopeObjectName(topic), Array.from({ length: MAX_TOKENS_PER_OBJECT }, (_, i) => rec(`bulk-token-${String(i).padStart(8, '0')}`)));
    expect(() => addTokenMutation(topic, rec('one-too-many-000001'), undefined)([full], 0)).toThrow(/already holds the maximum of 1000 tokens/);
  });

  it('remove-token: refuses an unknown id on the first look, accepts that a concurrent removal got there first', () => {
    const mutate = removeOneMutation(topic, { id: '0123456789ab' }, 'svc auth show --topic-hierarchy a.b');
    expect(() => mutate([obj('x', [rec('some-token-00000001')])], 0)).toThrow(/no token with id 0123456789ab in topic:a\.b: list the ids with svc auth show --topic-hierarchy a\.b/);
    expect(mutate([obj('x', [rec('some-token-00000001')])], 1)).toEqual([]);
  });

  it('remove-tokens touches only objects that have tokens', () => {
    const out = removeAllMutation()([obj('empty', []), obj('full', [rec('some-token-00000001')])], 0);
    expect(out.map((o) => [o.metadata.name, o.spec.tokens])).toEqual([['full', []]]);
  });
});

describe('show: merging objects of one scope', () => {
  it('one entry per token; latest expiry (none beats any); first description; earliest creation; every object named', () => {
    const stored = [
      { object: obj('b', [rec('shared-token-000001', { expiresAt: '2027-01-01T00:00:00Z', createdAt: '2026-03-01T00:00:00Z' }), rec('never-expires-00001', { expiresAt: '2026-06-01T00:00:00Z' })]), location: 'b' },
      { object: obj('a', [rec('shared-token-000001', { expiresAt: '2028-01-01T00:00:00Z', description: 'partner' }), rec('never-expires-00001')]), location: 'a' },
      { object: obj('c', [rec('expired-token-00001', { expiresAt: '2026-01-02T00:00:00Z' })], { kind: 'dataset', value: 'urn:x' }), location: 'c' },
    ];
    // (--open-paths-by-default: no default row for the stations collection in this listing)
    const [dataset, topicSummary] = summarize(stored, FIXED_NOW, undefined, { ...DEFAULT_CONFIG, openPathsByDefault: true });
    expect(dataset).toMatchObject({ kind: 'dataset', state: 'Closed', tokenCount: 1, activeTokenCount: 0 });
    expect(topicSummary).toEqual({
      kind: 'topic',
      value: 'a.b',
      state: 'Closed',
      closedBy: 'tokens',
      closedFlag: false,
      tokenCount: 2,
      activeTokenCount: 2,
      objects: ['a', 'b'],
      tokens: [
        { id: rec('never-expires-00001').id, createdAt: '2026-01-01T00:00:00Z', expired: false, objects: ['a', 'b'] },
        { id: rec('shared-token-000001').id, description: 'partner', createdAt: '2026-01-01T00:00:00Z', expiresAt: '2028-01-01T00:00:00Z', expired: false, objects: ['a', 'b'] },
      ],
      subjects: [],
      networks: [],
    });
  });

  it('networks: one entry per network, sorted, the first description given, every object named; they close the scope', () => {
    const withNetworks = (name: string, networks: { cidr: string; description?: string }[]) => ({ object: { ...obj(name, []), spec: { ...obj(name, []).spec, networks } }, location: name });
    const stored = [
      withNetworks('b', [{ cidr: '203.0.113.7/32' }, { cidr: '2001:db8::/32', description: 'gateway' }]),
      withNetworks('a', [{ cidr: '203.0.113.7/32', description: 'Global Cache' }]),
    ];
    const [summary] = summarize(stored, FIXED_NOW, undefined, { ...DEFAULT_CONFIG, openPathsByDefault: true });
    expect(summary).toMatchObject({
      state: 'Closed', closedBy: 'networks', tokenCount: 0,
      networks: [{ cidr: '2001:db8::/32', description: 'gateway', objects: ['b'] }, { cidr: '203.0.113.7/32', description: 'Global Cache', objects: ['a', 'b'] }],
    });
  });
});

describe('has-access-topic wording', () => {
  it('no token at all (has-access-topic with only --from) still reads well', () => {
    expect(explain(topic, { outcome: 'no-token', area: 'other', path: '', closedByDefault: false, governing: [{ kind: 'topic', value: 'a' }] }).reason).toBe('topic:a.b is closed (governed by topic:a) and no token was given');
  });
  it('two kinds governing at once are named together', () => {
    const answer = explain(topic, { outcome: 'insufficient-scope', area: 'other', path: '', closedByDefault: false, governing: [topic, { kind: 'dataset', value: 'urn:x' }], tokenId: '0123456789ab' });
    expect(answer.reason).toBe('token 0123456789ab belongs to another scope; topic:a.b is closed (governed by topic:a.b and dataset:urn:x) and only their tokens grant access');
  });
});

describe('output helpers', () => {
  it('table pads columns and trims trailing space', () => {
    expect(table(['A', 'LONGER'], [['xxxx', 'y'], ['', 'z']])).toBe('A     LONGER\nxxxx  y\n      z\n');
  });
  it('canonicalSpec orders keys the same whatever order the server used', () => {
    const sorted = { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'x' }, spec: { tokens: [{ createdAt: '2026-01-01T00:00:00Z', hash: rec('t-000000000000001').hash, id: rec('t-000000000000001').id }], topicHierarchy: 'a.b' } } as unknown as ProtectedScope;
    expect(JSON.stringify(canonicalSpec(sorted))).toBe(JSON.stringify({ topicHierarchy: 'a.b', tokens: [{ id: rec('t-000000000000001').id, hash: rec('t-000000000000001').hash, createdAt: '2026-01-01T00:00:00Z' }] }));
  });
});

describe('directory with -n', () => {
  it('new objects carry the namespace; without -n they carry none', async () => {
    const dir = tempDir();
    try {
      expect((await svc(['--dir', dir, '-n', 'svc', 'auth', 'add-token', '--path', 'processes/svc', 'namespaced-token-0001'])).code).toBe(0);
      expect((await svc(['--dir', dir, 'auth', 'add-token', '--path', 'collections/stations', 'plain-token-00000001'])).code).toBe(0);
      const files = Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
      expect(files[`${scopeObjectName({ kind: 'path', value: 'processes/svc' })}.yaml`]).toContain('  namespace: svc\n');
      expect(files[`${scopeObjectName({ kind: 'path', value: 'collections/stations' })}.yaml`]).not.toContain('namespace');
    } finally {
      removeDir(dir);
    }
  });
});
