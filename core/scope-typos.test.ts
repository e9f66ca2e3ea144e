import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { editDistance, nearScopes, topicLikePath, typoDistance, wis2TopicMisfit } from './scope-typos.js';
import type { Scope } from './scope.js';

describe('editDistance (Damerau-Levenshtein, optimal string alignment)', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions', () => {
    expect(editDistance('data.core', 'data.cor')).toBe(1);
    expect(editDistance('data.core', 'data.ocre')).toBe(1);
    expect(editDistance('mw-met', 'mw-mte')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });

  it('stops at max + 1 once the distance is known to exceed max', () => {
    expect(editDistance('origin.a.wis2', 'cache.a.wis2.x', 2)).toBe(3);
    expect(editDistance('a', 'abcdef', 2)).toBe(3);
  });

  it('is symmetric, zero only for equal strings, and bounded by the longer length', () => {
    fc.assert(fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
      const d = editDistance(a, b);
      expect(editDistance(b, a)).toBe(d);
      expect(d === 0).toBe(a === b);
      expect(d).toBeLessThanOrEqual(Math.max(a.length, b.length));
      expect(editDistance(a, b, 2)).toBe(Math.min(d, 3));
    }), { numRuns: 500 });
  });
});

describe('nearScopes', () => {
  const topic = (value: string): Scope => ({ kind: 'topic', value });
  const existing = [topic('origin.a.wis2.mw-met.data.core'), topic('origin.a.wis2.mw-met.data.recommended'), topic('origin.a.wis2.mw-met.data.core.weather'), { kind: 'dataset', value: 'origin.a.wis2.mw-met.data.cor' } as Scope];

  it('finds a scope of the same kind a small edit away, nearest first; not its parents, children or other kinds', () => {
    expect(nearScopes(topic('origin.a.wis2.mw-met.data.cor'), existing)).toEqual([{ scope: topic('origin.a.wis2.mw-met.data.core'), distance: 1 }]);
    expect(nearScopes(topic('origin.a.wis2.mw-met.data.core'), existing)).toEqual([]);
    expect(nearScopes(topic('origin.a.wis2.mw-met.data'), existing)).toEqual([]);
    expect(nearScopes(topic('ORIGIN.a.wis2.mw-met.data.corr'), existing).map((n) => n.distance)).toEqual([1]);
  });

  it('short values need to be closer: 2 edits from 12 characters, 1 from 6, none below', () => {
    expect([typoDistance('a.b'), typoDistance('abcdef'), typoDistance('origin.a.wis')]).toEqual([0, 1, 2]);
    expect(nearScopes(topic('a.c'), [topic('a.b')])).toEqual([]);
    expect(nearScopes(topic('abcdeg'), [topic('abcdef')])).toHaveLength(1);
    expect(nearScopes(topic('abcdgh'), [topic('abcdef')])).toEqual([]);
  });
});

describe('the WIS2 topic hierarchy', () => {
  it('fits: a topic as deep as it goes', () => {
    for (const t of ['origin', 'origin.a.wis2', 'cache.a.wis2.mw-met.data.core.weather.surface-based-observations', 'origin.a.wis2.ca-eccc-msc.metadata', 'origin.a.wis2.mw-met.data.recommended']) {
      expect(wis2TopicMisfit(t)).toBeUndefined();
    }
  });

  it('does not fit: each level named with what it must be', () => {
    expect(wis2TopicMisfit('origin.a.wis2.mw-met.data.cor')).toBe('level 6 is "cor", not core or recommended');
    expect(wis2TopicMisfit('wis2.origin.a.mw-met')).toBe('it starts with "wis2" before "origin": a WIS2 topic starts with origin or cache');
    expect(wis2TopicMisfit('a.b')).toBe('level 1 is "a", not origin or cache');
    expect(wis2TopicMisfit('origin.b.wis2')).toBe('level 2 is "b", not "a"');
    expect(wis2TopicMisfit('origin.a.wis3')).toBe('level 3 is "wis3", not "wis2"');
    expect(wis2TopicMisfit('origin.a.wis2.MW_met')).toMatch(/^level 4 is "MW_met", not a centre id/);
    expect(wis2TopicMisfit('origin.a.wis2.mw-met.dat')).toBe('level 5 is "dat", not data or metadata');
  });

  it('a path that is a topic written with slashes: the dotted topic', () => {
    expect(topicLikePath('origin/a/wis2/mw-met/data/core')).toBe('origin.a.wis2.mw-met.data.core');
    expect(topicLikePath('wis2/origin/a/mw-met')).toBe('wis2.origin.a.mw-met');
    for (const p of ['data', 'wis2downloader', 'processes/svc', 'collections/stations', 'data/origin.txt', 'origin']) expect(topicLikePath(p)).toBeUndefined();
  });
});
