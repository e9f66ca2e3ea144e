import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { compileSnapshot } from './compile.js';
import { generationOf, type Snapshot } from './lines.js';
import { parseSnapshotIndex, shardSnapshot, verifyAssembled, verifyAssembledSteps, verifyShard } from './shards.js';
import { API_GROUP_VERSION } from '../protected-scope.js';
import { H, obj, rec, sha256, snapshotArb, topic } from '../../test/support/snapshots.js';

// docs/architecture.md "The snapshot": shards of whole lines, each verified by its digest, the whole by the generation.

describe('shards', () => {
  const concat = (s: Snapshot) => s.lines.map((l) => `${l}\n`).join('');

  it('property: concatenation equals the lines; each shard ≤ maxBytes unless a single line is bigger; refs are right', () => {
    fc.assert(
      fc.property(snapshotArb, fc.integer({ min: 1, max: 1500 }), (s, maxBytes) => {
        const { snapshotIndex, shards } = shardSnapshot(s, maxBytes);
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
        expect(snapshotIndex).toEqual({
          apiVersion: API_GROUP_VERSION,
          kind: 'SnapshotIndex',
          generation: s.generation,
          scopes: s.scopeCount,
          tokens: s.tokenCount,
          shards: shards.map(({ digest, scopes, bytes }) => ({ digest, scopes, bytes })),
        });
        // Every shard verifies, and the assembled lines verify against the snapshot index.
        const assembled: string[] = [];
        for (const [i, shard] of shards.entries()) {
          const r = verifyShard(snapshotIndex.shards[i]!, shard.text);
          expect(r.ok).toBe(true);
          if (r.ok) assembled.push(...r.value);
        }
        expect(assembled).toEqual(s.lines);
        expect(verifyAssembled(snapshotIndex, assembled)).toEqual({ ok: true, value: true });
      }),
    );
  });
  it('a large limit gives one shard; an empty snapshot gives none', () => {
    const s = compileSnapshot([obj(topic('a'), [rec(H('1'))]), obj(topic('b'), [rec(H('2'))])]);
    expect(shardSnapshot(s, 1 << 20).shards).toHaveLength(1);
    const empty = shardSnapshot(compileSnapshot([]), 100);
    expect(empty.shards).toEqual([]);
    expect(verifyAssembled(empty.snapshotIndex, [])).toEqual({ ok: true, value: true });
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
    const { snapshotIndex, shards } = shardSnapshot(many(), 400);
    const text = shards[0]!.text;
    for (let pos = 0; pos < text.length; pos++) {
      const flipped = text.slice(0, pos) + String.fromCharCode(text.charCodeAt(pos) ^ 0x01) + text.slice(pos + 1);
      expect(verifyShard(snapshotIndex.shards[0]!, flipped).ok).toBe(false);
    }
  });
  it('verifyShard catches a shard given for another ref, a missing trailing newline and a wrong scope count', () => {
    const { snapshotIndex, shards } = shardSnapshot(many(), 400);
    expect(shards.length).toBeGreaterThan(2);
    expect(verifyShard(snapshotIndex.shards[0]!, shards[1]!.text).ok).toBe(false);
    const cut = shards[0]!.text.slice(0, -1);
    expect(verifyShard({ ...snapshotIndex.shards[0]!, digest: sha256(cut) }, cut).ok).toBe(false);
    expect(verifyShard({ ...snapshotIndex.shards[0]!, scopes: snapshotIndex.shards[0]!.scopes + 1 }, shards[0]!.text).ok).toBe(false);
  });
  it('verifyAssembled catches a missing shard, reordered shards and a duplicated shard', () => {
    const { snapshotIndex, shards } = shardSnapshot(many(), 400);
    const lines = shards.map((x) => x.text.split('\n').slice(0, -1));
    expect(lines.length).toBeGreaterThan(2);
    expect(verifyAssembled(snapshotIndex, lines.flat()).ok).toBe(true);
    expect(verifyAssembled(snapshotIndex, lines.slice(1).flat()).ok).toBe(false);
    expect(verifyAssembled(snapshotIndex, lines.slice(0, -1).flat()).ok).toBe(false);
    expect(verifyAssembled(snapshotIndex, [lines[1]!, lines[0]!, ...lines.slice(2)].flat()).ok).toBe(false);
    expect(verifyAssembled(snapshotIndex, [lines[0]!, lines[0]!, ...lines.slice(2)].flat()).ok).toBe(false);
  });
  it('verifyAssembledSteps: the verdict of verifyAssembled over the lines split by shard, a pause every 16 lines', () => {
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const snapshotIndex = { ...shardSnapshot(compileSnapshot([]), 400).snapshotIndex, generation: generationOf(lines), scopes: lines.length };
    for (const [cut, swap] of [[0, false], [7, false], [16, false], [39, false], [7, true]] as const) {
      const shards = swap ? [lines.slice(cut), lines.slice(0, cut)] : [lines.slice(0, cut), lines.slice(cut)];
      const steps = verifyAssembledSteps(snapshotIndex, shards);
      let pauses = 0;
      let step = steps.next();
      for (; !step.done; step = steps.next()) pauses++;
      expect(step.value).toEqual(verifyAssembled(snapshotIndex, shards.flat()));
      expect(step.value.ok).toBe(!swap);
      expect(pauses).toBe(2);
    }
    expect(verifyAssembledSteps(snapshotIndex, [lines.slice(1)]).next()).toEqual({ done: true, value: { ok: false, error: 'the shards hold 39 scopes, the snapshot index says 40' } });
  });
  it('parseSnapshotIndex round-trips and refuses what is not a snapshot index', () => {
    const { snapshotIndex } = shardSnapshot(many(), 400);
    expect(parseSnapshotIndex(JSON.stringify(snapshotIndex))).toEqual({ ok: true, value: snapshotIndex });
    expect(parseSnapshotIndex('{').ok).toBe(false);
    expect(parseSnapshotIndex('null').ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...snapshotIndex, kind: 'Snapshot' })).ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...snapshotIndex, shards: {} })).ok).toBe(false);
    expect(parseSnapshotIndex(JSON.stringify({ ...snapshotIndex, generation: 1 })).ok).toBe(false);
  });
});
