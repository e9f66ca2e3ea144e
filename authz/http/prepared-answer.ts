/**
 * Answers rendered and checked once (status, headers, body), and the Date line kept per second: what the HTTP front
 * (./http-front.ts) writes without rendering anything per request, and node:http gets as status, headers and body.
 */
import { STATUS_CODES } from 'node:http';
import { isToken, named } from './head.js';

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
export function date(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

/** `Name: value\r\n` lines and the Content-Length value; throws on an invalid header or when there is no Content-Length. */
export function render(headers: readonly string[]): { block: string; contentLength: string } {
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

export function statusLine(status: number): string {
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

