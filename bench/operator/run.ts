// npm run bench:operator — svc-operator on a real control plane (etcd + kube-apiserver from the test harness).
//
// For each size (default 1,000 and 10,000 scopes of 10 tokens each, in a fresh namespace):
//   reconcile    svc-operator starts on the existing objects; time until the snapshot index ConfigMap names the expected
//                generation (snapshot published), and until every object's status is written (all reconciled).
//   propagation  svc-auth (ConfigMap source) serves the snapshot; 100 changes (50 times: grant a new token on a
//                random scope, then revoke it), each timed from the API write to the first svc-auth answer that
//                reflects it (polled every 5 ms).
// Baselines measured in the same run on the same API server: the rate of bare status merge patches (the floor
// for writing N statuses), and a bare ConfigMap write seen by a watch (the floor for any propagation).
// Targets: 10,000 scopes reconciled in under a minute; propagation p50 <= 1 s, p99 <= 2 s.
//
//   --sizes 1000,10000   --changes 100   --kubeconfig FILE (an existing cluster instead of our own)
//   --in-process-reader  measure propagation to an in-process SnapshotReader + core decide (no svc-auth)
//   --json FILE          also write the results as JSON
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setHeaderOptions } from '@kubernetes/client-node';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, hashToken, parseSnapshotIndex, tokenIdOf, type AccessIndex, type ProtectedScope, type TokenRecord } from '../../core/index.js';
import { configMapListWatch, kubeConfigMapClient } from '../../k8s/configmaps.js';
import { ResilientInformer } from '../../k8s/informer.js';
import type { Kube } from '../../k8s/kube.js';
import { kubeScopeStatusClient } from '../../k8s/watched-scopes.js';
import { SnapshotReader } from '../../k8s/snapshot/reader.js';
import { AuthProcess, OperatorProcess, topicFile } from '../../test/integration/operator-support.js';
import { freePorts } from '../../test/support/ports.js';
import { sleep, waitUntil } from '../../test/support/wait.js';
import { benchCluster } from '../support/cluster.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GROUP = 'auth.svc.io';
const VERSION = 'v1alpha1';
const PLURAL = 'protectedscopes';
const TOKENS_PER_SCOPE = 10;

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    changes: { type: 'string', default: '100' },
    kubeconfig: { type: 'string' },
    'in-process-reader': { type: 'boolean', default: false },
    'operator-args': { type: 'string', default: '' },
    json: { type: 'string' },
  },
});
const SIZES = flags.sizes!.split(',').map(Number);
const CHANGES = Number(flags.changes);

const log = (m: string) => process.stderr.write(`[bench:operator] ${m}\n`);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

function topicOf(i: number): string {
  return `origin.a.wis2.centre-${i}.data.core`;
}

function tokenFor(seed: string, expiresAt?: string): { secret: string; record: TokenRecord } {
  const secret = `svc-bench-${seed}-${randomBytes(8).toString('hex')}`;
  const hash = hashToken(secret);
  return { secret, record: { id: tokenIdOf(hash), hash, createdAt: '2026-11-21T10:00:00Z', ...(expiresAt ? { expiresAt } : {}) } };
}

function scopeObject(i: number, tokens: TokenRecord[]): ProtectedScope {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'ProtectedScope', metadata: { name: `scope-${i}` }, spec: { topicHierarchy: topicOf(i), tokens } } as ProtectedScope;
}

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

async function createNamespace(kube: Kube, prefix: string): Promise<string> {
  const ns = await kube.core.createNamespace({ body: { metadata: { generateName: `${prefix}-` } } });
  return ns.metadata!.name!;
}

/** Creates n scopes (10 tokens each, a third with an expiry far ahead); returns the objects as created. */
async function createScopes(kube: Kube, ns: string, n: number): Promise<ProtectedScope[]> {
  const objects = Array.from({ length: n }, (_, i) =>
    scopeObject(
      i,
      Array.from({ length: TOKENS_PER_SCOPE }, (_, j) => tokenFor(`${i}-${j}`, j % 3 === 0 ? '2030-01-01T00:00:00Z' : undefined).record),
    ),
  );
  await pool(objects, 16, async (o) => {
    await kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, body: o });
  });
  return objects;
}

async function snapshotIndexGeneration(kube: Kube, ns: string): Promise<string | undefined> {
  try {
    const cm = await kube.core.readNamespacedConfigMap({ name: 'svc-auth-snapshot', namespace: ns });
    const idx = parseSnapshotIndex(cm.data?.['index.json'] ?? '');
    return idx.ok ? idx.value.generation : undefined;
  } catch {
    return undefined;
  }
}

/** Baseline: bare status merge patches per second (what any controller writing N statuses is bounded by). */
async function statusPatchRate(kube: Kube, ns: string, n: number): Promise<number> {
  const client = kubeScopeStatusClient(kube, ns, 'bench-baseline');
  const names = Array.from({ length: n }, (_, i) => `scope-${i}`);
  const t0 = performance.now();
  await pool(names, 16, async (name) => void (await client.patchStatus(name, { activeTokens: 0 })));
  return n / ((performance.now() - t0) / 1000);
}

/** Baseline: a ConfigMap write until a watch delivers it (the floor under any propagation), median of 20. */
async function watchRoundTrip(kube: Kube, ns: string): Promise<number> {
  const seen = new Map<string, number>();
  const informer = new ResilientInformer(configMapListWatch(kube, ns, { fieldSelector: 'metadata.name=bench-probe' }), {
    onAdd: (cm) => seen.set(cm.data?.v ?? '', performance.now()),
    onUpdate: (_o, cm) => seen.set(cm.data?.v ?? '', performance.now()),
  });
  informer.start();
  await informer.waitForSync();
  const cms = kubeConfigMapClient(kube, ns, 'bench-baseline');
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const v = `v${i}`;
    const t0 = performance.now();
    await cms.apply({ metadata: { name: 'bench-probe' }, data: { v } });
    while (!seen.has(v)) await sleep(1);
    times.push(seen.get(v)! - t0);
  }
  await informer.stop();
  return pct(times, 50);
}

interface Decider {
  decide(target: string, token: string): Promise<number>;
  stop(): Promise<void>;
}

async function svcAuthDecider(kubeconfig: string, ns: string): Promise<Decider> {
  const [port, metricsPort] = await freePorts(2);
  const p = new AuthProcess(kubeconfig, ns, ['--log-level', 'warn'], { port: port!, metricsPort: metricsPort! }).start();
  try {
    await p.started();
    await waitUntil(() => p.ready(), { what: 'svc-auth /readyz', timeoutMs: 120_000, describe: () => p.output.slice(-2000) });
  } catch (e) {
    await p.stop();
    throw e;
  }
  return { decide: (t, token) => p.decide(t, token), stop: () => p.stop() };
}

async function inProcessDecider(kube: Kube, ns: string): Promise<Decider> {
  let index: AccessIndex | undefined;
  const cms = kubeConfigMapClient(kube, ns, 'bench');
  const reader = new SnapshotReader({
    snapshotName: 'svc-auth-snapshot',
    snapshotIndexWatch: configMapListWatch(kube, ns, { fieldSelector: 'metadata.name=svc-auth-snapshot' }),
    getConfigMap: (name) => cms.get(name),
    deliver: (s) => {
      const built = buildIndex(s.snapshotIndex.generation, s.shards.flatMap((shard) => shard.lines));
      if (!built.ok) throw new Error(built.error);
      index = built.value;
    },
    onFailure: () => undefined,
  });
  await reader.start();
  return {
    decide: async (target, token) => {
      if (!index) return 503;
      const d = decide(index, DEFAULT_CONFIG, { method: 'GET', target, authorization: `Bearer ${token}` }, Date.now());
      return d.outcome === 'granted' || d.outcome === 'open' ? 200 : d.outcome === 'insufficient-scope' ? 403 : 401;
    },
    stop: () => reader.stop(),
  };
}

interface SizeResult {
  scopes: number;
  tokens: number;
  createMs: number;
  publishedMs: number;
  reconciledMs: number;
  operatorPhases?: Record<string, unknown>;
  statusFloorMs: number;
  watchFloorMs: number;
  propagation?: { n: number; p50: number; p99: number; max: number; grantP50: number; revokeP50: number };
}

async function runSize(kube: Kube, kubeconfig: string, n: number, watchFloorMs: number): Promise<SizeResult> {
  const ns = await createNamespace(kube, `bench-op-${n}`);
  log(`${n} scopes: creating in ${ns}`);
  const t0 = performance.now();
  const objects = await createScopes(kube, ns, n);
  const createMs = performance.now() - t0;
  const expected = compileSnapshot(objects).generation;
  log(`${n} scopes: created in ${fmt(createMs)}; starting svc-operator`);

  // Baseline first, before any operator runs: the API server's bare status-patch rate on these objects.
  const rate = await statusPatchRate(kube, ns, Math.min(n, 1000));
  const statusFloorMs = (n / rate) * 1000;
  log(`${n} scopes: bare status patches at ${Math.round(rate)}/s: ${fmt(statusFloorMs)} for all`);

  const extra = flags['operator-args']!.split(' ').filter(Boolean);
  const op = new OperatorProcess(kubeconfig, ns, extra).start();
  const started = performance.now();
  let publishedMs = 0;
  let reconciledMs: number | undefined;
  try {
    await op.started();
    for (;;) {
      if (!publishedMs && (await snapshotIndexGeneration(kube, ns)) === expected) publishedMs = performance.now() - started;
      if (publishedMs) {
        const m = await op.metrics().catch(() => undefined);
        if ((m?.get('svc_operator_status_patches_total') ?? 0) >= n) {
          reconciledMs = performance.now() - started;
          break;
        }
      }
      if (performance.now() - started > 600_000) throw new Error('not reconciled in 10 minutes');
      await sleep(50);
    }
    const line = await op.waitForLog((l) => l.msg === 'reconciled' && Number(l.statusQueued) > 0, 5000).catch(() => undefined);
    const operatorPhases = line ? { compileMs: line.compileMs, writeMs: line.writeMs, statusMs: line.statusMs, durationMs: line.durationMs, shards: line.shards } : undefined;
    log(`${n} scopes: snapshot published after ${fmt(publishedMs)}, all statuses after ${fmt(reconciledMs!)}`);

    await sleep(2000);

    let propagation: SizeResult['propagation'];
    if (CHANGES > 0) {
      const decider = flags['in-process-reader'] ? await inProcessDecider(kube, ns) : await svcAuthDecider(kubeconfig, ns);
      try {
        const grants: number[] = [];
        const revokes: number[] = [];
        for (let c = 0; c < Math.ceil(CHANGES / 2); c++) {
          const i = Math.floor(Math.random() * n);
          const name = `scope-${i}`;
          const file = topicFile(topicOf(i));
          const t = tokenFor(`change-${c}`);
          const patch = async (tokens: TokenRecord[]) => {
            await kube.custom.patchNamespacedCustomObject(
              { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name, body: [{ op: 'replace', path: '/spec/tokens', value: tokens }] },
              setHeaderOptions('Content-Type', 'application/json-patch+json'),
            );
          };
          const current = objects[i]!.spec.tokens!.slice();
          // Grant: a new token on scope i, timed until svc-auth allows it.
          let t1 = performance.now();
          await patch([...current, t.record]);
          while ((await decider.decide(file, t.secret)) !== 200) {
            if (performance.now() - t1 > 60_000) throw new Error(`change ${c}: grant not seen in 60 s`);
            await sleep(5);
          }
          grants.push(performance.now() - t1);
          // Revoke it again, timed until svc-auth denies it.
          t1 = performance.now();
          await patch(current);
          while ((await decider.decide(file, t.secret)) === 200) {
            if (performance.now() - t1 > 60_000) throw new Error(`change ${c}: revocation not seen in 60 s`);
            await sleep(5);
          }
          revokes.push(performance.now() - t1);
          if (c % 10 === 9) log(`${n} scopes: ${(c + 1) * 2} changes, p50 so far ${fmt(pct([...grants, ...revokes], 50))}`);
          await sleep(100); // let the status patch of this change land before the next one
        }
        const all = [...grants, ...revokes];
        propagation = { n: all.length, p50: pct(all, 50), p99: pct(all, 99), max: Math.max(...all), grantP50: pct(grants, 50), revokeP50: pct(revokes, 50) };
      } finally {
        await decider.stop();
      }
    }
    return { scopes: n, tokens: n * TOKENS_PER_SCOPE, createMs, publishedMs, reconciledMs: reconciledMs!, ...(operatorPhases ? { operatorPhases } : {}), statusFloorMs, ...(propagation ? { propagation } : {}), watchFloorMs };
  } finally {
    await op.stop();
  }
}

async function main(): Promise<void> {
  const cluster = await benchCluster(flags.kubeconfig, log);
  const { kube, kubeconfig } = cluster;
  const results: SizeResult[] = [];
  try {
    const probeNs = await createNamespace(kube, 'bench-op-probe');
    const watchFloorMs = await watchRoundTrip(kube, probeNs);
    log(`baseline: ConfigMap write seen by a watch in ${fmt(watchFloorMs)} (median)`);
    for (const n of SIZES) results.push(await runSize(kube, kubeconfig, n, watchFloorMs));
  } finally {
    await cluster.stop();
  }

  const rows = results.map((r) => {
    const p = r.propagation;
    return [
      `${r.scopes.toLocaleString('en')} scopes / ${r.tokens.toLocaleString('en')} tokens`,
      fmt(r.publishedMs),
      fmt(r.reconciledMs),
      `${(r.reconciledMs / r.statusFloorMs).toFixed(2)}x`,
      p ? fmt(p.p50) : '-',
      p ? fmt(p.p99) : '-',
      p ? `${(p.p50 / r.watchFloorMs).toFixed(1)}x` : '-',
    ];
  });
  const header = ['size', 'snapshot published', 'all reconciled', 'vs bare status patches', 'propagation p50', 'p99', 'p50 vs bare watch'];
  if (flags['operator-args']) console.log(`svc-operator ${flags['operator-args']}`);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
  const big = results.find((r) => r.scopes >= 10_000);
  const props = results.flatMap((r) => (r.propagation ? [r.propagation] : []));
  const verdicts = [
    big ? `10,000 scopes reconciled in ${fmt(big.reconciledMs)} (target < 60 s): ${big.reconciledMs < 60_000 ? 'MET' : 'MISSED'}` : undefined,
    ...props.map((p, i) => `propagation at ${results[i]!.scopes} scopes: p50 ${fmt(p.p50)} (target <= 1 s) ${p.p50 <= 1000 ? 'MET' : 'MISSED'}, p99 ${fmt(p.p99)} (target <= 2 s) ${p.p99 <= 2000 ? 'MET' : 'MISSED'}`),
  ].filter(Boolean);
  for (const v of verdicts) console.log(v);
  const out = flags.json ?? join(ROOT, '.cache', 'bench-operator.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
  log(`results written to ${out}`);
}

main().catch((e: unknown) => {
  console.error(`bench:operator failed: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
