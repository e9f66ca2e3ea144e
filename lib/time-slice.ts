/**
 * Long synchronous work cut into time slices, so the event loop stays responsive: requests, health checks,
 * timers and watches waiting in it run between two slices. The work is a loop of small steps (or a generator
 * that pauses with a bare `yield` between them); a `SliceClock` holds the budget of the current slice and
 * yields to the event loop (setImmediate: after pending I/O, not before it) once the budget is spent.
 */

/** Lets everything waiting in the event loop (requests, timers, I/O callbacks) run before continuing. */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The time budget of a loop of small steps: `await clock.pause()` between steps. */
export class SliceClock {
  private deadline: number;

  constructor(private readonly sliceMs: number) {
    this.deadline = performance.now() + sliceMs;
  }

  /** A fresh budget: the event loop has just turned anyway (after awaiting I/O). */
  restart(): void {
    this.deadline = performance.now() + this.sliceMs;
  }

  get spent(): boolean {
    return performance.now() >= this.deadline;
  }

  /** Yields to the event loop if the budget is spent, then starts a new one. */
  async pause(): Promise<void> {
    if (this.spent) await this.yieldNow();
  }

  /** Yields to the event loop whatever is left of the budget, then starts a new one. */
  async yieldNow(): Promise<void> {
    await yieldToEventLoop();
    this.restart();
  }
}

type SliceOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: 'cancelled' };

interface SliceRunOptions {
  readonly sliceMs: number;
  /** Asked after each yield to the event loop; true ends the run without a result. */
  readonly cancelled?: () => boolean;
}

/** Runs a generator of small steps to its result, a slice at a time; it may be cancelled between slices. */
export async function runInSlices<T>(steps: Generator<void, T, void>, options: SliceRunOptions): Promise<SliceOutcome<T>> {
  const clock = new SliceClock(options.sliceMs);
  for (;;) {
    const step = steps.next();
    if (step.done) return { ok: true, value: step.value };
    if (clock.spent) {
      await clock.yieldNow();
      if (options.cancelled?.()) return { ok: false, error: 'cancelled' };
    }
  }
}

/** Runs a generator of small steps to its result, a slice at a time, with no way to stop it half-way. */
export async function finishInSlices<T>(steps: Generator<void, T, void>, sliceMs: number): Promise<T> {
  const outcome = await runInSlices(steps, { sliceMs });
  if (!outcome.ok) throw new Error('unreachable: nothing cancels this run');
  return outcome.value;
}
