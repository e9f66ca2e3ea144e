// A raw HTTP/1.1 client for the proxy suites (ports, waits and processes are in test/support/).
import { connect } from 'node:net';

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
  /** The address to connect to; default 127.0.0.1 (a pod's IP on the node harness, say). */
  readonly address?: string;
  /** The client's source address (a loopback address other than 127.0.0.1, say): what the proxy sees as the peer. */
  readonly localAddress?: string;
}

/**
 * Sends one request over a fresh TCP connection, writing the request line exactly as given (node:http and
 * fetch would normalize the path, which would hide the very attacks under test), and reads the answer
 * until the server closes. Error messages name the port only: requests may carry tokens.
 */
export function rawRequest(port: number, req: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const method = req.method ?? 'GET';
  const lines = [`${method} ${req.target} ${req.version ?? 'HTTP/1.1'}`];
  const address = req.address ?? '127.0.0.1';
  const host = req.host === undefined ? `${address}:${port}` : req.host;
  if (host !== null) lines.push(`Host: ${host}`);
  for (const [name, value] of req.headers ?? []) lines.push(`${name}: ${value}`);
  const body = req.body === undefined ? undefined : Buffer.from(req.body, 'utf8');
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  lines.push('Connection: close', '', '');
  const head = Buffer.from(lines.join('\r\n'), 'latin1');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: address, port, ...(req.localAddress !== undefined ? { localAddress: req.localAddress } : {}) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer from ${address}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // A reset after a complete answer is still an answer (nginx may close early on a bad request).
      const parsed = chunks.length > 0 ? tryParse(Buffer.concat(chunks)) : undefined;
      if (parsed) resolve(parsed);
      else reject(new Error(`request to ${address}:${port} failed: ${e.code ?? e.message}`));
    });
    socket.on('end', () => {
      clearTimeout(timer);
      const parsed = tryParse(Buffer.concat(chunks));
      if (parsed) resolve(parsed);
      else reject(new Error(`unparsable answer from ${address}:${port} (${Buffer.concat(chunks).length} bytes)`));
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
