import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import {
  checkScope,
  compareScopes,
  MAX_LENGTH,
  parseScope,
  scopeKey,
  scopeLevels,
  scopeObjectName,
  SCOPE_FIELD,
  type Scope,
  type ScopeKind,
} from './scope.js';

// docs/access-rules.md "Scopes": the grammar of each kind, the slash form for topics, and the hierarchy separators.

const valid = (kind: ScopeKind, value: string) => checkScope({ kind, value }).ok;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const level = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
const topicArb = fc.array(level, { minLength: 1, maxLength: 8 }).map((l) => l.join('.'));
const urnPart = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
const urnArb = fc.array(urnPart, { minLength: 1, maxLength: 6 }).map((p) => `urn:${p.join(':')}`);
const processArb = fc.array(fc.stringMatching(/^[A-Za-z0-9_]{1,10}$/), { minLength: 1, maxLength: 5 }).map((p) => `processes/${p.join('-')}`);
const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  topicArb.map((value) => ({ kind: 'topic' as const, value })),
  urnArb.map((value) => ({ kind: 'dataset' as const, value })),
  fc.oneof(processArb, fc.constant('collections/stations')).map((value) => ({ kind: 'path' as const, value })),
);

describe('scope kinds and their CR fields', () => {
  it('maps topic → topicHierarchy, dataset → metadataId, path → path', () => {
    expect(SCOPE_FIELD).toEqual({ topic: 'topicHierarchy', dataset: 'metadataId', path: 'path' });
  });
});

describe('topic hierarchy grammar: dotted levels of [A-Za-z0-9_-]+', () => {
  it.each(['origin.a.wis2.mw-met.data.core.weather', 'a', 'A_b-9', 'x.y', '-_-.0'])('accepts %j', (v) => {
    expect(valid('topic', v)).toBe(true);
  });
  it.each(['', 'a..b', '.a', 'a.', 'a b', 'a/b', 'a.b*', 'a:b', 'né.b', 'a.b\n', 'a,b'])('refuses %j', (v) => {
    expect(valid('topic', v)).toBe(false);
  });
  it(`is at most ${MAX_LENGTH.topic} characters (boundary)`, () => {
    expect(valid('topic', 'a'.repeat(MAX_LENGTH.topic))).toBe(true);
    expect(valid('topic', 'a'.repeat(MAX_LENGTH.topic + 1))).toBe(false);
  });
  it('error messages name the kind and give an example', () => {
    const r = checkScope({ kind: 'topic', value: 'a..b' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/topic hierarchy.*origin\.a\.wis2/);
  });
});

describe('topic slash form (the CLI accepts it and stores dots)', () => {
  it.each([
    ['origin/a/wis2/mw-met/data/core', 'origin.a.wis2.mw-met.data.core'],
    ['/origin/a/', 'origin.a'],
    ['  origin/a  ', 'origin.a'],
    ['single', 'single'],
  ])('parseScope(topic, %j) stores %j', (raw, stored) => {
    expect(parseScope('topic', raw)).toEqual({ ok: true, value: { kind: 'topic', value: stored } });
  });
  it.each(['a//b', 'a/b.c', '/', 'a/b c'])('refuses the malformed slash form %j', (raw) => {
    expect(parseScope('topic', raw).ok).toBe(false);
  });
  it('does not turn slashes into dots for other kinds', () => {
    expect(parseScope('dataset', 'urn:a/b').ok).toBe(false);
    expect(parseScope('path', 'processes/svc')).toEqual({ ok: true, value: { kind: 'path', value: 'processes/svc' } });
  });
  it('any topic parses identically in dotted and slash form', () => {
    fc.assert(
      fc.property(topicArb, (topic) => {
        const dotted = parseScope('topic', topic);
        const slashed = parseScope('topic', topic.replaceAll('.', '/'));
        expect(dotted).toEqual({ ok: true, value: { kind: 'topic', value: topic } });
        expect(slashed).toEqual(dotted);
      }),
    );
  });
});

describe('dataset (metadata id) grammar: a URN of [A-Za-z0-9._~:-], starting with urn:', () => {
  it.each(['urn:wmo:md:mw-met:surface-weather-observations', 'urn:x', 'urn:a.b~c_d-e:f', 'urn:A:B'])('accepts %j', (v) => {
    expect(valid('dataset', v)).toBe(true);
  });
  it.each(['', 'wmo:md:x', 'URN:x', 'urn:', 'urn::x', 'urn:x:', 'urn:a/b', 'urn:a b', 'urn:a%20', 'urn:a#b', 'urn:a?b', 'urnx:a'])('refuses %j', (v) => {
    expect(valid('dataset', v)).toBe(false);
  });
  it(`is at most ${MAX_LENGTH.dataset} characters (boundary)`, () => {
    expect(valid('dataset', `urn:${'a'.repeat(MAX_LENGTH.dataset - 4)}`)).toBe(true);
    expect(valid('dataset', `urn:${'a'.repeat(MAX_LENGTH.dataset - 3)}`)).toBe(false);
  });
});

describe('path grammar: collections/stations, processes/<process-id-prefix>, or a prefix path of the host', () => {
  it.each(['collections/stations', 'processes/svc', 'processes/svc-synop2bufr', 'processes/svc_x', 'processes/a-b-c', 'jobs/svc', 'wis2downloader', 'wis2downloader/sub.dir/x~y', 'a-b_c'])('accepts %j', (v) => {
    expect(valid('path', v)).toBe(true);
  });
  it.each([
    'collections/other',
    'collections/stations/items',
    'collections',
    'processes/',
    'processes',
    'processes/svc-',
    'processes/-svc',
    'processes/svc--x',
    'processes/svc/x',
    'processes/svc.x',
    '/processes/svc',
    'Collections/stations',
    'PROCESSES/svc',
    '.hidden',
    'a/../b',
    'a/./b',
    'a//b',
    'wis2downloader/',
    'wis2 downloader',
    'a;b',
    'a%2fb',
    'collections/x.y',
    'Processes/a.b',
  ])('refuses %j', (v) => {
    expect(valid('path', v)).toBe(false);
  });
  it(`is at most ${MAX_LENGTH.path} characters (boundary)`, () => {
    const prefix = 'processes/';
    expect(valid('path', prefix + 'a'.repeat(MAX_LENGTH.path - prefix.length))).toBe(true);
    expect(valid('path', prefix + 'a'.repeat(MAX_LENGTH.path - prefix.length + 1))).toBe(false);
  });
});

describe('hierarchy separators (what "more specific" means)', () => {
  it('topic levels split at "."', () => {
    expect(scopeLevels({ kind: 'topic', value: 'a.b-c.d_e' })).toEqual(['a', 'b-c', 'd_e']);
  });
  it('dataset levels split at ":"', () => {
    expect(scopeLevels({ kind: 'dataset', value: 'urn:wmo:md:mw-met:obs.x' })).toEqual(['urn', 'wmo', 'md', 'mw-met', 'obs.x']);
  });
  it('process ids split at "-"; collections/stations has two levels', () => {
    expect(scopeLevels({ kind: 'path', value: 'processes/svc' })).toEqual(['processes', 'svc']);
    expect(scopeLevels({ kind: 'path', value: 'processes/svc-synop2bufr' })).toEqual(['processes', 'svc', 'synop2bufr']);
    expect(scopeLevels({ kind: 'path', value: 'collections/stations' })).toEqual(['collections', 'stations']);
  });
  it('scopeKey is <kind>:<value>', () => {
    expect(scopeKey({ kind: 'dataset', value: 'urn:a:b' })).toBe('dataset:urn:a:b');
  });
  it('compareScopes orders by kind, then value, and is a total order', () => {
    const scopes: Scope[] = [
      { kind: 'topic', value: 'b' },
      { kind: 'path', value: 'processes/svc' },
      { kind: 'topic', value: 'a' },
      { kind: 'dataset', value: 'urn:x' },
    ];
    expect([...scopes].sort(compareScopes).map(scopeKey)).toEqual(['dataset:urn:x', 'path:processes/svc', 'topic:a', 'topic:b']);
    expect(compareScopes({ kind: 'topic', value: 'a' }, { kind: 'topic', value: 'a' })).toBe(0);
  });
});

describe('scopeObjectName', () => {
  it('is deterministic and starts with the kind', () => {
    const s: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
    expect(scopeObjectName(s)).toBe(scopeObjectName({ ...s }));
    expect(scopeObjectName(s)).toMatch(/^topic-origin-a-wis2-mw-met-data-core-[0-9a-f]{8}$/);
  });
  it('differs for different scopes with the same slug', () => {
    const names = [
      scopeObjectName({ kind: 'topic', value: 'a.b' }),
      scopeObjectName({ kind: 'topic', value: 'a-b' }),
      scopeObjectName({ kind: 'topic', value: 'A.b' }),
      scopeObjectName({ kind: 'topic', value: 'a_b' }),
    ];
    expect(names[0]!.slice(0, -9)).toBe(names[1]!.slice(0, -9)); // same slug…
    expect(new Set(names).size).toBe(names.length); // …different names
  });
  it('differs for long scopes that share their first 50 characters', () => {
    const base = 'x'.repeat(100);
    const a = scopeObjectName({ kind: 'topic', value: `${base}.a` });
    const b = scopeObjectName({ kind: 'topic', value: `${base}.b` });
    expect(a.length).toBeLessThanOrEqual(63);
    expect(a).not.toBe(b);
  });
  it('a slug of only punctuation still gives a valid name', () => {
    const name = scopeObjectName({ kind: 'topic', value: '_._' });
    expect(name).toMatch(DNS_LABEL);
  });
  it('property: always a valid DNS label of at most 63 characters, deterministic, and injective on samples', () => {
    fc.assert(
      fc.property(fc.uniqueArray(scopeArb, { minLength: 2, maxLength: 6, selector: scopeKey }), (scopes) => {
        const names = scopes.map(scopeObjectName);
        for (const [i, name] of names.entries()) {
          expect(name.length).toBeLessThanOrEqual(63);
          expect(DNS_LABEL.test(name)).toBe(true);
          expect(name.startsWith(`${scopes[i]!.kind}-`)).toBe(true);
          expect(scopeObjectName(scopes[i]!)).toBe(name);
        }
        expect(new Set(names).size).toBe(names.length);
      }),
    );
  });
});
