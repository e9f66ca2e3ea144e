// npm run bench:configmap — svc-auth serving from the snapshot ConfigMaps (its ConfigMap source) on a real control
// plane (etcd + kube-apiserver from the test harness), this checkout against a baseline commit measured in the same run.
//
// A 10,000-scope, 100,000-token snapshot (bench:auth's mix: 6,000 topics, 3,000 datasets, 1,000 process paths, 10
// tokens each) is written as svc-operator writes it (immutable shards, then the snapshot index), with a second generation that
// differs by one token in one scope in the middle. svc-auth of this checkout and svc-auth of --base (its tree from
// `git archive`, run with this checkout's node_modules), each a fresh process on CPU 0, alternately, round by round:
//   memory      RSS and V8 heap used once the first snapshot is served, after a full garbage collection (svc-auth
//               runs with --expose-gc and a bench-only preload that collects on SIGUSR2, base and this alike), so
//               what is measured is what svc-auth keeps, not garbage not yet collected; again after the reloads;
//   first load  svc_auth_snapshot_load_seconds of the first snapshot;
//   reloads     the snapshot index flipped between the two generations, each timed from its write until /readyz
//               names the new generation: IDLE_RELOADS times with no other load (also svc-auth's CPU time per
//               reload, from /proc, which other processes on the machine do not inflate), then back to back under load;
//   p99         a valid Bearer token on a protected topic (autocannon on CPU 1), steady, and during the reloads.
// Reported: each figure for both (medians over rounds), and this ÷ base. Both run `node --import tsx authz/main.ts`
// with the node flags of their bin's shebang, so the comparison is between trees, not builds.
//
//   --base REF (default main)  --rounds N (default 2)  --duration S (default 4)  --kubeconfig FILE (an existing cluster)
//   --json FILE (default .cache/bench-configmap.json: every round's figures)
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { compileSnapshot, formatGeneratedToken, shardSnapshot, type Shard, type SnapshotIndex } from '../../core/index.js';
import { kubeConfigMapClient, type ConfigMapClient } from '../../k8s/configmaps.js';
import { DEFAULT_SHARD_MAX_BYTES, DEFAULT_SNAPSHOT_NAME, SNAPSHOT_INDEX_KEY, SHARD_KEY, shardConfigMapName, snapshotLabels } from '../../k8s/snapshot/objects.js';
import { freePorts } from '../../test/support/ports.js';
import { Supervised } from '../../test/support/process.js';
import { sleep, waitUntil } from '../../test/support/wait.js';
import { benchCluster } from '../support/cluster.js';
import { median, metricValue } from '../support/figures.js';
import { cpuMs, hasTaskset, pinned, pinSelf, svcAuthNodeFlags } from '../support/processes.js';
import { benchScopes, PROTECTED_PATH, SCOPES, TOKENS_PER_SCOPE, withOneMoreToken } from '../support/scopes.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHANGED_SCOPE = 4321;
const CONNECTIONS = 32;
const SETTLE_MS = 2000;
const IDLE_RELOADS = 6;

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string', default: 'main' },
    rounds: { type: 'string', default: '2' },
    duration: { type: 'string', default: '4' },
    kubeconfig: { type: 'string' },
    json: { type: 'string' },
  },
});
const ROUNDS = Number(flags.rounds);
const DURATION = Number(flags.duration);
const log = (m: string) => process.stderr.write(`[bench:configmap] ${m}\n`);

// ---------------------------------------------------------------------------------------------------
// The snapshot, in two generations

interface Generation {
  readonly snapshotIndex: SnapshotIndex;
  readonly shards: readonly Shard[];
}

function fixture(): { a: Generation; b: Generation; token: string; target: string } {
  const token = formatGeneratedToken(randomBytes(32));
  const objects = benchScopes(token);
  const a = shardSnapshot(compileSnapshot(objects), DEFAULT_SHARD_MAX_BYTES);
  objects[CHANGED_SCOPE] = withOneMoreToken(objects[CHANGED_SCOPE]!);
  const b = shardSnapshot(compileSnapshot(objects), DEFAULT_SHARD_MAX_BYTES);
  return { a, b, token, target: PROTECTED_PATH };
}

/** As svc-operator writes: the shards (immutable, content-addressed), then the snapshot index naming them. */
async function writeShards(client: ConfigMapClient, g: Generation): Promise<void> {
  for (const s of g.shards) {
    await client.apply({ metadata: { name: shardConfigMapName(DEFAULT_SNAPSHOT_NAME, s.digest), labels: snapshotLabels(DEFAULT_SNAPSHOT_NAME, 'shard') }, immutable: true, data: { [SHARD_KEY]: s.text } });
  }
}

async function writeSnapshotIndex(client: ConfigMapClient, g: Generation): Promise<void> {
  await client.apply({ metadata: { name: DEFAULT_SNAPSHOT_NAME, labels: snapshotLabels(DEFAULT_SNAPSHOT_NAME, 'index') }, data: { [SNAPSHOT_INDEX_KEY]: JSON.stringify(g.snapshotIndex) } });
}

// ---------------------------------------------------------------------------------------------------
// svc-auth, of this checkout or of the base tree

/** The base commit's tree in a temporary directory, with this checkout's node_modules. */
function baseTree(ref: string): { dir: string; commit: string } {
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-configmap-base-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${dir}"`], { cwd: ROOT });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return { dir, commit };
}

interface Auth {
  readonly base: string;
  readonly metrics: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** A preload for svc-auth, bench-only: a full garbage collection on SIGUSR2 (needs --expose-gc). */
const GC_PRELOAD = (() => {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-bench-configmap-gc-')), 'gc-on-signal.mjs');
  writeFileSync(file, "process.on('SIGUSR2', () => globalThis.gc());\n");
  process.on('exit', () => rmSync(dirname(file), { recursive: true, force: true }));
  return file;
})();

async function startAuth(root: string, kubeconfig: string, namespace: string): Promise<Auth> {
  const [port, metricsPort] = (await freePorts(2)) as [number, number];
  const args = [...svcAuthNodeFlags(root), '--expose-gc', '--import', GC_PRELOAD, '--import', 'tsx', 'authz/main.ts', '--snapshot-configmap', DEFAULT_SNAPSHOT_NAME, '--namespace', namespace,
    '--kubeconfig', kubeconfig, '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${metricsPort}`, '--log-level', 'warn'];
  const [cmd, argv] = pinned(0, process.execPath, args);
  const child = Supervised.spawn('svc-auth', cmd, argv, { cwd: root, output: 'stderr' });
  return { base: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, pid: child.pid, stop: async () => void (await child.stop('SIGKILL')) };
}

/** The generation /readyz names, if it answers 200. */
async function servedGeneration(auth: Auth): Promise<string | undefined> {
  const r = await fetch(`${auth.base}/readyz`).catch(() => undefined);
  const body = r ? await r.text() : '';
  return r?.status === 200 ? /generation (\w+)/.exec(body)?.[1] : undefined;
}

async function metric(auth: Auth, name: string): Promise<number> {
  return metricValue(await (await fetch(auth.metrics)).text(), name) ?? NaN;
}

// ---------------------------------------------------------------------------------------------------
// One round of one svc-auth

/** p99 of the answers to a valid-token request for `seconds` (autocannon, every response's latency kept). */
function p99Under(auth: Auth, token: string, target: string, seconds: number): Promise<{ p99: number; bad: number }> {
  return new Promise((done, fail) => {
    const latencies: number[] = [];
    let bad = 0;
    const headers = { 'X-Original-Method': 'GET', 'X-Original-URI': target, Authorization: `Bearer ${token}` };
    const run = autocannon({ url: `${auth.base}/authz/auth-request`, connections: CONNECTIONS, duration: seconds, headers }, (e) => {
      if (e) return fail(e);
      latencies.sort((x, y) => x - y);
      done({ p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN, bad });
    });
    run.on('response', (_c, status, _b, ms) => {
      latencies.push(ms);
      if (status !== 200) bad++;
    });
  });
}

interface Figures {
  rssLoaded: number;
  heapLoaded: number;
  firstLoadMs: number;
  reloadIdleMs: number;
  reloadCpuMs: number;
  p99Steady: number;
  p99Reloads: number;
  reloadLoadedMs: number;
  reloads: number;
  rssAfter: number;
  heapAfter: number;
  bad: number;
}

/** Flips the snapshot index to `g` and resolves with the time until svc-auth serves it (or undefined once `stop()` says so). */
async function flip(auth: Auth, client: ConfigMapClient, g: Generation, stop: () => boolean = () => false): Promise<number | undefined> {
  const at = performance.now();
  await writeSnapshotIndex(client, g);
  await waitUntil(async () => stop() || (await servedGeneration(auth)) === g.snapshotIndex.generation, { what: 'a reload', timeoutMs: 60_000, intervalMs: 5 });
  return stop() ? undefined : performance.now() - at;
}

/** RSS and heap used after a full garbage collection. */
async function memory(auth: Auth): Promise<[rss: number, heap: number]> {
  await sleep(SETTLE_MS);
  process.kill(auth.pid!, 'SIGUSR2');
  await sleep(SETTLE_MS);
  return [await metric(auth, 'process_resident_memory_bytes'), await metric(auth, 'nodejs_heap_size_used_bytes')];
}

async function round(root: string, kubeconfig: string, namespace: string, client: ConfigMapClient, f: ReturnType<typeof fixture>): Promise<Figures> {
  await writeSnapshotIndex(client, f.a);
  const auth = await startAuth(root, kubeconfig, namespace);
  try {
    await waitUntil(async () => (await servedGeneration(auth)) === f.a.snapshotIndex.generation, { what: 'svc-auth serving generation a', timeoutMs: 120_000, intervalMs: 20 });
    const firstLoadMs = (await metric(auth, 'svc_auth_snapshot_load_seconds')) * 1000;
    const [rssLoaded, heapLoaded] = await memory(auth);
    const idle: number[] = [];
    const cpuBefore = cpuMs(auth.pid);
    for (let i = 0; i < IDLE_RELOADS; i++) idle.push((await flip(auth, client, i % 2 === 0 ? f.b : f.a))!);
    const reloadCpuMs = (cpuMs(auth.pid) - cpuBefore) / IDLE_RELOADS;
    const steady = await p99Under(auth, f.token, f.target, DURATION);
    const loaded: number[] = [];
    let done = false;
    const flipping = (async () => {
      for (let next = f.b; !done; next = next === f.a ? f.b : f.a) {
        const ms = await flip(auth, client, next, () => done);
        if (ms !== undefined) loaded.push(ms);
      }
    })();
    const during = await p99Under(auth, f.token, f.target, DURATION);
    done = true;
    await flipping;
    const [rssAfter, heapAfter] = await memory(auth);
    return {
      rssLoaded, heapLoaded, firstLoadMs, reloadIdleMs: median(idle), reloadCpuMs, p99Steady: steady.p99, p99Reloads: during.p99, reloadLoadedMs: median(loaded),
      reloads: loaded.length, rssAfter, heapAfter, bad: steady.bad + during.bad,
    };
  } finally {
    await auth.stop();
  }
}

// ---------------------------------------------------------------------------------------------------

function report(base: Figures[], mine: Figures[], commit: string): void {
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
  const rows: [string, keyof Figures, (x: number) => string][] = [
    ['RSS, first snapshot served (after a full GC)', 'rssLoaded', mib],
    ['heap used, first snapshot served (after a full GC)', 'heapLoaded', mib],
    ['RSS after the reloads (after a full GC)', 'rssAfter', mib],
    ['heap used after the reloads (after a full GC)', 'heapAfter', mib],
    ['first load (svc_auth_snapshot_load_seconds)', 'firstLoadMs', ms],
    [`reload, idle: index written → served (median of ${IDLE_RELOADS})`, 'reloadIdleMs', ms],
    ['reload, idle: svc-auth CPU time per reload', 'reloadCpuMs', ms],
    ['reload under load: index written → served', 'reloadLoadedMs', ms],
    ['p99, steady', 'p99Steady', ms],
    ['p99 during back-to-back reloads', 'p99Reloads', ms],
  ];
  console.log(`\n${'figure'.padEnd(50)} ${`base ${commit}`.padStart(14)} ${'this'.padStart(14)} ${'this ÷ base'.padStart(12)}`);
  for (const [label, key, fmt] of rows) {
    const b = median(base.map((x) => x[key]));
    const m = median(mine.map((x) => x[key]));
    console.log(`${label.padEnd(50)} ${fmt(b).padStart(14)} ${fmt(m).padStart(14)} ${(m / b).toFixed(2).padStart(12)}`);
  }
  const ratio = (r: Figures) => r.p99Reloads / r.p99Steady;
  console.log(`${'p99 during reloads ÷ steady p99'.padEnd(50)} ${median(base.map(ratio)).toFixed(2).padStart(14)} ${median(mine.map(ratio)).toFixed(2).padStart(14)}`);
  console.log(`(medians over ${base.length} round(s); reloads per round: base ${base.map((r) => r.reloads).join(', ')}, this ${mine.map((r) => r.reloads).join(', ')}; non-200 answers: ${[...base, ...mine].reduce((n, r) => n + r.bad, 0)})`);
}

async function main(): Promise<void> {
  pinSelf();
  const { dir: baseDir, commit } = baseTree(flags.base!);
  const cluster = await benchCluster(flags.kubeconfig, log);
  const { kube, kubeconfig } = cluster;
  try {
    const ns = (await kube.core.createNamespace({ body: { metadata: { generateName: 'bench-configmap-' } } })).metadata!.name!;
    const client = kubeConfigMapClient(kube, ns, 'bench');
    const f = fixture();
    await writeShards(client, f.a);
    await writeShards(client, f.b);
    const changed = f.b.snapshotIndex.shards.filter((s) => !f.a.snapshotIndex.shards.some((t) => t.digest === s.digest)).length;
    console.log(`bench:configmap — ${SCOPES.toLocaleString('en')} scopes, ${(SCOPES * TOKENS_PER_SCOPE).toLocaleString('en')} tokens in ${f.a.shards.length} shards (${changed} differ between the two generations); svc-auth of this checkout vs ${commit}, ${ROUNDS} round(s); ${hasTaskset ? 'svc-auth on CPU 0, load on CPU 1' : 'taskset not found: not pinned'}`);
    const base: Figures[] = [];
    const mine: Figures[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which goes first, so drift on a shared machine hits both alike.
      for (const which of r % 2 === 0 ? (['base', 'this'] as const) : (['this', 'base'] as const)) {
        log(`round ${r + 1}/${ROUNDS}: ${which}`);
        (which === 'base' ? base : mine).push(await round(which === 'base' ? baseDir : ROOT, kubeconfig, ns, client, f));
      }
    }
    report(base, mine, commit);
    const out = flags.json ?? join(ROOT, '.cache', 'bench-configmap.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), base: commit, rounds: { base, this: mine } }, null, 2)}\n`);
    log(`every round's figures written to ${out}`);
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error(`bench:configmap failed: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
