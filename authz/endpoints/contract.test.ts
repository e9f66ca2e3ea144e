import { describe, expect, it } from '@jest/globals';
import { conclude, isPath } from './contract.js';
import { ContractHeaders, H } from './headers.js';

// What every contract ends with: the order of its refusals, and the endpoint URLs' own query.

const headers = (...raw: string[]) => new ContractHeaders().read(raw);

describe('isPath', () => {
  it('is the path exactly or the path and a query', () => {
    expect([isPath('/a/b', '/a/b'), isPath('/a/b?x', '/a/b'), isPath('/a/bc', '/a/b'), isPath('/a/b/', '/a/b'), isPath('/a', '/a/b')]).toEqual([true, true, false, false, false]);
  });
});

describe('conclude: the refusals in the order that keeps them precise', () => {
  const own = [H.originalUri] as const;

  it('a repeated header first, then the endpoint\'s own contradiction, then a missing target, then another family', () => {
    const h = headers('X-Forwarded-Uri', '/b', 'Authorization', 'x', 'Authorization', 'y');
    expect(conclude(h, { target: undefined, method: null, own, serves: ['nginx'], malformed: 'mine' })).toEqual({ ok: false, reason: 'Authorization was sent more than once' });
    const h2 = headers('X-Forwarded-Uri', '/b');
    expect(conclude(h2, { target: undefined, method: null, own, serves: ['nginx'], malformed: 'mine' })).toEqual({ ok: false, reason: 'mine' });
    expect(conclude(h2, { target: undefined, method: null, own, serves: ['nginx'] })).toMatchObject({ ok: false, misdirected: 'forward-auth' });
    expect(conclude(h2, { target: '/a', method: null, own, serves: ['nginx'] })).toEqual({ ok: false, reason: 'X-Forwarded-Uri names another target than the request' });
  });

  it('an agreeing request is read with its credentials', () => {
    expect(conclude(headers('Authorization', 'Bearer t'), { target: '/a', method: 'GET', own, serves: ['nginx'] })).toEqual({ ok: true, target: '/a', method: 'GET', authorization: 'Bearer t' });
  });
});
