import { describe, expect, it } from '@jest/globals';
import { authRequest } from './auth-request.js';
import { ContractHeaders } from './headers.js';

// GET /authz/auth-request: nginx auth_request and ingress-nginx auth-url (X-Original-URL / -URI / -Method).

const ask = (...rawHeaders: string[]) => authRequest.read({ method: 'GET', url: '/authz/auth-request', rawHeaders }, new ContractHeaders().read(rawHeaders));

describe('/authz/auth-request', () => {
  it('is its URL, with or without a query, and answers the way nginx reads answers', () => {
    expect(['/authz/auth-request', '/authz/auth-request?x=1'].map(authRequest.matches)).toEqual([true, true]);
    expect(['/authz/auth-requests', '/authz/auth-request/x', '/authz/auth'].map(authRequest.matches)).toEqual([false, false, false]);
    expect(authRequest.answers('/authz/auth-request')).toBe('nginx');
  });

  it('reads the target from X-Original-URI, or from X-Original-URL\'s path and query, and the method from X-Original-Method', () => {
    expect(ask('X-Original-URI', '/data/a?b=1', 'X-Original-Method', 'POST', 'Authorization', 'Bearer t')).toEqual({ ok: true, target: '/data/a?b=1', method: 'POST', authorization: 'Bearer t', addressProblem: 'missing' });
    expect(ask('X-Original-URL', 'https://data.example.org/data/a?b=1', 'X-Original-Method', 'GET')).toMatchObject({ ok: true, target: '/data/a?b=1', method: 'GET' });
    expect(ask('X-Original-URL', 'https://data.example.org/data/a', 'X-Original-URI', '/data/a')).toMatchObject({ ok: true, target: '/data/a' });
  });

  it('never takes the subrequest\'s own GET for the method: without X-Original-Method it is unstated (null)', () => {
    expect(ask('X-Original-URI', '/data/a')).toMatchObject({ ok: true, method: null });
  });

  it('refuses X-Original-URL and X-Original-URI naming different targets, never picking one', () => {
    expect(ask('X-Original-URL', 'https://data.example.org/data/a', 'X-Original-URI', '/data/b')).toEqual({ ok: false, reason: 'X-Original-URL and X-Original-URI name different targets' });
  });

  it('refuses another family naming another request', () => {
    expect(ask('X-Original-URI', '/data/a', 'X-Forwarded-Uri', '/data/b')).toEqual({ ok: false, reason: 'X-Forwarded-Uri names another target than the request' });
    expect(ask('X-Original-URI', '/data/a', 'X-Original-Method', 'GET', 'X-HTTP-Method-Override', 'DELETE')).toEqual({ ok: false, reason: 'X-HTTP-Method-Override names another method than the request' });
    expect(ask('X-Original-URI', '/data/a', 'X-Api-Http-Method', 'POST', 'X-Original-Method', 'GET')).toMatchObject({ ok: false, reason: 'X-Api-Http-Method names another method than the request' });
    expect(ask('X-Original-URI', '/data/a', 'X-Forwarded-Uri', '/data/a', 'X-Original-Method', 'GET', 'X-Forwarded-Method', 'get')).toMatchObject({ ok: true });
  });

  it('refuses a repeated header, its own or another family\'s, before anything else', () => {
    expect(ask('X-Original-URI', '/data/a', 'X-Original-URI', '/data/a')).toEqual({ ok: false, reason: 'X-Original-URI was sent more than once' });
    expect(ask('X-Original-URI', '/data/a', 'Authorization', 'Bearer a', 'Authorization', 'Bearer b')).toEqual({ ok: false, reason: 'Authorization was sent more than once' });
  });

  it('without a target, names the likely sender from the family it carries (never nginx, which it serves)', () => {
    expect(ask('X-Forwarded-Uri', '/data/a')).toMatchObject({ ok: false, misdirected: 'forward-auth' });
    expect(ask('Path', '/data/a')).toMatchObject({ ok: false, misdirected: 'gateway-fabric' });
    expect(ask('X-Original-Method', 'GET')).toMatchObject({ ok: false, misdirected: 'unknown', reason: expect.stringMatching(/^no original request target/) });
  });
});
