import { describe, expect, it } from '@jest/globals';
import { buildIndex, compileSnapshot, DEFAULT_CONFIG, newProtectedScope, type AccessIndex } from '../../core/index.js';
import { createAuthHandler } from './auth-pipeline.js';
import type { HeadRequest, HeadResponse } from '../http/head.js';
import { createLogger } from '../telemetry/log.js';
import { AuthMetrics } from '../telemetry/metrics.js';
import { Refusals } from '../telemetry/refusals.js';
import { TokenUsage } from '../telemetry/token-usage.js';

// A network grant through the pipeline: the answer (never cacheable), the metrics, the audit line, the refusal summary.

const FILE = '/data/2026/wis/origin/a/wis2/mw-met/data/core/x.bufr4';

function fixtureIndex(): AccessIndex {
  const o = newProtectedScope({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, 'core', 'svc', []);
  const snapshot = compileSnapshot([{ ...o, spec: { ...o.spec, networks: [{ cidr: '127.0.0.2/32', description: 'Global Cache' }] } }]);
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

function pipeline(trustedProxyHops = 0) {
  const lines: Record<string, unknown>[] = [];
  const { logger } = createLogger('debug', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const refusals = new Refusals(logger, { windowMs: 0, sample: 0 });
  const metrics = new AuthMetrics({ defaultMetrics: false });
  const usage = new TokenUsage(logger, 0);
  const handle = createAuthHandler({ access: DEFAULT_CONFIG, state: { index: fixtureIndex(), draining: false }, metrics, logger, cacheMaxAge: 30, usage, refusals, trustedProxyHops });
  const ask = (url: string, headers: string[]): { status: number; headers: string[] } => {
    const out = { status: 0, headers: [] as string[] };
    const req: HeadRequest = { method: 'GET', url, rawHeaders: headers };
    const res: HeadResponse = { writeHead: (s, h) => ((out.status = s), (out.headers = [...((h as string[] | undefined) ?? [])])), end: () => undefined, headersSent: false, shouldKeepAlive: true, destroy: () => undefined };
    expect(handle(req, res)).toBe(true);
    return out;
  };
  const nginx = (...address: string[]) => ask('/authz/auth-request', ['X-Original-URI', FILE, 'X-Original-Method', 'GET', ...address]);
  const traefik = (...address: string[]) => ask('/authz/forward-auth', ['X-Forwarded-Uri', FILE, 'X-Forwarded-Method', 'GET', ...address]);
  const nginxWrite = (method: string, ...headers: string[]) => ask('/authz/auth-request', ['X-Original-URI', FILE, 'X-Original-Method', method, 'X-Real-IP', '127.0.0.2', ...headers]);
  return { nginx, traefik, nginxWrite, lines, refusals, metrics, usage };
}

function header(headers: string[], name: string): string | undefined {
  const i = headers.findIndex((h, k) => k % 2 === 0 && h.toLowerCase() === name.toLowerCase());
  return i < 0 ? undefined : headers[i + 1];
}

describe('a network grant through the pipeline', () => {
  it('allows with X-Accel-Expires: 0 and Cache-Control: no-store, naming the scope and the network', () => {
    const p = pipeline();
    const a = p.nginx('X-Real-IP', '127.0.0.2');
    expect(a.status).toBe(200);
    expect(header(a.headers, 'X-Accel-Expires')).toBe('0');
    expect(header(a.headers, 'Cache-Control')).toBe('no-store');
    expect(header(a.headers, 'X-Auth-Request-Network')).toBe('127.0.0.2/32');
    expect(header(a.headers, 'X-Auth-Request-Scope')).toBe('topic:origin.a.wis2.mw-met.data.core');
    const t = p.traefik('X-Forwarded-For', '127.0.0.2');
    expect(t.status).toBe(200);
    expect(header(t.headers, 'X-Accel-Expires')).toBeUndefined();
    expect(p.nginx('X-Real-IP', '127.0.0.3').status).toBe(401);
  });

  it('counts the grant by credential network and writes an audit line with the address and the network', async () => {
    const p = pipeline();
    p.nginx('X-Real-IP', '127.0.0.2');
    const text = await p.metrics.registry.metrics();
    expect(text).toMatch(/svc_auth_grants_total\{credential="network"\} 1/);
    expect(p.lines.find((l) => l.msg === 'decision' && l.outcome === 'granted')).toMatchObject({ tokenSource: 'network', network: '127.0.0.2/32', address: '127.0.0.2', scope: 'topic:origin.a.wis2.mw-met.data.core' });
  });

  it('sums network grants per scope and network in an info line each window', () => {
    const p = pipeline();
    for (let i = 0; i < 3; i++) p.nginx('X-Real-IP', '127.0.0.2');
    p.usage.flush();
    expect(p.lines.filter((l) => l.msg === 'networks used')).toEqual([expect.objectContaining({ level: 'info', scope: 'topic:origin.a.wis2.mw-met.data.core', network: '127.0.0.2/32', granted: 3 })]);
  });

  it('refusals from many addresses are summed under one key, never by address', () => {
    const p = pipeline();
    for (let i = 3; i < 50; i++) expect(p.nginx('X-Real-IP', `127.0.0.${i}`).status).toBe(401);
    p.refusals.flush();
    const summaries = p.lines.filter((l) => l.msg === 'requests refused');
    expect(summaries.length).toBe(1);
    expect(JSON.stringify(summaries)).not.toMatch(/127\.0\.0\./);
  });

  it('an address that cannot be trusted turns network grants off: counted, and warned about once', async () => {
    const p = pipeline();
    expect(p.nginx('X-Forwarded-For', '127.0.0.2').status).toBe(401);
    expect(p.nginx('X-Real-IP', '127.0.0.2', 'X-Real-IP', '127.0.0.2').status).toBe(401);
    expect(p.nginx('X-Real-IP', '127.0.0.2', 'X-Real-IP', '127.0.0.2').status).toBe(401);
    const text = await p.metrics.registry.metrics();
    expect(text).toMatch(/svc_auth_client_address_untrusted_total\{endpoint="auth-request",reason="missing"\} 1/);
    expect(text).toMatch(/svc_auth_client_address_untrusted_total\{endpoint="auth-request",reason="repeated"\} 2/);
    expect(p.lines.filter((l) => l.addressProblem === 'repeated').length).toBe(1);
  });

  it('with --trusted-proxy-hops 1, Traefik\'s chain is read one entry in from its end', () => {
    const p = pipeline(1);
    expect(p.traefik('X-Forwarded-For', '127.0.0.2, 127.0.0.1').status).toBe(200);
    expect(p.traefik('X-Forwarded-For', '127.0.0.2, 127.0.0.3, 127.0.0.1').status).toBe(401);
    expect(p.traefik('X-Forwarded-For', '127.0.0.2').status).toBe(401);
  });

  it('never grants an unsafe method that carries cross-site evidence (issue 37, finding 3); Global Services send none', () => {
    const p = pipeline();
    // A cross-site form POST from a browser at a granted address: refused, as with a session.
    expect(p.nginxWrite('POST', 'Sec-Fetch-Site', 'cross-site', 'Origin', 'https://evil.example').status).toBe(401);
    expect(p.nginxWrite('POST', 'Sec-Fetch-Site', 'same-site').status).toBe(401);
    expect(p.nginxWrite('DELETE', 'Origin', 'https://evil.example').status).toBe(401);
    expect(p.nginxWrite('POST', 'Origin', 'null').status).toBe(401);
    // No Fetch Metadata and no Origin (a Global Service, a script), the service's own page, a user's own navigation, a read.
    expect(p.nginxWrite('POST').status).toBe(200);
    expect(p.nginxWrite('POST', 'Sec-Fetch-Site', 'same-origin', 'Origin', 'https://data.example.org').status).toBe(200);
    expect(p.nginxWrite('POST', 'Sec-Fetch-Site', 'none').status).toBe(200);
    expect(p.nginxWrite('GET', 'Sec-Fetch-Site', 'cross-site', 'Origin', 'https://evil.example').status).toBe(200);
  });
});
