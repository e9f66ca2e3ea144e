import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, formatGeneratedToken, hashToken, newProtectedScope, tokenIdOf, type Decision, type Scope } from '../../core/index.js';
import { answerSets } from '../http/answers.js';
import { Bookkeeping } from './bookkeeping.js';
import type { Exchange } from './exchange.js';
import type { HeadResponse } from '../http/head.js';
import { createLogger } from '../telemetry/log.js';
import { AuthMetrics } from '../telemetry/metrics.js';
import { Refusals } from '../telemetry/refusals.js';
import { TokenUsage } from '../telemetry/token-usage.js';

// What is recorded of an answer once it is out: metrics, usage, the decision line or the refusal count.

const TOKEN = formatGeneratedToken(createHash('sha256').update('bookkeeping-test').digest());
const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const TARGET = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4';
const NOW = Date.parse('2026-11-21T12:00:00Z');

function decision(authorization: string | undefined): Decision {
  const hash = hashToken(TOKEN);
  const snapshot = compileSnapshot([newProtectedScope(TOPIC, 'topic', undefined, [{ id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' }])]);
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  const d = decide(built.value, DEFAULT_CONFIG, { method: 'GET', target: TARGET, authorization }, NOW);
  if (d.outcome === 'verify-jwt') throw new Error('no JWT here');
  return d;
}

function books(level: 'info' | 'debug' = 'debug') {
  const lines: Record<string, unknown>[] = [];
  const { logger } = createLogger(level, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const metrics = new AuthMetrics({ defaultMetrics: false });
  const usage = new TokenUsage(logger, 0);
  const refusals = new Refusals(logger, { windowMs: 0, sample: 10 });
  const res: HeadResponse = { writeHead: () => undefined, end: () => undefined, headersSent: true, shouldKeepAlive: true, destroy: () => undefined };
  const exchange = (): Exchange => ({ endpoint: 'auth-request', answers: answerSets(0).nginx, res, started: performance.now(), at: NOW, reading: { ok: true, method: 'GET', target: TARGET, authorization: undefined } });
  return { b: new Bookkeeping({ metrics, logger, usage, refusals }), lines, metrics, usage, refusals, exchange };
}

const counted = async (metrics: AuthMetrics, outcome: string): Promise<number> => {
  const m = await metrics.registry.getSingleMetric('svc_auth_decisions_total')?.get();
  return m?.values.filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0) ?? 0;
};

describe('Bookkeeping', () => {
  it('a grant: counted for the token\'s usage and in the metrics, its decision line at debug with the scope and token id', async () => {
    const k = books();
    k.b.answered(k.exchange(), decision(`Bearer ${TOKEN}`));
    expect(await counted(k.metrics, 'granted')).toBe(1);
    expect(k.lines.find((l) => l.msg === 'decision')).toMatchObject({ level: 'debug', endpoint: 'auth-request', method: 'GET', outcome: 'granted', scope: `topic:${TOPIC.value}`, tokenId: tokenIdOf(hashToken(TOKEN)) });
    k.usage.flush();
    expect(k.lines.some((l) => l.msg !== 'decision' && JSON.stringify(l).includes(tokenIdOf(hashToken(TOKEN))))).toBe(true);
    expect(JSON.stringify(k.lines)).not.toContain(TOKEN);
  });

  it('a refusal: counted for Refusals under its scope, a sampled line at info; unavailable (null) is a refusal too', async () => {
    const k = books('info');
    k.b.answered(k.exchange(), decision(undefined));
    k.b.answered(k.exchange(), null);
    expect(k.lines.filter((l) => l.msg === 'decision').map((l) => [l.level, l.outcome, l.scope])).toEqual([['info', 'no-token', `topic:${TOPIC.value}`], ['info', 'unavailable', undefined]]);
    expect([await counted(k.metrics, 'no-token'), await counted(k.metrics, 'unavailable')]).toEqual([1, 1]);
  });

  it('an internal error is counted, and writes no decision line (the error is logged where it was caught)', async () => {
    const k = books();
    k.b.failed(k.exchange());
    expect(await counted(k.metrics, 'error')).toBe(1);
    expect(k.lines.filter((l) => l.msg === 'decision')).toEqual([]);
  });

  it('a misdirected proxy: every request counted, one warning per endpoint and likely sender', async () => {
    const k = books();
    k.b.misdirected('authorize', 'forward-auth', 'no original request target: X-Forwarded-Uri is present');
    k.b.misdirected('authorize', 'forward-auth', 'no original request target: X-Forwarded-Uri is present');
    k.b.misdirected('authorize', 'envoy', 'no original request target: X-Envoy-Original-Path is present');
    expect(k.lines.filter((l) => l.level === 'warn').map((l) => [l.endpoint, l.likelyProxy])).toEqual([['authorize', 'forward-auth'], ['authorize', 'envoy']]);
    const m = await k.metrics.registry.getSingleMetric('svc_auth_misdirected_requests_total')?.get();
    expect(m?.values.find((v) => v.labels.endpoint === 'authorize' && v.labels.likely_proxy === 'forward-auth')?.value).toBe(2);
  });
});
