// Waiting, written once for every suite and bench: a bounded poll (`waitUntil`) whose failure says what was
// awaited, for how long, what the last attempt saw or threw, and why it stopped early when a watched process died.
// Fixed sleeps stay `sleep`; anything that waits for a condition goes through waitUntil.

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What a check returns: a value ends the wait; undefined or false means "not yet". */
export type Check<T> = () => Promise<T | undefined | false> | T | undefined | false;

export interface WaitOptions {
  /** For the failure message: "waiting for <what>". */
  readonly what: string;
  /** Give up after this long; default 30 s. */
  readonly timeoutMs?: number;
  /** Pause between attempts; default 100 ms. */
  readonly intervalMs?: number;
  /** With a larger value the pause doubles after each attempt up to this (long waits on a shared API server). */
  readonly maxIntervalMs?: number;
  /** A reason to stop at once (a process it depends on exited), checked before each attempt. */
  readonly abortIf?: () => string | undefined;
  /** What was last seen, appended to a timeout message (logs, the last status). */
  readonly describe?: () => string | Promise<string>;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Calls `check` until it returns something other than undefined/false and returns that. An attempt that throws
 * counts as "not yet" (a server still starting refuses connections); its error is quoted if time runs out.
 */
export async function waitUntil<T>(check: Check<T>, options: WaitOptions): Promise<T> {
  const { what, timeoutMs = 30_000, intervalMs = 100 } = options;
  const maxIntervalMs = Math.max(intervalMs, options.maxIntervalMs ?? intervalMs);
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let pause = intervalMs; ; pause = Math.min(pause * 2, maxIntervalMs)) {
    const aborted = options.abortIf?.();
    if (aborted !== undefined) throw new Error(`${aborted} while waiting for ${what}`);
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
      lastError = undefined;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      const seen = options.describe ? ` (last seen: ${await options.describe()})` : '';
      const err = lastError === undefined ? '' : ` (last error: ${messageOf(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}${err}`);
    }
    await sleep(pause);
  }
}

/**
 * The positional shorthand the integration suites use: `until('A closed', () => ..., 60_000)`. Backs off from
 * 50 ms to 500 ms, so a long wait for propagation through the API server does not hammer it.
 */
export function until<T>(what: string, check: Check<T>, timeoutMs = 30_000, describe?: () => string | Promise<string>): Promise<T> {
  return waitUntil(check, { what, timeoutMs, intervalMs: 50, maxIntervalMs: 500, ...(describe ? { describe } : {}) });
}

/**
 * The unit tests' shorthand: a synchronous condition polled every few milliseconds (fakes and in-process servers
 * change state within microseconds, so a unit test waits no longer than it must).
 */
export function poll(cond: () => boolean, timeoutMs = 3000, what = 'the condition'): Promise<void> {
  return waitUntil(() => cond() || undefined, { what, timeoutMs, intervalMs: 5 }).then(() => undefined);
}
