import { describe, expect, it } from '@jest/globals';
import { authorize } from './authorize.js';
import { ContractHeaders } from './headers.js';

// GET /authorize: the original wis2box-auth's nginx configuration (X-Original-URI and X-Api-Http-Method).

const ask = (...rawHeaders: string[]) => authorize.read({ method: 'GET', url: '/authorize', rawHeaders }, new ContractHeaders().read(rawHeaders));

describe('/authorize', () => {
  it('is its URL, with or without a query, and answers the way nginx reads answers', () => {
    expect(['/authorize', '/authorize?token=x'].map(authorize.matches)).toEqual([true, true]);
    expect(['/authorized', '/authorize/x', '/authz/authorize'].map(authorize.matches)).toEqual([false, false, false]);
    expect(authorize.answers('/authorize')).toBe('nginx');
  });

  it('reads the target from X-Original-URI and the method from X-Api-Http-Method', () => {
    expect(ask('X-Original-URI', '/oapi/processes/p/execution', 'X-Api-Http-Method', 'POST', 'Authorization', 'Bearer t')).toEqual({ ok: true, target: '/oapi/processes/p/execution', method: 'POST', authorization: 'Bearer t', addressProblem: 'missing' });
  });

  it('never takes the subrequest\'s own GET for the method: without X-Api-Http-Method it is unstated (null)', () => {
    expect(ask('X-Original-URI', '/data/a')).toMatchObject({ ok: true, method: null });
  });

  it('refuses another family naming another request, X-Original-Method and X-Original-URL included', () => {
    expect(ask('X-Original-URI', '/data/a', 'X-Api-Http-Method', 'POST', 'X-Original-Method', 'GET')).toEqual({ ok: false, reason: 'X-Original-Method names another method than the request' });
    expect(ask('X-Original-URI', '/data/a', 'X-Original-URL', 'https://h.example/data/b')).toEqual({ ok: false, reason: 'X-Original-URL names another target than the request' });
    expect(ask('X-Original-URI', '/data/a', 'X-Forwarded-Prefix', '/x')).toMatchObject({ ok: false, reason: expect.stringMatching(/^X-Forwarded-Prefix is set/) });
  });

  it('refuses a repeated header', () => {
    expect(ask('X-Original-URI', '/data/a', 'X-Api-Http-Method', 'GET', 'X-Api-Http-Method', 'POST')).toEqual({ ok: false, reason: 'X-Api-Http-Method was sent more than once' });
  });

  it('without a target, names the likely sender from the family it carries', () => {
    expect(ask('X-Forwarded-Uri', '/data/a')).toMatchObject({ ok: false, misdirected: 'forward-auth' });
    expect(ask('X-Envoy-Original-Path', '/data/a')).toMatchObject({ ok: false, misdirected: 'envoy' });
    expect(ask('X-Api-Http-Method', 'GET')).toMatchObject({ ok: false, misdirected: 'unknown' });
  });
});
