import { describe, expect, it } from '@jest/globals';
import { extAuthz } from './ext-authz.js';
import { ContractHeaders } from './headers.js';

// * /authz/ext-authz[/<original path>]: Envoy's ext_authz (the check request's own line) and NGINX Gateway
// Fabric's ExternalAuth (an nginx subrequest with Path and Method).

const ask = (method: string, url: string, ...rawHeaders: string[]) => extAuthz.read({ method, url, rawHeaders }, new ContractHeaders().read(rawHeaders));

describe('/authz/ext-authz', () => {
  it('is its URL, with a path appended or its own query, and nothing longer', () => {
    expect(['/authz/ext-authz', '/authz/ext-authz/data/a', '/authz/ext-authz?x=1', '/authz/ext-authz/'].map(extAuthz.matches)).toEqual([true, true, true, true]);
    expect(['/authz/ext-authzx', '/authz/ext-auth'].map(extAuthz.matches)).toEqual([false, false]);
  });

  it('answers the way nginx reads answers without an appended path (Gateway Fabric), the way Envoy does with one', () => {
    expect(['/authz/ext-authz', '/authz/ext-authz?x=1'].map(extAuthz.answers)).toEqual(['nginx', 'nginx']);
    expect(['/authz/ext-authz/data/a', '/authz/ext-authz/'].map(extAuthz.answers)).toEqual(['proxy', 'proxy']);
  });

  it('Envoy: the target is the path and query appended, the method the check request\'s own', () => {
    expect(ask('POST', '/authz/ext-authz/oapi/processes/p/execution?async=1', 'Authorization', 'Bearer t')).toEqual({ ok: true, target: '/oapi/processes/p/execution?async=1', method: 'POST', authorization: 'Bearer t', addressProblem: 'missing' });
    expect(ask('GET', '/authz/ext-authz/data/a', 'X-Envoy-Original-Path', '/data/a')).toMatchObject({ ok: true });
  });

  it('Gateway Fabric: the target from Path, the method from Method, never the subrequest\'s own GET', () => {
    expect(ask('GET', '/authz/ext-authz', 'Path', '/data/a?b', 'Method', 'DELETE')).toMatchObject({ ok: true, target: '/data/a?b', method: 'DELETE' });
    expect(ask('GET', '/authz/ext-authz', 'Path', '/data/a')).toMatchObject({ ok: true, method: null });
    // The endpoint's own query is no appended target.
    expect(ask('GET', '/authz/ext-authz?x=1', 'Path', '/data/a')).toMatchObject({ ok: true, target: '/data/a' });
  });

  it('refuses a Path or Method naming another request than the appended one (a Fabric http.path ending in /)', () => {
    expect(ask('GET', '/authz/ext-authz/', 'Path', '/data/a')).toEqual({ ok: false, reason: 'Path names another target than the request' });
    expect(ask('GET', '/authz/ext-authz/data/a', 'Method', 'POST')).toEqual({ ok: false, reason: 'Method names another method than the request' });
    expect(ask('GET', '/authz/ext-authz/data/a', 'X-Envoy-Original-Path', '/data/b')).toEqual({ ok: false, reason: 'X-Envoy-Original-Path names another target than the request' });
    expect(ask('GET', '/authz/ext-authz', 'Path', '/data/a', 'X-Original-URI', '/data/b')).toEqual({ ok: false, reason: 'X-Original-URI names another target than the request' });
  });

  it('refuses a repeated header', () => {
    expect(ask('GET', '/authz/ext-authz', 'Path', '/data/a', 'path', '/data/a')).toEqual({ ok: false, reason: 'Path was sent more than once' });
  });

  it('without a Path (nothing appended), names the likely sender, never Envoy or Gateway Fabric, which it serves', () => {
    expect(ask('GET', '/authz/ext-authz', 'X-Forwarded-Uri', '/data/a')).toMatchObject({ ok: false, misdirected: 'forward-auth' });
    expect(ask('GET', '/authz/ext-authz', 'X-Original-URL', 'https://h.example/data/a')).toMatchObject({ ok: false, misdirected: 'nginx' });
    expect(ask('GET', '/authz/ext-authz', 'X-Envoy-Original-Path', '/data/a')).toMatchObject({ ok: false, misdirected: 'unknown' });
  });
});
