import { describe, it, expect } from '@jest/globals';
import { describeError, isConflict, isGone, isNotFound, KubeError, retryAfterMs, statusCodeOf, toKubeError } from './errors.js';

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

  describe('toKubeError: one reason and one actionable line per failure', () => {
    const target = { server: 'https://api:6443', context: 'ctx', namespace: 'team', timeoutMs: 2000 };
    const call = { verb: 'get', name: 'x', resource: 'protectedscopes.auth.svc.io' };

    it.each([
      [apiException(401, { kind: 'Status' }), 'Unauthorized', /rejected our credentials .* context ctx$/],
      [apiException(404, { kind: 'Status', details: { kind: 'protectedscopes' } }), 'NotFound', /^protectedscopes\.auth\.svc\.io "x" not found in namespace "team"$/],
      [apiException(404, { kind: 'Status', details: { kind: 'namespaces' } }), 'NamespaceNotFound', /^namespace "team" not found/],
      [apiException(409, { kind: 'Status', reason: 'AlreadyExists' }), 'AlreadyExists', /already exists/],
      [apiException(503, { kind: 'Status', message: 'busy' }), 'ServerError', /failed to get .* \(503\): busy$/],
      [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'Unreachable', /^cannot reach the Kubernetes API at https:\/\/api:6443 \(connection refused\): check the cluster is running and --kubeconfig\/--context point at it$/],
      [Object.assign(new Error('aborted'), { name: 'AbortError' }), 'Timeout', /within 2 s/],
    ])('%#: %s', (e, reason, message) => {
      const k = toKubeError(e, target, call);
      expect(k.reason).toBe(reason);
      expect(k.message).toMatch(message);
    });

    it('offers the program\'s way out where no cluster can be reached, and reads its own errors back', () => {
      const refused = Object.assign(new Error('x'), { code: 'ECONNREFUSED' });
      expect(toKubeError(refused, { ...target, otherwise: 'use --dir DIR' }, call).message).toMatch(/, or use --dir DIR$/);
      const conflict = toKubeError(apiException(409, { kind: 'Status', reason: 'Conflict' }), target, call);
      expect(conflict).toBeInstanceOf(KubeError);
      expect(isConflict(conflict)).toBe(true);
      expect(toKubeError(conflict, target, call)).toBe(conflict);
    });
  });
});
