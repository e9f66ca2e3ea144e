import { createServer, type Server } from 'node:http';

/** Present in every answer of the stand-in API, so a test can tell its content from an nginx error page. */
export const OAPI_MARKER = 'oapi-standin-answer-7c1e';

/**
 * A tiny stand-in for the OGC API behind nginx: any method, any path, answers 200 with a small JSON naming
 * what it received. It answers 200 to everything on purpose: whatever reaches it was let through by
 * svc-auth, so a 200 through nginx for a closed resource is a leak.
 */
export async function startOapiStandin(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ standin: OAPI_MARKER, method: req.method, path: req.url });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}

export function stopServer(server: Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
