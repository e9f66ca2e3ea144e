import { describe, it, expect } from '@jest/globals';
import { request } from 'node:http';
import { Registry, Counter } from 'prom-client';
import { readFileSync } from 'node:fs';
import { LOG_LEVELS } from '../lib/log-levels.js';
import { runCommand } from '../test/support/process.js';
import { parseFlags, program } from './main.js';
import { startHealthServer } from './health.js';

describe('svc-operator flags', () => {
  it('parses durations in the one grammar (lib/duration.ts)', () => {
    const flags = (...args: string[]) => program().exitOverride().parse(['node', 'svc-operator', ...args]).opts();
    expect(flags('--debounce', '500ms', '--retry-period', '15s', '--resync', '2m', '--relist-interval', '1.5h', '--stale-shard-grace', '30')).toMatchObject({
      debounce: 500, retryPeriod: 15_000, resync: 120_000, relistInterval: 5_400_000, staleShardGrace: 30_000,
    });
    expect(flags('--resync', '1d').resync).toBe(86_400_000);
    const cmd = program().exitOverride().configureOutput({ writeErr: () => undefined });
    expect(() => cmd.parse(['node', 'svc-operator', '--debounce', 'soon'])).toThrow(/not a duration/);
  });

  it('has the documented defaults', () => {
    const cmd = program().exitOverride();
    cmd.parse(['node', 'svc-operator']);
    expect(cmd.opts()).toMatchObject({ snapshotName: 'svc-auth-snapshot', leaderElect: false, metricsListen: ':8080', leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2_000, staleShardGrace: 120_000, shardMaxBytes: 700 * 1024 });
    const custom = program().exitOverride();
    custom.parse(['node', 'svc-operator', '--namespace', 'svc', '--snapshot-name', 'snap', '--leader-elect', '--stale-shard-grace', '1s']);
    expect(custom.opts()).toMatchObject({ namespace: 'svc', snapshotName: 'snap', leaderElect: true, staleShardGrace: 1000 });
  });

  it('refuses a snapshot name that cannot prefix ConfigMap names', () => {
    const cmd = program().exitOverride().configureOutput({ writeErr: () => undefined });
    expect(() => cmd.parse(['node', 'svc-operator', '--snapshot-name', 'Bad_Name'])).toThrow(/not a valid name/);
  });
});

describe('svc-operator usage, as svc-auth and svc', () => {
  const io = () => {
    const said = { out: '', err: '' };
    return { said, output: { out: (s: string) => void (said.out += s), err: (s: string) => void (said.err += s) } };
  };
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

  it('--version prints the package version and exits 0', () => {
    const { said, output } = io();
    expect(parseFlags(['--version'], output)).toEqual({ exit: 0 });
    expect(said.out).toBe(`${version}\n`);
  });

  it.each([[['--bogus']], [['--log-level', 'loud']], [['--debounce', 'soon']], [['extra']], [['--retry-period', '20s']]])('%j is a usage error: exit 2, with a message', (args) => {
    const { said, output } = io();
    expect(parseFlags(args, output)).toEqual({ exit: 2 });
    expect(said.err).toMatch(/error/);
  });

  it('offers the log levels svc-auth offers, and -n is the namespace', () => {
    const level = program().options.find((o) => o.long === '--log-level');
    expect(level?.argChoices).toEqual([...LOG_LEVELS]);
    for (const l of LOG_LEVELS) expect(parseFlags(['--log-level', l])).toMatchObject({ logLevel: l });
    expect(parseFlags(['-n', 'svc'])).toMatchObject({ namespace: 'svc' });
  });

  it('as a process: a usage error exits 2, --version exits 0', async () => {
    const run = (...args: string[]) => runCommand(process.execPath, ['--import', 'tsx', 'operator/main.ts', ...args], { cwd: new URL('..', import.meta.url).pathname });
    const bad = await run('--bogus');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown option '--bogus'");
    expect(await run('--version')).toMatchObject({ code: 0, stdout: `${version}\n` });
  }, 30_000);
});

describe('health server', () => {
  it('refuses a listen address outside the one grammar (lib/listen-address.ts) before listening', () => {
    expect(() => startHealthServer('nope', { live: () => ({ ok: true, detail: {} }), ready: () => ({ ok: true, detail: {} }) }, new Registry())).toThrow(/not a listen address/);
  });

  it('serves /healthz, /readyz and /metrics', async () => {
    const registry = new Registry();
    new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc();
    let ready = false;
    const server = await startHealthServer('127.0.0.1:0', { live: () => ({ ok: true, detail: {} }), ready: () => ({ ok: ready, detail: { n: 1 } }) }, registry);
    const port = (server.address() as { port: number }).port;
    const get = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        })
          .on('error', reject)
          .end();
      });
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(503);
    ready = true;
    expect(await get('/readyz')).toMatchObject({ status: 200 });
    expect((await get('/metrics')).body).toMatch(/x_total 1/);
    expect((await get('/nope')).status).toBe(404);
    await new Promise((r) => server.close(r));
  });
});
