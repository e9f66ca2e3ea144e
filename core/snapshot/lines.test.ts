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
