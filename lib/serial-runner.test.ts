import { describe, expect, it } from '@jest/globals';
import { SerialRunner } from './serial-runner.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SerialRunner', () => {
  it('runs one at a time and coalesces a burst of triggers into one more run', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const runner = new SerialRunner(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await tick(10);
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
    expect(runner.isStopped).toBe(true);
  });

  it('stop waits for the run under way and drops the one booked after it', async () => {
    let runs = 0;
    const runner = new SerialRunner(async () => {
      runs++;
      await tick(10);
    });
    void runner.trigger();
    void runner.trigger();
    await runner.stop();
    expect(runs).toBe(1);
  });
});
