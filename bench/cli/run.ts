// `npm run bench:cli`: how long the svc CLI takes to start, against `node -e ''` measured in the same run.
//
//   svc --help                      commander only: no command code, no core, no client-node
//   svc --dir DIR auth show         the directory backend reading and validating 1,000 scopes, table output
//   svc --dir DIR auth show -o json the same as JSON
//
// Uses the built CLI (dist/cli/main.js, as installed); builds it first when it is missing or older than the
// sources. Runs are interleaved round-robin so a busy machine slows every command alike. Prints medians, p90
// and the ratio of each median to the baseline's, and writes them to .cache/bench-cli.json.
//
//   tsx bench/cli/run.ts [--runs N] [--scopes N]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dumpManifests, formatGeneratedToken, hashToken, newProtectedScope, scopeObjectName, tokenIdOf, type Scope } from '../../core/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RUNS = arg('--runs', 15);
const SCOPES = arg('--scopes', 1000);
const main = join(root, 'dist', 'cli', 'main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const d of readdirSync(join(root, dir), { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (d.name.endsWith('.ts') && !d.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(join(root, p)).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  const sources = Math.max(...['cli', 'core', 'k8s', 'lib'].map(newestSource));
  if (existsSync(main) && statSync(main).mtimeMs >= sources) return;
  process.stderr.write('building dist/ (npm run build) ...\n');
  // tsc emits even when some other part of the tree fails to type-check; what matters here is the CLI's output.
  spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (!existsSync(main)) throw new Error('npm run build did not produce dist/cli/main.js');
}

/** SCOPES manifests, one per scope as the CLI writes them, 1-3 tokens each, some with expiry and descriptions. */
function populate(dir: string): void {
  for (let i = 0; i < SCOPES; i++) {
    const scope: Scope =
      i % 3 === 0
        ? { kind: 'topic', value: `origin.a.wis2.centre-${i}.data.core.weather` }
        : i % 3 === 1
          ? { kind: 'dataset', value: `urn:wmo:md:centre-${i}:surface-weather-observations` }
          : { kind: 'path', value: `processes/svc-process${i}` };
    const tokens = Array.from({ length: 1 + (i % 3) }, (_, j) => {
      const hash = hashToken(formatGeneratedToken(randomBytes(32)));
      return {
        id: tokenIdOf(hash),
        hash,
        ...(j === 0 ? { description: `partner ${i}` } : {}),
        createdAt: '2026-11-21T10:00:00Z',
        ...(j === 1 ? { expiresAt: '2027-11-21T10:00:00Z' } : {}),
      };
    });
    const name = scopeObjectName(scope);
    writeFileSync(join(dir, `${name}.yaml`), dumpManifests([newProtectedScope(scope, name, undefined, tokens)]));
  }
}

interface Case {
  name: string;
  argv: string[];
}

function timeOnce(c: Case): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, c.argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NODE_OPTIONS: '' } });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr.toString()}`);
  return ms;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

ensureBuilt();
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
try {
  populate(dir);
  const cases: Case[] = [
    { name: "node -e ''", argv: ['-e', ''] },
    { name: 'svc --help', argv: [main, '--help'] },
    { name: `svc auth show (${SCOPES} scopes)`, argv: [main, '--dir', dir, 'auth', 'show'] },
    { name: `svc auth show -o json (${SCOPES} scopes)`, argv: [main, '--dir', dir, 'auth', 'show', '-o', 'json'] },
  ];
  for (const c of cases) timeOnce(c); // warm the file cache
  const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let i = 0; i < RUNS; i++) for (const c of cases) times.get(c.name)!.push(timeOnce(c));
  const baseline = quantile(times.get(cases[0]!.name)!, 0.5);
  const rows = cases.map((c) => {
    const xs = times.get(c.name)!;
    const median = quantile(xs, 0.5);
    return { name: c.name, medianMs: Math.round(median), p90Ms: Math.round(quantile(xs, 0.9)), ratio: Number((median / baseline).toFixed(2)), extraMs: Math.round(median - baseline) };
  });
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`svc CLI start-up, ${RUNS} runs each, interleaved (node ${process.version}, ${SCOPES} scopes)`);
  console.log(`${'command'.padEnd(width)}  median    p90  x baseline  over baseline`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(width)}  ${`${r.medianMs} ms`.padStart(6)}  ${`${r.p90Ms} ms`.padStart(6)}  ${r.ratio.toFixed(2).padStart(10)}  ${`${r.extraMs} ms`.padStart(13)}`);
  }
  mkdirSync(join(root, '.cache'), { recursive: true });
  writeFileSync(join(root, '.cache', 'bench-cli.json'), `${JSON.stringify({ runs: RUNS, scopes: SCOPES, node: process.version, rows }, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
