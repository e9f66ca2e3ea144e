import { describe, expect, it } from '@jest/globals';
import { ContractHeaders, disagreement, display, H, LIKELY_PROXIES, misdirected, sameMethod, type Slot } from './headers.js';

// The header contract every endpoint shares: one pass over rawHeaders, repeats kept apart, other families checked.

const read = (...raw: string[]) => new ContractHeaders().read(raw);

describe('ContractHeaders: the contract headers of one request', () => {
  it('reads names ASCII case-insensitively and values as sent; other headers are not read', () => {
    const h = read('x-ORIGINAL-uri', '/data/x?y=1', 'Host', 'data.example.org', 'Authorization', 'Bearer abc', 'PATH', '/p');
    expect(h.get(H.originalUri)).toBe('/data/x?y=1');
    expect(h.get(H.authorization)).toBe('Bearer abc');
    expect(h.get(H.path)).toBe('/p');
    expect(h.get(H.originalUrl)).toBeUndefined();
    expect(h.repeated()).toBeUndefined();
  });

  it('a name that only starts like a contract header, or starts with a non-ASCII letter, is not one', () => {
    const h = read('X-Original-URIs', '/a', 'Pathname', '/b', '\u00e9x-original-uri', '/c');
    expect(h.get(H.originalUri)).toBeUndefined();
    expect(h.get(H.path)).toBeUndefined();
  });

  it('a header sent twice is repeated (by its documented name), never joined or first-wins', () => {
    const h = read('X-Forwarded-Uri', '/a', 'x-forwarded-uri', '/a');
    expect(h.repeated()).toBe('X-Forwarded-Uri');
  });

  it('a single empty value is absent; an empty copy beside a real one is still a repeat', () => {
    expect(read('X-Original-URI', '').get(H.originalUri)).toBeUndefined();
    expect(read('X-Original-URI', '').repeated()).toBeUndefined();
    expect(read('X-Original-URI', '', 'X-Original-URI', '/a').repeated()).toBe('X-Original-URI');
  });

  it('names the first header repeated, and starts afresh for the next request (the reader is reused)', () => {
    const h = new ContractHeaders();
    expect(h.read(['Method', 'GET', 'Path', '/a', 'Path', '/b', 'Method', 'GET']).repeated()).toBe('Path');
    h.read(['Path', '/c']);
    expect(h.repeated()).toBeUndefined();
    expect([h.get(H.path), h.get(H.method)]).toEqual(['/c', undefined]);
  });

  it('display names are the documented spellings', () => {
    expect([display(H.originalUrl), display(H.forwardedPrefix), display(H.httpMethodOverride), display(H.path)]).toEqual(['X-Original-URL', 'X-Forwarded-Prefix', 'X-HTTP-Method-Override', 'Path']);
  });

  it('sameMethod: ASCII case-insensitive (frameworks upper-case an override) and of the same length', () => {
    expect(sameMethod('post', 'POST')).toBe(true);
    expect(sameMethod('POST', 'POSTS')).toBe(false);
    expect(sameMethod('GET', 'PUT')).toBe(false);
  });
});

describe('disagreement: every other family present must name the same request', () => {
  const none: readonly Slot[] = [];

  it('a target header naming another target, or a URL whose path and query differ', () => {
    expect(disagreement(read('X-Original-URI', '/b'), none, '/a', 'GET')).toBe('X-Original-URI names another target than the request');
    expect(disagreement(read('X-Original-URL', 'https://h.example/b'), none, '/a', 'GET')).toBe('X-Original-URL names another target than the request');
    expect(disagreement(read('X-Original-URL', 'https://h.example/a', 'X-Envoy-Original-Path', '/a'), none, '/a', 'GET')).toBeUndefined();
  });

  it('a method header naming another method; an unstated method (null, governed as unsafe) is compared with none', () => {
    expect(disagreement(read('X-HTTP-Method-Override', 'DELETE'), none, '/a', 'GET')).toBe('X-HTTP-Method-Override names another method than the request');
    expect(disagreement(read('X-Method-Override', 'get'), none, '/a', 'GET')).toBeUndefined();
    expect(disagreement(read('X-HTTP-Method', 'DELETE'), none, '/a', null)).toBeUndefined();
  });

  it('X-Forwarded-Prefix refuses whatever it says: the path was rewritten before the check', () => {
    expect(disagreement(read('X-Forwarded-Prefix', '/a'), none, '/a', 'GET')).toMatch(/^X-Forwarded-Prefix is set: the path was rewritten/);
  });

  it('the endpoint\'s own slots and the credentials are never compared', () => {
    expect(disagreement(read('X-Original-URI', '/b', 'Authorization', 'Bearer x'), [H.originalUri], '/a', 'GET')).toBeUndefined();
  });
});

describe('misdirected: the likely sender of a request without its endpoint\'s target', () => {
  it('names the family the request carries, in a fixed order, with where to point it', () => {
    expect(misdirected(read('X-Forwarded-Uri', '/a', 'X-Original-URI', '/a'), [])).toMatchObject({ likely: 'forward-auth', reason: expect.stringContaining('/authz/forward-auth') });
    expect(misdirected(read('X-Original-URL', 'https://h/a'), [])).toMatchObject({ likely: 'nginx', reason: expect.stringContaining('/authz/auth-request') });
    expect(misdirected(read('Path', '/a'), [])).toMatchObject({ likely: 'gateway-fabric', reason: expect.stringContaining('http.path to /authz/ext-authz') });
    expect(misdirected(read('X-Envoy-Original-Path', '/a'), [])).toMatchObject({ likely: 'envoy', reason: expect.stringContaining('path prefix to /authz/ext-authz') });
    expect(misdirected(read(), [])).toMatchObject({ likely: 'unknown' });
  });

  it('never blames the families the endpoint serves itself', () => {
    expect(misdirected(read('X-Forwarded-Uri', '/a', 'X-Original-URI', '/a'), ['forward-auth'])).toMatchObject({ likely: 'nginx' });
    expect(misdirected(read('Path', '/a'), ['gateway-fabric'])).toMatchObject({ likely: 'unknown' });
  });

  it('the senders are the likelyProxy label values, and every reason says the target is missing', () => {
    expect(LIKELY_PROXIES).toEqual(['forward-auth', 'nginx', 'gateway-fabric', 'envoy', 'unknown']);
    expect(misdirected(read(), []).reason).toMatch(/^no original request target: /);
  });
});
