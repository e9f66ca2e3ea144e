import { describe, expect, it } from '@jest/globals';
import { finishInSlices, runInSlices, SliceClock, yieldToEventLoop } from './time-slice.js';

function* busySteps(n: number, ms: number): Generator<void, number, void> {
  for (let i = 0; i < n; i++) {
    const until = performance.now() + ms;
    while (performance.now() < until);
    yield;
  }
  return n;
}

describe('runInSlices', () => {
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

  it('finishInSlices returns the bare result', async () => {
    expect(await finishInSlices(busySteps(5, 0.1), 0.2)).toBe(5);
  });
});

describe('SliceClock', () => {
  /** Whether the event loop turned while `wait` was awaited. */
  async function turnsDuring(wait: () => Promise<void>): Promise<boolean> {
    let turned = false;
    setImmediate(() => (turned = true));
    await wait();
    return turned;
  }

  it('pause yields only once the budget is spent', async () => {
    const fresh = new SliceClock(1000);
    expect(await turnsDuring(() => fresh.pause())).toBe(false);
    const spent = new SliceClock(0);
    expect(await turnsDuring(() => spent.pause())).toBe(true);
  });

  it('yieldNow yields whatever the budget, and starts a new one', async () => {
    const clock = new SliceClock(1000);
    expect(await turnsDuring(() => clock.yieldNow())).toBe(true);
    expect(clock.spent).toBe(false);
  });

  it('yieldToEventLoop lets waiting callbacks run first', async () => {
    const order: string[] = [];
    setImmediate(() => order.push('waiting'));
    await yieldToEventLoop();
    order.push('after');
    expect(order).toEqual(['waiting', 'after']);
  });
});
