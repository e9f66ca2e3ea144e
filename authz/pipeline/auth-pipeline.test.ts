import { describe, expect, it } from '@jest/globals';
import { createHash, pbkdf2Sync } from 'node:crypto';
import fc from 'fast-check';
import { buildIndex, compileSnapshot, DEFAULT_CONFIG, formatGeneratedToken, formatImportedHash, hashToken, newProtectedScope, scopeKey, tokenIdOf, type AccessIndex, type Scope, type TokenRecord } from '../../core/index.js';
import { createAuthHandler } from './auth-pipeline.js';
import type { HeadRequest, HeadResponse } from '../http/head.js';
import { ImportedTokens } from '../imported/imported-tokens.js';
import { createLogger } from '../telemetry/log.js';
import { ENDPOINTS } from '../endpoints/index.js';
import { AuthMetrics, OUTCOMES, SCOPE_KIND_LABELS } from '../telemetry/metrics.js';
import { Refusals } from '../telemetry/refusals.js';
import type { VerifyOutcome } from '../identity/oidc.js';
import { TokenUsage } from '../telemetry/token-usage.js';

// The decision pipeline driven directly (no sockets): requests in, answers and the refusal summary lines out.

const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`pipeline-test-${seed}`).digest());
function record(token: string, expiresAt?: string): TokenRecord {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...(expiresAt ? { expiresAt } : {}) };
}

/** Ten closed datasets (a token each), a closed topic and a closed process path: thirteen closed scopes. */
const DATASETS: Scope[] = Array.from({ length: 10 }, (_, i) => ({ kind: 'dataset', value: `urn:wmo:md:closed-${i}:obs` }));
const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
const CLOSED = [...DATASETS, TOPIC, PROCESSES];
const TOKENS = CLOSED.map((s) => tok(scopeKey(s)));
const T_EXPIRED = tok('expired');
const T_UNKNOWN = tok('unknown');

function fixtureIndex(): AccessIndex {
  const snapshot = compileSnapshot(CLOSED.map((s, i) => newProtectedScope(s, `s${i}`, undefined, i === 0 ? [record(TOKENS[i]!), record(T_EXPIRED, '2020-01-01T00:00:00Z')] : [record(TOKENS[i]!)])));
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

/** A pipeline over the fixture whose log lines are kept; `refusals.flush()` writes the summary lines. */
function pipeline(sample = 0) {
  const lines: Record<string, unknown>[] = [];
  const { logger } = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const refusals = new Refusals(logger, { windowMs: 0, sample });
  const handle = createAuthHandler({
    access: DEFAULT_CONFIG, state: { index: fixtureIndex(), draining: false }, metrics: new AuthMetrics(), logger,
    cacheMaxAge: 30, usage: new TokenUsage(logger, 0), refusals,
  });
  const ask = (endpoint: 'auth-request' | 'forward-auth', target: string, method: string, authorization?: string): number => {
    let status = 0;
    const rawHeaders = endpoint === 'auth-request'
      ? ['X-Original-URL', `https://data.example.org${target}`, 'X-Original-Method', method]
      : ['X-Forwarded-Uri', target, 'X-Forwarded-Method', method, 'X-Forwarded-Host', 'data.example.org', 'X-Forwarded-Proto', 'https'];
    if (authorization !== undefined) rawHeaders.push('Authorization', authorization);
    const req: HeadRequest = { method: 'GET', url: `/authz/${endpoint}`, rawHeaders };
    const res: HeadResponse = { writeHead: (s) => (status = s), end: () => undefined, headersSent: false, shouldKeepAlive: true, destroy: () => undefined };
    expect(handle(req, res)).toBe(true);
    return status;
  };
  const summaries = () => {
    refusals.flush();
    return lines.filter((l) => l.msg === 'requests refused');
  };
  return { ask, summaries, lines };
}

/** Every non-empty subset of the ten datasets, each as one WAF path naming them segment after segment. */
function subsetPaths(): string[] {
  const out: string[] = [];
  for (let mask = 1; mask < 1 << DATASETS.length; mask++) {
    out.push(`/data/2026-11-21/${DATASETS.filter((_, i) => mask & (1 << i)).map((d) => d.value).join('/')}/x.bufr4`);
  }
  return out;
}

describe('refusal summaries (issue 27 item 4): keyed by what the client cannot multiply', () => {
  it('1,023 requests naming subsets of 10 closed datasets in one path write at most the bound, not a line per subset', () => {
    const p = pipeline();
    const paths = subsetPaths();
    expect(paths.length).toBe(1023);
    for (const path of paths) expect(p.ask('auth-request', path, 'GET')).toBe(401);
    const summaries = p.summaries();
    // One endpoint, one outcome, no reason: at most the ten datasets (a path naming one) and the scope kinds.
    expect(summaries.length).toBeLessThanOrEqual(1 * 1 * 1 * (DATASETS.length + SCOPE_KIND_LABELS.length));
    expect(summaries.reduce((n, l) => n + (l.refused as number), 0)).toBe(1023);
    const single = new Set(DATASETS.map(scopeKey));
    for (const l of summaries) if (!single.has(l.scope as string)) expect(l.scope).toBe('dataset (several govern)');
  });

  it('a sampled refusal line still names every governing scope (the sample is bounded; the summary has their kind)', () => {
    const p = pipeline(1);
    expect(p.ask('auth-request', `/data/2026-11-21/${DATASETS[3]!.value}/${DATASETS[1]!.value}/x.bufr4`, 'GET')).toBe(401);
    expect(p.lines.find((l) => l.msg === 'decision')).toMatchObject({ outcome: 'no-token', scope: `${scopeKey(DATASETS[3]!)} ${scopeKey(DATASETS[1]!)}` });
    expect(p.summaries().map((l) => l.scope)).toEqual(['dataset (several govern)']);
  });

  it('a token used against many scopes, or many tokens, count in their scope\'s line, their ids listed there', () => {
    const p = pipeline();
    for (const t of TOKENS.slice(1)) expect(p.ask('auth-request', `/data/2026-11-21/${DATASETS[0]!.value}/x.bufr4`, 'GET', `Bearer ${t}`)).toBe(403);
    const summaries = p.summaries();
    expect(summaries.map((l) => [l.outcome, l.scope, l.refused])).toEqual([['insufficient-scope', scopeKey(DATASETS[0]!), TOKENS.length - 1]]);
    expect(Object.keys(summaries[0]!.tokenIds as object).length).toBe(10);
    expect(summaries[0]).toMatchObject({ tokenIdsNotListed: 1 });
    expect(Object.values(summaries[0]!.tokenIds as object)).toEqual(Array(10).fill(1));
    expect(JSON.stringify(p.lines).includes(TOKENS[1]!)).toBe(false);
  });

  const closedKeys = new Set(CLOSED.map(scopeKey));
  const KIND_BUCKETS = new Set([...SCOPE_KIND_LABELS.map((k) => `${k} (several govern)`), 'uncovered (closed by default)']);
  const segment = fc.oneof(
    fc.constantFrom(...DATASETS.map((d) => d.value), 'origin', 'a', 'wis2', 'mw-met', 'data', 'core', 'recommended'),
    fc.stringMatching(/^[a-z0-9:._-]{1,12}$/),
  );
  const target = fc.oneof(
    fc.array(segment, { minLength: 1, maxLength: 8 }).map((s) => `/data/2026-11-21/${s.join('/')}/x`),
    fc.stringMatching(/^[a-z0-9_-]{1,16}$/).map((id) => `/oapi/processes/${id}/execution`),
    fc.constantFrom('/oapi/processes/svc/execution', '/oapi/collections/stations/items', '/data/a%2Fb', '/data/x#y'),
  );
  const request = fc.record({
    endpoint: fc.constantFrom('auth-request' as const, 'forward-auth' as const),
    target,
    method: fc.constantFrom('GET', 'POST', 'DELETE'),
    credential: fc.option(fc.oneof(fc.constantFrom(...TOKENS, T_EXPIRED, T_UNKNOWN, 'not-a-token'), fc.stringMatching(/^svc_[A-Za-z0-9]{8,40}$/)), { nil: undefined }),
  });

  it('property: whatever the requests, summary lines <= endpoints x outcomes x reasons x (closed scopes + scope kinds)', () => {
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 300 }), (requests) => {
        const p = pipeline();
        for (const r of requests) p.ask(r.endpoint, r.target, r.method, r.credential === undefined ? undefined : `Bearer ${r.credential}`);
        const summaries = p.summaries();
        // The reasons a refusal can carry come from fixed sets in the code; those seen here bound this run.
        const reasons = new Set(summaries.map((l) => `${String(l.why)}\0${String(l.reason)}`)).size;
        expect(summaries.length).toBeLessThanOrEqual(ENDPOINTS.length * OUTCOMES.length * Math.max(1, reasons) * (closedKeys.size + KIND_BUCKETS.size));
        // And each line's scope is a closed scope of the snapshot, a bounded kind label, or none (malformed).
        for (const l of summaries) if (l.scope !== undefined) expect(closedKeys.has(l.scope as string) || KIND_BUCKETS.has(l.scope as string)).toBe(true);
        // So the distinct (endpoint, outcome, why, reason, scope) keys are the lines: no client-built value in them.
        expect(new Set(summaries.map((l) => JSON.stringify([l.endpoint, l.outcome, l.why, l.reason, l.scope]))).size).toBe(summaries.length);
      }),
      { numRuns: 60 },
    );
  });
});

describe('a decision that answers later (issue 28): a JWT\'s verification and an imported hash take one path', () => {
  const ISSUER = 'https://idp.example.org';
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const JWT = `${part({ alg: 'RS256', kid: 'k' })}.${part({ iss: ISSUER, sub: 'alice' })}.c2lnbmF0dXJl`;
  const IMPORTED = 'wis2box-token-of-the-pipeline-test';
  const SALT = Buffer.alloc(16, 9);
  const importedHash = formatImportedHash(1000, SALT, pbkdf2Sync(IMPORTED, SALT, 1000, 32, 'sha256'));
  const PROCESS = '/oapi/processes/svc/execution';

  /** A pipeline over a closed process path holding an imported record, whose JWT verifications the test settles. */
  function deferred() {
    const snapshot = compileSnapshot([newProtectedScope(PROCESSES, 'processes', undefined, [{ id: tokenIdOf(importedHash), hash: importedHash, createdAt: '2026-11-01T00:00:00Z' }])]);
    const built = buildIndex(snapshot.generation, snapshot.lines);
    if (!built.ok) throw new Error(built.error);
    const lines: Record<string, unknown>[] = [];
    const { logger } = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const verifications: { resolve: (v: VerifyOutcome) => void; reject: (e: Error) => void }[] = [];
    const verify = (): Promise<VerifyOutcome> => new Promise((resolve, reject) => verifications.push({ resolve, reject }));
    const handle = createAuthHandler({
      access: { ...DEFAULT_CONFIG, oidcIssuers: new Set([ISSUER]) }, state: { index: built.value, draining: false }, metrics: new AuthMetrics(), logger,
      cacheMaxAge: 30, usage: new TokenUsage(logger, 0), refusals: new Refusals(logger, { windowMs: 0 }), oidc: { verify, known: () => undefined },
      imported: new ImportedTokens({ concurrency: 1, queue: 0, cacheSize: 10 }),
    });
    /** Asks forward-auth (its answers tell unavailable, 503, from a refusal); `status` is 0 until answered. */
    const ask = (credential: string) => {
      const answer = { status: 0, headers: [] as readonly string[] };
      let answered!: () => void;
      const done = new Promise<void>((r) => (answered = r));
      const res: HeadResponse = {
        writeHead: (s, h) => Object.assign(answer, { status: s, headers: h }), end: () => answered(), headersSent: false, shouldKeepAlive: true, destroy: () => undefined,
      };
      expect(handle({ method: 'GET', url: '/authz/forward-auth', rawHeaders: ['X-Forwarded-Uri', PROCESS, 'X-Forwarded-Method', 'POST', 'Authorization', `Bearer ${credential}`] }, res)).toBe(true);
      return { answer, done };
    };
    return { ask, verifications, lines };
  }

  it('a JWT is answered only once verified: refused 401, no keys 503 (unavailable), a verifier that throws 503 and logged', async () => {
    const p = deferred();
    const asked = [p.ask(JWT), p.ask(JWT), p.ask(JWT)];
    expect(asked.map((a) => a.answer.status)).toEqual([0, 0, 0]);
    p.verifications[0]!.resolve({ ok: false, reason: 'signature' });
    p.verifications[1]!.resolve({ ok: false, unavailable: true, reason: 'no keys' });
    p.verifications[2]!.reject(new Error('verifier broke'));
    await Promise.all(asked.map((a) => a.done));
    expect(asked.map((a) => a.answer.status)).toEqual([401, 503, 503]);
    expect(p.lines.filter((l) => l.msg === 'internal error while deciding; denied')).toHaveLength(1);
  });

  it('an imported token: its first use answered later (hash derived), its next use at once (remembered)', async () => {
    const p = deferred();
    const first = p.ask(IMPORTED);
    expect(first.answer.status).toBe(0);
    await first.done;
    expect(first.answer.status).toBe(200);
    expect(first.answer.headers).toContain(tokenIdOf(importedHash));
    const next = p.ask(IMPORTED);
    expect(next.answer.status).toBe(200);
  });

  it('an imported check without a free slot is answered as unavailable (503), never as a grant', async () => {
    const p = deferred();
    const busy = p.ask('wis2box-some-wrong-token');
    const refused = p.ask(IMPORTED);
    await Promise.all([busy.done, refused.done]);
    expect([busy.answer.status, refused.answer.status]).toEqual([401, 503]);
  });
});
