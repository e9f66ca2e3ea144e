import { describe, expect, it } from '@jest/globals';
import { contractFor, CONTRACTS, ENDPOINTS } from './index.js';

describe('the contracts table', () => {
  it('is where the endpoint names come from: one name per contract, in its order', () => {
    expect(ENDPOINTS).toEqual(CONTRACTS.map((c) => c.endpoint));
    expect(ENDPOINTS).toEqual(['auth-request', 'authorize', 'forward-auth', 'ext-authz']);
  });

  it('finds each endpoint\'s contract by its URL, and none for any other URL (Express handles it)', () => {
    const found = ['/authz/auth-request', '/authorize?x', '/authz/forward-auth', '/authz/ext-authz/data/a'].map((u) => contractFor(u)?.endpoint);
    expect(found).toEqual(['auth-request', 'authorize', 'forward-auth', 'ext-authz']);
    for (const u of ['/authz/v1/protected', '/healthz', '/authorizer', '/authz/', '', '/AUTHZ/auth-request']) expect(contractFor(u)).toBeUndefined();
  });

  it('no URL is two endpoints\' (so the order of the table is no precedence)', () => {
    const urls = ['/authz/auth-request', '/authz/auth-request?a', '/authorize', '/authz/forward-auth', '/authz/ext-authz', '/authz/ext-authz/x', '/authz/ext-authz?x'];
    for (const u of urls) expect(CONTRACTS.filter((c) => c.matches(u)).length).toBe(1);
  });
});
