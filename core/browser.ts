/**
 * What svc-auth reads of a browser's request (docs/access-rules.md "Browser sessions"), as pure functions: whether
 * it is a top-level navigation (sent to sign in rather than refused with a challenge), whether it carries evidence
 * of coming from the data service's own pages (CSRF), a cookie's value, and where a browser may be sent back to
 * after signing in (never another site: no open redirect).
 */

/** Safe methods: the only ones a session grants without same-origin evidence. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The request headers these rules read (undefined: absent, or sent twice where a repeat is not allowed). */
export interface BrowserHeaders {
  readonly accept?: string | undefined;
  readonly secFetchMode?: string | undefined;
  readonly secFetchSite?: string | undefined;
  readonly origin?: string | undefined;
}

/**
 * Whether `Accept` prefers HTML: `text/html` is listed, and no range listed before it has a higher or equal
 * quality, nor one after it a higher one (`*` ranges aside). A browser's navigation (`text/html,...,*\/*;q=0.8`)
 * does; `*\/*`, `application/json` and `application/json, text/html` do not.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined || accept.length > 1024) return false;
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    return { range, q: quality(params) };
  });
  const at = ranges.findIndex((r) => r.range === 'text/html');
  const html = ranges[at];
  if (html === undefined || html.q <= 0) return false;
  return ranges.every((r, i) => r.range === 'text/html' || r.range === '' || r.range.endsWith('/*') || r.q < html.q || (r.q === html.q && i > at));
}

function quality(params: readonly string[]): number {
  for (const p of params) {
    if (!p.startsWith('q=')) continue;
    const q = Number(p.slice(2));
    return Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0;
  }
  return 1;
}

/**
 * A top-level navigation: `Sec-Fetch-Mode: navigate` where the browser sends Fetch Metadata (every current one);
 * without it, an `Accept` that prefers HTML. A `fetch()` (mode `cors`, `no-cors`, `same-origin`) never is.
 */
export function isNavigation(h: BrowserHeaders): boolean {
  if (h.secFetchMode !== undefined) return h.secFetchMode.toLowerCase() === 'navigate';
  return prefersHtml(h.accept);
}

export function isSafeMethod(method: string | null): boolean {
  return method !== null && SAFE_METHODS.has(method);
}

/**
 * Evidence that a request comes from the data service's own pages (the CSRF rule for sessions): `Sec-Fetch-Site:
 * same-origin`, or an `Origin` equal to an external URL's origin. A cross-site form POST has neither.
 */
export function sameOriginEvidence(h: BrowserHeaders, externalOrigins: readonly string[]): boolean {
  if (h.secFetchSite !== undefined && h.secFetchSite.toLowerCase() === 'same-origin') return true;
  if (h.origin === undefined) return false;
  const origin = originOf(h.origin);
  return origin !== undefined && externalOrigins.includes(origin);
}

/** The first non-empty value of cookie `name` in a Cookie header (pairs split on `;`), or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined || !header.includes(name)) return undefined;
  // The pairs between semicolons, walked in place: it runs on every request with a session, and a split would
  // allocate an array of every cookie of the request (analytics and all) to read one.
  for (let start = 0; start <= header.length; ) {
    let end = header.indexOf(';', start);
    if (end < 0) end = header.length;
    const eq = header.indexOf('=', start);
    if (eq >= 0 && eq < end && header.slice(start, eq).trim() === name) {
      const value = header.slice(eq + 1, end).trim();
      if (value.length > 0) return value;
    }
    start = end + 1;
  }
  return undefined;
}

/** A URL's origin (`https://host[:port]`, lower case, default port dropped), or undefined when it is not an http(s) URL. */
export function originOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** svc-auth's own sign-in steps: never where a sign-in lands (it would start over). */
const SIGN_IN_PATHS = ['/authz/sign-in', '/authz/callback', '/authz/sign-out'];

/** One pass of percent-decoding, of ASCII characters only (the steps' names are ASCII; the rest stays encoded). */
function decodeAscii(s: string): string {
  return s.replace(/%([0-7][0-9A-Fa-f])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * Whether a path (as the URL parser leaves it: dot segments resolved, the rest percent-encoded) reaches one of
 * svc-auth's own steps in some spelling a server would route there: Express matches routes whatever their case
 * (and with a trailing slash), and the proxies in front decode percent-encoded characters and merge slashes (nginx
 * to choose its location, Traefik and Envoy when they normalize the path they forward). So the path is compared
 * decoded (up to three passes: no server decodes more than once, the rest is margin), in lower case, and with each
 * run of slashes as one. Refusing a spelling no server routes there costs nothing: that sign-in lands on `/`.
 */
function isOwnStep(pathname: string): boolean {
  let p = pathname;
  for (let pass = 0; pass < 3 && p.includes('%'); pass++) p = decodeAscii(p);
  p = p.toLowerCase().replace(/\/{2,}/g, '/');
  return SIGN_IN_PATHS.some((step) => p === step || p.startsWith(`${step}/`));
}

/**
 * Where a sign-in lands (`rd`): an absolute URL on one of the external origins, or a path (taken on `base`, the
 * origin the sign-in was asked on); anything else (another host, another scheme, `//host`, a backslash trick,
 * svc-auth's own sign-in steps in any spelling that reaches them) lands on `base`'s `/`.
 */
export function safeRedirect(rd: string | undefined, externalOrigins: readonly string[], base: string): string {
  const home = `${base}/`;
  if (rd === undefined || rd.length === 0 || rd.length > 8192 || hasControl(rd)) return home;
  let url: URL;
  try {
    url = rd.startsWith('/') ? new URL(rd, base) : new URL(rd);
  } catch {
    return home;
  }
  if (!externalOrigins.includes(url.origin) || (rd.startsWith('/') && url.origin !== base)) return home;
  if (isOwnStep(url.pathname)) return home;
  url.hash = '';
  return url.href;
}

/**
 * The external origin a request was made on, from the host (and scheme, when known) the proxy reports: the
 * external URL with that host, or undefined when none has it.
 */
export function externalOriginFor(host: string | undefined, proto: string | undefined, externalOrigins: readonly string[]): string | undefined {
  if (host === undefined) return undefined;
  const h = host.trim().toLowerCase();
  const scheme = proto?.split(',')[0]!.trim().toLowerCase();
  return externalOrigins.find((o) => {
    const u = new URL(o);
    return (u.host === h || (u.port === '' && `${u.hostname}:${u.protocol === 'https:' ? 443 : 80}` === h)) && (scheme === undefined || u.protocol === `${scheme}:`);
  });
}

/**
 * Evidence that a request comes from another site's page (docs/access-rules.md "Networks", CSRF): `Sec-Fetch-Site` other
 * than `same-origin` or `none` (`cross-site`, and `same-site`, a sibling host that may not be ours), or, from a browser
 * that sends no Fetch Metadata, an `Origin` (`null` included) that is no external URL's origin. Global Services,
 * gateways and scripts send neither header, so refusing what carries this evidence costs them nothing.
 */
export function crossSiteEvidence(h: BrowserHeaders, externalOrigins: readonly string[]): boolean {
  if (h.secFetchSite !== undefined) {
    const site = h.secFetchSite.toLowerCase();
    return site !== 'same-origin' && site !== 'none';
  }
  if (h.origin === undefined) return false;
  const origin = originOf(h.origin);
  return origin === undefined || !externalOrigins.includes(origin);
}
