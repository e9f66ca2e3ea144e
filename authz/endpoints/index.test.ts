import { describe, expect, it } from '@jest/globals';
import { ambiguousEndpointPath, contractFor, CONTRACTS, ENDPOINTS } from './index.js';

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

describe('ambiguousEndpointPath: endpoint URLs a proxy could have routed as another path', () => {
  it.each([
    '/authz/ext-authz/data/x/../../../../authz/v1/protected',
    '/authz/ext-authz/data/./x',
    '/authz/ext-authz/data/x/..',
    '/authz/ext-authz/data/x/%2e%2e/%2E%2E/authz/v1/protected',
    '/authz/ext-authz/data/x%2Fy',
    '/authz/ext-authz/data/x%5c..',
    '/authz/ext-authz/data\\x',
    '/authz/auth-request/../v1/protected',
  ])('%s is ambiguous', (url) => expect(ambiguousEndpointPath(url)).toBe(true));

  it.each([
    '/authz/auth-request',
    '/authorize?x=../..',
    '/authz/ext-authz/data/2026/x.bufr4',
    '/authz/ext-authz/data/a..b/.hidden/x',
    '/authz/ext-authz/oapi/processes/x/execution?f=%2e%2e',
  ])('%s is not (dots inside a name, or in the query, are fine)', (url) => expect(ambiguousEndpointPath(url)).toBe(false));
});
