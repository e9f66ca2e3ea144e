import type { ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends `signal`, waits for the exit, and SIGKILLs after `graceMs`; the grace timer is cleared on exit so
 * a stopped child never keeps Jest alive.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([done.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)))]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await done;
  }
}

/** A port that was free a moment ago on 127.0.0.1 (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Waits until something accepts connections on the port; gives up at the deadline or when `gaveUp()` says so. */
export async function waitForPort(port: number, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gaveUp()) throw new Error(`the process listening on ${port} exited`);
    if (await canConnect(port)) return;
    await delay(50);
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

export interface RawResponse {
  readonly status: number;
  /** Lower-case names; every value of a repeated header. */
  readonly headers: ReadonlyMap<string, readonly string[]>;
  readonly body: string;
}

export function header(res: RawResponse, name: string): string | undefined {
  return res.headers.get(name.toLowerCase())?.join(', ');
}

export interface RawRequest {
  readonly method?: string;
  /** The request target exactly as it goes on the wire, byte for byte (latin1): no normalization at all. */
  readonly target: string;
  /** Host header value; null sends none. Defaults to 127.0.0.1:<port>. */
  readonly host?: string | null;
  readonly headers?: readonly (readonly [string, string])[];
  readonly body?: string;
  readonly version?: string;
}

/**
 * Sends one request over a fresh TCP connection, writing the request line exactly as given (node:http and
 * fetch would normalize the path, which would hide the very attacks under test), and reads the answer
 * until the server closes. Error messages name the port only: requests may carry tokens.
 */
export function rawRequest(port: number, req: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const method = req.method ?? 'GET';
  const lines = [`${method} ${req.target} ${req.version ?? 'HTTP/1.1'}`];
  const host = req.host === undefined ? `127.0.0.1:${port}` : req.host;
  if (host !== null) lines.push(`Host: ${host}`);
  for (const [name, value] of req.headers ?? []) lines.push(`${name}: ${value}`);
  const body = req.body === undefined ? undefined : Buffer.from(req.body, 'utf8');
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  lines.push('Connection: close', '', '');
  const head = Buffer.from(lines.join('\r\n'), 'latin1');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer from 127.0.0.1:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // A reset after a complete answer is still an answer (nginx may close early on a bad request).
      const parsed = chunks.length > 0 ? tryParse(Buffer.concat(chunks)) : undefined;
      if (parsed) resolve(parsed);
      else reject(new Error(`request to 127.0.0.1:${port} failed: ${e.code ?? e.message}`));
    });
    socket.on('end', () => {
      clearTimeout(timer);
      const parsed = tryParse(Buffer.concat(chunks));
      if (parsed) resolve(parsed);
      else reject(new Error(`unparsable answer from 127.0.0.1:${port} (${Buffer.concat(chunks).length} bytes)`));
    });
    socket.write(body === undefined ? head : Buffer.concat([head, body]));
  });
}

function tryParse(raw: Buffer): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(statusLine);
  if (!m) return undefined;
  const headers = new Map<string, string[]>();
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const list = headers.get(name) ?? [];
    list.push(line.slice(colon + 1).trim());
    headers.set(name, list);
  }
  let body = raw.subarray(end + 4);
  if (headers.get('transfer-encoding')?.some((v) => v.toLowerCase().includes('chunked'))) body = dechunk(body);
  else {
    const length = headers.get('content-length')?.[0];
    if (length !== undefined) body = body.subarray(0, Number(length));
  }
  return { status: Number(m[1]), headers, body: body.toString('utf8') };
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0]!.trim(), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}
