/**
 * The credential road (authz/pipeline/credential-road.ts) against the pipeline it replaced (commit LEGACY, before issue
 * 38): the same generated requests through both, in one process, with the same index, the same identity providers
 * (fakes: the road's shape is under test, not JWT cryptography) and the same imported records; every answer must be
 * the same, status and headers. README.md beside this file says why it is not part of `npm test`.
 */
import { describe, expect, it, beforeAll } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { pbkdf2Sync } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import { buildIndex, compileSnapshot, DEFAULT_CONFIG, formatImportedHash, hashToken, newProtectedScope, tokenIdOf, type AccessIndex, type Scope, type TokenRecord, type VerifiedJwt } from '../../core/index.js';
import { createAuthHandler } from '../../authz/pipeline/auth-pipeline.js';
import type { HeadRequest, HeadResponse } from '../../authz/http/head.js';
import type { SessionCache } from '../../authz/identity/session-cache.js';
import type { VerifyOutcome } from '../../authz/identity/oidc.js';
import { ImportedTokens } from '../../authz/imported/imported-tokens.js';
import { createLogger } from '../../authz/telemetry/log.js';
import { AuthMetrics } from '../../authz/telemetry/metrics.js';
import { Refusals } from '../../authz/telemetry/refusals.js';
import { TokenUsage } from '../../authz/telemetry/token-usage.js';
import { repoRoot } from '../cli/harness.js';

/** The last commit before the redesign. */
const LEGACY = '35e477d';
const LEGACY_DIR = join(repoRoot, 'test', 'differential', '.legacy');
const RUNS = Number(process.env.SVC_DIFFERENTIAL_RUNS ?? 20000);

const NOW = Date.now();
const ISSUER = 'https://idp.example.org';
const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
const OTHER: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' };
const token = (seed: string): string => `svc_${Buffer.from(seed.padEnd(30, 'x')).toString('base64url')}`;
const T_TOPIC = 'svc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0dd2';
const T_PROCESS = 'svc_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB1cc3';
const T_OTHER = 'svc_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC2bb4';
const T_IMPORTED = 'a wis2box token with spaces';
const SALT = Buffer.alloc(16, 7);

function record(t: string): TokenRecord {
  const hash = hashToken(t);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
}
function imported(t: string): TokenRecord {
  const hash = formatImportedHash(1000, SALT, pbkdf2Sync(t, SALT, 1000, 32, 'sha256'));
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
}

function worldIndex(): AccessIndex {
  const topic = newProtectedScope(TOPIC, 'topic', 'svc', [record(T_TOPIC)]);
  const processes = newProtectedScope(PROCESSES, 'processes', 'svc', [record(T_PROCESS), imported(T_IMPORTED)]);
  const other = newProtectedScope(OTHER, 'other', 'svc', [record(T_OTHER)]);
  const s = compileSnapshot([
    { ...topic, spec: { ...topic.spec, networks: [{ cidr: '127.0.0.2/32' }], subjects: [{ kind: 'Group', name: 'ops' }] } },
    { ...processes, spec: { ...processes.spec, networks: [{ cidr: '127.0.0.2/32' }], subjects: [{ kind: 'User', name: 'alice' }] } },
    other,
  ]);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A compact JWS naming ISSUER (its signature is the fake verifier's business). */
const jwt = (name: string): string => `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: ISSUER, sub: name })).toString('base64url')}.c2ln`;
const JWT = { known: jwt('known'), good: jwt('good'), bad: jwt('bad'), unavailable: jwt('unavailable'), stranger: jwt('stranger') };
const identity = (user: string, groups: string[]): Extract<VerifiedJwt, { ok: true }> => ({ ok: true, identity: { issuer: ISSUER, user, groups }, carrier: 'bearer', expiresAt: NOW + 3_600_000 });

/** The same fake identity provider for both roads: known JWTs now, others verified (a microtask later). */
const oidc = {
  known: (value: string, carrier: VerifiedJwt['carrier']): VerifiedJwt | undefined => (value === JWT.known ? { ...identity('bob', ['ops']), carrier } : undefined),
  verify: async (value: string): Promise<VerifyOutcome> => {
    if (value === JWT.good) return { ok: true, identity: { issuer: ISSUER, user: 'alice', groups: [] }, expiresAt: NOW + 3_600_000 };
    if (value === JWT.stranger) return { ok: true, identity: { issuer: ISSUER, user: 'mallory', groups: ['guests'] }, expiresAt: NOW + 3_600_000 };
    if (value === JWT.unavailable) return { ok: false, unavailable: true, reason: 'no keys' };
    return { ok: false, reason: 'signature' };
  },
};
/** The same fake session cache: one cookie opened before, one to open, anything else does not open. */
const sessions = {
  known: (value: string) => (value === 'known-session' ? { ...identity('carol', ['ops']), carrier: 'session' as const } : undefined),
  open: async (value: string) => (value === 'new-session' ? { ...identity('alice', []), carrier: 'session' as const } : undefined),
} as unknown as SessionCache;

type Handler = (req: HeadRequest, res: HeadResponse) => boolean;

function handlerOf(create: typeof createAuthHandler, legacy: boolean, index: AccessIndex): Handler {
  const { logger } = createLogger('error', { write: () => undefined });
  const access = legacy ? { ...DEFAULT_CONFIG, oidcIssuers: new Set([ISSUER]), knownJwt: oidc.known } : { ...DEFAULT_CONFIG, oidcIssuers: new Set([ISSUER]) };
  return create({
    access, state: { index, draining: false }, metrics: new AuthMetrics({ defaultMetrics: false }), logger, cacheMaxAge: 30,
    usage: new TokenUsage(logger, 0), refusals: new Refusals(logger, { windowMs: 0, sample: 0 }), trustedProxyHops: 0,
    oidc, imported: new ImportedTokens({ concurrency: 1, queue: 64, cacheSize: 16 }),
    browser: { externalUrls: ['https://data.example.org'], secure: true, sessions, formActions: () => [] },
  } as Parameters<typeof createAuthHandler>[0]);
}

interface Answer { status: number; headers: string[] }

/** One request through a handler; resolves with its answer, now or once a later decision is made. */
function ask(handle: Handler, req: HeadRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const out: Answer = { status: 0, headers: [] };
    const res: HeadResponse = {
      writeHead: (s, h) => ((out.status = s), (out.headers = [...((h as string[] | undefined) ?? [])])),
      end: () => resolve(out),
      headersSent: false, shouldKeepAlive: true, destroy: () => resolve({ status: -1, headers: [] }),
    };
    if (!handle(req, res)) resolve({ status: 404, headers: [] });
  });
}

const TARGETS = [
  '/data/2026/wis/origin/a/wis2/mw-met/data/core/x.bufr4', '/data/2026/wis/origin/a/wis2/mw-met/data/recommended/y.bufr4',
  '/data/2026/urn:wmo:md:mw-met:obs/x.bufr4', '/oapi/processes/svc/execution', '/oapi/processes/svc-x/execution',
  '/oapi/processes/other/execution', '/oapi/collections/stations/items', '/oapi/collections/origin.a.wis2.mw-met.data.core/items',
  '/oapi/collections', '/oapi/jobs/1', '/data/%2e%2e/x', '/DATA/2026/wis/origin/a/wis2/mw-met/data/CORE/x.bufr4',
];
const CREDENTIALS: readonly (readonly [string, string][])[] = [
  [], [['Authorization', `Bearer ${T_TOPIC}`]], [['Authorization', `Bearer ${T_PROCESS}`]], [['Authorization', `Bearer ${T_OTHER}`]],
  [['Authorization', `Bearer ${token('unknown')}`]], [['Authorization', 'Bearer a b']], [['Authorization', `Basic ${Buffer.from(`u:${T_TOPIC}`).toString('base64')}`]],
  [['Authorization', `Bearer ${T_IMPORTED}`]], [['Authorization', 'Bearer another wis2box token']],
  [['Authorization', `Bearer ${JWT.known}`]], [['Authorization', `Bearer ${JWT.good}`]], [['Authorization', `Bearer ${JWT.bad}`]],
  [['Authorization', `Bearer ${JWT.unavailable}`]], [['Authorization', `Bearer ${JWT.stranger}`]],
  [['Cookie', '__Host-svc-session=known-session']], [['Cookie', '__Host-svc-session=new-session']], [['Cookie', '__Host-svc-session=stale']],
  [['Cookie', '__Host-svc-session=known-session'], ['Authorization', `Bearer ${token('unknown')}`]],
];
const QUERY = ['', `?token=${T_TOPIC}`, `?token=${T_PROCESS}`, '?token=%zz', `?token=${JWT.good}`];
const BROWSER: readonly (readonly [string, string][])[] = [[], [['Sec-Fetch-Site', 'cross-site'], ['Origin', 'https://evil.example']], [['Sec-Fetch-Site', 'same-origin'], ['Sec-Fetch-Mode', 'navigate'], ['Accept', 'text/html']]];
const ENDPOINTS = ['auth-request', 'authorize', 'forward-auth', 'ext-authz'] as const;

function requestOf(endpoint: (typeof ENDPOINTS)[number], method: string, target: string, address: string | undefined, extra: readonly (readonly [string, string])[]): HeadRequest {
  const headers: string[] = extra.flatMap(([n, v]) => [n, v]);
  switch (endpoint) {
    case 'auth-request':
      return { method: 'GET', url: '/authz/auth-request', rawHeaders: ['X-Original-URI', target, 'X-Original-Method', method, ...(address ? ['X-Real-IP', address] : []), ...headers] };
    case 'authorize':
      return { method: 'GET', url: '/authorize', rawHeaders: ['X-Original-URI', target, 'X-Api-Http-Method', method, ...(address ? ['X-Real-IP', address] : []), ...headers] };
    case 'forward-auth':
      return { method: 'GET', url: '/authz/forward-auth', rawHeaders: ['X-Forwarded-Uri', target, 'X-Forwarded-Method', method, 'X-Forwarded-Host', 'data.example.org', 'X-Forwarded-Proto', 'https', ...(address ? ['X-Forwarded-For', address] : []), ...headers] };
    case 'ext-authz':
      return { method, url: `/authz/ext-authz${target}`, rawHeaders: ['Host', 'data.example.org', ...(address ? ['X-Forwarded-For', address] : []), ...headers] };
  }
}

let legacyCreate: typeof createAuthHandler;

beforeAll(async () => {
  rmSync(LEGACY_DIR, { recursive: true, force: true });
  mkdirSync(LEGACY_DIR, { recursive: true });
  const archive = execFileSync('git', ['archive', LEGACY, 'core', 'authz', 'lib'], { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', LEGACY_DIR], { input: archive });
  ({ createAuthHandler: legacyCreate } = (await import(join(LEGACY_DIR, 'authz', 'pipeline', 'auth-pipeline.ts'))) as { createAuthHandler: typeof createAuthHandler });
});

describe(`the credential road answers as the pipeline of ${LEGACY} did`, () => {
  it(`over ${RUNS} generated requests: every endpoint, method and credential kind`, async () => {
    const index = worldIndex();
    const oldRoad = handlerOf(legacyCreate, true, index);
    const newRoad = handlerOf(createAuthHandler, false, index);
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS), fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PUT'), fc.constantFrom(...TARGETS), fc.constantFrom(...QUERY),
        fc.constantFrom(...CREDENTIALS), fc.constantFrom(undefined, '127.0.0.2', '127.0.0.3'), fc.constantFrom(...BROWSER),
        async (endpoint, method, target, query, credential, address, browser) => {
          const req = requestOf(endpoint, method, `${target}${query}`, address, [...credential, ...browser]);
          const [before, after] = await Promise.all([ask(oldRoad, req), ask(newRoad, { ...req, rawHeaders: [...req.rawHeaders] })]);
          compared++;
          expect(after).toEqual(before);
        },
      ),
      { numRuns: RUNS },
    );
    process.stderr.write(`credential road: ${compared} generated requests answered alike by ${LEGACY} and the working tree\n`);
    expect(compared).toBe(RUNS);
  });
});
