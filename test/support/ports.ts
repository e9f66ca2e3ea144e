// Loopback ports for the processes the suites start: free ones picked by the kernel, a wait until something
// accepts connections on one, and the HTTP status a port answers (readiness probes). Every suite and bench takes its
// ports from here, and probe them with httpStatus and httpGet.
import { get } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { waitUntil } from './wait.js';

function listenOnAnyPort(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/**
 * `n` distinct ports that were free a moment ago on 127.0.0.1. They are held open together before being released,
 * so they differ from each other; a small race with other programs remains (as in envtest).
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, listenOnAnyPort));
  const ports = servers.map((s) => {
    const a = s.address();
    if (!a || typeof a === 'string') throw new Error('a listening socket without a port');
    return a.port;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/** Whether a TCP connection to host:port is accepted within `timeoutMs`. */
export function canConnect(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Waits until something accepts connections on 127.0.0.1:port; fails at the deadline, or at once when `abortIf`
 * gives a reason (the process meant to listen there exited).
 */
export async function waitForPort(port: number, timeoutMs: number, abortIf?: () => string | undefined): Promise<void> {
  await waitUntil(() => canConnect(port), {
    what: `something to listen on 127.0.0.1:${port}`, timeoutMs, intervalMs: 50, ...(abortIf ? { abortIf } : {}),
  });
}

/**
 * The status GET http://127.0.0.1:port/path answers, 0 when nothing answers within 2 s. A fresh connection each
 * time (no keep-alive agent), so a probe never rides on a connection opened before a restart.
 */
export function httpStatus(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, headers, timeout: 2000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/**
 * GET http://127.0.0.1:port/path: its status and body, or status 0 and an empty body when nothing answers within
 * `timeoutMs` (a server still starting, or gone).
 */
export function httpGet(port: number, path: string, headers: Record<string, string> = {}, timeoutMs = 3000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, headers, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}
