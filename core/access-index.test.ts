import { describe, it, expect } from '@jest/globals';
import { AccessIndexBuilder, buildIndex, EMPTY_INDEX, subjectGroups, type AccessIndex, type IndexedScope } from './access-index.js';
import { compileSnapshot } from './snapshot/compile.js';
import { newProtectedScope } from './protected-scope.js';
import { hashToken, hashTokenHex, tokenIdOf, type TokenHash } from './token.js';
import type { Scope } from './scope.js';
import { parseAddressInto } from './network.js';

const H = (seed: string): TokenHash => hashToken(`index-test-${seed}`);
const hex = (seed: string) => hashTokenHex(`index-test-${seed}`);
const line = (scope: Scope, tokens: { hash: TokenHash; expiresAt?: string }[]) => JSON.stringify({ kind: scope.kind, value: scope.value, tokens });
const topic = (value: string): Scope => ({ kind: 'topic', value });
/** The scope's tokens as hex → expiry, as the index's table holds them. */
const tokensOf = (index: AccessIndex, owner: IndexedScope | undefined) => new Map(index.tokens.records().filter((r) => r.owner === owner).map((r) => [r.hex, r.expiresAt]));
/** Every scope's expiry of a token hash, by scope key. */
const holders = (index: AccessIndex, h: string) => Object.fromEntries(index.tokens.records().filter((r) => r.hex === h).map((r) => [r.owner.key, r.expiresAt]));

describe('buildIndex', () => {
  it('an index scope is a scope of the snapshot: the stand-in for a path closed by default is decide\'s own type, not a flagged IndexedScope', () => {
    // @ts-expect-error byDefault is no field of an IndexedScope (typecheck holds this)
    const entry: IndexedScope = { scope: topic('a'), key: 'topic:a', depth: 1, byDefault: true };
    expect(entry.key).toBe('topic:a');
  });
  it('indexes a compiled snapshot: counts, kinds and expiry', () => {
    const s = compileSnapshot([
      newProtectedScope(topic('a.b'), 'x', 'svc', [{ id: tokenIdOf(H('1')), hash: H('1'), createdAt: '2026-01-01T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z' }]),
      newProtectedScope({ kind: 'dataset', value: 'urn:x' }, 'y', 'svc', [{ id: tokenIdOf(H('2')), hash: H('2'), createdAt: '2026-01-01T00:00:00Z' }]),
      newProtectedScope({ kind: 'path', value: 'processes/svc' }, 'z', 'svc', [{ id: tokenIdOf(H('3')), hash: H('3'), createdAt: '2026-01-01T00:00:00Z' }]),
    ]);
    const r = buildIndex(s.generation, s.lines);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const index = r.value;
    expect(index.generation).toBe(s.generation);
    expect(index.scopeCount).toBe(3);
    expect(index.tokenCount).toBe(3);
    expect(tokensOf(index, index.datasets.get('urn:x'))).toEqual(new Map([[hex('2'), Infinity]]));
    expect(index.paths.get('processes/svc')?.depth).toBe(2);
    const b = index.topics.get('a')?.children.get('b')?.scope;
    expect(b?.key).toBe('topic:a.b');
    expect(b?.depth).toBe(2);
    expect(tokensOf(index, b)).toEqual(new Map([[hex('1'), Date.parse('2027-01-01T00:00:00Z')]]));
    expect(index.tokens.size).toBe(3);
    // The intermediate node `a` is not itself a closed scope.
    expect(index.topics.get('a')?.scope).toBeUndefined();
  });
  it('the token table holds one record per scope that lists a hash', () => {
    const r = buildIndex('g', [
      line(topic('a'), [{ hash: H('1'), expiresAt: '2027-01-01T00:00:00.000Z' }]),
      line(topic('b'), [{ hash: H('1') }]),
      line(topic('c'), [{ hash: H('2'), expiresAt: '2027-01-01T00:00:00.000Z' }]),
      line(topic('d'), [{ hash: H('2'), expiresAt: '2026-01-01T00:00:00.000Z' }]),
    ]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(holders(r.value, hex('1'))).toEqual({ 'topic:a': Date.parse('2027-01-01T00:00:00Z'), 'topic:b': Infinity });
    expect(holders(r.value, hex('2'))).toEqual({ 'topic:c': Date.parse('2027-01-01T00:00:00Z'), 'topic:d': Date.parse('2026-01-01T00:00:00Z') });
    expect(r.value.tokenCount).toBe(4);
    expect(r.value.tokens.size).toBe(4);
  });
  it('a hash listed twice in one scope is one record with the expiry listed last, counted once', () => {
    const r = buildIndex('g', [
      line(topic('a'), [
        { hash: H('1'), expiresAt: '2027-01-01T00:00:00.000Z' },
        { hash: H('2') },
        { hash: H('1'), expiresAt: '2026-01-01T00:00:00.000Z' },
      ]),
    ]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(holders(r.value, hex('1'))).toEqual({ 'topic:a': Date.parse('2026-01-01T00:00:00Z') });
    expect(r.value.tokenCount).toBe(2);
  });
  it('refuses a bad line, naming it', () => {
    const r = buildIndex('g', [line(topic('a'), [{ hash: H('1') }]), '{"kind":"topic","value":"b","tokens":[]}']);
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^scope line 2: /) });
  });
  it('refuses a scope that appears twice', () => {
    const r = buildIndex('g', [line(topic('a'), [{ hash: H('1') }]), line(topic('b'), [{ hash: H('2') }]), line(topic('a'), [{ hash: H('3') }])]);
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^scope line 3: topic:a appears twice/) });
  });
  it('the same value in different kinds is not a duplicate', () => {
    const b = new AccessIndexBuilder();
    expect(b.addLine(line({ kind: 'path', value: 'processes/svc' }, [{ hash: H('1') }])).ok).toBe(true);
    expect(b.addLine(line(topic('svc'), [{ hash: H('1') }])).ok).toBe(true);
    expect(b.build('g').scopeCount).toBe(2);
  });
});

describe('AccessIndexBuilder', () => {
  it('refuses duplicate scopes added directly', () => {
    const b = new AccessIndexBuilder();
    expect(b.add({ kind: 'dataset', value: 'urn:x', tokens: [{ hash: H('1') }] })).toEqual({ ok: true, value: true });
    expect(b.add({ kind: 'dataset', value: 'urn:x', tokens: [{ hash: H('2') }] })).toEqual({ ok: false, error: 'dataset:urn:x appears twice' });
    // The refused scope left no trace.
    const index = b.build('g');
    expect(index.scopeCount).toBe(1);
    expect(index.tokens.size).toBe(1);
    expect(holders(index, hex('2'))).toEqual({});
  });
  it('refuses a scope with a bad token hash, leaving no trace', () => {
    const b = new AccessIndexBuilder();
    const bad = { kind: 'topic', value: 'a', tokens: [{ hash: H('1') }, { hash: 'sha256:ABC' }] } as never;
    expect(b.add(bad)).toEqual({ ok: false, error: 'topic:a: bad token hash' });
    expect(b.add({ kind: 'topic', value: 'a', tokens: [{ hash: H('2') }] }).ok).toBe(true);
    const index = b.build('g');
    expect(index.tokens.records().map((t) => t.hex)).toEqual([hex('2')]);
  });
  it('builds incrementally: a topic and its parent share trie nodes', () => {
    const b = new AccessIndexBuilder();
    b.add({ kind: 'topic', value: 'a.b.c', tokens: [{ hash: H('1') }] });
    b.add({ kind: 'topic', value: 'a', tokens: [{ hash: H('2') }] });
    const index = b.build('g');
    expect(index.topics.size).toBe(1);
    expect(index.topics.get('a')?.scope?.depth).toBe(1);
    expect(index.topics.get('a')?.children.get('b')?.children.get('c')?.scope?.depth).toBe(3);
  });
});

describe('EMPTY_INDEX', () => {
  it('has nothing closed', () => {
    expect(EMPTY_INDEX.scopeCount).toBe(0);
    expect(EMPTY_INDEX.tokenCount).toBe(0);
    expect(EMPTY_INDEX.topics.size + EMPTY_INDEX.datasets.size + EMPTY_INDEX.paths.size + EMPTY_INDEX.tokens.size).toBe(0);
  });
});

describe('networks in the index', () => {
  it('each entry holds its networks compiled for the matcher; scopes without networks hold none', () => {
    const r = buildIndex('g', [
      '{"kind":"topic","value":"a.b","tokens":[],"networks":["2001:db8::/32","203.0.113.0/24","203.0.113.7/32"]}',
      line(topic('c'), [{ hash: H('1') }]),
    ]);
    if (!r.ok) throw new Error(r.error);
    const entry = r.value.topics.get('a')!.children.get('b')!.scope!;
    const words = new Uint32Array(4);
    expect(parseAddressInto('203.0.113.7', words)).toBe(4);
    expect(entry.networks?.find(4, words)?.cidr).toBe('203.0.113.7/32');
    expect(parseAddressInto('::ffff:203.0.113.9', words)).toBe(4);
    expect(entry.networks?.find(4, words)?.cidr).toBe('203.0.113.0/24');
    expect(parseAddressInto('198.51.100.1', words)).toBe(4);
    expect(entry.networks?.find(4, words)).toBeUndefined();
    expect(r.value.topics.get('c')!.scope!.networks).toBeUndefined();
    expect(r.value.scopeCount).toBe(2);
  });
  it('scopes that differ only in case share one entry, which holds the networks of both', () => {
    const r = buildIndex('g', [
      '{"kind":"topic","value":"A.b","tokens":[],"networks":["203.0.113.0/24"]}',
      '{"kind":"topic","value":"a.b","tokens":[],"networks":["2001:db8::/32","203.0.113.0/24"]}',
    ]);
    if (!r.ok) throw new Error(r.error);
    const entry = r.value.topics.get('a')!.children.get('b')!.scope!;
    expect(entry.caseFolded).toBe(true);
    expect(entry.networks?.networks.map((n) => n.cidr)).toEqual(['2001:db8::/32', '203.0.113.0/24']);
  });
});

describe('subjectGroups', () => {
  it('every Group subject of every kind of closed scope, prefix paths and nested topics included; users are not groups', () => {
    const withSubjects = (scope: Scope, subjects: { kind: 'User' | 'Group'; name: string }[]) => {
      const o = newProtectedScope(scope, `o-${scope.value.replace(/[^a-z0-9]/g, '-')}`, 'svc', []);
      return { ...o, spec: { ...o.spec, subjects } };
    };
    const s = compileSnapshot([
      withSubjects(topic('a.b'), [{ kind: 'Group', name: 'g-topic' }, { kind: 'User', name: 'alice' }]),
      withSubjects(topic('a.b.c.d'), [{ kind: 'Group', name: 'g-deep' }]),
      withSubjects({ kind: 'dataset', value: 'urn:x' }, [{ kind: 'Group', name: 'g-dataset' }]),
      withSubjects({ kind: 'path', value: 'processes/svc' }, [{ kind: 'Group', name: 'g-process' }]),
      withSubjects({ kind: 'path', value: 'wis2downloader' }, [{ kind: 'Group', name: 'g-prefix' }, { kind: 'Group', name: 'g-topic' }]),
    ]);
    const r = buildIndex(s.generation, s.lines);
    if (!r.ok) throw new Error(r.error);
    expect([...subjectGroups(r.value)].sort()).toEqual(['g-dataset', 'g-deep', 'g-prefix', 'g-process', 'g-topic']);
    expect(subjectGroups(EMPTY_INDEX).size).toBe(0);
  });
});
