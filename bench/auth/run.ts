// npm run bench:auth — svc-auth's hot path against a raw node:http server measured in the same run.
//
// svc-auth runs as its own process over a generated 10,000-scope, 100,000-token snapshot file (kubelet
// layout, so reloads are real `..data` symlink swaps); the baseline is a node:http server answering 200
// to everything. Both are pinned to one core and the load generator (autocannon, in this process) to the
// other when taskset exists. Cases: (a) an open resource, (b) a protected one with a valid Bearer token,
// (c) a wrong token, (d) a valid JWT of an OpenID provider whose group the protected scope grants (single
// sign-on: RS256, as most providers sign; the provider is a node:http server in this process serving discovery
// and a JWKS, asked once at start), (e) first-seen JWTs (every request a JWT never sent before, so each one costs
// an RSA verification: BENCH_FIRST_SEEN requests per round, default 4000, signed before the round), and (b) again
// while the snapshot is reloaded back to back, (f) a request granted by its address (X-Real-IP in a network of the
// scope: a list of Global Services' /32s and a /24). Targets: (b), (d) and (f) at least 0.8x the baseline's requests/s, (b)
// with a p99 at most 2x the baseline's; p99 during reloads at most 3x steady. (e) is reported, p99 included,
// without a target. Then ./session.ts: a browser session cookie (a real sign-in through an OpenID provider's code
// flow) deciding the group-granted scope, against the baseline (≥ 0.8x) and against oauth2-proxy's /oauth2/auth for
// its own session cookie (svc-auth ÷ oauth2-proxy ≥ 1.0, p99 of each beside it).
//
// Environment: BENCH_DURATION (seconds per measured run, default 2), BENCH_ROUNDS (default 5),
// BENCH_CONNECTIONS (default 32), BENCH_LOG_LEVEL (svc-auth's, default info; logs go to /dev/null),
// BENCH_AUTH_DIST (1: run dist/authz/main.js, 0: the sources through tsx; default: dist/ when it is current),
// BENCH_AUTH_NODE_FLAGS (node options for svc-auth; default: those of its bin's shebang, as deployed),
// BENCH_CASES (comma-separated subset of baseline,open,valid,wrong,jwt,network,jwtFirst,reload; default all: targets whose cases
// did not run are reported as not run, and the run fails), BENCH_SESSION (0: leave out the session-cookie section of
// ./session.ts, svc-auth's browser session against oauth2-proxy's, which builds oauth2-proxy into the tool cache).
import { KeyObject, pbkdf2Sync, randomBytes, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createServer as createHttpServer } from 'node:http';
import autocannon, { type Options as CannonOptions } from 'autocannon';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { compileSnapshot, formatGeneratedToken, formatImportedHash, hashToken, WIS2BOX_ITERATIONS, parseSnapshotFile, serializeSnapshot, type ProtectedScope, type Snapshot, type TokenRecord } from '../../core/index.js';
import { buildIndexInSlices } from '../../authz/sources/source.js';
import { freePorts } from '../../test/support/ports.js';
import { Supervised } from '../../test/support/process.js';
import { waitUntil } from '../../test/support/wait.js';
import { bracketedRatio, bracketedRound, median, metricValue, type Bracketed, type Measured } from '../support/figures.js';
import { cpuMs, hasTaskset, pinned, pinSelf, svcAuthNodeFlags } from '../support/processes.js';
import { benchScopes, KNOWN_SCOPE, PROTECTED_PATH, SCOPES, TOKENS_PER_SCOPE, tokenRecord, withOneMoreToken } from '../support/scopes.js';
import { sessionBench } from './session.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WARMUP = 1.5;
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
const ROOT = resolve(import.meta.dirname, '../..');
const JWT_GROUP = 'bench-readers';
const JWT_AUDIENCE = 'svc-bench';

/** An OpenID provider of this process: discovery and a JWKS on 127.0.0.1, and a JWT it signed (never printed). */
async function startProvider(): Promise<{ issuer: string; jwt: string; fresh: (n: number) => string[]; close: () => void }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' };
  let issuer = '';
  const server = createHttpServer((req, res) => {
    const body = req.url === '/.well-known/openid-configuration' ? { issuer, jwks_uri: `${issuer}/keys` } : req.url === '/keys' ? { keys: [jwk] } : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(body ? JSON.stringify(body) : undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const jwt = await new SignJWT({ sub: 'bench-user', groups: ['staff', JWT_GROUP] })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' }).setIssuer(issuer).setAudience(JWT_AUDIENCE).setIssuedAt().setExpirationTime('2h').sign(privateKey);
  // First-seen JWTs, each with its own jti: signed with node:crypto, several times faster than jose for a batch.
  const key = KeyObject.from(privateKey);
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = part({ alg: 'RS256', kid: 'bench-1', typ: 'JWT' });
  const fresh = (n: number): string[] => Array.from({ length: n }, () => {
    const now = Math.floor(Date.now() / 1000);
    const body = `${head}.${part({ iss: issuer, aud: JWT_AUDIENCE, sub: 'bench-user', groups: ['staff', JWT_GROUP], iat: now, exp: now + 7200, jti: randomBytes(12).toString('base64url') })}`;
    return `${body}.${sign('sha256', Buffer.from(body), key).toString('base64url')}`;
  });
  return { issuer, jwt, fresh, close: () => server.close() };
}

// ---------------------------------------------------------------------------------------------------
// The snapshot: 6,000 topic scopes, 3,000 dataset scopes, 1,000 process scopes, 10 tokens each.

interface Fixture {
  readonly a: Snapshot;
  readonly b: Snapshot;
  /** The plaintext of one token of the protected scope; never printed. */
  readonly token: string;
  /** Well-formed (valid checksum) but in no scope. */
  readonly wrongToken: string;
  readonly protectedPath: string;
  readonly openPath: string;
  /** A WAF file of the scope that grants networks (NETWORK_SCOPE), and an address one of them holds. */
  readonly networkPath: string;
  readonly networkAddress: string;
}

/** The scope next to the token's: it grants the WIS2 Global Services' addresses (a list of /32s and a /24). */
const NETWORK_SCOPE = KNOWN_SCOPE - 1;
const NETWORKS = [...Array.from({ length: 30 }, (_, i) => `192.0.2.${i + 1}/32`), '203.0.113.0/24', '2001:db8::/32'];

function makeFixture(): Fixture {
  const token = formatGeneratedToken(randomBytes(32));
  const wrongToken = formatGeneratedToken(randomBytes(32));
  const objects = benchScopes(token);
  // The token's scope grants a group of the OpenID provider too (case (d)).
  const granted = objects[KNOWN_SCOPE]!;
  objects[KNOWN_SCOPE] = { ...granted, spec: { ...granted.spec, subjects: [{ kind: 'Group', name: JWT_GROUP }] } };
  const byNetwork = objects[NETWORK_SCOPE]!;
  objects[NETWORK_SCOPE] = { ...byNetwork, spec: { ...byNetwork.spec, networks: NETWORKS.map((cidr) => ({ cidr })) } };
  const a = compileSnapshot(objects);
  // Generation b differs by one token in one scope, so every swap is a real reload.
  objects[SCOPES - 1] = withOneMoreToken(objects[SCOPES - 1]!);
  const b = compileSnapshot(objects);
  return {
    a,
    b,
    token,
    wrongToken,
    protectedPath: PROTECTED_PATH,
    openPath: '/data/2026-11-21/wis/origin/a/wis2/centre-open/data/core/weather/surface/x.bufr4',
    networkPath: PROTECTED_PATH.replace(`centre-${KNOWN_SCOPE}`, `centre-${NETWORK_SCOPE}`),
    networkAddress: '203.0.113.7',
  };
}

/** kubelet's layout: FILE → ..data/FILE, ..data → ..<generation>/. */
function writeKubeletLayout(dir: string, f: Fixture): { file: string; current: 'a' | 'b'; swapTo(which: 'a' | 'b'): void } {
  for (const [name, s] of [['..gen_a', f.a], ['..gen_b', f.b]] as const) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'snapshot'), serializeSnapshot(s));
  }
  symlinkSync('..gen_a', join(dir, '..data'));
  symlinkSync('..data/snapshot', join(dir, 'snapshot'));
  const layout = {
    file: join(dir, 'snapshot'),
    current: 'a' as 'a' | 'b',
    swapTo(which: 'a' | 'b') {
      const tmp = join(dir, '..data_tmp');
      rmSync(tmp, { force: true });
      symlinkSync(`..gen_${which}`, tmp);
      renameSync(tmp, join(dir, '..data'));
      layout.current = which;
    },
  };
  return layout;
}

// ---------------------------------------------------------------------------------------------------
// Processes

/** Whether dist/ holds a build at least as new as every source of svc-auth (core/, authz/). */
function builtIsCurrent(): { current: boolean; why: string } {
  const newest = (dir: string, ext: string): number => {
    let t = 0;
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })) {
      if (e.isFile() && e.name.endsWith(ext) && !e.name.endsWith(`.test${ext}`)) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs);
    }
    return t;
  };
  try {
    const sources = Math.max(newest('core', '.ts'), newest('authz', '.ts'));
    const built = Math.min(statSync(join(ROOT, 'dist/authz/main.js')).mtimeMs, statSync(join(ROOT, 'dist/core/index.js')).mtimeMs);
    return built >= sources ? { current: true, why: 'dist/ is current' } : { current: false, why: 'dist/ is older than the sources' };
  } catch {
    return { current: false, why: 'no dist/ build' };
  }
}

/** The node options svc-auth runs with: BENCH_AUTH_NODE_FLAGS, else those of its bin's shebang, as deployed. */
const nodeFlags = (): string[] => process.env.BENCH_AUTH_NODE_FLAGS?.split(' ').filter(Boolean) ?? svcAuthNodeFlags(ROOT);

/** Node's arguments that run svc-auth, before its own: the node flags, then the build or the sources through tsx. */
function authProgram(useDist: boolean): string[] {
  return [...nodeFlags(), ...(useDist ? ['dist/authz/main.js'] : ['--import', 'tsx', 'authz/main.ts'])];
}

// Supervised kills whatever still runs when the bench exits, a failed one included.
const children: Supervised[] = [];

function spawnPinned(name: string, args: string[]): Supervised {
  const [cmd, argv] = pinned(0, process.execPath, args);
  const child = Supervised.spawn(name, cmd, argv, { cwd: ROOT, output: 'stderr' });
  children.push(child);
  return child;
}

/** The body of `url` once `ok` accepts its answer (polled every 20 ms: the bench times svc-auth's start). */
function waitFor(url: string, ok: (status: number, body: string) => boolean, timeoutMs: number): Promise<string> {
  return waitUntil(async () => {
    const r = await fetch(url);
    const body = await r.text();
    return ok(r.status, body) ? body : undefined;
  }, { what: url, timeoutMs, intervalMs: 20 });
}

const BASELINE_SERVER = `
import { createServer } from 'node:http';
createServer((req, res) => { res.writeHead(200, { 'Content-Length': '0' }); res.end(); })
  .listen(Number(process.argv[1]), '127.0.0.1');
`;

// ---------------------------------------------------------------------------------------------------
// Load

interface Run {
  readonly rps: number;
  readonly latencies: Float64Array;
  readonly statuses: Map<number, number>;
  readonly errors: number;
  /** Server CPU per answered request, microseconds. */
  readonly cpuPerRequest: number;
}

/** `extra`: autocannon options of a case (the first-seen case's fixed amount and per-request credential). */
function load(url: string, headers: Record<string, string>, seconds: number, serverPid?: number, extra: Partial<CannonOptions> = {}): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    let latencies = new Float64Array(1 << 18);
    let n = 0;
    const statuses = new Map<number, number>();
    const started = performance.now();
    const cpuBefore = cpuMs(serverPid);
    const instance = autocannon({ url, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers, ...extra }, (err, result) => {
      if (err) return reject(err);
      const elapsed = (performance.now() - started) / 1000;
      const cpuPerRequest = ((cpuMs(serverPid) - cpuBefore) * 1000) / n;
      // A fixed amount of requests (the first-seen case) ends when they are answered: its own elapsed time.
      const seconds = extra.amount !== undefined ? elapsed : Math.min(elapsed, result.duration || elapsed);
      resolveRun({ rps: n / seconds, latencies: latencies.subarray(0, n), statuses, errors: result.errors + result.timeouts, cpuPerRequest });
    });
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = responseTime;
      statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
    });
  });
}

function measure(run: Run): Measured {
  const sorted = run.latencies.slice().sort();
  const pct = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
  return { rps: run.rps, p50: pct(50), p99: pct(99), statuses: run.statuses, errors: run.errors, cpu: run.cpuPerRequest };
}

// ---------------------------------------------------------------------------------------------------

// ---- imported (wis2box-auth) tokens: a second svc-auth of its own over a small snapshot, so the PBKDF2 cases are
// measured side by side with a SHA-256 token in one run without touching the 100,000-token fixture above.
const IMPORTED_FIRST_USES = 5;

/** One wis2downloader scope with IMPORTED_FIRST_USES + 1 imported records, one topic with a SHA-256 token. */
function importedFixture(): { snapshot: Snapshot; imported: string[]; sha: string } {
  const imported = Array.from({ length: IMPORTED_FIRST_USES + 1 }, () => formatGeneratedToken(randomBytes(32)));
  const records = imported.map((tok): TokenRecord => {
    const salt = randomBytes(24);
    return tokenRecord(formatImportedHash(WIS2BOX_ITERATIONS, salt, pbkdf2Sync(tok, salt, WIS2BOX_ITERATIONS, 32, 'sha256')));
  });
  const sha = formatGeneratedToken(randomBytes(32));
  const spec = (s: Record<string, unknown>) => s as unknown as ProtectedScope['spec'];
  const objects: ProtectedScope[] = [
    { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'dl' }, spec: spec({ path: 'wis2downloader', tokens: records }) },
    { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'topic' }, spec: spec({ topicHierarchy: 'origin.a.wis2.centre-1.data.core', tokens: [tokenRecord(hashToken(sha))] }) },
  ];
  return { snapshot: compileSnapshot(objects), imported, sha };
}

/** Imported token first use (latency), repeated use against a SHA-256 token, and the SHA-256 case under a flood of wrong tokens. */
async function importedBench(dir: string): Promise<boolean> {
  const f = importedFixture();
  const file = join(dir, 'imported.snapshot');
  writeFileSync(file, serializeSnapshot(f.snapshot));
  const [port, metrics] = (await freePorts(2)) as [number, number];
  const auth = spawnPinned('svc-auth-imported', [...nodeFlags(), '--import', 'tsx', 'authz/main.ts',
    '--snapshot-file', file, '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${metrics}`, '--log-level', LOG_LEVEL]);
  await waitFor(`http://127.0.0.1:${port}/readyz`, (st) => st === 200, 60_000);
  const url = `http://127.0.0.1:${port}/authz/auth-request`;
  const dl = (tok: string) => ({ 'X-Original-URI': '/wis2downloader/subscriptions', Authorization: `Bearer ${tok}` });
  const sha = { 'X-Original-URI': '/data/2026-11-21/wis/origin/a/wis2/centre-1/data/core/x.bufr4', Authorization: `Bearer ${f.sha}` };
  const firstMs: number[] = [];
  for (const tok of f.imported.slice(1)) {
    const t0 = performance.now();
    const st = (await fetch(url, { headers: dl(tok) })).status;
    firstMs.push(performance.now() - t0);
    if (st !== 200) throw new Error(`imported first use answered ${st}`);
  }
  await load(url, dl(f.imported[0]!), WARMUP);
  await load(url, sha, WARMUP);
  const ratios: number[] = [];
  const flooded: number[] = [];
  let shaRps = 0;
  let impRps = 0;
  let floodStatuses = new Map<number, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const s = measure(await load(url, sha, DURATION, auth.pid));
    const i = measure(await load(url, dl(f.imported[0]!), DURATION, auth.pid));
    ratios.push(s.rps / i.rps);
    [shaRps, impRps] = [s.rps, i.rps];
    // A flood of wrong tokens on the imported scope (each one a derivation until the bound refuses it) while
    // the SHA-256 case is measured: half the connections each.
    const wrong = load(url, dl(formatGeneratedToken(randomBytes(32))), DURATION, undefined, { connections: Math.max(1, CONNECTIONS / 2) });
    const during = measure(await load(url, sha, DURATION, auth.pid, { connections: Math.max(1, CONNECTIONS / 2) }));
    floodStatuses = measure(await wrong).statuses;
    flooded.push(during.rps / s.rps);
  }
  await auth.stop('SIGKILL');
  const ratio = median(ratios);
  console.log(`\nimported (wis2box-auth PBKDF2, ${WIS2BOX_ITERATIONS} iterations) tokens, own svc-auth, ${IMPORTED_FIRST_USES + 1} imported records in the scope:`);
  console.log(`  first use: median ${median(firstMs).toFixed(1)} ms, max ${Math.max(...firstMs).toFixed(1)} ms (${firstMs.length} tokens, each derived against the scope's records in turn)`);
  console.log(`  repeated use: ${impRps.toFixed(0)} req/s vs SHA-256 token ${shaRps.toFixed(0)} req/s (last round); SHA-256 ÷ imported ${ratio.toFixed(2)}× (median of ${ROUNDS})`);
  console.log(`  SHA-256 token while wrong tokens flood the imported scope: ${median(flooded).toFixed(2)}× its own rate without the flood (half the connections each); flood answers ${[...floodStatuses].map(([k, c]) => `${k}:${c}`).join(' ')}`);
  const pass = ratio <= 1.5;
  console.log(`${pass ? 'PASS' : 'FAIL'}  imported repeated use: SHA-256 req/s ÷ imported req/s ≤ 1.5: ${ratio.toFixed(2)}×`);
  return pass;
}

async function main(): Promise<void> {
  pinSelf();
  console.log(`bench:auth — ${SCOPES.toLocaleString('en')} scopes, ${(SCOPES * TOKENS_PER_SCOPE).toLocaleString('en')} tokens; ${CONNECTIONS} connections, ${ROUNDS} round(s) of ${DURATION}s per case; ${hasTaskset ? 'servers on CPU 0, load generator on CPU 1' : 'taskset not found: processes not pinned'}`);

  const fixture = makeFixture();
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-auth-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const layout = writeKubeletLayout(dir, fixture);
  const text = serializeSnapshot(fixture.a);

  // In-process load cost of the snapshot: verification, sliced index build, retained heap.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let t = performance.now();
  const parsed = parseSnapshotFile(text);
  const verifyMs = performance.now() - t;
  if (!parsed.ok) throw new Error(parsed.error);
  t = performance.now();
  const built = await buildIndexInSlices(parsed.value.lines, parsed.value.header.generation);
  const buildMs = performance.now() - t;
  if (!built.ok) throw new Error(built.error.message);
  gc();
  const indexBytes = process.memoryUsage().heapUsed - heapBefore;
  void built.value.scopeCount; // keep the index alive until measured

  const [basePort, authPort, metricsPort] = (await freePorts(3)) as [number, number, number];
  const provider = await startProvider();
  const baseline = spawnPinned('baseline', ['--input-type=module', '-e', BASELINE_SERVER, String(basePort)]);
  const build = builtIsCurrent();
  const useDist = process.env.BENCH_AUTH_DIST === undefined ? build.current : process.env.BENCH_AUTH_DIST === '1';
  console.log(useDist ? '  svc-auth: node dist/authz/main.js (the build, as deployed)' : `  svc-auth: node --import tsx authz/main.ts (${build.why}; run "npm run build" to bench the build, which is faster)`);
  const spawnedAt = performance.now();
  const auth = spawnPinned('svc-auth', [
    ...authProgram(useDist),
    '--snapshot-file', layout.file,
    '--listen', `127.0.0.1:${authPort}`,
    '--metrics-listen', `127.0.0.1:${metricsPort}`,
    '--log-level', LOG_LEVEL,
    '--oidc-issuer', provider.issuer, '--oidc-audience', JWT_AUDIENCE,
  ]);
  const authBase = `http://127.0.0.1:${authPort}`;
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  await waitFor(`${authBase}/readyz`, (s) => s === 200, 60_000);
  const readyMs = performance.now() - spawnedAt;
  await waitFor(`http://127.0.0.1:${basePort}/`, (s) => s === 200, 10_000);
  const m0 = await (await fetch(metricsUrl)).text();
  const serverLoadS = metricValue(m0, 'svc_auth_snapshot_load_seconds');
  const rss = metricValue(m0, 'process_resident_memory_bytes');
  const heap = metricValue(m0, 'nodejs_heap_size_used_bytes');

  const authUrl = `${authBase}/authz/auth-request`;
  const cases = {
    baseline: { url: `http://127.0.0.1:${basePort}/authz/auth-request`, headers: { 'X-Original-URI': fixture.protectedPath, Authorization: `Bearer ${fixture.token}` }, expect: 200, pid: baseline.pid },
    open: { url: authUrl, headers: { 'X-Original-URI': fixture.openPath }, expect: 200, pid: auth.pid },
    valid: { url: authUrl, headers: { 'X-Original-URI': fixture.protectedPath, Authorization: `Bearer ${fixture.token}` }, expect: 200, pid: auth.pid },
    wrong: { url: authUrl, headers: { 'X-Original-URI': fixture.protectedPath, Authorization: `Bearer ${fixture.wrongToken}` }, expect: 401, pid: auth.pid },
    jwt: { url: authUrl, headers: { 'X-Original-URI': fixture.protectedPath, Authorization: `Bearer ${provider.jwt}` }, expect: 200, pid: auth.pid },
    network: { url: authUrl, headers: { 'X-Original-URI': fixture.networkPath, 'X-Real-IP': fixture.networkAddress }, expect: 200, pid: auth.pid },
    jwtFirst: { url: authUrl, headers: { 'X-Original-URI': fixture.protectedPath }, expect: 200, pid: auth.pid },
    reload: { url: authUrl, headers: { 'X-Original-URI': fixture.protectedPath, Authorization: `Bearer ${fixture.token}` }, expect: 200, pid: auth.pid },
  } as const;
  type CaseName = keyof typeof cases;
  const order = (process.env.BENCH_CASES?.split(',') ?? Object.keys(cases)) as CaseName[];
  const unknown = order.filter((name) => !(name in cases));
  if (unknown.length > 0) throw new Error(`BENCH_CASES: unknown case(s) ${unknown.join(', ')}; use some of ${Object.keys(cases).join(',')}`);
  const runs: Record<CaseName, Measured[]> = { baseline: [], open: [], valid: [], wrong: [], jwt: [], network: [], jwtFirst: [], reload: [] };
  /** The first-seen case: a fixed number of JWTs never sent before, one per request, signed before the run. */
  const FIRST_SEEN = Number(process.env.BENCH_FIRST_SEEN ?? 4000);
  const firstSeen = (n: number): Partial<CannonOptions> => {
    const jwts = provider.fresh(n);
    let next = 0;
    return { amount: n, requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, Authorization: `Bearer ${jwts[next++ % n]!}` } }) }] };
  };

  // While a reload run lasts, the snapshot is swapped back and forth, each swap as soon as the previous
  // one is in service, so the whole run is "during a reload".
  let reloads = 0;
  let reloadWallMs = 0;
  async function duringReloads<T>(work: Promise<T>): Promise<T> {
    let done = false;
    const swapper = (async () => {
      let next: 'a' | 'b' = layout.current === 'a' ? 'b' : 'a';
      while (!done) {
        const want = next === 'a' ? fixture.a.generation : fixture.b.generation;
        const at = performance.now();
        layout.swapTo(next);
        await waitFor(`${authBase}/readyz`, (s, body) => done || body.includes(want), 30_000);
        if (done) break;
        reloads++;
        reloadWallMs += performance.now() - at;
        next = next === 'a' ? 'b' : 'a';
      }
    })();
    const result = await work;
    done = true;
    await swapper;
    return result;
  }

  for (const name of order) if (name !== 'reload') await load(cases[name].url, cases[name].headers, WARMUP, undefined, name === 'jwtFirst' ? firstSeen(500) : {});
  // Rounds interleave the cases, so drift on a shared machine hits them alike, and each case runs between two
  // baseline runs (bracketedRound): a ratio against the baseline is the case's against the mean of the two runs
  // around it, and the median over rounds is reported. Other ratios are taken within a round.
  const brackets = Object.fromEntries(order.map((name) => [name, [] as Bracketed[]])) as Record<CaseName, Bracketed[]>;
  for (let round = 0; round < ROUNDS; round++) {
    const measureCase = async (name: CaseName): Promise<Measured> => {
      process.stdout.write(`  round ${round + 1}/${ROUNDS}: ${name}…          \r`);
      const run = load(cases[name].url, cases[name].headers, DURATION, cases[name].pid, name === 'jwtFirst' ? firstSeen(FIRST_SEEN) : {});
      const m = measure(await (name === 'reload' ? duringReloads(run) : run));
      runs[name].push(m);
      return m;
    };
    if (!order.includes('baseline')) {
      for (const name of order) await measureCase(name);
      continue;
    }
    const bracketed = await bracketedRound(order.filter((name) => name !== 'baseline'), measureCase);
    for (const [name, b] of bracketed) brackets[name].push(b);
  }
  // Leave svc-auth on generation a, as it started.
  if (layout.current !== 'a') {
    layout.swapTo('a');
    await waitFor(`${authBase}/readyz`, (_s, body) => body.includes(fixture.a.generation), 30_000);
  }
  const m1 = await (await fetch(metricsUrl)).text();
  const reloadFailures = metricValue(m1, 'svc_auth_reload_failures_total');

  // ---- report
  const perRound = (name: CaseName, f: (m: Measured, i: number) => number) => median(runs[name].map(f));
  /** Against the baseline: bracketed (the runs around the case); against another case: within each round. */
  const ratio = (name: CaseName, against: CaseName, f: (m: Measured) => number): number => {
    if (runs[against].length === 0) return NaN;
    if (against !== 'baseline') return perRound(name, (m, i) => f(m) / f(runs[against][i]!));
    return name === 'baseline' ? 1 : bracketedRatio(brackets[name], f);
  };
  const labels: Record<CaseName, string> = {
    baseline: 'baseline: raw node:http, 200',
    open: '(a) open resource',
    valid: '(b) protected, valid Bearer token',
    wrong: '(c) protected, wrong token (401)',
    jwt: '(d) protected, valid JWT, group grant',
    network: '(f) protected, granted by address',
    jwtFirst: '(e) (d) with first-seen JWTs',
    reload: '(b) during back-to-back reloads',
  };
  const fmt = (x: number, d = 2) => x.toFixed(d);
  console.log(`\n${'case'.padEnd(36)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}   ${'req/s ×base'.padStart(11)} ${'p99 ×base'.padStart(10)} ${'CPU µs/req'.padStart(11)}   statuses`);
  for (const name of order) {
    const all = runs[name];
    const statuses = new Map<number, number>();
    for (const m of all) for (const [st, c] of m.statuses) statuses.set(st, (statuses.get(st) ?? 0) + c);
    const errors = all.reduce((n, m) => n + m.errors, 0);
    const st = [...statuses].map(([k, c]) => `${k}:${c}`).join(' ') + (errors ? ` errors:${errors}` : '');
    console.log(
      `${labels[name].padEnd(36)} ${fmt(perRound(name, (m) => m.rps), 0).padStart(8)} ${fmt(perRound(name, (m) => m.p50)).padStart(8)} ${fmt(perRound(name, (m) => m.p99)).padStart(8)}   ${fmt(ratio(name, 'baseline', (m) => m.rps)).padStart(11)} ${fmt(ratio(name, 'baseline', (m) => m.p99)).padStart(10)} ${fmt(perRound(name, (m) => m.cpu), 1).padStart(11)}   ${st}`,
    );
  }
  console.log('(medians over rounds; a ratio to the baseline is against the mean of the baseline runs just before and after the case, other ratios within each round; CPU µs/req is the server process\'s user+system time per answer)');
  const mb = (b: number | undefined) => (b === undefined ? '?' : `${(b / 1048576).toFixed(1)} MiB`);
  console.log(`\nsnapshot: ${fixture.a.scopeCount.toLocaleString('en')} scopes, ${fixture.a.tokenCount.toLocaleString('en')} tokens, ${mb(text.length)} file`);
  console.log(`  load in this process: verify (core parseSnapshotFile) ${fmt(verifyMs, 0)} ms + sliced index build ${fmt(buildMs, 0)} ms; the index retains ${mb(indexBytes)} of heap`);
  console.log(`  svc-auth: first load ${serverLoadS === undefined ? '?' : fmt(serverLoadS * 1000, 0)} ms (ready ${fmt(readyMs, 0)} ms after spawn); RSS ${mb(rss)}, heap used ${mb(heap)}`);
  console.log(`  reloads during the reload runs: ${reloads}, ${reloads ? fmt(reloadWallMs / reloads, 0) : '?'} ms each from swap to in service; reload failures ${reloadFailures ?? '?'}`);

  const ran = (...names: CaseName[]) => names.every((name) => runs[name].length > 0);
  const rpsRatio = ran('valid', 'baseline') ? ratio('valid', 'baseline', (m) => m.rps) : NaN;
  const p99Ratio = ran('valid', 'baseline') ? ratio('valid', 'baseline', (m) => m.p99) : NaN;
  const reloadRatio = ran('reload', 'valid') ? ratio('reload', 'valid', (m) => m.p99) : NaN;
  const jwtRatio = ran('jwt', 'baseline') ? ratio('jwt', 'baseline', (m) => m.rps) : NaN;
  const networkRatio = ran('network', 'baseline') ? ratio('network', 'baseline', (m) => m.rps) : NaN;
  if (ran('jwtFirst')) console.log(`  first-seen JWTs (e): ${fmt(perRound('jwtFirst', (m) => m.rps), 0)} req/s, p99 ${fmt(perRound('jwtFirst', (m) => m.p99))} ms (${FIRST_SEEN} per round, each an RSA verification)`);
  const statusesOk = order.every((name) => runs[name].every((m) => m.errors === 0 && [...m.statuses.keys()].every((st) => st === cases[name].expect)));
  // NaN (a case not run) compares false: a partial run never passes.
  const targets: [string, boolean][] = [
    [`(b) requests/s ≥ 0.8× baseline: ${fmt(rpsRatio)}×`, rpsRatio >= 0.8],
    [`(b) p99 ≤ 2× baseline p99: ${fmt(p99Ratio)}×`, p99Ratio <= 2],
    [`(d) JWT requests/s ≥ 0.8× baseline: ${fmt(jwtRatio)}×`, jwtRatio >= 0.8],
    [`(f) network-granted requests/s ≥ 0.8× baseline: ${fmt(networkRatio)}×`, networkRatio >= 0.8],
    [`p99 during reloads ≤ 3× steady-state (b) p99: ${fmt(reloadRatio)}× (${reloads} reloads)`, reloadRatio <= 3 && reloads > 0],
    ['every answer had the expected status, no errors', statusesOk],
  ];
  console.log('');
  for (const [label, pass] of targets) console.log(`${pass ? 'PASS' : 'FAIL'}  ${label}`);
  // The sections below run servers of their own on CPU 0: this svc-auth, idle after the reload runs' allocations,
  // could still run a V8 memory-reducing GC there during their runs.
  await auth.stop('SIGKILL');
  // BENCH_SESSION=0 leaves the session-cookie cases (and oauth2-proxy's build) out: see ./session.ts.
  const sessionOk = process.env.BENCH_SESSION === '0' ? true : await sessionBench({
    rounds: ROUNDS, duration: DURATION, warmup: WARMUP, connections: CONNECTIONS, pinned: hasTaskset,
    run: async (url, headers, seconds, pid) => measure(await load(url, headers, seconds, pid)),
    baseline: cases.baseline, authProgram: authProgram(useDist), spawnPinned, waitReady: (url) => waitFor(url, (s) => s === 200, 60_000),
    snapshotFile: layout.file, protectedPath: fixture.protectedPath, group: JWT_GROUP, dir, logLevel: LOG_LEVEL,
  });
  // BENCH_IMPORTED=0 leaves the imported-token cases out.
  const importedOk = process.env.BENCH_IMPORTED === '0' ? true : await importedBench(dir);
  await Promise.all(children.map((c) => c.stop('SIGKILL')));
  // Exit explicitly: a load generator's sockets to a server killed mid-request (the imported flood) can keep the
  // event loop alive, and a bench must stop by itself once it has printed its figures.
  process.exit(targets.every(([, p]) => p) && sessionOk && importedOk ? 0 : 1);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
