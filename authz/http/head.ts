/**
 * A request head as the auth endpoints read it, and the strict parser the HTTP front (./http-front.ts) reads one with:
 * HTTP/1.1, CRLF line ends, an origin-form target of visible ASCII, header values of visible ASCII, exactly one Host,
 * no body. Hand-written and on bytes because it runs on every auth request; on any doubt it returns null and the
 * connection goes to node:http, whose llhttp parses it (a differential test holds the two equal).
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

/**
 * node:http keeps at most this many header lines of a request and silently drops the rest (its
 * maxHeadersCount default); server.ts sets it explicitly, and the auth endpoints refuse a request that
 * reaches it, so a repeated contract header cannot hide past the limit.
 */
export const MAX_HEADERS_COUNT = 2000;
const HTTP_1_1 = 'HTTP/1.1';

/** RFC 9110 token characters, as a table: response header names are checked against it. */
export const TCHAR = new Uint8Array(256);
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
export interface Head extends HeadRequest {
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
