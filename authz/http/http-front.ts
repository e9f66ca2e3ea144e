import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * A strict HTTP/1.1 front for the auth endpoints, placed in front of node:http on the same listening socket.
 *
 * Hand-written because the hot path demands it: an auth subrequest is a short head with no body, and
 * answering it through node:http's IncomingMessage/ServerResponse streams costs more CPU than the whole
 * decision (measured on this project's bench machine: ~14 µs per answer for a bare node:http server,
 * ~9.5 µs for a socket that parses the head and writes one string). The front handles only the narrow,
 * unambiguous subset that proxies send: HTTP/1.1, CRLF line ends, origin-form target of visible ASCII,
 * header values of visible ASCII, exactly one Host, no body (no Transfer-Encoding, Content-Length absent or
 * 0), no Expect, no Upgrade, no HEAD. On anything else, and for any path that is not an auth endpoint, it
 * hands the connection, with every byte it has not answered, to node:http, which parses it with llhttp
 * and runs the same handler (or Express). So the front is never more lenient than node:http: a request
 * is either parsed the way llhttp parses it (a differential test holds the two equal) or not touched.
 */

/** What the auth endpoints read of a request: node:http's IncomingMessage has the same fields. */
export interface HeadRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  /** Names and values alternating, names as sent, values without surrounding whitespace. */
  readonly rawHeaders: readonly string[];
}

/** What the auth endpoints do with a response: node:http's ServerResponse has the same members. */
export interface HeadResponse {
  writeHead(status: number, headers: string[]): unknown;
  end(body?: Buffer): unknown;
  readonly headersSent: boolean;
  shouldKeepAlive: boolean;
  destroy(): unknown;
}

/** Answers the request and returns true, or returns false without touching `res` (not an auth endpoint). */
export type FrontHandler = (req: HeadRequest, res: HeadResponse) => boolean;

export interface FrontOptions {
  /** Largest request head the front buffers before handing over (node:http answers 431 beyond its own limit). */
  readonly maxHeadBytes?: number;
  /**
   * The answer to a head over maxHeadBytes, by its request line's target, or undefined to leave it to node:http
   * (431). nginx's auth_request turns a 431 into a 500; its endpoints get a refusal nginx passes on instead.
   */
  readonly tooLarge?: (target: string) => PreparedAnswer | undefined;
  /** Beyond this many header lines the front hands over. */
  readonly maxHeaders?: number;
}

export interface Front {
  /** Connections the front currently serves (not those handed to node:http). */
  readonly size: number;
  /** Handed over to node:http so far (for tests and metrics). */
  readonly handedOver: number;
  /** Destroys connections that are between requests; the others close after their current answer. */
  closeIdle(): void;
  /** Destroys every connection the front serves. */
  closeAll(): void;
}

const CRLF_CRLF = Buffer.from('\r\n\r\n', 'latin1');

/**
 * node:http keeps at most this many header lines of a request and silently drops the rest (its
 * maxHeadersCount default); server.ts sets it explicitly, and the auth endpoints refuse a request that
 * reaches it, so a repeated contract header cannot hide past the limit.
 */
export const MAX_HEADERS_COUNT = 2000;
const HTTP_1_1 = 'HTTP/1.1';

/** RFC 9110 token characters, as a table: response header names are checked against it. */
const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;

/** An RFC 9110 token: what a header name or an HTTP method may be. */
export function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (TCHAR[s.charCodeAt(i)] !== 1) return false;
  return true;
}

/** ASCII case-insensitive equality of a header name with a lowercase name, without lowercasing a copy. */
export function named(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    let c = name.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** A parsed head the front may answer, or null: hand the connection over. */
interface Head extends HeadRequest {
  readonly method: string;
  readonly url: string;
  readonly close: boolean;
}

const FRONT_METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

const CONNECTION_OPTIONS = /^\s*(keep-alive|close)\s*(,\s*(keep-alive|close)\s*)*$/i;

/**
 * What a head's characters may be, by class: 1 a token character (header names), 2 any other character of
 * a field value (SP, HTAB, the rest of visible ASCII), 0 anything else (controls, DEL, obs-text), which
 * the front never answers. One table lookup per character: the head is scanned once.
 */
const HEAD_CHAR = new Uint8Array(256);
HEAD_CHAR[0x09] = 2;
for (let c = 0x20; c <= 0x7e; c++) HEAD_CHAR[c] = TCHAR[c] === 1 ? 1 : 2;

/** A field value as the front answers it: HTAB, SP and visible ASCII only (HEAD_CHAR's classes 1 and 2). */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;

/**
 * Parses the request head in `bytes[from, to)` (request line and header lines, each ending in CRLF)
 * strictly; null on any doubt. Hand-written and on bytes because it runs on every request: a table checks the
 * request line and each name byte by byte, memchr (indexOf) finds each line's end, and only the fields are made
 * strings (slices of one latin1 decode), each value then checked by one anchored character class. One regular
 * expression over the whole decoded head cost twice as much; a byte loop over long values (session cookies), a
 * fifth more per session request than this.
 */
// eslint-disable-next-line max-lines-per-function -- one pass over the bytes on the hot path; split, it would re-scan or allocate per line.
export function parseHead(bytes: Buffer, maxHeaders: number, from = 0, to = bytes.length): Head | null {
  // Request line: visible ASCII and single spaces only (a tab is in no method, target or version).
  let sp1 = -1;
  let sp2 = -1;
  let eol = from;
  for (; eol < to; eol++) {
    const c = bytes[eol]!;
    if (c === SP) {
      if (sp1 < 0) sp1 = eol;
      else if (sp2 < 0) sp2 = eol;
      else return null;
    } else if (c === CR || c === HTAB || HEAD_CHAR[c] === 0) {
      break;
    }
  }
  if (eol + 1 >= to || bytes[eol] !== CR || bytes[eol + 1] !== LF) return null;
  if (sp1 <= from || sp2 < 0 || sp2 + 1 + HTTP_1_1.length !== eol) return null;
  const head = bytes.toString('latin1', from, to);
  if (!head.startsWith(HTTP_1_1, sp2 + 1 - from)) return null;
  const method = head.slice(0, sp1 - from);
  // llhttp knows a fixed list of methods (case-sensitive), and HEAD answers carry no body: node:http's business.
  if (!FRONT_METHODS.has(method)) return null;
  const url = head.slice(sp1 + 1 - from, sp2 - from);
  if (url.charCodeAt(0) !== 0x2f) return null;

  const rawHeaders: string[] = [];
  let hosts = 0;
  let lengths = 0;
  let close = false;
  let start = eol + 2;
  while (start < to) {
    if (rawHeaders.length >= 2 * maxHeaders) return null;
    // A name of token characters, then the colon (no space before it; no obs-fold line).
    let colon = start;
    while (colon < to && HEAD_CHAR[bytes[colon]!] === 1) colon++;
    if (colon === start || colon >= to || bytes[colon] !== 0x3a) return null;
    // The value runs to the first CR, which must be followed by LF; every character before it must be a field
    // value's (FIELD_VALUE, checked on the value's slice: a regular expression's native loop is several times
    // faster than a byte loop here, and values such as session cookies run to hundreds of bytes).
    eol = bytes.indexOf(CR, colon + 1);
    if (eol < 0 || eol + 1 >= to || bytes[eol + 1] !== LF) return null;
    let first = colon + 1;
    let last = eol;
    while (first < last && (bytes[first] === SP || bytes[first] === HTAB)) first++;
    while (last > first && (bytes[last - 1] === SP || bytes[last - 1] === HTAB)) last--;
    const name = head.slice(start - from, colon - from);
    const value = head.slice(first - from, last - from);
    if (!FIELD_VALUE.test(value)) return null;
    rawHeaders.push(name, value);
    start = eol + 2;
    // Framing and protocol switches are node:http's business.
    switch (name.length) {
      case 4:
        if (named(name, 'host')) hosts++;
        break;
      case 6:
        if (named(name, 'expect')) return null;
        break;
      case 7:
        if (named(name, 'upgrade')) return null;
        break;
      case 10:
        if (named(name, 'connection')) {
          if (!CONNECTION_OPTIONS.test(value)) return null;
          if (/close/i.test(value)) close = true;
        }
        break;
      case 14:
        // Two copies, even both 0, are node:http's 400, and so is a tab after the digits (llhttp allows only
        // spaces there): only the plain `0`, nothing after it, is answered here; the rest is handed over.
        if (named(name, 'content-length') && (value !== '0' || last !== eol || ++lengths > 1)) return null;
        break;
      case 17:
        if (named(name, 'transfer-encoding')) return null;
        break;
    }
  }
  if (hosts !== 1) return null;
  return { method, url, rawHeaders, close };
}

const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

function hasBareLineFeed(buf: Buffer, from: number): boolean {
  for (let i = buf.indexOf(0x0a, from); i >= 0; i = buf.indexOf(0x0a, i + 1)) if (i === from || buf[i - 1] !== 0x0d) return true;
  return false;
}

/** RFC 9110 field-value as node:http's checkInvalidHeaderChar accepts it; a CR or LF would split the answer. */
function validValue(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || c > 0xff) return false;
  }
  return true;
}

let dateSecond = -1;
let dateLine = '';
/** The Date header, formatted once per second as node:http does. */
function date(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

/** `Name: value\r\n` lines and the Content-Length value; throws on an invalid header or when there is no Content-Length. */
function render(headers: readonly string[]): { block: string; contentLength: string } {
  let block = '';
  let contentLength: string | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (!isToken(name)) throw new TypeError(`invalid response header name ${JSON.stringify(name)}`);
    if (!validValue(value)) throw new TypeError(`invalid response header value for ${name}`);
    block += `${name}: ${value}\r\n`;
    if (name.length === 14 && named(name, 'content-length')) contentLength = value;
  }
  // Keep-alive framing needs a length; the prepared answers carry one, and the front refuses others.
  if (contentLength === undefined) throw new TypeError('a response without Content-Length');
  return { block, contentLength };
}

function statusLine(status: number): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
}

/**
 * An answer rendered and checked once: status, headers and body. The front writes it as one string that it
 * keeps per second (the Date line) and per Connection line, so a prepared answer costs the front no
 * rendering, no checking and no string building; node:http gets `status`, `headers` and `body` as usual.
 */
export class PreparedAnswer {
  /** Status line and header lines, without Date and Connection. */
  private readonly head: string;
  /** The blank line and the body. */
  private readonly tail: string;
  private date = '';
  private keepAliveLine = '';
  private keepAliveText = '';
  private closeText = '';

  constructor(
    readonly status: number,
    readonly headers: readonly string[],
    readonly body: Buffer | null = null,
  ) {
    const { block, contentLength } = render(headers);
    if (contentLength !== String(body?.length ?? 0)) throw new TypeError(`Content-Length ${contentLength} for a body of ${body?.length ?? 0} bytes`);
    this.head = `${statusLine(status)}${block}`;
    this.tail = `\r\n${body === null ? '' : body.toString('latin1')}`;
  }

  /** The whole answer as written on a connection; `keepAliveLine` is the front's (it carries the timeout). */
  text(keepAlive: boolean, keepAliveLine: string): string {
    const d = date();
    if (d !== this.date || keepAliveLine !== this.keepAliveLine) {
      this.date = d;
      this.keepAliveLine = keepAliveLine;
      this.keepAliveText = '';
      this.closeText = '';
    }
    if (keepAlive) return (this.keepAliveText ||= `${this.head}${d}${keepAliveLine}${this.tail}`);
    return (this.closeText ||= `${this.head}${d}Connection: close\r\n${this.tail}`);
  }
}

/** Writes a prepared answer: the front's cached text, or node:http's writeHead and end. */
export function sendAnswer(res: HeadResponse, answer: PreparedAnswer): void {
  if (res instanceof FrontResponse) {
    res.sendPrepared(answer);
    return;
  }
  res.writeHead(answer.status, answer.headers as string[]);
  res.end(answer.body ?? undefined);
}

class FrontResponse implements HeadResponse {
  headersSent = false;
  private status = 200;
  private block = '';

  constructor(
    private readonly conn: Connection,
    public shouldKeepAlive: boolean,
  ) {}

  writeHead(status: number, headers: string[]): this {
    if (this.headersSent) throw new Error('writeHead called twice');
    this.block = render(headers).block;
    this.status = status;
    this.headersSent = true;
    return this;
  }

  end(body?: Buffer): this {
    if (!this.headersSent) this.writeHead(200, ['Content-Length', String(body?.length ?? 0)]);
    if (this.conn.draining) this.shouldKeepAlive = false;
    let out = `${statusLine(this.status)}${this.block}${date()}`;
    out += this.shouldKeepAlive ? this.conn.keepAliveLine : 'Connection: close\r\n';
    out += '\r\n';
    if (body !== undefined && body.length > 0) out += body.toString('latin1');
    this.conn.send(out, !this.shouldKeepAlive);
    return this;
  }

  sendPrepared(answer: PreparedAnswer): void {
    if (this.headersSent) throw new Error('an answer was already sent');
    this.headersSent = true;
    // Shutdown began while this answer was in flight: it is the connection's last.
    if (this.conn.draining) this.shouldKeepAlive = false;
    this.conn.send(answer.text(this.shouldKeepAlive, this.conn.keepAliveLine), !this.shouldKeepAlive);
  }

  destroy(): this {
    this.conn.socket.destroy();
    return this;
  }
}

class Connection {
  private pending: Buffer | null = null;
  private pendingSince = 0;
  private closing = false;
  private waiting = false;
  /**
   * An answer is still to come (the handler verifies a JWT, say): HTTP/1.1 answers leave in request order, so
   * the requests behind it wait, unread, until it is sent.
   */
  private awaiting = false;
  /** The client finished sending while an answer was in flight: its requests still queued are answered first. */
  private endedWhileAwaiting = false;
  private readonly onData = (chunk: Buffer) => this.receive(chunk);
  private readonly onDrain = () => this.resume();
  private readonly onEnd = () => this.ended();
  private readonly onTimeout = () => this.socket.destroy();
  private readonly onError = () => this.socket.destroy();
  private readonly onClose = () => this.front.forget(this);

  constructor(
    private readonly front: FrontImpl,
    readonly socket: Socket,
    readonly keepAliveLine: string,
  ) {
    socket.setTimeout(front.keepAliveTimeoutMs);
    socket.on('data', this.onData);
    socket.on('drain', this.onDrain);
    socket.on('end', this.onEnd);
    socket.on('timeout', this.onTimeout);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
  }

  get idle(): boolean {
    return this.pending === null && !this.awaiting;
  }

  /** svc-auth is shutting down: the answer in flight is the connection's last. */
  get draining(): boolean {
    return this.front.draining;
  }

  /** Closes after the current answer (if a request is half received) or now. */
  drain(): void {
    if (this.idle) this.socket.destroy();
  }

  send(out: string, close: boolean): void {
    this.socket.write(out, 'latin1');
    if (close) {
      this.closing = true;
      this.socket.end();
    }
    if (!this.awaiting) return;
    // The answer everything behind it waited for: read on.
    this.awaiting = false;
    if (this.closing) return;
    const rest = this.pending;
    this.pending = null;
    this.socket.resume();
    if (rest !== null) this.process(rest);
    if (this.endedWhileAwaiting && !this.awaiting) {
      this.endedWhileAwaiting = false;
      this.ended();
    }
  }

  /**
   * The client finished sending. Half a head can never complete now: node:http answers that with a bare
   * 400 and closes (its parser's finish() fails), and so does the front; otherwise close our side too.
   */
  private ended(): void {
    if (this.awaiting) {
      this.endedWhileAwaiting = true;
      return;
    }
    if (this.pending !== null && !this.closing) {
      this.closing = true;
      this.socket.end(BAD_REQUEST);
      return;
    }
    this.socket.end();
  }

  private receive(chunk: Buffer): void {
    if (this.closing) return;
    if (this.awaiting) {
      // Kept in arrival order for when the answer in flight is out (the socket is paused; this is what was buffered).
      this.pending = this.pending === null ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk]);
      return;
    }
    if (this.pending !== null && Date.now() - this.pendingSince > this.front.headersTimeoutMs) {
      this.socket.destroy();
      return;
    }
    this.process(this.pending === null ? chunk : Buffer.concat([this.pending, chunk]));
  }

  private process(buf: Buffer): void {
    let at = 0;
    while (at < buf.length) {
      const end = buf.indexOf(CRLF_CRLF, at);
      if (end < 0) break;
      if (end - at > this.front.maxHeadBytes && this.refuseTooLarge(buf, at)) return;
      const head = end - at > this.front.maxHeadBytes ? null : parseHead(buf, this.front.maxHeaders, at, end + 2);
      const res = head === null ? null : new FrontResponse(this, !head.close && !this.front.draining);
      if (head === null || !this.front.handle(head, res!)) {
        this.handOver(buf.subarray(at));
        return;
      }
      at = end + 4;
      if (this.closing) return;
      if (!res!.headersSent) {
        // Answered later: stop reading until then (see `awaiting`).
        this.awaiting = true;
        this.socket.pause();
        this.pending = at < buf.length ? Buffer.from(buf.subarray(at)) : null;
        this.pendingSince = Date.now();
        return;
      }
      if (this.socket.writableNeedDrain && at < buf.length) {
        // The client is not reading its answers: stop reading its requests until it does.
        this.keep(buf.subarray(at), true);
        this.waiting = true;
        this.socket.pause();
        return;
      }
    }
    if (at === buf.length) {
      this.pending = null;
      return;
    }
    // A LF without its CR can never be part of a head the front answers; node:http may read it another way
    // (as a line end, or as an error), so it decides now rather than when more bytes arrive.
    if (buf.length - at > this.front.maxHeadBytes && this.refuseTooLarge(buf, at)) return;
    if (buf.length - at > this.front.maxHeadBytes || hasBareLineFeed(buf, at)) {
      this.handOver(buf.subarray(at));
      return;
    }
    // Once a head was answered from this buffer, the rest is the start of the next one: its time starts now.
    this.keep(buf.subarray(at), at > 0);
  }

  /** Answers an oversized head with the front's `tooLarge` answer, if it has one for its target, and closes. */
  private refuseTooLarge(buf: Buffer, at: number): boolean {
    const eol = buf.indexOf(CRLF_CRLF.subarray(0, 2), at);
    const line = buf.toString('latin1', at, eol < 0 ? Math.min(buf.length, at + 2048) : eol).split(' ');
    const answer = line.length === 3 ? this.front.tooLarge?.(line[1]!) : undefined;
    if (answer === undefined) return false;
    this.pending = null;
    this.send(answer.text(false, this.keepAliveLine), true);
    return true;
  }

  /** Keeps an unanswered rest; `fresh`: it starts a new head (the head timeout counts from now). */
  private keep(rest: Buffer, fresh: boolean): void {
    if (this.pending === null || fresh) this.pendingSince = Date.now();
    // A copy: `rest` may be a view into a pooled chunk.
    this.pending = Buffer.from(rest);
  }

  private resume(): void {
    if (!this.waiting) return;
    this.waiting = false;
    const buf = this.pending!;
    this.pending = null;
    this.socket.resume();
    this.process(buf);
  }

  /** Gives the connection, and `rest` (bytes received but not answered), to node:http for good. */
  private handOver(rest: Buffer): void {
    const s = this.socket;
    s.pause();
    s.off('data', this.onData);
    s.off('drain', this.onDrain);
    s.off('end', this.onEnd);
    s.off('timeout', this.onTimeout);
    s.off('error', this.onError);
    s.setTimeout(0);
    this.pending = null;
    this.front.forget(this);
    this.front.handedOver++;
    if (rest.length > 0) s.unshift(Buffer.from(rest));
    this.front.inner(s);
    s.resume();
  }
}

class FrontImpl implements Front {
  readonly connections = new Set<Connection>();
  handedOver = 0;
  draining = false;
  readonly maxHeadBytes: number;
  readonly maxHeaders: number;
  readonly tooLarge: FrontOptions['tooLarge'];
  private readonly keepAliveLine: string;

  constructor(
    private readonly server: Server,
    private readonly listeners: ((socket: Socket) => void)[],
    readonly handle: FrontHandler,
    options: FrontOptions,
  ) {
    this.maxHeadBytes = options.maxHeadBytes ?? maxHeaderSize;
    this.maxHeaders = options.maxHeaders ?? 100;
    this.tooLarge = options.tooLarge;
    this.keepAliveLine = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(server.keepAliveTimeout / 1000)}\r\n`;
  }

  get keepAliveTimeoutMs(): number {
    return this.server.keepAliveTimeout;
  }

  get headersTimeoutMs(): number {
    return this.server.headersTimeout;
  }

  get size(): number {
    return this.connections.size;
  }

  accept(socket: Socket): void {
    this.connections.add(new Connection(this, socket, this.keepAliveLine));
  }

  /** node:http's own connection handling, as it was before the front took the event over. */
  inner(socket: Socket): void {
    for (const l of this.listeners) l.call(this.server, socket);
  }

  forget(c: Connection): void {
    this.connections.delete(c);
  }

  closeIdle(): void {
    this.draining = true;
    for (const c of this.connections) c.drain();
  }

  closeAll(): void {
    for (const c of this.connections) c.socket.destroy();
  }
}

/**
 * Puts the front before `server`'s own connection handling (node:http's 'connection' listener, which it
 * keeps and calls for every hand-over). Call before `listen`. Timeouts come from the server's
 * keepAliveTimeout and headersTimeout, read when a connection arrives.
 */
export function installFront(server: Server, handle: FrontHandler, options: FrontOptions = {}): Front {
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  // node:http registers its connection listener in its constructor; without it there is nothing to hand over to.
  if (listeners.length === 0) throw new Error('installFront: the server has no connection listener to hand connections to');
  server.removeAllListeners('connection');
  const front = new FrontImpl(server, listeners, handle, options);
  server.on('connection', (socket: Socket) => front.accept(socket));
  return front;
}
