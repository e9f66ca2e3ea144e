/**
 * What the auth endpoints read of a browser's request, and only when it matters: a request to a closed scope that
 * carries no explicit credential (docs/access-rules.md "Browser sessions"). One pass over the raw headers: the
 * cookies, the navigation signals (Sec-Fetch-Mode, Accept), the same-origin evidence (Sec-Fetch-Site, Origin), and
 * where the original request was made (X-Original-URL, X-Forwarded-Host and -Proto, Host). A header that may be
 * sent once and is sent twice counts as absent (never as evidence); Cookie headers are joined, as node:http joins
 * them.
 */
import type { BrowserHeaders } from '../../core/index.js';
import { named } from './head.js';

export interface BrowserRequest extends BrowserHeaders {
  readonly cookie: string | undefined;
  readonly host: string | undefined;
  readonly forwardedHost: string | undefined;
  readonly forwardedProto: string | undefined;
  readonly originalUrl: string | undefined;
}

/** A header seen twice: absent. */
const TWICE = null;

/**
 * The slot of a single-valued header (0 accept, 1 sec-fetch-mode, 2 sec-fetch-site, 3 origin, 4 host, 5 x-forwarded-host,
 * 6 x-forwarded-proto, 7 x-original-url), or -1: a switch on the length, then a comparison or two.
 */
function slotOf(name: string): number {
  switch (name.length) {
    case 4:
      return named(name, 'host') ? 4 : -1;
    case 6:
      return named(name, 'accept') ? 0 : named(name, 'origin') ? 3 : -1;
    case 14:
      return named(name, 'sec-fetch-mode') ? 1 : named(name, 'sec-fetch-site') ? 2 : named(name, 'x-original-url') ? 7 : -1;
    case 16:
      return named(name, 'x-forwarded-host') ? 5 : -1;
    case 17:
      return named(name, 'x-forwarded-proto') ? 6 : -1;
    default:
      return -1;
  }
}

/**
 * The request's Cookie headers joined as node:http joins them (`; `), or undefined: all the session needs, read
 * alone because every request to a closed scope without an explicit credential needs it, and the rest
 * (readBrowserRequest) only when the answer does.
 */
export function cookieHeader(raw: readonly string[]): string | undefined {
  let cookie: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 6 && named(name, 'cookie')) cookie = cookie === undefined ? raw[i + 1]! : `${cookie}; ${raw[i + 1]!}`;
  }
  return cookie;
}

/** The browser headers of a request (names and values alternating, as node:http's rawHeaders). */
export function readBrowserRequest(raw: readonly string[]): BrowserRequest {
  const values: (string | null | undefined)[] = [undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined];
  const cookie = cookieHeader(raw);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const slot = slotOf(name);
    // A second copy makes the header absent: two Origins, say, are no evidence of either.
    if (slot >= 0) values[slot] = values[slot] === undefined ? value : TWICE;
  }
  const get = (slot: number): string | undefined => {
    const v = values[slot];
    return v === null || v === undefined || v.length === 0 ? undefined : v;
  };
  return {
    cookie,
    accept: get(0),
    secFetchMode: get(1),
    secFetchSite: get(2),
    origin: get(3),
    host: get(4),
    forwardedHost: get(5),
    forwardedProto: get(6),
    originalUrl: get(7),
  };
}
