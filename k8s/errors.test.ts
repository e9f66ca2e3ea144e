import { describe, it, expect } from '@jest/globals';
import { describeError, isConflict, isGone, isNotFound, retryAfterMs, statusCodeOf } from './errors.js';

describe('errors', () => {
  const apiException = (code: number, body: unknown, headers: Record<string, string> = {}) => Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify(body), headers });

  it('reads codes from ApiException and watch errors', () => {
    expect(statusCodeOf(apiException(404, {}))).toBe(404);
    expect(statusCodeOf(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(410);
    expect(statusCodeOf(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(isNotFound(apiException(404, {}))).toBe(true);
    expect(isConflict(apiException(409, {}))).toBe(true);
    expect(isGone({ statusCode: 410 })).toBe(true);
  });

  it('describes with the server message, in one line', () => {
    const e = apiException(422, { kind: 'Status', reason: 'Invalid', message: 'data: Forbidden: field is immutable' });
    expect(describeError(e)).toBe('422 Invalid: data: Forbidden: field is immutable');
    expect(describeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1\nstack'), { code: 'ECONNREFUSED' }))).toBe('connect ECONNREFUSED 127.0.0.1:1');
  });

  it('reads Retry-After from headers or the Status details', () => {
    expect(retryAfterMs(apiException(429, {}, { 'retry-after': '3' }))).toBe(3000);
    expect(retryAfterMs(apiException(429, { details: { retryAfterSeconds: 2 } }))).toBe(2000);
    expect(retryAfterMs(apiException(500, {}))).toBeUndefined();
  });
});
