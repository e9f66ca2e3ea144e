// test/kind/run.sh as `npm test` runs it: the offline kind node image (built on first use, then cached), a two-node
// kind cluster on podman, the chart, Traefik in front of svc-auth, the whole path open -> closed -> token -> open,
// RBAC, the NetworkPolicy enforced (kube-router), cluster DNS and svc-auth spread over both nodes. The integration
// suites run against the harness control plane in their own project; `bash test/kind/run.sh` without
// SKIP_SUITES runs them against the kind cluster too.
import { describe, it, expect } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureHostPackages, hostPlan, NODE_PACKAGES } from '../node/host-packages.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const plan = hostPlan(NODE_PACKAGES);
const suite = plan.action === 'skip' ? describe.skip : describe;
/** Cold: the node image's binaries and its assembly (~15 min on 2 cores, see README.md); warm ~3 min. */
const TIMEOUT = 45 * 60_000;

/** Runs run.sh to its end, its output into `log`; resolves the exit code. */
function runScript(log: string, env: NodeJS.ProcessEnv): Promise<number | null> {
  return new Promise((resolvePromise, reject) => {
    const out = createWriteStream(log);
    const child = spawn('bash', [join(root, 'test/kind/run.sh')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const timer = setTimeout(() => child.kill('SIGTERM'), TIMEOUT - 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      out.end(() => resolvePromise(code));
    });
  });
}

/** The figures run.sh prints (node image, cluster start, NetworkPolicy), for the test's output. */
export function figures(output: string): string[] {
  return output.split('\n').filter((l) => /^node image |kind create cluster took|cluster ready|^ok {2}(refused|allowed|svc-auth on)|run\.sh ended/.test(l.replace(/^=== \[\d+s\] /, '')));
}

suite('kind: the chart on a two-node kind cluster (test/kind/run.sh)', () => {
  it('run.sh passes: path through Traefik, RBAC, NetworkPolicy, DNS, spread', async () => {
    ensureHostPackages(plan);
    const dir = join(root, '.cache', 'kind');
    mkdirSync(dir, { recursive: true });
    const log = join(dir, `run-${process.pid}.log`);
    const code = await runScript(log, {
      ...process.env, SKIP_SUITES: 'true', KIND_PROVIDER: 'podman',
      KIND_CLUSTER_NAME: `svc-kind-${process.pid}`, KIND_EXPERIMENTAL_PODMAN_NETWORK: `svc-kind-${process.pid}`,
    });
    const output = readFileSync(log, 'utf8');
    process.stderr.write(`[kind] ${log}:\n${figures(output).join('\n')}\n`);
    if (code !== 0) process.stderr.write(`[kind] run.sh failed (exit ${code}); its last lines:\n${output.split('\n').slice(-80).join('\n')}\n`);
    expect(code).toBe(0);
  }, TIMEOUT);
});
