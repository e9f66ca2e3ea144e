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
import { maxHeaderSize, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { parseHead, type FrontHandler, type HeadResponse } from './head.js';
import { date, PreparedAnswer, render, statusLine } from './prepared-answer.js';

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

const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

function hasBareLineFeed(buf: Buffer, from: number): boolean {
  for (let i = buf.indexOf(0x0a, from); i >= 0; i = buf.indexOf(0x0a, i + 1)) if (i === from || buf[i - 1] !== 0x0d) return true;
  return false;
}


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
