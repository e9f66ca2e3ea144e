// svc-operator's /healthz, /readyz and /metrics, on one small node:http server.
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { parseListenAddress } from '../lib/listen-address.js';

/** /healthz, /readyz and /metrics on one small node:http server (no framework needed for three routes). */
interface HealthChecks {
  /** Process is alive and its loops are not wedged. */
  live(): { ok: boolean; detail: Record<string, unknown> };
  /** Ready to do its job (caches synced). */
  ready(): { ok: boolean; detail: Record<string, unknown> };
}

export function startHealthServer(listen: string, checks: HealthChecks, registry: Registry): Promise<Server> {
  const { host, port } = parseListenAddress(listen);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'method not allowed' });
    if (path === '/healthz' || path === '/livez') {
      const r = checks.live();
      return json(r.ok ? 200 : 503, { status: r.ok ? 'ok' : 'failing', ...r.detail });
    }
    if (path === '/readyz') {
      const r = checks.ready();
      return json(r.ok ? 200 : 503, { status: r.ok ? 'ready' : 'not ready', ...r.detail });
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        },
        () => json(500, { error: 'metrics failed' }),
      );
      return;
    }
    json(404, { error: 'not found' });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
