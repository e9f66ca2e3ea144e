import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { parseScopeLine, scopeLine } from './lines.js';
import { H, snapshotArb } from '../../test/support/snapshots.js';

describe('parseScopeLine', () => {
  const hash = H('line');
  it('accepts a canonical line', () => {
    const line = `{"kind":"dataset","value":"urn:x:y","tokens":[{"hash":"${hash}","expiresAt":"2027-01-01T00:00:00.000Z"}]}`;
    expect(parseScopeLine(line)).toEqual({ ok: true, value: { kind: 'dataset', value: 'urn:x:y', tokens: [{ hash, expiresAt: '2027-01-01T00:00:00.000Z' }] } });
  });
  it('reads networks: canonical texts, sorted, each once; a scope with only networks is closed', () => {
    const line = '{"kind":"topic","value":"a.b","tokens":[],"networks":["198.51.100.0/24","2001:db8::/32","203.0.113.7/32"]}';
    const parsed = parseScopeLine(line);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.value.networks?.map((n) => [n.family, n.prefix, n.cidr])).toEqual([[4, 24, '198.51.100.0/24'], [6, 32, '2001:db8::/32'], [4, 32, '203.0.113.7/32']]);
    expect(scopeLine(parsed.value)).toBe(line);
    const withSubjects = `{"kind":"path","value":"processes/svc","tokens":[{"hash":"${hash}"}],"subjects":[{"kind":"User","name":"a"}],"networks":["::1/128"]}`;
    const again = parseScopeLine(withSubjects);
    expect(again.ok && scopeLine(again.value)).toBe(withSubjects);
  });
  it.each([
    ['an empty network list', '{"kind":"topic","value":"a","tokens":[],"networks":[]}', /networks must be a non-empty list/],
    ['networks not a list', '{"kind":"topic","value":"a","tokens":[],"networks":"203.0.113.0/24"}', /non-empty list/],
    ['a network not a string', '{"kind":"topic","value":"a","tokens":[],"networks":[{"cidr":"203.0.113.0/24"}]}', /bad network: not a string/],
    ['host bits set', '{"kind":"topic","value":"a","tokens":[],"networks":["203.0.113.9/24"]}', /bad network: .*use 203\.0\.113\.0\/24/],
    ['out of order', '{"kind":"topic","value":"a","tokens":[],"networks":["203.0.113.0/24","198.51.100.0/24"]}', /out of order or repeated at 198\.51\.100\.0\/24/],
    ['repeated', '{"kind":"topic","value":"a","tokens":[],"networks":["203.0.113.0/24","203.0.113.0/24"]}', /out of order or repeated/],
    ['public with networks', '{"kind":"path","value":"processes/x","public":true,"tokens":[],"networks":["203.0.113.0/24"]}', /no networks/],
  ])('refuses %s', (_what, line, message) => {
    const r = parseScopeLine(line);
    expect(r.ok ? 'accepted' : r.error).toMatch(message);
  });
  it('property: accepts every line the compiler writes', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        for (const line of s.lines) expect(parseScopeLine(line).ok).toBe(true);
      }),
    );
  });
  it('property: scopeLine writes back exactly the line parseScopeLine read (one grammar, both ways)', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        for (const line of s.lines) {
          const parsed = parseScopeLine(line);
          expect(parsed.ok && scopeLine(parsed.value)).toBe(line);
        }
      }),
    );
  });
  it.each([
    ['not JSON', '{'],
    ['an array', '[]'],
    ['null', 'null'],
    ['a string', '"topic:a"'],
    ['no kind', `{"value":"a","tokens":[{"hash":"${hash}"}]}`],
    ['unknown kind', `{"kind":"host","value":"a","tokens":[{"hash":"${hash}"}]}`],
    ['value not a string', `{"kind":"topic","value":1,"tokens":[{"hash":"${hash}"}]}`],
    ['bad topic', `{"kind":"topic","value":"a..b","tokens":[{"hash":"${hash}"}]}`],
    ['bad urn', `{"kind":"dataset","value":"x:y","tokens":[{"hash":"${hash}"}]}`],
    ['bad path', `{"kind":"path","value":"processes/","tokens":[{"hash":"${hash}"}]}`],
    ['no tokens', '{"kind":"topic","value":"a"}'],
    ['empty tokens (an open scope has no line)', '{"kind":"topic","value":"a","tokens":[]}'],
    ['tokens not a list', `{"kind":"topic","value":"a","tokens":{"hash":"${hash}"}}`],
    ['null token', '{"kind":"topic","value":"a","tokens":[null]}'],
    ['bad hash', '{"kind":"topic","value":"a","tokens":[{"hash":"sha256:XYZ"}]}'],
    ['plaintext instead of hash', '{"kind":"topic","value":"a","tokens":[{"token":"abc"}]}'],
    ['bad expiresAt', `{"kind":"topic","value":"a","tokens":[{"hash":"${hash}","expiresAt":"soon"}]}`],
    ['null expiresAt', `{"kind":"topic","value":"a","tokens":[{"hash":"${hash}","expiresAt":null}]}`],
  ])('refuses %s', (_what, line) => {
    expect(parseScopeLine(line).ok).toBe(false);
  });
});
