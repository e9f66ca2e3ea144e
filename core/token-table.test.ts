import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { TokenTable, TokenTableBuilder, type TokenTableRecord } from './token-table.js';

interface Owner {
  readonly name: string;
}
const A: Owner = { name: 'a' };
const B: Owner = { name: 'b' };
const C: Owner = { name: 'c' };

const sha = (seed: string) => createHash('sha256').update(`token-table-test-${seed}`).digest('hex');
const bytes = (hex: string) => Buffer.from(hex, 'hex');
/** A digest whose first 4 bytes (its home slot) are `prefix`: forced collisions. */
const withPrefix = (prefix: string, seed: string) => prefix + sha(seed).slice(prefix.length);

/** Every record of a digest, walked the way the decision walks them. */
function walk<O>(table: TokenTable<O>, hex: string): { owner: O; expiresAt: number }[] {
  const d = bytes(hex);
  const out: { owner: O; expiresAt: number }[] = [];
  for (let slot = table.first(d); slot >= 0; slot = table.next(d, slot)) out.push({ owner: table.ownerAt(slot), expiresAt: table.expiresAt(slot) });
  return out;
}

const byOwner = <O extends Owner>(rs: readonly { owner: O; expiresAt: number }[]) => [...rs].sort((x, y) => (x.owner.name < y.owner.name ? -1 : 1));

describe('TokenTable', () => {
  it('empty: no digest has a record', () => {
    const t = TokenTable.empty<Owner>();
    expect(t.size).toBe(0);
    expect(t.capacity).toBe(16);
    expect(t.first(bytes(sha('x')))).toBe(-1);
    expect(t.records()).toEqual([]);
  });

  it('one token in several scopes: one record per scope, each with its own expiry', () => {
    const b = new TokenTableBuilder<Owner>();
    const h = sha('shared');
    expect(b.add(h, A, 1000)).toBe(true);
    expect(b.add(h, B, Infinity)).toBe(true);
    expect(b.add(sha('other'), A, 5)).toBe(true);
    expect(b.add(h, C, 2000)).toBe(true);
    const t = b.build();
    expect(t.size).toBe(4);
    expect(byOwner(walk(t, h))).toEqual([
      { owner: A, expiresAt: 1000 },
      { owner: B, expiresAt: Infinity },
      { owner: C, expiresAt: 2000 },
    ]);
    expect(walk(t, sha('other'))).toEqual([{ owner: A, expiresAt: 5 }]);
    // Owners are held by identity, each once.
    expect(t.scopes).toEqual([A, B, C]);
  });

  it('the same digest twice for one owner is one record: the last expiry wins', () => {
    const b = new TokenTableBuilder<Owner>();
    const h = sha('twice');
    expect(b.add(h, A, 1000)).toBe(true);
    expect(b.add(h, B, 7)).toBe(true);
    expect(b.add(h, A, 500)).toBe(false);
    expect(b.size).toBe(2);
    const t = b.build();
    expect(byOwner(walk(t, h))).toEqual([
      { owner: A, expiresAt: 500 },
      { owner: B, expiresAt: 7 },
    ]);
  });

  it('digests with equal first 4 bytes collide, and are still told apart (wrapping past the last slot too)', () => {
    for (const prefix of ['00000000', 'ffffffff', 'deadbeef']) {
      const b = new TokenTableBuilder<Owner>(4); // capacity 16: ffffffff homes in the last slot and wraps
      const hs = [0, 1, 2, 3, 4, 5].map((i) => withPrefix(prefix, `c${i}`));
      hs.forEach((h, i) => b.add(h, i % 2 ? A : B, i));
      const t = b.build();
      expect(t.capacity).toBe(16);
      hs.forEach((h, i) => expect(walk(t, h)).toEqual([{ owner: i % 2 ? A : B, expiresAt: i }]));
      // Same home slot, not present: the probe walks the cluster and stops at the empty slot after it.
      expect(t.first(bytes(withPrefix(prefix, 'absent')))).toBe(-1);
      // A digest differing only in its last byte is a different digest.
      const last = hs[0]!.slice(0, 62) + (hs[0]!.endsWith('00') ? '01' : '00');
      expect(t.first(bytes(last))).toBe(-1);
    }
  });

  it('grows by rehashing when it fills up, keeping at least half of the slots empty', () => {
    const b = new TokenTableBuilder<Owner>();
    const n = 1000;
    for (let i = 0; i < n; i++) b.add(sha(`g${i}`), i % 3 === 0 ? A : i % 3 === 1 ? B : C, i);
    const t = b.build();
    expect(t.size).toBe(n);
    expect(t.capacity).toBe(2048);
    for (let i = 0; i < n; i++) expect(walk(t, sha(`g${i}`))).toEqual([{ owner: i % 3 === 0 ? A : i % 3 === 1 ? B : C, expiresAt: i }]);
    expect(t.first(bytes(sha('g-absent')))).toBe(-1);
  });

  it('a builder sized up front does not grow', () => {
    const b = new TokenTableBuilder<Owner>(100);
    for (let i = 0; i < 100; i++) b.add(sha(`s${i}`), A, i);
    expect(b.build().capacity).toBe(256);
    expect(new TokenTableBuilder<Owner>(8).build().capacity).toBe(16);
    expect(new TokenTableBuilder<Owner>(9).build().capacity).toBe(32);
  });

  it('keeps expiries as given: Infinity for never, past and future alike', () => {
    const b = new TokenTableBuilder<Owner>();
    b.add(sha('never'), A, Infinity);
    b.add(sha('past'), A, Date.parse('2020-01-01T00:00:00Z'));
    b.add(sha('future'), A, Date.parse('2040-01-01T00:00:00.123Z'));
    const t = b.build();
    expect(walk(t, sha('never'))[0]!.expiresAt).toBe(Infinity);
    expect(walk(t, sha('past'))[0]!.expiresAt).toBe(Date.parse('2020-01-01T00:00:00Z'));
    expect(walk(t, sha('future'))[0]!.expiresAt).toBe(Date.parse('2040-01-01T00:00:00.123Z'));
  });

  it('answers -1 for absent digests and for anything that is not 32 bytes', () => {
    const b = new TokenTableBuilder<Owner>();
    b.add(sha('present'), A, 1);
    const t = b.build();
    expect(t.first(bytes(sha('absent')))).toBe(-1);
    expect(t.first(bytes(sha('present')).subarray(0, 31))).toBe(-1);
    expect(t.first(new Uint8Array(0))).toBe(-1);
    expect(t.first(Buffer.concat([bytes(sha('present')), Buffer.of(0)]))).toBe(-1);
    // A digest inside a larger buffer (as a pooled Buffer may be) is compared from its own offset.
    const inside = Buffer.concat([Buffer.of(9, 9, 9), bytes(sha('present'))]).subarray(3);
    expect(t.first(inside)).toBeGreaterThanOrEqual(0);
  });

  it.each([
    ['63 characters', 'a'.repeat(63)],
    ['65 characters', 'a'.repeat(65)],
    ['uppercase', 'A'.repeat(64)],
    ['non-hex', `${'a'.repeat(63)}g`],
    ['the sha256: prefix', `sha256:${'a'.repeat(57)}`],
    ['empty', ''],
  ])('refuses a digest that is not 64 lowercase hex (%s)', (_what, hex) => {
    const b = new TokenTableBuilder<Owner>();
    expect(() => b.add(hex, A, 1)).toThrow(RangeError);
    expect(b.size).toBe(0);
  });

  it('a built table no longer takes records (its arrays are the table’s)', () => {
    const b = new TokenTableBuilder<Owner>();
    b.build();
    expect(() => b.add(sha('late'), A, 1)).toThrow();
  });

  it('addDigest takes the 32 bytes at an offset, like add takes hex', () => {
    const b = new TokenTableBuilder<Owner>();
    const buf = Buffer.concat([Buffer.of(1, 2, 3), bytes(sha('raw')), Buffer.of(4)]);
    expect(b.addDigest(buf, 3, A, 9)).toBe(true);
    expect(b.add(sha('raw'), A, 10)).toBe(false);
    expect(() => b.addDigest(buf, 5, A, 1)).toThrow(RangeError);
    expect(() => b.addDigest(buf, -1, A, 1)).toThrow(RangeError);
    expect(walk(b.build(), sha('raw'))).toEqual([{ owner: A, expiresAt: 10 }]);
  });

  it('copyInto copies the kept owners’ records, range by range, and leaves the source as it was', () => {
    const b = new TokenTableBuilder<Owner>();
    for (let i = 0; i < 50; i++) b.add(sha(`k${i}`), [A, B, C][i % 3]!, i);
    b.add(sha('k0'), B, 100);
    const source = b.build();
    const before = source.records();
    const next = new TokenTableBuilder<Owner>(source.size);
    for (let r = 0; r < source.size; r += 7) source.copyInto(next, (o) => o !== B, r, r + 7);
    next.add(sha('k0'), A, 1000); // an owner's record again: the last expiry wins
    next.add(sha('new'), B, 5);
    const t = next.build();
    expect(source.records()).toEqual(before);
    const want = before.filter((r) => r.owner !== B).map((r) => (r.hex === sha('k0') ? { ...r, expiresAt: 1000 } : r));
    const sort = (rs: readonly TokenTableRecord<Owner>[]) => rs.map((r) => [r.hex, r.owner.name, r.expiresAt]).sort();
    expect(sort(t.records())).toEqual(sort([...want, { hex: sha('new'), owner: B, expiresAt: 5 }]));
    expect(t.size).toBe(want.length + 1);
  });

  it('records() lists every record, as hex', () => {
    const b = new TokenTableBuilder<Owner>();
    b.add(sha('r1'), A, 1);
    b.add(sha('r1'), B, 2);
    b.add(sha('r2'), B, Infinity);
    const sort = (rs: TokenTableRecord<Owner>[]) => rs.map((r) => [r.hex, r.owner.name, r.expiresAt]).sort();
    expect(sort(b.build().records())).toEqual(sort([
      { hex: sha('r1'), owner: A, expiresAt: 1 },
      { hex: sha('r1'), owner: B, expiresAt: 2 },
      { hex: sha('r2'), owner: B, expiresAt: Infinity },
    ]));
  });

  it('property: answers like a Map<hex, [owner, expiry][]> with the last expiry per owner', () => {
    // A small pool with forced collisions (shared first 4 bytes, some in the last slots) and plain digests.
    const pool = [
      ...[0, 1, 2].map((i) => withPrefix('00000000', `p${i}`)),
      ...[0, 1, 2].map((i) => withPrefix('ffffffff', `q${i}`)),
      ...[0, 1, 2].map((i) => withPrefix('0000000f', `r${i}`)),
      ...[0, 1, 2, 3, 4, 5].map((i) => sha(`u${i}`)),
    ];
    const owners: Owner[] = ['o0', 'o1', 'o2', 'o3'].map((name) => ({ name }));
    const expiry = fc.oneof(fc.constant(Infinity), fc.integer({ min: 0, max: 2 ** 45 }));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(pool.length - 1), fc.nat(owners.length - 1), expiry), { maxLength: 60 }),
        fc.nat(40),
        (adds, expected) => {
          const reference = new Map<string, Map<Owner, number>>();
          const b = new TokenTableBuilder<Owner>(expected);
          for (const [h, o, at] of adds) {
            const hex = pool[h]!;
            const owner = owners[o]!;
            const m = reference.get(hex) ?? new Map<Owner, number>();
            const isNew = !m.has(owner);
            m.set(owner, at);
            reference.set(hex, m);
            expect(b.add(hex, owner, at)).toBe(isNew);
          }
          const t = b.build();
          let size = 0;
          for (const hex of pool) {
            const want = [...(reference.get(hex) ?? [])].map(([owner, expiresAt]) => ({ owner, expiresAt }));
            size += want.length;
            expect(byOwner(walk(t, hex))).toEqual(byOwner(want));
          }
          expect(t.size).toBe(size);
          expect(t.records()).toHaveLength(size);
          expect(t.capacity).toBeGreaterThanOrEqual(2 * size);
          expect(t.first(bytes(withPrefix('00000000', 'never-added')))).toBe(-1);
        },
      ),
      { numRuns: 500 },
    );
  });
});
