import { delay } from '../e2e/support/net.js';

/**
 * Polls `probe` until it returns something other than undefined/false, for at most `timeoutMs` (a bounded wait for
 * propagation through the API server, the operator and svc-auth). The failure message says what was awaited and
 * what the last attempt saw (`describe` of the last value, or the last error).
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000, describe?: () => string | Promise<string>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let wait = 50; ; wait = Math.min(wait * 2, 500)) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v as T;
      lastError = undefined;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      const seen = describe ? ` (last seen: ${await describe()})` : '';
      const err = lastError ? ` (last error: ${(lastError as Error).message ?? String(lastError)})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}${err}`);
    }
    await delay(wait);
  }
}
