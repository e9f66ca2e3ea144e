// bench:e2e — what users feel: the whole request through nginx, with svc-auth behind auth_request.
//
// nginx (one worker) and svc-auth (dist/, its bin's node flags) share CPU 0; the load generator (Debian's
// wrk, one thread) runs on CPU 1, and each run reports both cores' use so a saturated generator shows.
// Cases, interleaved over rounds, each a separate nginx server block:
//   (a) a 1 KiB WAF file with no auth_request (the ceiling)
//   (b) the same file protected, valid Bearer token, auth_request to svc-auth with upstream keepalive
//   (c) the same with keepalive off (a new connection to svc-auth per request)
//   (d) auth_request to a do-nothing upstream (raw node:http answering 200): the limit of any subrequest design
//   (e) nginx checking the token itself against a map: the limit of any design at all
//   (f) (b) with nginx caching auth answers the way ingress-nginx's auth-cache-key / auth-cache-duration do
//   and a 1 MiB file for (a), (b), (d) and (f).
//   (tb) Traefik (deploy/traefik/dynamic.yaml, file provider) with its ForwardAuth asking svc-auth, serving (a)'s file
//   (td) the same Traefik configuration with ForwardAuth asking (d)'s do-nothing upstream (raw node:http answering
//        200): (tb)/(td) is what svc-auth's own work costs there, the same measure as (b)/(d) behind nginx
//   (tn) the same with ForwardAuth asking an nginx `return 200`, the limit of any ForwardAuth upstream in any
//        runtime: Traefik keeps at most two idle connections to it, so most auth requests open a connection, and
//        (td)/(tn) shows what accepting them costs Node itself (reported, not a target).
//   (ta) the same Traefik routers without the ForwardAuth middleware: Traefik's own ceiling, so (tb)/(ta) is what
//        the ForwardAuth hop and svc-auth cost together, and (td)/(ta) the hop alone
//   (ea), (eb), (ed) the same three for Envoy Gateway v1.9 (standalone, Envoy with concurrency 1): an HTTPRoute
//        without a SecurityPolicy; deploy/gateway-api/envoy-gateway-securitypolicy.yaml's extAuth asking svc-auth;
//        the same extAuth asking (d)'s do-nothing upstream. Envoy Gateway and its Envoy on CPU 0 like the others.
// BENCH_E2E_PROF=DIR writes a V8 CPU profile of svc-auth there.
// Then revocation through (f): the token is removed from its scope and the time until the first refusal
// is measured against the configured bound (svc-auth's --cache-max-age, which nginx obeys via X-Accel-Expires).
//
// Env: BENCH_E2E_DURATION (s per run, default 4), BENCH_E2E_ROUNDS (default 3), BENCH_E2E_CONNECTIONS
// (default 32), BENCH_E2E_CONNECTIONS_1M (default 4), BENCH_E2E_CASES (a subset), BENCH_E2E_CACHE_MAX_AGE (s, default 5). Sends traffic only to 127.0.0.1; every run is bounded.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatGeneratedToken } from '../../core/index.js';
import { ensureNginx, nginxPlan } from '../../test/e2e/support/nginx.js';
import { tokenRecord, writeScopeAtomically } from '../../test/e2e/support/scopes.js';
import { load as yamlLoad, dump as yamlDump } from 'js-yaml';
import { envoyGatewayPolicy, loopbackBackends, startEnvoyGateway, type RunningEnvoyGateway } from '../../test/e2e/support/envoy-gateway.js';
import { traefikDynamic, traefikStatic } from '../../test/e2e/support/traefik.js';
import { ensureTraefik } from '../../test/controlplane/assets.js';
import { freePorts, httpStatus as status, waitForPort } from '../../test/support/ports.js';
import { Supervised } from '../../test/support/process.js';
import { sleep, waitUntil } from '../../test/support/wait.js';
import { hasTaskset, pinned, svcAuthNodeFlags } from '../support/processes.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DURATION = Number(process.env.BENCH_E2E_DURATION ?? 4);
const ROUNDS = Number(process.env.BENCH_E2E_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_E2E_CONNECTIONS ?? 32);
// 1 MiB answers: with 32 connections wrk's own core is the saturated one in (a) (~90%: the generator,
// not nginx, would set the ceiling); with 4, nginx's core is (~96%, wrk's ~65%), as in every other case.
const CONNECTIONS_1M = Number(process.env.BENCH_E2E_CONNECTIONS_1M ?? 4);
const CACHE_MAX_AGE = Number(process.env.BENCH_E2E_CACHE_MAX_AGE ?? 5);

type Case = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'a1m' | 'b1m' | 'd1m' | 'f1m' | 'tb' | 'td' | 'tn' | 'ta' | 'ea' | 'eb' | 'ed';
const ALL_CASES: readonly { id: Case; label: string }[] = [
  { id: 'a', label: '(a) 1 KiB file, no auth_request' },
  { id: 'b', label: '(b) protected, svc-auth, keepalive' },
  { id: 'c', label: '(c) protected, svc-auth, no keepalive' },
  { id: 'd', label: '(d) auth_request to a do-nothing upstream' },
  { id: 'e', label: '(e) nginx map checks the token' },
  { id: 'f', label: '(f) (b) + ingress-nginx-style auth cache' },
  { id: 'a1m', label: '(a) 1 MiB file, no auth_request' },
  { id: 'b1m', label: '(b) 1 MiB file, svc-auth, keepalive' },
  { id: 'd1m', label: '(d) 1 MiB file, do-nothing upstream' },
  { id: 'f1m', label: '(f) 1 MiB file, svc-auth + auth cache' },
  { id: 'tb', label: '(tb) Traefik ForwardAuth to svc-auth' },
  { id: 'td', label: '(td) Traefik ForwardAuth to (d)\'s do-nothing node:http upstream' },
  { id: 'tn', label: '(tn) Traefik ForwardAuth to an nginx `return 200`' },
  { id: 'ta', label: '(ta) Traefik without ForwardAuth' },
  { id: 'ea', label: '(ea) Envoy Gateway without extAuth' },
  { id: 'eb', label: '(eb) Envoy Gateway extAuth to svc-auth' },
  { id: 'ed', label: '(ed) Envoy Gateway extAuth to (d)\'s do-nothing node:http upstream' },
];
const TRAEFIK_CASES: readonly Case[] = ['tb', 'td', 'tn', 'ta'];
const ENVOY_GATEWAY_CASES: readonly Case[] = ['ea', 'eb', 'ed'];
/** The Host each proxied case's route matches (Envoy Gateway's three share one listener). */
const HOSTS: Partial<Record<Case, string>> = { tb: 'data.example.org', td: 'data.example.org', tn: 'data.example.org', ta: 'data.example.org', ea: 'ea.example.org', eb: 'data.example.org', ed: 'ed.example.org' };
// BENCH_E2E_CASES=a1m,b1m runs a subset while working on one figure (targets are then judged on what ran)
const only = process.env.BENCH_E2E_CASES?.split(',');
const CASES = only ? ALL_CASES.filter((c) => only.includes(c.id)) : ALL_CASES;

const TOPIC = { kind: 'topic', value: 'origin.a.wis2.bench.data.core' } as const;
const DIR = '/data/2026-11-21/wis/origin/a/wis2/bench/data/core';

const children: Supervised[] = [];
let benchEnvoyGateway: RunningEnvoyGateway | undefined;
/** Stops every child and waits for each (SIGKILL after 5 s). */
async function stopAll(): Promise<void> {
  await Promise.all([...children.map((c) => c.stop('SIGTERM', 5000)), benchEnvoyGateway?.stop()]);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stopAll().then(() => process.exit(130)));

function start(cpu: number, cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Supervised {
  const [c, a] = pinned(cpu, cmd, args);
  // SIGTERM, not SIGKILL, if the bench exits first: a killed nginx master leaves its workers running (and serving) as orphans.
  const child = Supervised.spawn(basename(cmd), c, a, { cwd: ROOT, env, output: 'stderr', signalOnExit: 'SIGTERM' });
  children.push(child);
  return child;
}



/** Busy and total jiffies of cpu0 and cpu1 from /proc/stat. */
function cpuTimes(): [number, number][] {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n').filter((l) => /^cpu[01] /.test(l));
  return lines.map((l) => {
    const v = l.trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const total = v.reduce((s, x) => s + x, 0);
    return [total - idle, total];
  });
}

interface Result {
  rps: number;
  p99ms: number;
  cpu0: number;
  cpu1: number;
  non2xx: number;
}

function parseLatency(s: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(s);
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

/**
 * One wrk run, pinned to CPU 1; the token goes in through a Lua script reading the environment, never argv. `host`
 * sets the Host header (Traefik's routers match the example's host).
 */
function wrk(url: string, script: string, token: string | undefined, seconds = DURATION, host?: string): Result {
  const before = cpuTimes();
  const connections = url.includes('x1m') ? CONNECTIONS_1M : CONNECTIONS;
  const [cmd, args] = pinned(1, 'wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', ...(host ? ['-H', `Host: ${host}`] : []), '-s', script, url]);
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, BENCH_TOKEN: token ?? '' }, timeout: (seconds + 30) * 1000 });
  const after = cpuTimes();
  if (r.status !== 0) throw new Error(`wrk failed (exit ${r.status ?? r.signal}): ${r.stderr}`);
  const out = r.stdout;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p99 = parseLatency(/\s99%\s+(\S+)/.exec(out)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const use = (i: number) => (after[i]![0] - before[i]![0]) / Math.max(1, after[i]![1] - before[i]![1]);
  return { rps, p99ms: p99, cpu0: use(0), cpu1: use(1), non2xx };
}

function nginxConf(prefix: string, root: string, p: Record<Case | 'auth' | 'noop' | 'ok200', number>, token: string): string {
  const protectedLoc = (authLoc: string) => `
        location /data/ {
            auth_request ${authLoc};
            root ${root};
        }`;
  const authLocation = (name: string, pass: string, extra = '') => `
        location = ${name} {
            internal;
            proxy_pass ${pass};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Original-URI "";${extra}
        }`;
  const cached = `${protectedLoc('/_auth')}${authLocation('/_auth', 'http://svc_auth/authz/auth-request', `
            proxy_cache svc_auth_cache;
            proxy_cache_key "$request_method $request_uri $http_authorization $arg_token";
            proxy_cache_valid 200 202 30s;
            proxy_cache_valid 401 403 0s;
            proxy_cache_lock on;
            proxy_ignore_headers Cache-Control Expires Set-Cookie;`)}`;
  const server = (port: number, body: string) => `
    server {
        listen 127.0.0.1:${port} reuseport backlog=4096;
        access_log off;${body}
    }`;
  return `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log error;
events { worker_connections 4096; }
http {
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path ${prefix}/temp/client_body;
    proxy_temp_path ${prefix}/temp/proxy;
    fastcgi_temp_path ${prefix}/temp/fastcgi;
    uwsgi_temp_path ${prefix}/temp/uwsgi;
    scgi_temp_path ${prefix}/temp/scgi;
    upstream svc_auth { server 127.0.0.1:${p.auth}; keepalive 64; keepalive_requests 1000000; }
    upstream noop { server 127.0.0.1:${p.noop}; keepalive 64; keepalive_requests 1000000; }
    # (f): ingress-nginx's auth cache (auth-cache-key "$request_method $request_uri $http_authorization $arg_token",
    # auth-cache-duration "200 202 30s, 401 403 0s"); svc-auth's X-Accel-Expires bounds an allow's life
    proxy_cache_path ${prefix}/cache levels=1:2 keys_zone=svc_auth_cache:10m max_size=64m inactive=60s use_temp_path=off;
    map_hash_bucket_size 128;
    map $http_authorization $bench_token_ok {
        "Bearer ${token}" 1;
        default 0;
    }
${server(p.a, `
        location /data/ { root ${root}; }`)}
${server(p.a1m, `
        location /data/ { root ${root}; }`)}
${server(p.b, `${protectedLoc('/_auth')}${authLocation('/_auth', 'http://svc_auth/authz/auth-request')}`)}
${server(p.b1m, `${protectedLoc('/_auth')}${authLocation('/_auth', 'http://svc_auth/authz/auth-request')}`)}
${server(p.d1m, `${protectedLoc('/_auth')}${authLocation('/_auth', 'http://noop/')}`)}
${server(p.c, `${protectedLoc('/_auth')}${authLocation('/_auth', `http://127.0.0.1:${p.auth}/authz/auth-request`).replace('proxy_set_header Connection "";', 'proxy_set_header Connection close;')}`)}
${server(p.d, `${protectedLoc('/_auth')}${authLocation('/_auth', 'http://noop/')}`)}
${server(p.e, `
        location /data/ {
            if ($bench_token_ok = 0) { return 401; }
            root ${root};
        }`)}
${server(p.f, cached)}
${server(p.f1m, cached)}
${server(p.ok200, `
        location / { return 200; }`)}
}
`;
}

/** deploy/traefik/dynamic.yaml's routers without the ForwardAuth middleware: Traefik's own ceiling. */
function withoutForwardAuth(dynamic: string): string {
  const config = yamlLoad(dynamic) as { http: { routers: Record<string, { middlewares?: string[] }> } };
  for (const router of Object.values(config.http.routers)) delete router.middlewares;
  return yamlDump(config);
}

/**
 * (ea), (eb), (ed) on one Envoy Gateway (standalone; it binds fixed ports, so one per machine): an HTTPRoute without
 * a policy on ea.example.org; deploy/gateway-api/envoy-gateway-securitypolicy.yaml on data.example.org asking
 * svc-auth; the same on ed.example.org, in a namespace of its own whose svc-auth Backend is the do-nothing upstream.
 * Envoy Gateway and its Envoy move to CPU 0.
 */
async function startBenchEnvoyGateway(base: string, p: { listen: number; auth: number; waf: number; noop: number }): Promise<RunningEnvoyGateway> {
  const b = { listen: p.listen, auth: p.auth, waf: p.waf, oapi: p.waf };
  const toNoop = envoyGatewayPolicy(b).split('namespace: svc\n').join('namespace: bench-noop\n').split('data.example.org').join('ed.example.org');
  const plain = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: plain, namespace: svc }
spec:
  parentRefs: [{ name: eg, namespace: envoy-gateway-system }]
  hostnames: [ea.example.org]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /data } }]
      backendRefs: [{ group: gateway.envoyproxy.io, kind: Backend, name: waf, port: ${p.waf} }]
`;
  const resources = [envoyGatewayPolicy(b), toNoop, loopbackBackends('bench-noop', { waf: p.waf, oapi: p.waf, 'svc-auth': p.noop }), plain].join('---\n');
  const running = await startEnvoyGateway(join(base, 'envoy-gateway'), b, { resources, logLevel: 'error', accessLog: false, log: (m) => console.log(m) });
  benchEnvoyGateway = running;
  if (hasTaskset) for (const pid of running.pids()) spawnSync('taskset', ['-a', '-cp', '0', String(pid)], { stdio: 'ignore' });
  return running;
}

const NOOP_SERVER = `import { createServer } from 'node:http';
createServer((req, res) => { res.writeHead(200, { 'Content-Length': '0' }); res.end(); }).listen(Number(process.argv[1]), '127.0.0.1');`;

async function main(): Promise<void> {
  const plan = nginxPlan();
  const nginx = ensureNginx(plan.action === 'skip' ? { action: 'install' } : plan);
  if (spawnSync('wrk', ['--version']).error) throw new Error('wrk is not installed: apt-get install -y wrk');
  console.log('building dist/ (svc-auth is benched as deployed) ...');
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

  const base = mkdtempSync(join(tmpdir(), 'svc-e2e-bench-'));
  chmodSync(base, 0o755);
  const root = join(base, 'waf');
  const scopes = join(base, 'scopes');
  const staging = join(base, 'staging');
  const prefix = join(base, 'nginx');
  for (const d of [join(root, DIR), scopes, staging, join(prefix, 'temp'), join(prefix, 'cache')]) mkdirSync(d, { recursive: true });
  for (let d = join(root, DIR); d.startsWith(base); d = dirname(d)) chmodSync(d, 0o755);
  writeFileSync(join(root, DIR, 'x1k.bufr4'), randomBytes(1024));
  writeFileSync(join(root, DIR, 'x1m.bufr4'), randomBytes(1024 * 1024));
  const token = formatGeneratedToken(randomBytes(32));
  writeScopeAtomically(scopes, staging, TOPIC, [tokenRecord(token)]);
  const script = join(base, 'auth.lua');
  writeFileSync(script, 'local t = os.getenv("BENCH_TOKEN")\nif t ~= nil and t ~= "" then wrk.headers["Authorization"] = "Bearer " .. t end\n');

  const [a, b, c, d, e, f, a1m, b1m, d1m, f1m, auth, noop, metrics, tb, td, tn, ok200, ta, eg] = (await freePorts(19)) as [number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number];
  const ports = { a, b, c, d, e, f, a1m, b1m, d1m, f1m, auth, noop, tb, td, tn, ok200, ta, ea: eg, eb: eg, ed: eg };
  start(0, process.execPath, ['--input-type=module', '-e', NOOP_SERVER, String(noop)]);
  start(0, process.execPath, [...svcAuthNodeFlags(ROOT), ...(process.env.BENCH_E2E_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_E2E_PROF] : []), 'dist/authz/main.js', '--scopes-dir', scopes, '--listen', `127.0.0.1:${auth}`,
    '--metrics-listen', `127.0.0.1:${metrics}`, '--cache-max-age', String(CACHE_MAX_AGE), '--log-level', 'warn'], { ...process.env, NODE_OPTIONS: '' });
  writeFileSync(join(prefix, 'nginx.conf'), nginxConf(prefix, root, ports, token));
  const check = spawnSync(nginx, ['-p', `${prefix}/`, '-c', join(prefix, 'nginx.conf'), '-t'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t: ${check.stderr.split(token).join('<token>')}`);
  start(0, nginx, ['-p', `${prefix}/`, '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;']);
  // (tb) and (td): deploy/traefik as the e2e suite runs it (addresses replaced only), the file coming from (a)'s
  // server; (td) and (tn) differ only in the ForwardAuth address: (d)'s do-nothing upstream, the `return 200` server.
  const withTraefik = CASES.some((cs) => TRAEFIK_CASES.includes(cs.id));
  if (withTraefik) {
    const traefik = await ensureTraefik();
    for (const [name, listen, authPort] of [['tb', tb, auth], ['td', td, noop], ['tn', tn, ok200], ['ta', ta, auth]] as const) {
      const dynamicFile = join(base, `traefik-${name}-dynamic.yaml`);
      const staticFile = join(base, `traefik-${name}.yaml`);
      const tp = { listen, auth: authPort, waf: a, oapi: a };
      writeFileSync(dynamicFile, name === 'ta' ? withoutForwardAuth(traefikDynamic(tp)) : traefikDynamic(tp));
      writeFileSync(staticFile, traefikStatic(tp, dynamicFile));
      start(0, traefik, [`--configFile=${staticFile}`]);
    }
  }
  const withEnvoyGateway = CASES.some((cs) => ENVOY_GATEWAY_CASES.includes(cs.id));
  const envoyGateway = withEnvoyGateway ? await startBenchEnvoyGateway(base, { listen: eg, auth, waf: a, noop }) : undefined;
  for (const port of [noop, auth, a, b, c, d, e, f, a1m, b1m, d1m, f1m, ok200, ...(withTraefik ? [tb, td, tn, ta] : [])]) await waitForPort(port, 30_000);
  // Not fatal here: the per-case check below says what does not answer as intended.
  await waitUntil(async () => (await status(auth, '/readyz')) === 200, { what: 'svc-auth /readyz', timeoutMs: 30_000 }).catch(() => undefined);

  const path = (big: boolean) => `${DIR}/${big ? 'x1m' : 'x1k'}.bufr4`;
  const bearer = { Authorization: `Bearer ${token}` };
  const hostOf = (id: Case) => HOSTS[id];
  // Traefik listens before its file provider has loaded the routers (404 until then)
  if (withTraefik) {
    for (const port of [tb, td, tn, ta]) {
      await waitUntil(async () => (await status(port, path(false), { ...bearer, Host: HOSTS.tb! })) !== 404,
        { what: `Traefik on ${port} to load its routers`, timeoutMs: 30_000 }).catch(() => undefined);
    }
  }
  // every case must answer as intended before it is measured: 200 with the token, and 401 without it
  // where something checks it ((a) is open, (d)'s upstream allows everything)
  for (const cs of CASES) {
    const port = ports[cs.id];
    const big = cs.id.endsWith('1m');
    const host = hostOf(cs.id);
    const ok = await status(port, path(big), host ? { ...bearer, Host: host } : bearer);
    const without = await status(port, path(big), host ? { Host: host } : {});
    const want = cs.id.startsWith('a') || cs.id.startsWith('d') || ['td', 'tn', 'ta', 'ea', 'ed'].includes(cs.id) ? 200 : 401;
    if (ok !== 200 || without !== want) throw new Error(`case ${cs.label}: ${ok} with the token, ${without} without (want 200, ${want})`);
  }

  console.log(`bench:e2e — nginx 1 worker + svc-auth${withTraefik ? ' + Traefik' : ''}${envoyGateway ? ' + Envoy Gateway and its Envoy (concurrency 1)' : ''} on CPU 0, wrk (1 thread, ${CONNECTIONS} connections, ${CONNECTIONS_1M} for 1 MiB) on CPU 1${hasTaskset ? '' : ' (taskset missing: not pinned)'}; ${ROUNDS} interleaved rounds of ${DURATION}s per case`);
  const results = new Map<Case, Result[]>(CASES.map((cs) => [cs.id, []]));
  for (const cs of CASES) wrk(`http://127.0.0.1:${ports[cs.id]}${path(cs.id.endsWith('1m'))}`, script, token, 1, hostOf(cs.id)); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const cs of CASES) {
      const r = wrk(`http://127.0.0.1:${ports[cs.id]}${path(cs.id.endsWith('1m'))}`, script, cs.id === 'a' || cs.id === 'a1m' ? undefined : token, DURATION, hostOf(cs.id));
      if (r.non2xx > 0) throw new Error(`${cs.label}: ${r.non2xx} non-2xx answers under load`);
      results.get(cs.id)!.push(r);
    }
    process.stdout.write(`  round ${round + 1}/${ROUNDS} done\n`);
  }

  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const med = (id: Case, k: keyof Result) => median(results.get(id)!.map((r) => r[k]));
  // ratios are taken within each round, then the median over rounds
  const ran = (x: Case, y: Case) => results.has(x) && results.has(y);
  const ratio = (x: Case, y: Case) => !ran(x, y) ? NaN : median(results.get(x)!.map((r, i) => r.rps / results.get(y)![i]!.rps));
  const p99ratio = (x: Case, y: Case) => !ran(x, y) ? NaN : median(results.get(x)!.map((r, i) => r.p99ms / results.get(y)![i]!.p99ms));
  const fx = (n: number, d = 2) => n.toFixed(d);
  // Traefik's rows are divided by (td), their do-nothing ForwardAuth upstream, in the ÷(d) column; Envoy Gateway's by (ed)
  const doNothingOf = (id: Case, big: boolean): Case => (TRAEFIK_CASES.includes(id) ? 'td' : ENVOY_GATEWAY_CASES.includes(id) ? 'ed' : big ? 'd1m' : 'd');
  console.log('\n| case | req/s | p99 ms | CPU0 / CPU1 | ÷(a) req/s | ÷(d) req/s (Traefik: ÷(td); Envoy Gateway: ÷(ed)) | ÷(e) req/s | p99 ÷(a) |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const cs of CASES) {
    const big = cs.id.endsWith('1m');
    const ref = big ? 'a1m' : 'a';
    console.log(`| ${cs.label} | ${Math.round(med(cs.id, 'rps'))} | ${fx(med(cs.id, 'p99ms'))} | ${Math.round(med(cs.id, 'cpu0') * 100)}% / ${Math.round(med(cs.id, 'cpu1') * 100)}% | ${fx(ratio(cs.id, ref))} | ${fx(ratio(cs.id, doNothingOf(cs.id, big)))} | ${big ? '—' : fx(ratio(cs.id, 'e'))} | ${fx(p99ratio(cs.id, ref))} |`);
  }

  // Revocation through (f) (its token is already in the cache when (f) ran): remove the token, then time until (f) first refuses it.
  writeScopeAtomically(scopes, staging, TOPIC, [tokenRecord(formatGeneratedToken(randomBytes(32)))]);
  const revokedAt = Date.now();
  let seenB = -1;
  let seenF = -1;
  while (Date.now() - revokedAt < (CACHE_MAX_AGE + 10) * 1000 && seenF < 0) {
    const t = Date.now() - revokedAt;
    if (seenB < 0 && (await status(b, path(false), bearer)) === 401) seenB = t;
    if ((await status(f, path(false), bearer)) === 401) seenF = t;
    await sleep(20);
  }

  const bd = ratio('b', 'd');
  const fa = ratio('f', 'a');
  const ba1m = ratio('b1m', 'a1m');
  const tbd = ratio('tb', 'td');
  const bound = CACHE_MAX_AGE * 1000 + 2000; // the cache bound, plus svc-auth's own reload of the directory
  console.log(`\nrevocation: svc-auth refuses the revoked token after ${seenB} ms (b); through the cache (f) after ${seenF} ms (configured bound ${CACHE_MAX_AGE} s via X-Accel-Expires)`);
  // Each target with the figure it judges: NaN when a partial run (BENCH_E2E_CASES) left its cases out.
  const targets: [string, number, boolean][] = [
    [`(b)/(d) = ${fx(bd)} ≥ 0.8`, bd, bd >= 0.8],
    [`(f)/(a) = ${fx(fa)} ≥ 0.6`, fa, fa >= 0.6],
    [`revocation through (f) seen within the bound: ${seenF} ms ≤ ${bound} ms`, seenF, seenF >= 0 && seenF <= bound],
    [`1 MiB (b)/(a) = ${fx(ba1m)} ≥ 0.9`, ba1m, ba1m >= 0.9],
    [`Traefik (tb)/(td) = ${fx(tbd)} ≥ 0.8 (ForwardAuth to svc-auth ÷ to (d)'s do-nothing upstream)`, tbd, tbd >= 0.8],
  ];
  for (const [what, figure, ok] of targets) console.log(`  ${Number.isNaN(figure) ? 'not run' : ok ? 'met    ' : 'MISSED '} ${what}`);
  // What the 1 MiB target looks like against the limit of any subrequest, and with the auth cache users can enable.
  console.log(`  (1 MiB (d)/(a) = ${fx(ratio('d1m', 'a1m'))}: a do-nothing subrequest; 1 MiB (b)/(d) = ${fx(ratio('b1m', 'd1m'))}; 1 MiB (f)/(a) = ${fx(ratio('f1m', 'a1m'))}: with the auth cache)`);
  console.log(`  (Traefik against nginx's \`return 200\`: (tb)/(tn) = ${fx(ratio('tb', 'tn'))}, (td)/(tn) = ${fx(ratio('td', 'tn'))}: what Node's own connection handling costs where most auth requests open a connection)`);
  console.log(`  (each controller's ceiling and what asking costs behind it: Traefik (tb)/(ta) = ${fx(ratio('tb', 'ta'))}, (td)/(ta) = ${fx(ratio('td', 'ta'))}; Envoy Gateway (eb)/(ea) = ${fx(ratio('eb', 'ea'))}, (ed)/(ea) = ${fx(ratio('ed', 'ea'))}, (eb)/(ed) = ${fx(ratio('eb', 'ed'))})`);
  await stopAll();
  rmSync(base, { recursive: true, force: true });
  // a partial run (BENCH_E2E_CASES) never passes
  process.exitCode = !only && targets.every(([, , ok]) => ok) ? 0 : 1;
}

main().then(stopAll, async (e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exitCode = 1;
  await stopAll();
}).finally(() => process.exit());
