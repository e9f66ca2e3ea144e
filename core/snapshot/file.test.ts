import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { compileSnapshot } from './compile.js';
import { parseSnapshotFile, parseSnapshotHeader, serializeSnapshot, snapshotFileVerifier, snapshotHeader } from './file.js';
import { generationOf } from './lines.js';
import { API_GROUP_VERSION } from '../protected-scope.js';
import { buildIndex } from '../access-index.js';
import { dataset, H, obj, path, rec, sha256, snapshotArb, topic } from '../../test/support/snapshots.js';

// docs/architecture.md "The snapshot": files that refuse to load when truncated or corrupted.

describe('single-file form', () => {
  const sample = () =>
    compileSnapshot([obj(topic('a.b'), [rec(H('1')), rec(H('2'), '2027-01-01T00:00:00Z')]), obj(dataset('urn:x'), [rec(H('3'))]), obj(path('processes/svc'), [rec(H('4'))])]);

  it('round-trips: a header line, then the scope lines', () => {
    const s = sample();
    const text = serializeSnapshot(s);
    expect(text.endsWith('\n')).toBe(true);
    expect(JSON.parse(text.split('\n')[0]!)).toEqual({ apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: s.generation, scopes: 3, tokens: 4 });
    expect(parseSnapshotFile(text)).toEqual({ ok: true, value: { header: snapshotHeader(s), lines: [...s.lines] } });
  });
  it('round-trips the empty snapshot', () => {
    const s = compileSnapshot([]);
    expect(parseSnapshotFile(serializeSnapshot(s))).toEqual({ ok: true, value: { header: snapshotHeader(s), lines: [] } });
  });
  it('property: round-trips any snapshot', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const r = parseSnapshotFile(serializeSnapshot(s));
        expect(r.ok && r.value.lines).toEqual(s.lines);
      }),
    );
  });
  it('refuses every truncation (a half-written file never loads)', () => {
    const text = serializeSnapshot(sample());
    for (let n = 0; n < text.length; n++) {
      const r = parseSnapshotFile(text.slice(0, n));
      expect(r.ok).toBe(false);
    }
  });
  it('property: any single-character corruption, header included, never loads (parse, then build and count as a source does)', () => {
    const text = serializeSnapshot(sample());
    const loads = (t: string): boolean => {
      const parsed = parseSnapshotFile(t);
      if (!parsed.ok) return false;
      const built = buildIndex(parsed.value.header.generation, parsed.value.lines);
      return built.ok && built.value.tokenCount === parsed.value.header.tokens;
    };
    expect(loads(text)).toBe(true);
    fc.assert(
      fc.property(fc.nat({ max: text.length - 1 }), fc.integer({ min: 0x09, max: 0x7e }), (pos, code) => {
        const c = String.fromCharCode(code);
        fc.pre(c !== text[pos]);
        expect(loads(text.slice(0, pos) + c + text.slice(pos + 1))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
  it('refuses reordered lines, an extra line, a missing line and a lying token count', () => {
    const s = sample();
    const header = JSON.stringify(snapshotHeader(s));
    const file = (h: string, lines: readonly string[]) => [h, ...lines].join('\n') + '\n';
    expect(parseSnapshotFile(file(header, [s.lines[1]!, s.lines[0]!, s.lines[2]!])).ok).toBe(false);
    expect(parseSnapshotFile(file(header, [...s.lines, s.lines[0]!])).ok).toBe(false);
    expect(parseSnapshotFile(file(header, s.lines.slice(0, 2))).ok).toBe(false);
    // A lying token count is left to the index build, which counts what it loads.
    const lying = JSON.stringify({ ...snapshotHeader(s), tokens: s.tokenCount + 1 });
    const parsed = parseSnapshotFile(file(lying, s.lines));
    if (!parsed.ok) throw new Error(parsed.error);
    const built = buildIndex(parsed.value.header.generation, parsed.value.lines);
    expect(built.ok && built.value.tokenCount).toBe(s.tokenCount);
    expect(parsed.value.header.tokens).not.toBe(s.tokenCount);
  });
  it.each([
    ['empty', ''],
    ['not JSON', 'hello\n'],
    ['another kind', `${JSON.stringify({ apiVersion: API_GROUP_VERSION, kind: 'SnapshotIndex', generation: sha256(''), scopes: 0, tokens: 0 })}\n`],
    ['another version', `${JSON.stringify({ apiVersion: 'auth.svc.io/v1', kind: 'Snapshot', generation: sha256(''), scopes: 0, tokens: 0 })}\n`],
    ['null header', 'null\n'],
  ])('refuses a bad header: %s', (_what, text) => {
    expect(parseSnapshotFile(text).ok).toBe(false);
  });
  it('a file whose lines match the generation but are not valid scope lines never builds an index', () => {
    const lines = ['{"kind":"topic","value":"a","tokens":[]}'];
    const header = { apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: generationOf(lines), scopes: 1, tokens: 0 };
    const parsed = parseSnapshotFile(`${JSON.stringify(header)}\n${lines[0]}\n`);
    expect(parsed.ok && buildIndex(parsed.value.header.generation, parsed.value.lines).ok).toBe(false);
  });
});

describe('SnapshotFileVerifier: the single-file form verified from bytes fed in chunks', () => {
  const enc = (t: string) => new Uint8Array(Buffer.from(t, 'utf8'));
  /** Feeds the bytes in chunks of the given sizes (cycled), as a caller yielding between chunks would. */
  const verify = (bytes: Uint8Array, sizes: readonly number[] = [bytes.length]) => {
    const v = snapshotFileVerifier();
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const n = Math.max(1, sizes[i % sizes.length]!);
      v.update(bytes.subarray(at, at + n));
      at += n;
    }
    return v.finish();
  };
  const headerFor = (lines: readonly string[], over: Record<string, unknown> = {}) =>
    JSON.stringify({ apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: generationOf(lines), scopes: lines.length, tokens: 0, ...over });
  const fileOf = (lines: readonly string[], header = headerFor(lines)) => `${header}\n${lines.map((l) => `${l}\n`).join('')}`;
  /** Any line (no newline), multi-byte characters of every length included. */
  const lineArb = fc.string({ unit: 'binary', maxLength: 40 }).map((l) => l.replaceAll('\n', ''));
  const linesArb = fc.array(lineArb, { maxLength: 8 });
  const sizesArb = fc.array(fc.integer({ min: 1, max: 48 }), { minLength: 1, maxLength: 6 });
  // 2-, 3- and 4-byte characters, and a BOM at the start of a line (kept, as Buffer#toString keeps it).
  const multibyte = ['{"v":"é"}', '\uFEFF{"v":"✓"}', 'ça ✓ 𝄞 日本', '', '𝄞𝄞𝄞'];

  it('property: lines taken as they come, plus the ones finish() returns, are all the lines in order; the header shows once its line is in', () => {
    fc.assert(
      fc.property(linesArb, sizesArb, (lines, sizes) => {
        const bytes = enc(fileOf(lines));
        const v = snapshotFileVerifier();
        const header = JSON.parse(headerFor(lines)) as { generation: string };
        const taken: string[] = [];
        const headerLength = Buffer.byteLength(headerFor(lines)) + 1;
        for (let at = 0, i = 0; at < bytes.length; i++) {
          const n = Math.max(1, sizes[i % sizes.length]!);
          v.update(bytes.subarray(at, at + n));
          at += n;
          expect(v.header?.generation).toBe(at >= headerLength ? header.generation : undefined);
          taken.push(...v.takeLines());
        }
        const done = v.finish();
        expect(done.ok).toBe(true);
        expect([...taken, ...(done.ok ? done.value.lines : [])]).toEqual(lines);
      }),
    );
  });

  it('property: over any chunking, a serialized snapshot verifies to what parseSnapshotFile gives', () => {
    fc.assert(
      fc.property(snapshotArb, sizesArb, (s, sizes) => {
        const text = serializeSnapshot(s);
        expect(verify(enc(text), sizes)).toEqual(parseSnapshotFile(text));
        expect(verify(enc(text), sizes)).toEqual({ ok: true, value: { header: snapshotHeader(s), lines: [...s.lines] } });
      }),
    );
  });
  it('property: any lines verify against generationOf, over any chunking', () => {
    fc.assert(
      fc.property(linesArb, sizesArb, (lines, sizes) => {
        const r = verify(enc(fileOf(lines)), sizes);
        expect(r.ok && r.value.lines).toEqual(lines);
        expect(r.ok && r.value.header.generation).toBe(generationOf(lines));
      }),
    );
  });
  it('property: same verdict and message as parseSnapshotFile on any text: truncated, one character changed, or a header that lies', () => {
    const mutationArb = fc.oneof(
      fc.constant({ op: 'none' as const }),
      fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
      fc.record({ op: fc.constant('replace' as const), at: fc.nat(), c: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) }),
      fc.record({ op: fc.constant('lie' as const), scopes: fc.integer({ min: -1, max: 10 }), generation: fc.constantFrom(undefined, sha256(''), 'x') }),
    );
    fc.assert(
      fc.property(linesArb, mutationArb, sizesArb, (lines, m, sizes) => {
        let text = fileOf(lines);
        // By code point, so a change never leaves half a surrogate pair (a decoded file never has one).
        const chars = Array.from(text);
        if (m.op === 'truncate') text = chars.slice(0, m.at % (chars.length + 1)).join('');
        if (m.op === 'replace') text = [...chars.slice(0, m.at % chars.length), m.c, ...chars.slice((m.at % chars.length) + 1)].join('');
        if (m.op === 'lie') text = fileOf(lines, headerFor(lines, { scopes: m.scopes, ...(m.generation === undefined ? {} : { generation: m.generation }) }));
        expect(verify(enc(text), sizes)).toEqual(parseSnapshotFile(text));
      }),
      { numRuns: 500 },
    );
  });
  it('multi-byte characters split at every byte boundary, and one byte at a time', () => {
    const bytes = enc(fileOf(multibyte));
    const expected = { ok: true, value: { header: JSON.parse(headerFor(multibyte)), lines: multibyte } };
    expect(verify(bytes, [1])).toEqual(expected);
    for (let k = 1; k < bytes.length; k++) expect(verify(bytes, [k, bytes.length])).toEqual(expected);
    for (let k = 1; k < 12; k++) expect(verify(bytes, [k])).toEqual(expected);
  });
  it('refuses every truncation of the bytes, a multi-byte character cut in half included', () => {
    const bytes = enc(fileOf(multibyte));
    for (let n = 0; n < bytes.length; n++) {
      for (const sizes of [[n || 1], [3], [1]]) expect(verify(bytes.subarray(0, n), sizes).ok).toBe(false);
    }
    // Cut right after a line's newline: the count gives it away; cut elsewhere: the missing final newline.
    const lastLine = bytes.length - enc(`${multibyte.at(-1)}\n`).length;
    expect(verify(bytes.subarray(0, lastLine))).toEqual({ ok: false, error: `the header announces 5 scopes but the file has 4 (truncated?)` });
    expect(verify(bytes.subarray(0, bytes.length - 2))).toEqual({ ok: false, error: 'the snapshot file does not end with a newline (truncated?)' });
    expect(verify(new Uint8Array(0))).toEqual({ ok: false, error: 'empty snapshot file' });
  });
  it('refuses a wrong generation and a missing trailing newline, with parseSnapshotFile\'s messages', () => {
    const wrong = fileOf(multibyte, headerFor(multibyte, { generation: generationOf(multibyte.slice(1)) }));
    expect(verify(enc(wrong), [7])).toEqual({ ok: false, error: 'the content does not match the header generation (corrupt or half-written)' });
    const unterminated = fileOf(multibyte).slice(0, -1);
    expect(verify(enc(unterminated), [7])).toEqual({ ok: false, error: 'the snapshot file does not end with a newline (truncated?)' });
    expect(verify(enc(`${headerFor([])}`))).toEqual(parseSnapshotFile(headerFor([])));
    expect(verify(enc('\n'))).toEqual({ ok: false, error: 'line 1: the snapshot header is not JSON' });
  });
  it('refuses bytes that are not UTF-8, naming the line, even when the generation was computed over those very bytes', () => {
    const lines = ['{"a":1}', '{"b":2}', '{"c":"é"}', '{"d":4}'];
    const bad = [[0xff], [0xc0, 0xaf] /* overlong "/" */, [0xed, 0xa0, 0x80] /* a surrogate */, [0xc3] /* é cut short */];
    for (const seq of bad) {
      const body = Buffer.concat([enc(`${lines[0]}\n${lines[1]}\n{"c":"`), Uint8Array.from(seq), enc(`"}\n${lines[3]}\n`)]);
      const header = headerFor(lines, { generation: createHash('sha256').update(body).digest('hex') });
      const bytes = Buffer.concat([enc(`${header}\n`), body]);
      for (const sizes of [[bytes.length], [1], [5], [17]]) expect(verify(bytes, sizes)).toEqual({ ok: false, error: 'line 4: not valid UTF-8' });
      // A truncation or a count mismatch is still reported first, as parseSnapshotFile orders them.
      expect(verify(bytes.subarray(0, -1))).toEqual({ ok: false, error: 'the snapshot file does not end with a newline (truncated?)' });
    }
    const header = Buffer.concat([enc('{"apiVersion":"'), Uint8Array.from([0xff]), enc(`"}\n`)]);
    expect(verify(header, [3])).toEqual({ ok: false, error: 'line 1: the snapshot header is not valid UTF-8' });
  });
  it('keeps no reference to the chunks: a caller may reuse one buffer', () => {
    const bytes = enc(fileOf(multibyte));
    const scratch = new Uint8Array(5);
    const v = snapshotFileVerifier();
    for (let at = 0; at < bytes.length; at += 5) {
      const chunk = bytes.subarray(at, at + 5);
      scratch.set(chunk);
      v.update(scratch.subarray(0, chunk.length));
      scratch.fill(0x41);
    }
    expect(v.finish()).toEqual({ ok: true, value: { header: JSON.parse(headerFor(multibyte)), lines: multibyte } });
    expect(() => v.update(bytes)).toThrow(/after finish/);
  });
  it('parseSnapshotHeader names line 1', () => {
    expect(parseSnapshotHeader('nope')).toEqual({ ok: false, error: 'line 1: the snapshot header is not JSON' });
    expect(parseSnapshotHeader('{}')).toEqual({ ok: false, error: `line 1: not a ${API_GROUP_VERSION} Snapshot header` });
    expect(parseSnapshotHeader(headerFor([]))).toEqual({ ok: true, value: JSON.parse(headerFor([])) });
  });
});
