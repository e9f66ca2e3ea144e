/**
 * One run at a time, and never a lost trigger: a trigger while a run is under way asks for exactly one more
 * run after it, however many triggers arrive meanwhile. A burst of changes so costs at most two runs, and the
 * last run always starts after the last trigger, so it sees the latest state.
 */
export class SerialRunner {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly run: () => Promise<void>) {}

  /** Starts a run, or books one more after the current one; resolves when the runs in hand are over. */
  trigger(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.run();
    } while (this.again && !this.stopped);
  }

  /** No new runs; resolves when the current one (if any) has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}
