import { describe, it, expect } from '@jest/globals';
import { request } from 'node:http';
import { Registry, Counter } from 'prom-client';
import { program } from './main.js';
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
