import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { dumpManifests, parseManifests } from './manifest.js';
import { newProtectedScope, validateProtectedScope } from './protected-scope.js';
import { hashToken, tokenIdOf } from './token.js';

describe('parseManifests', () => {
  it('parses several documents', () => {
    const r = parseManifests('a: 1\n---\nb: [x, y]\n---\n{"c": true}\n');
    expect(r).toEqual({ ok: true, value: [{ a: 1 }, { b: ['x', 'y'] }, { c: true }] });
  });
  it('drops empty documents (stray ---, comments only, explicit null)', () => {
    expect(parseManifests('---\n---\na: 1\n---\n# only a comment\n---\n~\n---\n')).toEqual({ ok: true, value: [{ a: 1 }] });
    expect(parseManifests('')).toEqual({ ok: true, value: [] });
  });
  it('parses JSON', () => {
    expect(parseManifests('{"apiVersion":"v1","items":[1,2]}')).toEqual({ ok: true, value: [{ apiVersion: 'v1', items: [1, 2] }] });
  });
  it.each(['a: [1, 2', 'a: b: c', '{"a": [}', 'a:\n\t- x', 'key: value\nkey: other'])('invalid YAML %j → an error, not an exception', (text) => {
    const r = parseManifests(text);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toMatch(/^not valid YAML: /);
      expect(r.error.includes('\n')).toBe(false);
    }
  });
  it('keeps date-like strings as strings when quoted (how manifests carry createdAt)', () => {
    const r = parseManifests('createdAt: "2026-11-21T10:00:00Z"\n');
    expect(r).toEqual({ ok: true, value: [{ createdAt: '2026-11-21T10:00:00Z' }] });
  });
});

describe('dumpManifests → parseManifests round trip', () => {
  it('a ProtectedScope survives dump and parse and still validates', () => {
    const hash = hashToken('round-trip-token-0001');
    const ps = newProtectedScope({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, 'topic-x-1234abcd', 'svc', [
      { id: tokenIdOf(hash), hash, description: 'partner: "NMHS" # not a comment', createdAt: '2026-11-21T10:00:00Z', expiresAt: '2027-01-01T00:00:00Z' },
    ]);
    const text = dumpManifests([ps, ps]);
    expect(text.split('\n').filter((l) => l === '---')).toHaveLength(1);
    const back = parseManifests(text);
    expect(back).toEqual({ ok: true, value: [ps, ps] });
    if (back.ok) expect(validateProtectedScope(back.value[0]).ok).toBe(true);
  });
  it('dumping nothing gives nothing', () => {
    expect(dumpManifests([])).toBe('');
  });
  it('property: JSON-like documents round-trip', () => {
    // Keys and strings that YAML must quote (":", "#", "---", leading spaces, dates, numbers, booleans).
    const str = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('---', 'yes', 'null', '2026-11-21', '0x1f', ' a', 'a: b', '# c', '~'));
    const doc = fc.dictionary(str, fc.oneof(str, fc.integer(), fc.boolean(), fc.array(str, { maxLength: 3 })), { minKeys: 1, maxKeys: 5 });
    fc.assert(
      fc.property(fc.array(doc, { minLength: 1, maxLength: 4 }), (docs) => {
        expect(parseManifests(dumpManifests(docs))).toEqual({ ok: true, value: docs });
      }),
    );
  });
  it('long strings are not folded', () => {
    const long = 'x '.repeat(200).trim();
    const text = dumpManifests([{ description: long }]);
    expect(text.trim().split('\n')).toHaveLength(1);
  });
});
