import { describe, expect, it } from '@jest/globals';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { canConnect, freePort, freePorts, httpGet, httpStatus, waitForPort } from './ports.js';

function listen(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

describe('ports', () => {
  it('hands out distinct free ports', async () => {
    const ports = await freePorts(20);
    expect(new Set(ports).size).toBe(20);
    for (const p of ports) expect(p).toBeGreaterThan(0);
    const one = await freePort();
    const s = await listen(one); // free indeed
    s.close();
  });

  it('waits for a port that starts listening later', async () => {
    const port = await freePort();
    let server: Server | undefined;
    setTimeout(() => void listen(port).then((s) => (server = s)), 150);
    await waitForPort(port, 5000);
    expect(await canConnect(port)).toBe(true);
    server?.close();
  });

  it('gives up at the deadline or when told the listener exited', async () => {
    const port = await freePort();
    await expect(waitForPort(port, 100)).rejects.toThrow(`timed out after 100 ms waiting for something to listen on 127.0.0.1:${port}`);
    await expect(waitForPort(port, 10_000, () => 'envoy exited (exit 1)')).rejects.toThrow('envoy exited (exit 1) while waiting');
    expect(await canConnect(port)).toBe(false);
  });
});

describe('httpStatus', () => {
  it('is the status a port answers, with the headers sent, and 0 when nothing answers', async () => {
    const server = createHttpServer((req, res) => {
      res.writeHead(req.headers.authorization === 'Bearer t' ? 200 : 401);
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      expect(await httpStatus(port, '/readyz')).toBe(401);
      expect(await httpStatus(port, '/readyz', { Authorization: 'Bearer t' })).toBe(200);
    } finally {
      server.close();
    }
    expect(await httpStatus(await freePort(), '/')).toBe(0);
  });
});

describe('httpGet', () => {
  it('is the status and body a port answers, with the headers sent, and status 0 with no body when nothing answers', async () => {
    const server = createHttpServer((req, res) => {
      res.writeHead(req.headers.authorization === 'Bearer t' ? 200 : 401, { 'Content-Type': 'text/plain' });
      res.end(`${req.url} é`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      expect(await httpGet(port, '/metrics')).toEqual({ status: 401, body: '/metrics é' });
      expect(await httpGet(port, '/metrics', { Authorization: 'Bearer t' })).toEqual({ status: 200, body: '/metrics é' });
    } finally {
      server.close();
    }
    expect(await httpGet(await freePort(), '/')).toEqual({ status: 0, body: '' });
  });
});
