/**
 * What the auth endpoints read of a browser's request, and only when it matters: a request to a closed scope that
 * carries no explicit credential (docs/access-rules.md "Browser sessions"). One pass over the raw headers: the
 * cookies, the navigation signals (Sec-Fetch-Mode, Accept), the same-origin evidence (Sec-Fetch-Site, Origin), and
 * where the original request was made (X-Original-URL, X-Forwarded-Host and -Proto, Host). A header that may be
 * sent once and is sent twice counts as absent (never as evidence); Cookie headers are joined, as node:http joins
 * them.
 */
import type { BrowserHeaders } from '../../core/index.js';
import { named } from '../http/http-front.js';

export interface BrowserRequest extends BrowserHeaders {
  readonly cookie: string | undefined;
  readonly host: string | undefined;
  readonly forwardedHost: string | undefined;
  readonly forwardedProto: string | undefined;
  readonly originalUrl: string | undefined;
}

const NAMES = ['accept', 'sec-fetch-mode', 'sec-fetch-site', 'origin', 'host', 'x-forwarded-host', 'x-forwarded-proto', 'x-original-url'] as const;
type Single = (typeof NAMES)[number];

/** The browser headers of a request (names and values alternating, as node:http's rawHeaders). */
export function readBrowserRequest(raw: readonly string[]): BrowserRequest {
  const single = new Map<Single, string | null>();
  let cookie: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (named(name, 'cookie')) {
      cookie = cookie === undefined ? value : `${cookie}; ${value}`;
      continue;
    }
    const which = NAMES.find((n) => named(name, n));
    // A second copy makes the header absent (null): two Origins, say, are no evidence of either.
    if (which !== undefined) single.set(which, single.has(which) ? null : value);
  }
  const get = (n: Single): string | undefined => {
    const v = single.get(n);
    return v === null || v === undefined || v.length === 0 ? undefined : v;
  };
  return {
    cookie,
    accept: get('accept'),
    secFetchMode: get('sec-fetch-mode'),
    secFetchSite: get('sec-fetch-site'),
    origin: get('origin'),
    host: get('host'),
    forwardedHost: get('x-forwarded-host'),
    forwardedProto: get('x-forwarded-proto'),
    originalUrl: get('x-original-url'),
  };
}
