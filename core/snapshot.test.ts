import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  compileSnapshot,
  compileSnapshotSteps,
  generationOf,
  groupByScope,
  parseScopeLine,
  parseSnapshotFile,
  parseSnapshotIndex,
  parseSnapshotHeader,
  serializeSnapshot,
  shardSnapshot,
  snapshotFileVerifier,
  snapshotHeader,
  verifyAssembled,
  verifyShard,
  type Snapshot,
} from './snapshot.js';
import { API_GROUP_VERSION, newProtectedScope, type ProtectedScope, type TokenRecord } from './protected-scope.js';
import { hashToken, tokenIdOf, type TokenHash } from './token.js';
import type { Scope } from './scope.js';
import { buildIndex } from './access-index.js';

// docs/architecture.md "The snapshot": deterministic compilation, merge of objects for one scope, open scopes left
// out, verified shards, and files that refuse to load when truncated or corrupted.

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const H = (seed: string): TokenHash => hashToken(`snapshot-test-${seed}`);
const rec = (hash: TokenHash, expiresAt?: string): TokenRecord => ({
  id: tokenIdOf(hash),
  hash,
  createdAt: '2026-11-21T10:00:00Z',
  ...(expiresAt === undefined ? {} : { expiresAt }),
});
let names = 0;
const obj = (scope: Scope, tokens: TokenRecord[]): ProtectedScope => newProtectedScope(scope, `o-${names++}`, 'svc', tokens);
const topic = (value: string): Scope => ({ kind: 'topic', value });
const dataset = (value: string): Scope => ({ kind: 'dataset', value });
const path = (value: string): Scope => ({ kind: 'path', value });

/** Parses a snapshot's lines back into plain scope objects for assertions. */
const scopesOf = (s: Snapshot) => s.lines.map((l) => JSON.parse(l) as { kind: string; value: string; tokens: { hash: string; expiresAt?: string }[] });

// Random worlds: scopes from a small pool (so objects collide), tokens from a small pool (so hashes repeat).
const scopePool: Scope[] = [topic('a'), topic('a.b'), topic('a.b.c'), dataset('urn:x'), dataset('urn:x:y'), path('processes/svc'), path('collections/stations')];
const hashPool = Array.from({ length: 6 }, (_, i) => H(`pool-${i}`));
const expiryArb = fc.constantFrom(undefined, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', '2027-01-01T01:00:00+01:00', '2030-06-01T12:00:00.5Z');
const objectArb = fc
  .tuple(fc.constantFrom(...scopePool), fc.uniqueArray(fc.tuple(fc.constantFrom(...hashPool), expiryArb), { maxLength: 4, selector: ([h]) => h }))
  .map(([scope, tokens]) => obj(scope, tokens.map(([h, e]) => rec(h, e))));
const objectsArb = fc.array(objectArb, { maxLength: 10 });
const snapshotArb = objectsArb.map(compileSnapshot);

describe('compileSnapshotSteps', () => {
  it('property: pauses every `every` steps and returns exactly what compileSnapshot gives', () => {
    fc.assert(
      fc.property(objectsArb, fc.integer({ min: 1, max: 5 }), (objects, every) => {
        const steps = compileSnapshotSteps(objects, every);
        let pauses = 0;
        let step = steps.next();
        for (; !step.done; step = steps.next()) pauses++;
        const expected = compileSnapshot(objects);
        expect(step.value).toEqual(expected);
        expect(step.value.generation).toBe(generationOf(expected.lines));
        // One step per scope merged (groups of objects) and one per line written.
        const work = groupByScope(objects).size + expected.scopeCount;
        expect(pauses).toBe(Math.floor(work / every));
      }),
    );
  });
});

describe('compileSnapshot: canonical lines', () => {
  it('one JSON line per closed scope, with kind, value and tokens in a fixed key order', () => {
    const [h1, h2] = [H('1'), H('2')].sort();
    const s = compileSnapshot([obj(topic('a.b'), [rec(h2!, '2027-01-01T00:00:00Z'), rec(h1!)])]);
    expect(s.lines).toEqual([
      `{"kind":"topic","value":"a.b","tokens":[{"hash":"${h1}"},{"hash":"${h2}","expiresAt":"2027-01-01T00:00:00.000Z"}]}`,
    ]);
    expect(s.scopeCount).toBe(1);
    expect(s.tokenCount).toBe(2);
  });
  it('the generation is the SHA-256 of the lines, each followed by a newline', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'))]), obj(dataset('urn:x'), [rec(H('2'))])]);
    expect(s.generation).toBe(sha256(s.lines.map((l) => `${l}\n`).join('')));
    expect(generationOf(s.lines)).toBe(s.generation);
  });
  it('scopes are sorted by kind, then value; tokens by hash', () => {
    const s = compileSnapshot([
      obj(topic('b'), [rec(H('1'))]),
      obj(path('processes/svc'), [rec(H('2'))]),
      obj(topic('a'), [rec(H('3')), rec(H('4')), rec(H('5'))]),
      obj(dataset('urn:z'), [rec(H('6'))]),
    ]);
    expect(scopesOf(s).map((x) => `${x.kind}:${x.value}`)).toEqual(['dataset:urn:z', 'path:processes/svc', 'topic:a', 'topic:b']);
    for (const x of scopesOf(s)) {
      const hashes = x.tokens.map((t) => t.hash);
      expect(hashes).toEqual([...hashes].sort());
    }
  });
  it('expiry instants are canonicalised (same instant, same bytes)', () => {
    const a = compileSnapshot([obj(topic('a'), [rec(H('1'), '2027-01-01T00:00:00Z')])]);
    const b = compileSnapshot([obj(topic('a'), [rec(H('1'), '2027-01-01T01:00:00+01:00')])]);
    expect(b.lines).toEqual(a.lines);
    expect(b.generation).toBe(a.generation);
  });
  it('carries nothing but scopes, hashes and expiry (no ids, descriptions, names or creation dates)', () => {
    const s = compileSnapshot([obj(topic('a'), [{ ...rec(H('1')), description: 'partner NMHS' }])]);
    expect(s.lines[0]).not.toMatch(/partner|createdAt|"id"|o-\d/);
  });
});

describe('open scopes are omitted', () => {
  it('objects without tokens, or with an empty list, leave no line', () => {
    const s = compileSnapshot([obj(topic('a'), []), newProtectedScope(topic('b'), 'n', 'svc', []), obj(topic('c'), [rec(H('1'))])]);
    expect(scopesOf(s).map((x) => x.value)).toEqual(['c']);
    expect(s.scopeCount).toBe(1);
  });
  it('nothing closed: an empty snapshot with a stable generation', () => {
    const s = compileSnapshot([obj(topic('a'), [])]);
    expect(s).toEqual({ generation: sha256(''), scopeCount: 0, tokenCount: 0, lines: [] });
    expect(compileSnapshot([])).toEqual(s);
  });
  it('expired tokens still close their scope (expiry never silently opens data)', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'), '2000-01-01T00:00:00Z')])]);
    expect(s.scopeCount).toBe(1);
  });
});

describe('closed: true', () => {
  const closed = (o: ProtectedScope): ProtectedScope => ({ ...o, spec: { ...o.spec, closed: true } });
  it('keeps a scope with no token in the snapshot, closed, and the index governs it', () => {
    const s = compileSnapshot([closed(obj(dataset('urn:x:embargo'), [])), obj(topic('a'), [])]);
    expect(s.lines).toEqual(['{"kind":"dataset","value":"urn:x:embargo","closed":true,"tokens":[]}']);
    expect(s.tokenCount).toBe(0);
    const index = buildIndex(s.generation, s.lines);
    expect(index.ok && index.value.datasets.get('urn:x:embargo')?.key).toBe('dataset:urn:x:embargo');
    expect(parseScopeLine(s.lines[0]!)).toEqual({ ok: true, value: { kind: 'dataset', value: 'urn:x:embargo', tokens: [], closed: true } });
  });
  it('any object of the scope saying closed closes it; tokens stay as they are', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'))]), closed(obj(topic('a'), []))]);
    expect(scopesOf(s)).toEqual([{ kind: 'topic', value: 'a', closed: true, tokens: [{ hash: H('1') }] }]);
  });
  it('closed: false, or no field, compiles as before (same bytes, same generation)', () => {
    const plain = compileSnapshot([obj(topic('a'), [rec(H('1'))])]);
    const explicit = compileSnapshot([{ ...obj(topic('a'), [rec(H('1'))]), spec: { topicHierarchy: 'a', tokens: [rec(H('1'))], closed: false } }]);
    expect(explicit).toEqual(plain);
    expect(plain.lines[0]).not.toContain('closed');
  });
  it('a scope line without tokens needs closed: true; closed must be true when present', () => {
    expect(parseScopeLine('{"kind":"topic","value":"a","tokens":[]}').ok).toBe(false);
    expect(parseScopeLine('{"kind":"topic","value":"a","closed":false,"tokens":[]}').ok).toBe(false);
    expect(parseScopeLine(`{"kind":"topic","value":"a","closed":"yes","tokens":[{"hash":"${H('1')}"}]}`).ok).toBe(false);
  });
});

describe('objects for the same scope merge', () => {
  it('the union of their tokens', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'))]), obj(topic('a'), [rec(H('2'))]), obj(topic('b'), [rec(H('3'))])]);
    expect(s.scopeCount).toBe(2);
    expect(scopesOf(s)[0]!.tokens.map((t) => t.hash).sort()).toEqual([H('1'), H('2')].sort());
    expect(s.tokenCount).toBe(3);
  });
  it('a hash listed twice keeps the later expiry, in either order', () => {
    const early = rec(H('1'), '2027-01-01T00:00:00Z');
    const late = rec(H('1'), '2028-01-01T00:00:00Z');
    for (const order of [[early, late], [late, early]]) {
      const s = compileSnapshot(order.map((r) => obj(topic('a'), [r])));
      expect(scopesOf(s)[0]!.tokens).toEqual([{ hash: H('1'), expiresAt: '2028-01-01T00:00:00.000Z' }]);
    }
  });
  it('a hash listed twice where one has no expiry never expires, in either order', () => {
    const expiring = rec(H('1'), '2027-01-01T00:00:00Z');
    const forever = rec(H('1'));
    for (const order of [[expiring, forever], [forever, expiring]]) {
      const s = compileSnapshot(order.map((r) => obj(topic('a'), [r])));
      expect(scopesOf(s)[0]!.tokens).toEqual([{ hash: H('1') }]);
      expect(s.tokenCount).toBe(1);
    }
  });
  it('groupByScope groups by kind and value', () => {
    const objects = [obj(topic('a'), []), obj(topic('a'), []), obj(topic('a.b'), []), obj(dataset('urn:a'), [])];
    const groups = groupByScope(objects);
    expect([...groups.keys()]).toEqual(['topic:a', 'topic:a.b', 'dataset:urn:a']);
    expect(groups.get('topic:a')).toHaveLength(2);
  });
});

describe('determinism (property d)', () => {
  it('the same objects in any order give the same bytes and generation', () => {
    fc.assert(
      fc.property(
        objectsArb.chain((objects) => fc.tuple(fc.constant(objects), fc.shuffledSubarray(objects, { minLength: objects.length, maxLength: objects.length }))),
        ([objects, shuffled]) => {
          const a = compileSnapshot(objects);
          const b = compileSnapshot(shuffled);
          expect(serializeSnapshot(b)).toBe(serializeSnapshot(a));
          expect(b.generation).toBe(a.generation);
        },
      ),
    );
  });
  it('splitting a scope’s tokens over several objects, in any way, gives the same snapshot', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom(...hashPool), { minLength: 1 }), fc.array(fc.nat({ max: 3 }), { minLength: 6, maxLength: 6 }), (hashes, buckets) => {
        const whole = compileSnapshot([obj(topic('a'), hashes.map((h) => rec(h)))]);
        const parts: TokenRecord[][] = [[], [], [], []];
        hashes.forEach((h, i) => parts[buckets[i]!]!.push(rec(h)));
        const split = compileSnapshot(parts.map((p) => obj(topic('a'), p)));
        expect(split.lines).toEqual(whole.lines);
        expect(split.generation).toBe(whole.generation);
      }),
    );
  });
  it('different content gives a different generation', () => {
    const a = compileSnapshot([obj(topic('a'), [rec(H('1'))])]);
    const b = compileSnapshot([obj(topic('a'), [rec(H('1'), '2027-01-01T00:00:00Z')])]);
    const c = compileSnapshot([obj(topic('b'), [rec(H('1'))])]);
    expect(new Set([a.generation, b.generation, c.generation]).size).toBe(3);
  });
});

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

describe('shards', () => {
  const concat = (s: Snapshot) => s.lines.map((l) => `${l}\n`).join('');

  it('property: concatenation equals the lines; each shard ≤ maxBytes unless a single line is bigger; refs are right', () => {
    fc.assert(
      fc.property(snapshotArb, fc.integer({ min: 1, max: 1500 }), (s, maxBytes) => {
        const { index, shards } = shardSnapshot(s, maxBytes);
        expect(shards.map((x) => x.text).join('')).toBe(concat(s));
        for (const shard of shards) {
          expect(shard.bytes).toBe(Buffer.byteLength(shard.text));
          expect(shard.digest).toBe(sha256(shard.text));
          expect(shard.text.split('\n').length - 1).toBe(shard.scopes);
          if (shard.scopes > 1) expect(shard.bytes).toBeLessThanOrEqual(maxBytes);
          else expect(shard.scopes).toBe(1);
        }
        // Greedy: a shard is only closed when the next line would not fit.
        for (let i = 0; i + 1 < shards.length; i++) {
          const firstLineOfNext = shards[i + 1]!.text.slice(0, shards[i + 1]!.text.indexOf('\n') + 1);
          expect(shards[i]!.bytes + Buffer.byteLength(firstLineOfNext)).toBeGreaterThan(maxBytes);
        }
        expect(index).toEqual({
          apiVersion: API_GROUP_VERSION,
          kind: 'SnapshotIndex',
          generation: s.generation,
          scopes: s.scopeCount,
          tokens: s.tokenCount,
          shards: shards.map(({ digest, scopes, bytes }) => ({ digest, scopes, bytes })),
        });
        // Every shard verifies, and the assembled lines verify against the index.
        const assembled: string[] = [];
        for (const [i, shard] of shards.entries()) {
          const r = verifyShard(index.shards[i]!, shard.text);
          expect(r.ok).toBe(true);
          if (r.ok) assembled.push(...r.value);
        }
        expect(assembled).toEqual(s.lines);
        expect(verifyAssembled(index, assembled)).toEqual({ ok: true, value: true });
      }),
    );
  });
  it('a large limit gives one shard; an empty snapshot gives none', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'))]), obj(topic('b'), [rec(H('2'))])]);
    expect(shardSnapshot(s, 1 << 20).shards).toHaveLength(1);
    const empty = shardSnapshot(compileSnapshot([]), 100);
    expect(empty.shards).toEqual([]);
    expect(verifyAssembled(empty.index, [])).toEqual({ ok: true, value: true });
  });
  it('a line larger than the limit gets a shard of its own', () => {
    const big = obj(topic('a'), Array.from({ length: 20 }, (_, i) => rec(H(`big-${i}`))));
    const s = compileSnapshot([big, obj(topic('b'), [rec(H('x'))]), obj(topic('c'), [rec(H('y'))])]);
    const { shards } = shardSnapshot(s, 300);
    expect(shards[0]!.scopes).toBe(1);
    expect(shards[0]!.bytes).toBeGreaterThan(300);
    expect(shards.slice(1).every((x) => x.bytes <= 300)).toBe(true);
  });

  const many = () => compileSnapshot(Array.from({ length: 12 }, (_, i) => obj(topic(`t${i}`), [rec(H(`m${i}`))])));

  it('verifyShard catches any flipped byte', () => {
    const { index, shards } = shardSnapshot(many(), 400);
    const text = shards[0]!.text;
    for (let pos = 0; pos < text.length; pos++) {
      const flipped = text.slice(0, pos) + String.fromCharCode(text.charCodeAt(pos) ^ 0x01) + text.slice(pos + 1);
      expect(verifyShard(index.shards[0]!, flipped).ok).toBe(false);
    }
  });
  it('verifyShard catches a shard given for another ref, a missing trailing newline and a wrong scope count', () => {
    const { index, shards } = shardSnapshot(many(), 400);
    expect(shards.length).toBeGreaterThan(2);
    expect(verifyShard(index.shards[0]!, shards[1]!.text).ok).toBe(false);
    const cut = shards[0]!.text.slice(0, -1);
    expect(verifyShard({ ...index.shards[0]!, digest: sha256(cut) }, cut).ok).toBe(false);
    expect(verifyShard({ ...index.shards[0]!, scopes: index.shards[0]!.scopes + 1 }, shards[0]!.text).ok).toBe(false);
  });
  it('verifyAssembled catches a missing shard, reordered shards and a duplicated shard', () => {
    const { index, shards } = shardSnapshot(many(), 400);
    const lines = shards.map((x) => x.text.split('\n').slice(0, -1));
    expect(lines.length).toBeGreaterThan(2);
    expect(verifyAssembled(index, lines.flat()).ok).toBe(true);
    expect(verifyAssembled(index, lines.slice(1).flat()).ok).toBe(false);
    expect(verifyAssembled(index, lines.slice(0, -1).flat()).ok).toBe(false);
    expect(verifyAssembled(index, [lines[1]!, lines[0]!, ...lines.slice(2)].flat()).ok).toBe(false);
    expect(verifyAssembled(index, [lines[0]!, lines[0]!, ...lines.slice(2)].flat()).ok).toBe(false);
  });
  it('parseSnapshotIndex round-trips and refuses what is not an index', () => {
    const { index } = shardSnapshot(many(), 400);
    expect(parseSnapshotIndex(JSON.stringify(index))).toEqual({ ok: true, value: index });
    expect(parseSnapshotIndex('{').ok).toBe(false);
    expect(parseSnapshotIndex('null').ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...index, kind: 'Snapshot' })).ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...index, shards: {} })).ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...index, generation: 1 })).ok).toBe(false);
  });
});

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
