import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, type AccessIndex, type IndexedScope, type TopicNode } from './access-index.js';
import { IncrementalIndex, type ShardLines } from './incremental-index.js';
import { formatImportedHash } from './imported-hash.js';
import type { ProtectedScope } from './protected-scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import type { Snapshot } from './snapshot/lines.js';
import { shardSnapshot } from './snapshot/shards.js';
import { hashToken, hashTokenDigest, tokenIdOf, type TokenHash } from './token.js';

/**
 * The index as plain, order-independent data (Infinity written out), for deep comparison: the token table
 * as sorted (hash, scope key, expiry) triples, each owner checked to be the very object the maps hold.
 */
function plain(index: AccessIndex): unknown {
  const scope = (s: IndexedScope | undefined) => s && {
    key: s.key, depth: s.depth, scope: s.scope, imported: s.imported?.map((r) => r.hash).sort(), networks: s.networks?.networks.map((n) => n.cidr),
  };
  const held = new Set<IndexedScope>([...index.datasets.values(), ...index.paths.values()]);
  const walk = (n: TopicNode): void => {
    if (n.scope) held.add(n.scope);
    n.children.forEach(walk);
  };
  index.topics.forEach(walk);
  const node = (n: TopicNode): unknown => ({ scope: scope(n.scope), children: [...n.children].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, c]) => [k, node(c)]) });
  return {
    generation: index.generation,
    scopeCount: index.scopeCount,
    tokenCount: index.tokenCount,
    topics: [...index.topics].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, c]) => [k, node(c)]),
    prefixes: index.prefixes && [...index.prefixes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, c]) => [k, node(c)]),
    datasets: [...index.datasets].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, s]) => [k, scope(s)]),
    paths: [...index.paths].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, s]) => [k, scope(s)]),
    tokens: index.tokens
      .records()
      .map((r) => [r.hex, held.has(r.owner) ? r.owner.key : `not in the index: ${r.owner.key}`, String(r.expiresAt)])
      .sort(),
    tokenTableSize: index.tokens.size,
  };
}

const SCOPES = [
  { topicHierarchy: 'a' },
  { topicHierarchy: 'a.b' },
  { topicHierarchy: 'a.b.c' },
  { topicHierarchy: 'a.x' },
  { topicHierarchy: 'z.y' },
  { metadataId: 'urn:a' },
  { metadataId: 'urn:a:b' },
  { path: 'collections/stations' },
  { path: 'processes/svc' },
  { path: 'processes/svc-x' },
  // Case variants: one entry with the scope above (the decision folds case), rebuilt whole when either changes.
  { topicHierarchy: 'A.b' },
  { metadataId: 'urn:A' },
  { path: 'processes/SVC' },
  // A prefix path: any change to one is left to the full build.
  { path: 'wis2downloader' },
];
const SECRETS = ['s0', 's1', 's2', 's3', 's4'].map((s) => `${s}-0123456789abcdef`);
const EXPIRIES = [undefined, '2026-01-01T00:00:00Z', '2030-01-01T00:00:00Z'];
const NETWORKS = ['203.0.113.0/24', '203.0.113.7/32', '2001:db8::/32'];

const stateArb = fc.array(
  fc.record({
    scope: fc.nat(SCOPES.length - 1),
    tokens: fc.array(fc.record({ secret: fc.nat(SECRETS.length - 1), exp: fc.nat(EXPIRIES.length - 1), imported: fc.boolean() }), { minLength: 0, maxLength: 3 }),
    closed: fc.boolean(),
    networks: fc.uniqueArray(fc.nat(NETWORKS.length - 1), { maxLength: 2 }),
  }),
  { maxLength: 12 },
);

/** An imported (wis2box-auth) hash of a secret: one iteration, a salt made from the secret (the index never derives). */
function importedHash(secret: string): TokenHash {
  const salt = Buffer.from(hashTokenDigest(`salt:${secret}`).subarray(0, 24));
  return formatImportedHash(1, salt, pbkdf2Sync(secret, salt, 1, 32, 'sha256'));
}

function shardsOf(state: { scope: number; tokens: { secret: number; exp: number; imported?: boolean }[]; closed?: boolean; networks?: number[] }[], maxBytes: number) {
  const objects = state.map((o, i) => {
    const tokens = o.tokens.map((t) => {
      const hash = t.imported ? importedHash(SECRETS[t.secret]!) : hashToken(SECRETS[t.secret]!);
      const exp = EXPIRIES[t.exp];
      return { id: tokenIdOf(hash), hash, createdAt: '2025-01-01T00:00:00Z', ...(exp ? { expiresAt: exp } : {}) };
    });
    return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: `o${i}` }, spec: {
      ...SCOPES[o.scope], tokens, ...(o.closed ? { closed: true } : {}), ...(o.networks?.length ? { networks: o.networks.map((n) => ({ cidr: NETWORKS[n]! })) } : {}),
    } } as unknown as ProtectedScope;
  });
  return sharded(compileSnapshot(objects), maxBytes);
}

/** `snapshot` in shards of at most `maxBytes`, as the reader hands them over (each shard's lines). */
function sharded(snapshot: Snapshot, maxBytes: number) {
  const { snapshotIndex, shards } = shardSnapshot(snapshot, maxBytes);
  const indexed: ShardLines[] = shards.map((s) => ({ digest: s.digest, lines: s.text.split('\n').slice(0, -1) }));
  return { generation: snapshotIndex.generation, lines: snapshot.lines, shards: indexed };
}

type Generation = { readonly generation: string; readonly shards: readonly ShardLines[] };

/** `inc` updated to `g`; a refusal fails the test. */
async function update(inc: IncrementalIndex, g: Generation, tick?: () => Promise<void>) {
  const r = await inc.update(g.generation, g.shards, tick);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** What AccessIndexBuilder builds of the same lines: what an update must equal. */
function built(g: { readonly generation: string; readonly lines: readonly string[] }): AccessIndex {
  const r = buildIndex(g.generation, g.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A fresh index serving `first` (updated and committed), then updated to `second`: both updates. */
async function reload(first: Generation, second: Generation, tick?: () => Promise<void>) {
  const inc = new IncrementalIndex();
  const a = await update(inc, first);
  a.commit();
  return { a, b: await update(inc, second, tick) };
}

describe('IncrementalIndex', () => {
  it('builds, by difference, exactly what AccessIndexBuilder builds, without touching the previous index', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(stateArb, fc.integer({ min: 60, max: 600 }), fc.boolean()), { minLength: 1, maxLength: 12 }), async (steps) => {
        const inc = new IncrementalIndex();
        for (const [state, maxBytes, commit] of steps) {
          const { generation, lines, shards } = shardsOf(state, maxBytes);
          const before = inc.current;
          const frozen = before && JSON.stringify(plain(before));
          const r = await update(inc, { generation, shards });
          expect(plain(r.index)).toEqual(plain(built({ generation, lines })));
          if (before) expect(JSON.stringify(plain(before))).toBe(frozen);
          if (commit) r.commit();
        }
      }),
      { numRuns: 300 },
    );
  });

  it('updates by difference a change to a prefix path (wis2downloader), as to any other scope', async () => {
    const state = Array.from({ length: 10 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0 }] }));
    state.push({ scope: SCOPES.findIndex((x) => x.path === 'wis2downloader'), tokens: [{ secret: 0, exp: 0 }] });
    const first = shardsOf(state, 200);
    state[10] = { ...state[10]!, tokens: [{ secret: 0, exp: 0 }, { secret: 1, exp: 2 }] };
    const second = shardsOf(state, 200);
    const { a, b } = await reload(first, second);
    expect(b.incremental).toBe(true);
    expect(plain(b.index)).toEqual(plain(built(second)));
    expect(b.index.prefixes).not.toBe(a.index.prefixes);
  });

  it('updates by difference a change to a scope\'s networks: the new entry matches the new list, the previous index keeps its own', async () => {
    const inc = new IncrementalIndex();
    const state = Array.from({ length: 10 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0 }] }));
    const a = await inc.update(shardsOf(state, 200).generation, shardsOf(state, 200).shards);
    if (!a.ok) throw new Error(a.error);
    a.value.commit();
    state[1] = { scope: 1, tokens: [], networks: [0, 2] } as (typeof state)[number];
    const second = shardsOf(state, 200);
    const b = await inc.update(second.generation, second.shards);
    if (!b.ok) throw new Error(b.error);
    expect(b.value.incremental).toBe(true);
    const entry = b.value.index.topics.get('a')!.children.get('b')!.scope!;
    expect(entry.networks?.networks.map((n) => n.cidr)).toEqual(['2001:db8::/32', '203.0.113.0/24']);
    expect(a.value.index.topics.get('a')!.children.get('b')!.scope!.networks).toBeUndefined();
    const full = buildIndex(second.generation, second.lines);
    if (!full.ok) throw new Error(full.error);
    expect(plain(b.value.index)).toEqual(plain(full.value));
  });

  it('parses each line once, when it adds it: lines that only moved between shards are not parsed again', async () => {
    // Lines of ~150 bytes in shards of 400: a longer line pushes the lines after it into the next shards.
    const state = Array.from({ length: 10 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0 }] }));
    const first = shardsOf(state, 400);
    state[1] = { scope: 1, tokens: [{ secret: 1, exp: 0 }, { secret: 2, exp: 2 }, { secret: 3, exp: 1 }] };
    const second = shardsOf(state, 400);
    // The new shards hold the changed line and lines that only moved.
    const come = second.shards.filter((s) => !first.shards.some((t) => t.digest === s.digest)).flatMap((s) => s.lines);
    expect(come.length).toBeGreaterThan(2);
    const { a, b } = await reload(first, second);
    expect(a.parsedLines).toBe(10);
    expect([b.incremental, b.parsedLines]).toEqual([true, 1]);
    expect(plain(b.index)).toEqual(plain(built(second)));
  });

  it('refuses a line that is no scope line, naming it in the whole snapshot, whether it is added to an index or builds one', async () => {
    const state = Array.from({ length: 6 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0 }] }));
    const good = shardsOf(state, 400);
    const bad = good.shards.map((s, i) => (i === 1 ? { digest: 'bad', lines: [s.lines[0]!, '{"kind":"topic","value":"a..b","tokens":[]}', ...s.lines.slice(2)] } : s));
    const line = good.shards[0]!.lines.length + 2;
    const fresh = await new IncrementalIndex().update(good.generation, bad);
    expect(fresh).toEqual({ ok: false, error: expect.stringMatching(new RegExp(`^scope line ${line}: `)) });
    const inc = new IncrementalIndex();
    const a = await update(inc, good);
    a.commit();
    expect(await inc.update('next', bad)).toEqual({ ok: false, error: expect.stringMatching(new RegExp(`^scope line ${line}: `)) });
    expect(inc.current).toBe(a.index);
  });

  it('updates by difference when little changed', async () => {
    const state = Array.from({ length: 10 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0 }] }));
    const first = shardsOf(state, 200);
    state[3] = { scope: 3, tokens: [{ secret: 1, exp: 2 }] };
    const { a, b } = await reload(first, shardsOf(state, 200));
    expect([a.incremental, b.incremental]).toEqual([false, true]);
  });

  it('counts imported records in tokenCount after an incremental reload, as a full build does', async () => {
    const state = Array.from({ length: 10 }, (_, i) => ({ scope: i, tokens: [{ secret: i % 5, exp: 0, imported: i % 2 === 0 }] }));
    const first = shardsOf(state, 200);
    // One scope gains an imported record, another loses its imported one for a SHA-256 token.
    state[3] = { scope: 3, tokens: [{ secret: 1, exp: 0, imported: false }, { secret: 2, exp: 0, imported: true }] };
    state[4] = { scope: 4, tokens: [{ secret: 4, exp: 0, imported: false }] };
    const second = shardsOf(state, 200);
    const { a, b } = await reload(first, second);
    expect(a.index.tokenCount).toBe(10);
    expect(b.incremental).toBe(true);
    expect([b.index.tokenCount, built(second).tokenCount]).toEqual([11, 11]);
  });

  it('fills the new token table in slices, yielding between them, and shares unchanged scopes', async () => {
    const objects = (changed: string) =>
      Array.from({ length: 600 }, (_, i) => {
        const tokens = Array.from({ length: 10 }, (_, j) => {
          const hash = hashToken(`big-${i}-${j}-${i === 7 ? changed : ''}`);
          return { id: tokenIdOf(hash), hash, createdAt: '2025-01-01T00:00:00Z' };
        });
        return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: `o${i}` }, spec: { topicHierarchy: `t.s${i}`, tokens } } as unknown as ProtectedScope;
      });
    const shardsFor = (changed: string) => sharded(compileSnapshot(objects(changed)), 20000);
    let ticks = 0;
    const { a, b } = await reload(shardsFor('a'), shardsFor('b'), async () => void ticks++);
    expect(b.incremental).toBe(true);
    expect(ticks).toBeGreaterThanOrEqual(1);
    expect(b.index.tokenCount).toBe(6000);
    expect(b.index.tokens.size).toBe(6000);
    // The unchanged scope is the same object in both indexes; the changed one is new, and only it owns the new tokens.
    const scopeOf = (index: AccessIndex, i: number) => index.topics.get('t')!.children.get(`s${i}`)!.scope!;
    expect(scopeOf(b.index, 3)).toBe(scopeOf(a.index, 3));
    expect(scopeOf(b.index, 7)).not.toBe(scopeOf(a.index, 7));
    const digest = hashTokenDigest('big-7-0-b');
    expect(b.index.tokens.ownerAt(b.index.tokens.first(digest))).toBe(scopeOf(b.index, 7));
    expect(a.index.tokens.first(digest)).toBe(-1);
  });

  it('refuses a snapshot with a scope twice, as the builder does', async () => {
    const inc = new IncrementalIndex();
    const { generation, shards } = shardsOf([{ scope: 0, tokens: [{ secret: 0, exp: 0 }] }], 1000);
    const dup: ShardLines[] = [...shards, { ...shards[0]!, digest: 'other' }];
    const r = await inc.update(generation, dup);
    expect(r.ok).toBe(false);
  });
});
