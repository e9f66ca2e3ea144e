import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { parseHead, type HeadRequest, type HeadResponse } from './head.js';
import { PreparedAnswer } from './prepared-answer.js';
import { installFront, type Front } from './http-front.js';

// The front against node:http itself: the same raw bytes go to a plain node:http server and to one with the
// front installed, and whatever the front answers must be what node:http would have parsed.

interface Parsed {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Splits a byte stream of HTTP/1.1 answers (each with a Content-Length) into answers. */
function parseResponses(data: Buffer, headRequests = new Set<number>()): Parsed[] {
  const out: Parsed[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at, 'latin1');
    if (end < 0) break;
    const lines = data.toString('latin1', at, end).split('\r\n');
    const status = Number(lines[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
    }
    const length = headRequests.has(out.length) ? 0 : Number(headers['content-length'] ?? 0);
    out.push({ status, headers, body: data.toString('latin1', end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

/** Sends raw bytes (optionally in pieces, one per tick), half-closes, and returns everything answered. */
function exchange(port: number, pieces: (string | Buffer)[], options: { end?: boolean } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let got = 0;
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      got += c.length;
    });
    s.on('close', () => resolve(Buffer.concat(chunks, got)));
    s.on('error', reject);
    void (async () => {
      for (const p of pieces) {
        s.write(typeof p === 'string' ? Buffer.from(p, 'latin1') : p);
        if (pieces.length > 1) await new Promise((r) => setImmediate(r));
      }
      if (options.end ?? true) s.end();
    })();
  });
}

const echoOf = (req: HeadRequest) => Buffer.from(JSON.stringify({ method: req.method, url: req.url, rawHeaders: req.rawHeaders })).toString('base64');

/**
 * Answers at once, as the front does, rather than on the body's end: node:http answers a parse error
 * later in a pipelined stream with an immediate 400 that overtakes answers still waiting for an event, so
 * a late answer would make the reference lose requests it did parse.
 */
function nodeEcho(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.writeHead(200, ['X-Via', 'node', 'X-Echo', echoOf(req), 'Content-Length', '0']);
  res.end();
}

/**
 * Answers at once, or later (a target of odd length waits a few milliseconds, as a JWT waiting for its
 * verification does), so every test and the differential below also check that answers leave in request
 * order whatever each one waits for.
 */
function frontEcho(req: HeadRequest, res: HeadResponse): boolean {
  if (!req.url!.startsWith('/authz/')) return false;
  const answer = () => {
    res.writeHead(200, ['X-Via', 'front', 'X-Echo', echoOf(req), 'Content-Length', '0']);
    res.end();
  };
  if (req.url!.length % 2 === 0) answer();
  else setTimeout(answer, req.url!.length % 5);
  return true;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

let plain: Server;
let fronted: Server;
let front: Front;
let plainPort: number;
let frontPort: number;

beforeAll(async () => {
  plain = createServer(nodeEcho);
  fronted = createServer(nodeEcho);
  fronted.keepAliveTimeout = 65_000;
  front = installFront(fronted, frontEcho);
  plainPort = await listen(plain);
  frontPort = await listen(fronted);
});

afterAll(async () => {
  plain.closeAllConnections();
  fronted.closeAllConnections();
  front.closeAll();
  await new Promise((r) => plain.close(r));
  await new Promise((r) => fronted.close(r));
});

const GET = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: svc-auth\r\n${extra}\r\n`;

describe('parseHead', () => {
  const head = (s: string) => parseHead(Buffer.from(s, 'latin1'), 100);

  it('reads the method, the target and the headers as node:http does (names as sent, values trimmed)', () => {
    const h = head('GET /authz/auth-request?x=1 HTTP/1.1\r\nHost: a\r\nX-Original-URI: \t/data/x \r\nauthorization:Bearer t\r\n');
    expect(h).toEqual({ method: 'GET', url: '/authz/auth-request?x=1', rawHeaders: ['Host', 'a', 'X-Original-URI', '/data/x', 'authorization', 'Bearer t'], close: false });
  });

  it('notices Connection: close in any case and list position', () => {
    expect(head('GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n')!.close).toBe(true);
    expect(head('GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n')!.close).toBe(false);
  });

  it.each([
    ['HTTP/1.0', 'GET / HTTP/1.0\r\nHost: a\r\n'],
    ['HEAD (no body in the answer)', 'HEAD / HTTP/1.1\r\nHost: a\r\n'],
    ['a lowercase version', 'GET / http/1.1\r\nHost: a\r\n'],
    ['a second space in the request line', 'GET /a b HTTP/1.1\r\nHost: a\r\n'],
    ['an absolute-form target', 'GET http://a/b HTTP/1.1\r\nHost: a\r\n'],
    ['an asterisk target', 'OPTIONS * HTTP/1.1\r\nHost: a\r\n'],
    ['a non-token method', 'G(T / HTTP/1.1\r\nHost: a\r\n'],
    ['a raw non-ASCII target byte', 'GET /caf\xe9 HTTP/1.1\r\nHost: a\r\n'],
    ['no Host', 'GET / HTTP/1.1\r\nX: a\r\n'],
    ['two Hosts', 'GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n'],
    ['two Content-Length: 0 (node:http answers 400)', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\ncontent-length: 0\r\n'],
    // Found by the differential property under CI's run count: llhttp refuses a tab after the length's digits.
    ['Content-Length: 0 and a tab (node:http answers 400)', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\t\r\n'],
    ['Content-Length: 0, a space and a tab (node:http answers 400)', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0 \t\r\n'],
    ['Content-Length: 0 and a space (node:http accepts it, but the front takes only the plain form)', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0 \r\n'],
    ['an obs-fold continuation line', 'GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n'],
    ['a bare LF inside a line', 'GET / HTTP/1.1\r\nHost: a\nX: b\r\n'],
    ['a bare CR in a value', 'GET / HTTP/1.1\r\nHost: a\rX: b\r\n'],
    ['a NUL in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n'],
    ['obs-text in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX: caf\xe9\r\n'],
    ['whitespace before the colon', 'GET / HTTP/1.1\r\nHost: a\r\nX : b\r\n'],
    ['a line without a colon', 'GET / HTTP/1.1\r\nHost: a\r\nX\r\n'],
    ['an empty header name', 'GET / HTTP/1.1\r\nHost: a\r\n: b\r\n'],
    ['a body length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n'],
    ['chunked framing', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n'],
    ['Expect', 'POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n'],
    ['Upgrade', 'GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'],
    ['an unknown Connection option', 'GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, te\r\n'],
    ['a tab in the request line', 'GET /a\tb HTTP/1.1\r\nHost: a\r\n'],
    ['DEL in a header name', 'GET / HTTP/1.1\r\nHost: a\r\nX\x7f: b\r\n'],
    ['a last line without its CRLF', 'GET / HTTP/1.1\r\nHost: a\r\nX: b'],
    ['a request line without its CRLF', 'GET / HTTP/1.1'],
  ])('hands over on %s', (_why, text) => {
    expect(head(text)).toBeNull();
  });

  it('reads only the range it is given (a head in the middle of pipelined bytes)', () => {
    const first = 'GET /a HTTP/1.1\r\nHost: a\r\n\r\n';
    const second = 'GET /b HTTP/1.1\r\nHost: b\r\nX: y\r\n';
    const bytes = Buffer.from(`${first}${second}\r\nGARBAGE`, 'latin1');
    expect(parseHead(bytes, 100, first.length, first.length + second.length)).toEqual({ method: 'GET', url: '/b', rawHeaders: ['Host', 'b', 'X', 'y'], close: false });
    // A range ending inside a line is refused, whatever follows it in the buffer.
    expect(parseHead(bytes, 100, first.length, first.length + second.length - 3)).toBeNull();
  });

  it('accepts Content-Length: 0 (Envoy sends it) and hands over beyond the header limit', () => {
    expect(head('POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n')?.method).toBe('POST');
    const many = Array.from({ length: 100 }, (_, i) => `X-${i}: v\r\n`).join('');
    expect(head(`GET / HTTP/1.1\r\nHost: a\r\n${many}`)).toBeNull();
  });
});

describe('the front on a real socket', () => {
  it('times each head from its own first byte: a busy pipelined connection is never dropped by the head timeout', async () => {
    // Each piece completes one head and starts the next; every head is complete well within the timeout,
    // but the connection as a whole is busy for far longer than it. The margin (a piece every 700 ms against a
    // 2 s timeout) holds on a loaded machine, where a 250 ms timer once fired past a 400 ms timeout.
    const server = createServer(nodeEcho);
    server.headersTimeout = 2000;
    const own = installFront(server, frontEcho);
    const port = await listen(server);
    try {
      const heads = ['a', 'b', 'c', 'd', 'e'].map((p) => GET(`/authz/${p}`));
      const pieces: string[] = [];
      let rest = '';
      for (const h of heads) {
        const half = Math.floor(h.length / 2);
        pieces.push(rest + h.slice(0, half));
        rest = h.slice(half);
      }
      pieces.push(rest);
      const answers = await new Promise<Buffer>((resolve, reject) => {
        const c = connect(port, '127.0.0.1');
        const chunks: Buffer[] = [];
        c.on('data', (d: Buffer) => chunks.push(d));
        c.on('close', () => resolve(Buffer.concat(chunks)));
        c.on('error', reject);
        void (async () => {
          for (const p of pieces) {
            c.write(p, 'latin1');
            await new Promise((r) => setTimeout(r, 700));
          }
          c.end();
        })();
      });
      expect(parseResponses(answers).map((r) => [r.status, r.headers['x-via']])).toEqual(heads.map(() => [200, 'front']));
    } finally {
      own.closeAll();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('answers auth requests itself on a kept-alive connection, with node:http framing headers', async () => {
    const out = parseResponses(await exchange(frontPort, [GET('/authz/a'), GET('/authz/b'), GET('/authz/c')]));
    expect(out.map((r) => [r.status, r.headers['x-via'], JSON.parse(Buffer.from(r.headers['x-echo']!, 'base64').toString()).url])).toEqual([
      [200, 'front', '/authz/a'],
      [200, 'front', '/authz/b'],
      [200, 'front', '/authz/c'],
    ]);
    expect(out[0]!.headers).toMatchObject({ connection: 'keep-alive', 'keep-alive': 'timeout=65', 'content-length': '0' });
    expect(new Date(out[0]!.headers.date!).getTime()).toBeGreaterThan(0);
  });

  it('answers in request order when an earlier answer waits (a JWT being verified) and a later one is immediate', async () => {
    // /authz/slow1 (odd length) waits; /authz/2 and /authz/04 (even) are answered at once, yet leave after it.
    const pipelined = parseResponses(await exchange(frontPort, [GET('/authz/slow1') + GET('/authz/04') + GET('/authz/slow3') + GET('/authz/06')]));
    expect(pipelined.map((r) => JSON.parse(Buffer.from(r.headers['x-echo']!, 'base64').toString()).url)).toEqual(['/authz/slow1', '/authz/04', '/authz/slow3', '/authz/06']);
  });

  it('answers pipelined requests in order, and a head that arrives a byte at a time', async () => {
    const pipelined = parseResponses(await exchange(frontPort, [GET('/authz/1') + GET('/authz/2') + GET('/authz/3')]));
    expect(pipelined.map((r) => JSON.parse(Buffer.from(r.headers['x-echo']!, 'base64').toString()).url)).toEqual(['/authz/1', '/authz/2', '/authz/3']);
    const bytes = [...GET('/authz/slow', 'Authorization: Bearer x\r\n')];
    const slow = parseResponses(await exchange(frontPort, bytes));
    expect(slow.map((r) => r.headers['x-via'])).toEqual(['front']);
  });

  it('hands a connection to node:http mid-way, with the unanswered bytes, and node:http answers the rest in order', async () => {
    const before = front.handedOver;
    for (const pieces of [[GET('/authz/1'), GET('/other'), GET('/authz/3')], [GET('/authz/1') + GET('/other') + GET('/authz/3')]]) {
      const out = parseResponses(await exchange(frontPort, pieces));
      expect(out.map((r) => [r.headers['x-via'], JSON.parse(Buffer.from(r.headers['x-echo']!, 'base64').toString()).url])).toEqual([
        ['front', '/authz/1'],
        ['node', '/other'],
        ['node', '/authz/3'],
      ]);
    }
    expect(front.handedOver).toBe(before + 2);
  });

  it('leaves HEAD, bodies and oversized heads to node:http, which answers them correctly', async () => {
    const head = parseResponses(await exchange(frontPort, [`HEAD /authz/x HTTP/1.1\r\nHost: a\r\n\r\n`, GET('/authz/y')]), new Set([0]));
    expect(head.map((r) => r.headers['x-via'])).toEqual(['node', 'node']);
    const body = parseResponses(await exchange(frontPort, [`POST /authz/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello`, GET('/authz/y')]));
    expect(body.map((r) => [r.headers['x-via'], JSON.parse(Buffer.from(r.headers['x-echo']!, 'base64').toString()).url])).toEqual([
      ['node', '/authz/x'],
      ['node', '/authz/y'],
    ]);
    const huge = parseResponses(await exchange(frontPort, [GET('/authz/x', `X-Big: ${'a'.repeat(20_000)}\r\n`)]));
    expect(huge.map((r) => r.status)).toEqual([431]);
  });

  it('honours Connection: close: answers, says so, and closes', async () => {
    const out = parseResponses(await exchange(frontPort, [GET('/authz/a', 'Connection: close\r\n') + GET('/authz/never')], { end: false }));
    expect(out.map((r) => [r.headers['x-via'], r.headers.connection])).toEqual([['front', 'close']]);
  });

  it('stops reading a client that does not read its answers, and answers everything once it does', async () => {
    const n = 20_000;
    const many = Buffer.from(GET('/authz/p', `X-Pad: ${'p'.repeat(200)}\r\n`).repeat(n), 'latin1');
    const data = await new Promise<Buffer>((resolve, reject) => {
      const s = connect(frontPort, '127.0.0.1');
      const chunks: Buffer[] = [];
      s.pause();
      s.on('error', reject);
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('close', () => resolve(Buffer.concat(chunks)));
      s.end(many);
      // Not reading for a while fills the server's socket buffer: it must stop parsing, not queue answers.
      setTimeout(() => s.resume(), 300);
    });
    expect(data.toString('latin1').split('HTTP/1.1 200 OK\r\n').length - 1).toBe(n);
  });

  it('refuses to write a response header value that would split the answer', async () => {
    let caught: unknown;
    const server = createServer(nodeEcho);
    installFront(server, (_req, res) => {
      try {
        res.writeHead(200, ['X-Bad', 'a\r\nSet-Cookie: x']);
      } catch (e) {
        caught = e;
      }
      res.writeHead(403, ['Content-Length', '0']);
      res.end();
      return true;
    });
    const port = await listen(server);
    try {
      const out = parseResponses(await exchange(port, [GET('/authz/x')]));
      expect(out.map((r) => [r.status, r.headers['set-cookie']])).toEqual([[403, undefined]]);
      expect(caught).toBeInstanceOf(TypeError);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('prepared answers', () => {
  it('are checked once, when prepared: an invalid header, a missing or wrong Content-Length is refused there', () => {
    expect(new PreparedAnswer(200, ['Cache-Control', 'no-store', 'Content-Length', '0']).headers).toEqual(['Cache-Control', 'no-store', 'Content-Length', '0']);
    expect(() => new PreparedAnswer(200, ['Cache-Control', 'no-store'])).toThrow(/Content-Length/);
    expect(() => new PreparedAnswer(200, ['Content-Length', '1'])).toThrow(/Content-Length 1 for a body of 0 bytes/);
    expect(() => new PreparedAnswer(200, ['Content-Length', '0'], Buffer.from('ab'))).toThrow(/Content-Length 0 for a body of 2 bytes/);
    expect(() => new PreparedAnswer(200, ['X-A', 'a\nb', 'Content-Length', '0'])).toThrow(TypeError);
    expect(() => new PreparedAnswer(200, ['X A', 'b', 'Content-Length', '0'])).toThrow(TypeError);
  });

  it('are written whole: status line, headers, Date, the Connection line asked for, and the body', () => {
    const a = new PreparedAnswer(401, ['WWW-Authenticate', 'Bearer', 'content-length', '2'], Buffer.from('{}'));
    const keep = 'Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n';
    const text = a.text(true, keep);
    expect(text).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\ncontent-length: 2\r\nDate: [^\r]+ GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n\{\}$/);
    expect(a.text(false, keep)).toMatch(/\r\nConnection: close\r\n\r\n\{\}$/);
    // Another front's keep-alive line is not served from the first one's text.
    expect(a.text(true, 'Connection: keep-alive\r\nKeep-Alive: timeout=9\r\n')).toContain('timeout=9');
  });
});

describe('differential: whatever the front answers, node:http parses the same way', () => {
  const methods = ['GET', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND', 'get', 'G@T'];
  const safeTarget = [...'abz/AZ09-._~!$&\'()*+,;=:@%?'];
  const targetChars = [...safeTarget, ...'#[]"<>\\^`{|}', ' ', '\t', '\x7f', '\xe9', '\x01'];
  const safeValue = [...'abz AZ09-._~!$&\'()*+,;=:@%?#[]"<>\\^`{|}/', '\t'];
  const valueChars = [...safeValue, '\r', '\n', '\x00', '\x7f', '\xe9'];
  const goodNames = ['Host', 'X-Original-URI', 'Authorization', 'X-A', 'x-original-url', 'Content-Length'];
  const names = [...goodNames, 'Content-Length', 'Transfer-Encoding', 'Connection', 'Bad Name', 'X\x01', 'X(', ''];
  const str = (chars: string[], max: number) => fc.array(fc.constantFrom(...chars), { maxLength: max }).map((a) => a.join(''));
  // Mostly requests the front answers (so the comparison bites), with every kind of oddity mixed in; framing
  // values come with whitespace around them too (llhttp's rules there differ per header: CI found `0\t`).
  const often = <T,>(good: fc.Arbitrary<T>, any: fc.Arbitrary<T>) => fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: any, weight: 1 });
  const header = fc.record({
    name: often(fc.constantFrom(...goodNames), fc.constantFrom(...names)),
    sep: often(fc.constant(': '), fc.constantFrom(':', ' :', ':\t', ':  ')),
    value: fc.oneof({ arbitrary: str(safeValue, 12), weight: 4 }, { arbitrary: str(valueChars, 12), weight: 1 }, { arbitrary: fc.constantFrom('0', '5', '', ' ', '00', '+0', 'close', 'keep-alive', 'chunked', 'Bearer x', ' svc ', '0\t', '0 ', '\t0', '0 \t', 'close\t', '\tkeep-alive '), weight: 2 }),
    eol: often(fc.constant('\r\n'), fc.constantFrom('\n', '\r')),
  });
  const request = fc.record({
    method: often(fc.constant('GET'), fc.constantFrom(...methods)),
    target: fc.oneof({ arbitrary: str(safeTarget, 10).map((t) => `/authz/${t}`), weight: 4 }, { arbitrary: str(targetChars, 10).map((t) => `/authz/${t}`), weight: 1 }, { arbitrary: str(targetChars, 6), weight: 1 }),
    version: often(fc.constant('HTTP/1.1'), fc.constantFrom('HTTP/1.0', 'http/1.1', 'HTTP/1.1 ', 'HTTP/2.0')),
    headers: fc.array(header, { maxLength: 5 }),
    host: often(fc.constant(true), fc.constant(false)),
  });
  const render = (r: { method: string; target: string; version: string; headers: { name: string; sep: string; value: string; eol: string }[]; host: boolean }) =>
    `${r.method} ${r.target} ${r.version}\r\n${r.host ? 'Host: a\r\n' : ''}${r.headers.map((h) => `${h.name}${h.sep}${h.value}${h.eol}`).join('')}\r\n`;

  // CI runs many more than a laptop does by default (FRONT_DIFF_RUNS overrides both).
  const runs = Number(process.env.FRONT_DIFF_RUNS ?? (process.env.CI === 'true' ? 10_000 : 400));

  /** node:http's answers against the front's, in order: equal statuses, equal parses, and never more lenient. */
  const compare = (ref: Parsed[], got: Parsed[]): number => {
    let answeredByFront = 0;
    expect(got.map((g) => g.status)).toEqual(ref.map((r) => r.status));
    got.forEach((g, i) => {
      const r = ref[i]!;
      if (g.headers['x-via'] !== 'front') return;
      answeredByFront++;
      // Never more lenient: whatever the front answers itself, node:http accepted as a request too, and
      // parsed the same way (method, target, every header name and value in order).
      expect(r.headers['x-via']).toBe('node');
      expect(g.headers['x-echo']).toBe(r.headers['x-echo']);
    });
    return answeredByFront;
  };

  it('agrees with node:http on generated requests (status, and the parsed request when it answers)', async () => {
    let frontAnswered = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const bytes = render(r);
        const isHead = r.method === 'HEAD';
        const ref = parseResponses(await exchange(plainPort, [bytes]), isHead ? new Set([0]) : undefined);
        const got = parseResponses(await exchange(frontPort, [bytes]), isHead ? new Set([0]) : undefined);
        frontAnswered += compare(ref.slice(0, 1), got.slice(0, 1));
      }),
      { numRuns: runs },
    );
    // The property would hold trivially if the front handed everything over. It answers about 14% of these
    // requests (431 of 3,000 measured): runs / 16 keeps a 400-run laptop run clear of chance (runs / 8 failed one in six).
    expect(frontAnswered).toBeGreaterThan(runs / 16);
  }, 300_000);

  // A pipelined stream is not compared answer for answer with node:http's: node:http drops requests still
  // queued when the client half-closes, and answers a later parse error at once, ahead of queued answers.
  // What must hold is what the front itself does: it answers a prefix of the requests, in order, and each of
  // them node:http accepts alone and parses the same way; the rest is node:http's own answering.
  it('on pipelined sequences, whole or cut at random points, answers only what node:http accepts, in order', async () => {
    let frontAnswered = 0;
    const sequence = fc.record({
      // Mostly well-formed request lines, so that sequences get past their first request.
      requests: fc.array(often(request.map((r) => ({ ...r, method: 'GET', version: 'HTTP/1.1', host: true })), request), { minLength: 2, maxLength: 4 }),
      // Where the byte stream is cut into the pieces sent one per tick (fractions of its length).
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(sequence, async ({ requests, cuts }) => {
        const bytes = Buffer.from(requests.map(render).join(''), 'latin1');
        const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((from, i) => bytes.subarray(from, [...at, bytes.length][i])).filter((p) => p.length > 0);
        const heads = new Set(requests.flatMap((r, i) => (r.method === 'HEAD' ? [i] : [])));
        const got = parseResponses(await exchange(frontPort, pieces), heads);
        const byFront = got.findIndex((g) => g.headers['x-via'] !== 'front');
        const answered = byFront < 0 ? got.length : byFront;
        // After the first answer not the front's, the front never answers again on that connection.
        expect(got.slice(answered).every((g) => g.headers['x-via'] !== 'front')).toBe(true);
        for (let i = 0; i < answered; i++) {
          const [ref] = parseResponses(await exchange(plainPort, [render(requests[i]!)]), requests[i]!.method === 'HEAD' ? new Set([0]) : undefined);
          expect([i, ref?.status, ref?.headers['x-via'], ref?.headers['x-echo']]).toEqual([i, 200, 'node', got[i]!.headers['x-echo']]);
        }
        frontAnswered += answered;
      }),
      { numRuns: Math.ceil(runs / 4) },
    );
    expect(frontAnswered).toBeGreaterThan(runs / 40);
  }, 300_000);

  it('agrees on every visible ASCII character in a target and in a header value', async () => {
    for (let c = 0x21; c <= 0x7e; c++) {
      const ch = String.fromCharCode(c);
      for (const bytes of [GET(`/authz/a${ch}b`), GET('/authz/v', `X-V: a${ch}b\r\n`)]) {
        const [ref] = parseResponses(await exchange(plainPort, [bytes]));
        const [got] = parseResponses(await exchange(frontPort, [bytes]));
        expect([ch, got?.status, got?.headers['x-echo']]).toEqual([ch, ref?.status, ref?.headers['x-echo']]);
      }
    }
  });
});
