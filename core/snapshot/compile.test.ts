import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { compileSnapshot, compileSnapshotSteps, groupByScope } from './compile.js';
import { serializeSnapshot } from './file.js';
import { generationOf, parseScopeLine, type Snapshot } from './lines.js';
import { newProtectedScope, scopeOf, type ProtectedScope, type TokenRecord } from '../protected-scope.js';
import { buildIndex } from '../access-index.js';
import { dataset, H, hashPool, obj, objectsArb, path, rec, sha256, topic } from '../../test/support/snapshots.js';

// docs/architecture.md "The snapshot": deterministic compilation, merge of objects for one scope, open scopes left out.

/** Parses a snapshot's lines back into plain scope objects for assertions. */
const scopesOf = (s: Snapshot) => s.lines.map((l) => JSON.parse(l) as { kind: string; value: string; tokens: { hash: string; expiresAt?: string }[] });

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
  it('networks: the union over a scope\'s objects, each once, sorted, after the subjects; a scope with only networks is closed', () => {
    const s = compileSnapshot([
      obj(topic('a.b'), [], ['203.0.113.7/32', '2001:db8::/32']),
      obj(topic('a.b'), [rec(H('1'))], ['198.51.100.0/24', '203.0.113.7/32']),
      obj(topic('c'), [], ['203.0.113.0/24']),
      obj(topic('open'), [], []),
    ]);
    expect(s.lines).toEqual([
      `{"kind":"topic","value":"a.b","tokens":[{"hash":"${H('1')}"}],"networks":["198.51.100.0/24","2001:db8::/32","203.0.113.7/32"]}`,
      '{"kind":"topic","value":"c","tokens":[],"networks":["203.0.113.0/24"]}',
    ]);
    expect(s.tokenCount).toBe(1);
  });
  it('property: adding a network to one object changes its scope\'s line alone; every other scope\'s line stays byte for byte', () => {
    const key = (line: string) => { const x = JSON.parse(line) as { kind: string; value: string }; return `${x.kind}:${x.value}`; };
    fc.assert(
      fc.property(objectsArb.filter((o) => o.length > 0), fc.nat(), fc.constantFrom('192.0.2.0/24', '203.0.113.7/32', '2001:db8:1::/48'), (objects, pick, cidr) => {
        const i = pick % objects.length;
        const target = objects[i]!;
        const edited = objects.map((o, j) => (j === i ? { ...o, spec: { ...o.spec, networks: [...(o.spec.networks ?? []), { cidr }] } } : o));
        const before = new Map(compileSnapshot(objects).lines.map((l) => [key(l), l]));
        const after = new Map(compileSnapshot(edited).lines.map((l) => [key(l), l]));
        const own = `${scopeOf(target.spec).kind}:${scopeOf(target.spec).value}`;
        const others = (m: Map<string, string>) => [...m].filter(([k]) => k !== own);
        expect(others(after)).toEqual(others(before));
        expect(after.get(own)).toContain(`"${cidr}"`);
      }),
    );
  });
  it('a network that is not in canonical form (an object the API server should have refused) grants nothing and closes the scope', () => {
    const s = compileSnapshot([obj(topic('a'), [], ['203.0.113.9/24'])]);
    expect(s.lines).toEqual(['{"kind":"topic","value":"a","closed":true,"tokens":[]}']);
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

