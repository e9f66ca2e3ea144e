import { describe, expect, it } from '@jest/globals';
import { compileSnapshot, hashToken, newProtectedScope, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { buildIndexInSlices, runInSlices, SerialRunner, SliceClock } from './source.js';

function snapshot(scopes: number) {
  const objects: ProtectedScope[] = [];
  for (let i = 0; i < scopes; i++) {
    const hash = hashToken(`token-number-${i}-of-the-test`);
    objects.push(newProtectedScope({ kind: 'topic', value: `a.b.c${i}` }, `s${i}`, undefined, [{ id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' }]));
  }
  return compileSnapshot(objects);
}

describe('buildIndexInSlices', () => {
  it('builds the same index as the lines describe, yielding to the event loop between slices', async () => {
    const s = snapshot(3000);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const built = await buildIndexInSlices(s.lines, s.generation, { sliceMs: 0.5, maxLines: 100 });
    clearInterval(ticker);
    expect(built.ok && built.value.scopeCount).toBe(3000);
    expect(built.ok && built.value.tokenCount).toBe(3000);
    expect(built.ok && built.value.generation).toBe(s.generation);
    expect(ticks).toBeGreaterThan(0);
  });

  it('refuses the whole snapshot for one bad line, naming it', async () => {
    const s = snapshot(10);
    const lines = [...s.lines];
    lines[6] = lines[6]!.replace('sha256:', 'sha1:');
    const built = await buildIndexInSlices(lines, s.generation);
    expect(built.ok).toBe(false);
    expect(!built.ok && built.error.line).toBe(7);
  });

  it('stops when cancelled', async () => {
    const s = snapshot(500);
    const built = await buildIndexInSlices(s.lines, s.generation, { maxLines: 16, cancelled: () => true });
    expect(!built.ok && built.error.message).toBe('cancelled');
  });
});

describe('runInSlices and SliceClock', () => {
  function* busySteps(n: number, ms: number): Generator<void, number, void> {
    for (let i = 0; i < n; i++) {
      const until = performance.now() + ms;
      while (performance.now() < until);
      yield;
    }
    return n;
  }

  it('runs a generator to its result, yielding to the event loop when a slice is spent', async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const r = await runInSlices(busySteps(40, 0.2), { sliceMs: 1 });
    clearInterval(ticker);
    expect(r).toEqual({ ok: true, value: 40 });
    expect(ticks).toBeGreaterThan(0);
  });

  it('stops when cancelled between slices', async () => {
    let ran = 0;
    function* counting(): Generator<void, string, void> {
      for (;;) {
        ran++;
        const until = performance.now() + 0.2;
        while (performance.now() < until);
        yield;
      }
    }
    expect(await runInSlices(counting(), { sliceMs: 0.5, cancelled: () => ran > 5 })).toEqual({ ok: false, error: 'cancelled' });
  });

  it('SliceClock.pause yields only once the budget is spent', async () => {
    const clock = new SliceClock(1000);
    let turned = false;
    setImmediate(() => (turned = true));
    await clock.pause();
    expect(turned).toBe(false);
    const spent = new SliceClock(0);
    await spent.pause();
    expect(turned).toBe(true);
  });
});

describe('SerialRunner', () => {
  it('runs one at a time and coalesces a burst of triggers into one more run', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const runner = new SerialRunner(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await new Promise((r) => setTimeout(r, 10));
      running--;
    });
    const first = runner.trigger();
    for (let i = 0; i < 10; i++) void runner.trigger();
    await first;
    await runner.trigger();
    expect(maxRunning).toBe(1);
    expect(runs).toBe(3);
    await runner.stop();
    await runner.trigger();
    expect(runs).toBe(3);
  });
});
