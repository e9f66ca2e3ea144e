import { describe, expect, it } from '@jest/globals';
import { bracketedRatio, bracketedRound, median, type Measured } from './figures.js';

const run = (rps: number): Measured => ({ rps, p50: 1, p99: 2, statuses: new Map([[200, 1]]), errors: 0, cpu: 10 });

describe('bracketed rounds (each case between two baseline runs)', () => {
  it('runs B c1 B c2 B, each case with the baseline runs on either side of it', async () => {
    const order: string[] = [];
    const speeds: Record<string, number[]> = { baseline: [100, 90, 80], a: [85], b: [60] };
    const round = await bracketedRound(['a', 'b'], (name) => {
      order.push(name);
      return Promise.resolve(run(speeds[name]!.shift()!));
    });
    expect(order).toEqual(['baseline', 'a', 'baseline', 'b', 'baseline']);
    expect([round.get('a')!.before.rps, round.get('a')!.run.rps, round.get('a')!.after.rps]).toEqual([100, 85, 90]);
    expect([round.get('b')!.before.rps, round.get('b')!.run.rps, round.get('b')!.after.rps]).toEqual([90, 60, 80]);
  });

  it('takes each round against the mean of its two baseline runs, and the median over rounds', () => {
    const rounds = [
      { before: run(100), run: run(80), after: run(60) }, // 80 / 80 = 1.0: a drift cancels
      { before: run(100), run: run(50), after: run(100) }, // 0.5
      { before: run(100), run: run(90), after: run(100) }, // 0.9
    ];
    expect(bracketedRatio(rounds, (m) => m.rps)).toBeCloseTo(0.9);
    expect(bracketedRatio([], (m) => m.rps)).toBeNaN();
    expect(median([3, 1, 2, 10])).toBe(2.5);
  });
});
