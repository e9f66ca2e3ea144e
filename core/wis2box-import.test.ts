import { describe, expect, it } from '@jest/globals';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, newProtectedScope, scopeObjectName, type Decision, type Scope, type TokenRecord } from './index.js';
import { importOfWis2boxTopic, planWis2boxImport, rowList, shown, type Wis2boxRow } from './wis2box-import.js';

const SALT = new Uint8Array(24).fill(1);
const KEY = new Uint8Array(32).fill(2);

function row(n: number, topic: string | null, extra: Partial<Wis2boxRow> = {}): Wis2boxRow {
  return {
    row: n, topicType: topic === null ? 'null' : 'text', topic, topicLength: topic?.length ?? 0,
    saltType: 'blob', salt: SALT, saltLength: 24, keyType: 'blob', key: KEY, keyLength: 32, ...extra,
  };
}

describe('wis2box-auth topics map to scopes', () => {
  it.each<[string, Scope[]]>([
    ['urn:wmo:md:mw-met:surface-weather-observations', [{ kind: 'dataset', value: 'urn:wmo:md:mw-met:surface-weather-observations' }]],
    ['mw-met.data.core.weather', [{ kind: 'topic', value: 'mw-met.data.core.weather' }]],
    ['processes/wis2box', [{ kind: 'path', value: 'processes/wis2box' }]],
    ['processes/wis2box-synop2bufr', [{ kind: 'path', value: 'processes/wis2box-synop2bufr' }]],
    ['collections/stations', [{ kind: 'path', value: 'collections/stations' }]],
    ['wis2downloader', [{ kind: 'path', value: 'wis2downloader' }]],
    ['/wis2downloader/', [{ kind: 'path', value: 'wis2downloader' }]],
    ['wis2downloader/subscriptions', [{ kind: 'path', value: 'wis2downloader/subscriptions' }]],
  ])("%j: its own kind, nothing narrower than wis2box's own paths and kinds", (topic, scopes) => {
    const r = importOfWis2boxTopic(topic);
    expect(r.ok ? r.value : r.error).toEqual({ scopes, narrower: [] });
  });

  it('a one-word topic (not a wis2box path) is also a one-level topic hierarchy, and says what neither closes', () => {
    const r = importOfWis2boxTopic('mw-met');
    expect(r.ok && r.value.scopes).toEqual([{ kind: 'path', value: 'mw-met' }, { kind: 'topic', value: 'mw-met' }]);
    const forms = r.ok ? r.value.narrower.join('\n') : '';
    expect(forms).toContain('as a ":"-part of a metadata id (/oapi/collections/urn:…:mw-met:…');
    expect(forms).toContain('inside a longer segment or level');
    expect(forms).toContain('in the query');
    expect(forms).not.toContain('at the root');
  });

  it('a word that cannot be a path (processes) or a topic level (a~b) lists that form too', () => {
    const processes = importOfWis2boxTopic('processes');
    expect(processes.ok && processes.value.scopes).toEqual([{ kind: 'topic', value: 'processes' }]);
    expect(processes.ok && processes.value.narrower.join('\n')).toContain('at the root (/processes/…)');
    const tilde = importOfWis2boxTopic('a~b');
    expect(tilde.ok && tilde.value.scopes).toEqual([{ kind: 'path', value: 'a~b' }]);
    expect(tilde.ok && tilde.value.narrower.join('\n')).toContain('as a whole segment under /data');
  });

  it('a path of another service keeps its root only, and says so', () => {
    const r = importOfWis2boxTopic('mw-met/data');
    expect(r.ok && r.value.scopes).toEqual([{ kind: 'path', value: 'mw-met/data' }]);
    expect(r.ok && r.value.narrower[0]).toMatch(/^below any other path than the root/);
  });

  it.each<[string, Scope]>([
    ['oapi/processes/wis2box', { kind: 'path', value: 'processes/wis2box' }],
    ['/oapi/collections/stations', { kind: 'path', value: 'collections/stations' }],
    ['OAPI/processes/x-y', { kind: 'path', value: 'processes/x-y' }],
  ])('%j, a path below the API prefix, becomes its special form (never a path scope the CRD refuses)', (topic, scope) => {
    const r = importOfWis2boxTopic(topic);
    expect(r.ok ? r.value : r.error).toEqual({ scopes: [scope], narrower: [] });
  });

  it('the API prefix is the one given: below another prefix, oapi/processes is an ordinary path', () => {
    const moved = { wafPrefix: ['data'], apiPrefix: ['api'] };
    expect(importOfWis2boxTopic('api/processes/x', moved)).toEqual({ ok: true, value: { scopes: [{ kind: 'path', value: 'processes/x' }], narrower: [] } });
    const r = importOfWis2boxTopic('api/collections/other', moved);
    expect(r.ok).toBe(false);
  });

  it.each(['collections/other', 'oapi/collections/other', '/oapi/processes', 'a b', '', '   ', 'a..b', 'mw-met:obs'])('%j fits no scope', (topic) => {
    expect(importOfWis2boxTopic(topic).ok).toBe(false);
  });
});

describe('the import plan', () => {
  it('every row checked: NULL or non-text topics, long topics, bad salts and keys, topics of no kind, each reported by row', () => {
    const plan = planWis2boxImport([
      row(1, 'wis2downloader'),
      row(2, null),
      row(3, null, { topicType: 'integer' }),
      row(4, 'x'.repeat(600), { topic: 'x'.repeat(513), topicLength: 600 }),
      row(5, 'wis2downloader', { saltType: 'text', salt: null }),
      row(6, 'wis2downloader', { salt: null, saltLength: 4096 }),
      row(7, 'wis2downloader', { key: new Uint8Array(20), keyLength: 20 }),
      row(8, 'a b'),
      row(9, 'a b'),
    ], '2026-01-01T00:00:00Z');
    expect(plan.scopes.map((s) => [s.scope.value, s.records.length])).toEqual([['wis2downloader', 1]]);
    expect(plan.unusable.map((u) => [rowList(u.rows), u.topic, u.reason])).toEqual([
      ['row 2', '(null)', 'the topic is NULL'],
      ['row 3', '(integer)', 'the topic is not text but integer'],
      ['row 4', `"${'x'.repeat(60)}…"`, 'a topic of 600 characters (at most 512)'],
      ['row 5', '"wis2downloader"', 'salt and key must be blobs (bytes), not text and blob'],
      ['row 6', '"wis2downloader"', 'a salt of 4096 bytes (8 to 64 expected)'],
      ['row 7', '"wis2downloader"', 'a key of 20 bytes (32 expected)'],
      ['rows 8, 9', '"a b"', expect.stringMatching(/^fits no scope kind \(invalid path "a b"/)],
    ]);
    expect(plan.narrower).toEqual([]);
  });

  it('a one-word topic: the same records in its path and its topic hierarchy, and the rows listed as narrower', () => {
    const plan = planWis2boxImport([row(1, 'mw-met'), row(2, 'mw-met', { salt: new Uint8Array(24).fill(9) })], '2026-01-01T00:00:00Z');
    expect(plan.scopes.map((s) => [s.scope.kind, s.scope.value, s.records.length])).toEqual([['path', 'mw-met', 2], ['topic', 'mw-met', 2]]);
    expect(plan.scopes[0]!.records).toEqual(plan.scopes[1]!.records);
    expect(plan.narrower.map((n) => [n.topic, n.rows])).toEqual([['"mw-met"', [1, 2]]]);
  });

  it('long row lists and values are cut in messages', () => {
    expect(rowList(Array.from({ length: 25 }, (_, i) => i + 1))).toBe('rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 15 more');
    expect(shown('a\u202eb\u0007')).toBe('"a\\u202eb\\u0007"');
  });
});

describe('what a one-word topic closes after the import, and what stays open (the narrower forms)', () => {
  const plan = planWis2boxImport([row(1, 'mw-met')], '2026-01-01T00:00:00Z');
  const objects = plan.scopes.map((p) => newProtectedScope(p.scope, scopeObjectName(p.scope), undefined, p.records as TokenRecord[]));
  const built = buildIndex('g', compileSnapshot(objects).lines);
  if (!built.ok) throw new Error(built.error);
  const outcome = (target: string) => (decide(built.value, DEFAULT_CONFIG, { method: 'GET', target, authorization: undefined }, 0) as Decision).outcome;
  it.each([
    '/mw-met/x', '/data/2026-11-25/wis/mw-met/x.bufr4', '/data/2026-11-25/wis/origin/a/wis2/mw-met/data/core/x.bufr4',
    '/oapi/collections/mw-met/items', '/oapi/collections/mw-met.data.core.weather/items', '/oapi/collections/origin.a.wis2.mw-met.data/items',
  ])('closed: %s', (target) => expect(outcome(target)).toBe('no-token'));
  it.each([
    '/oapi/collections/urn:wmo:md:mw-met:obs/items', '/data/2026-11-25/wis/urn:wmo:md:mw-met:obs/x.bufr4',
    '/data/2026-11-25/wis/mw-met-x/y', '/data/2026-11-25/wis/mw-met.x', '/oapi/collections/c/items/mw-met', '/x?q=mw-met',
  ])('a narrower form, open (the import refuses it unless accepted): %s', (target) => expect(outcome(target)).toBe('open'));
});
