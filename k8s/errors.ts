/**
 * Reading errors from client-node 1.x without importing it: API calls throw `ApiException` with `.code` and a
 * JSON string `.body`; watches fail with an `Error` carrying `.statusCode`; network failures carry `.code`
 * strings such as ECONNREFUSED. Messages never include request bodies (those could be large, and a
 * ConfigMap body is not something to put in a log line).
 */
export function statusCodeOf(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const o = e as { code?: unknown; statusCode?: unknown };
  if (typeof o.code === 'number') return o.code;
  if (typeof o.statusCode === 'number') return o.statusCode;
  return undefined;
}

export const isNotFound = (e: unknown): boolean => statusCodeOf(e) === 404;
export const isConflict = (e: unknown): boolean => statusCodeOf(e) === 409;
export const isGone = (e: unknown): boolean => statusCodeOf(e) === 410;
export const isAlreadyExists = isConflict;

/** The server's `Status` object from an ApiException body, when it has one. */
export function apiStatusOf(e: unknown): { reason?: string; message?: string; details?: { retryAfterSeconds?: number } } | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const body = (e as { body?: unknown }).body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  return parsed as { reason?: string; message?: string };
}

/** Milliseconds the server asked us to wait (429 / 503 with Retry-After), if it said. */
export function retryAfterMs(e: unknown): number | undefined {
  const headers = (e as { headers?: Record<string, string> } | null)?.headers;
  const header = headers?.['retry-after'] ?? headers?.['Retry-After'];
  if (header !== undefined && /^\d+$/.test(header)) return Number(header) * 1000;
  const seconds = apiStatusOf(e)?.details?.retryAfterSeconds;
  return typeof seconds === 'number' ? seconds * 1000 : undefined;
}

/** One short line for logs and conditions: status code and the server's message, or the network error. */
export function describeError(e: unknown): string {
  const code = statusCodeOf(e);
  const status = apiStatusOf(e);
  if (code !== undefined && status?.message) return `${code} ${status.reason ?? ''}: ${status.message}`.replace(/\s+:/, ':').slice(0, 500);
  if (code !== undefined) return `HTTP ${code}`;
  if (e instanceof Error) {
    const netCode = (e as { code?: unknown }).code;
    const first = e.message.split('\n')[0] ?? '';
    return (typeof netCode === 'string' && !first.includes(netCode) ? `${netCode}: ${first}` : first).slice(0, 500);
  }
  return String(e).slice(0, 500);
}
