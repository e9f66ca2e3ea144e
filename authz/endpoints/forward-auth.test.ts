import { describe, expect, it } from '@jest/globals';
import { forwardAuth } from './forward-auth.js';
import { ContractHeaders } from './headers.js';

// * /authz/forward-auth: Traefik's ForwardAuth (X-Forwarded-Uri and X-Forwarded-Method).

const ask = (...rawHeaders: string[]) => forwardAuth.read({ method: 'GET', url: '/authz/forward-auth', rawHeaders }, new ContractHeaders().read(rawHeaders));

describe('/authz/forward-auth', () => {
  it('is its URL, with or without a query, and answers the way a proxy that passes answers on reads them', () => {
    expect(['/authz/forward-auth', '/authz/forward-auth?x'].map(forwardAuth.matches)).toEqual([true, true]);
    expect(['/authz/forward-authz', '/authz/forward-auth/x'].map(forwardAuth.matches)).toEqual([false, false]);
    expect(forwardAuth.answers('/authz/forward-auth')).toBe('proxy');
  });

  it('reads the target from X-Forwarded-Uri and the method from X-Forwarded-Method, never the check request\'s own', () => {
    expect(ask('X-Forwarded-Uri', '/oapi/collections/stations/items', 'X-Forwarded-Method', 'POST', 'Authorization', 'Bearer t')).toEqual({ ok: true, target: '/oapi/collections/stations/items', method: 'POST', authorization: 'Bearer t', addressProblem: 'missing' });
    expect(ask('X-Forwarded-Uri', '/data/a')).toMatchObject({ ok: true, method: null });
  });

  it('refuses an X-Forwarded-Prefix (StripPrefix ran first: the URI asked about is not the one requested)', () => {
    expect(ask('X-Forwarded-Uri', '/data/a', 'X-Forwarded-Method', 'GET', 'X-Forwarded-Prefix', '/api')).toMatchObject({ ok: false, reason: expect.stringMatching(/^X-Forwarded-Prefix is set/) });
  });

  it('refuses another family naming another request', () => {
    expect(ask('X-Forwarded-Uri', '/data/a', 'X-Original-URI', '/data/b')).toEqual({ ok: false, reason: 'X-Original-URI names another target than the request' });
    expect(ask('X-Forwarded-Uri', '/data/a', 'X-Forwarded-Method', 'GET', 'Method', 'POST')).toEqual({ ok: false, reason: 'Method names another method than the request' });
    expect(ask('X-Forwarded-Uri', '/data/a', 'X-Original-URI', '/data/a', 'X-Forwarded-Method', 'GET', 'X-Original-Method', 'GET')).toMatchObject({ ok: true });
  });

  it('refuses a repeated header', () => {
    expect(ask('X-Forwarded-Uri', '/data/a', 'X-Forwarded-Method', 'GET', 'x-forwarded-method', 'GET')).toEqual({ ok: false, reason: 'X-Forwarded-Method was sent more than once' });
  });

  it('without a target, names the likely sender from the family it carries (never Traefik, which it serves)', () => {
    expect(ask('X-Original-URI', '/data/a')).toMatchObject({ ok: false, misdirected: 'nginx', reason: expect.stringContaining('/authz/auth-request') });
    expect(ask('Path', '/data/a')).toMatchObject({ ok: false, misdirected: 'gateway-fabric' });
    expect(ask('X-Forwarded-Method', 'GET')).toMatchObject({ ok: false, misdirected: 'unknown' });
  });
});
