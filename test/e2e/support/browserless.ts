/**
 * A browser without a browser, for the sign-in suites: plain HTTP requests with a cookie jar and the headers a
 * browser's top-level navigation sends (Accept, Sec-Fetch-Mode/-Site/-Dest), following redirects across origins
 * as a browser does, and submitting the test provider's login form (./oidc-provider.ts) when it appears. The real
 * browser (Chromium) drives Keycloak in the other suites; this one is fast enough to run many cases.
 *
 * Cookies are kept per host name, whatever the port, as browsers keep them; Max-Age=0 removes one, and one whose
 * name and value exceed 4,096 bytes is ignored, as browsers ignore it. Paths and Secure are not modelled (everything
 * here is http on 127.0.0.1).
 */

import { request as httpRequest } from 'node:http';

/**
 * One HTTP request as a browser would send it, never following a redirect. Node's fetch will not do: it replaces any
 * Sec-Fetch-Mode with `cors`, and that is exactly the header a navigation is recognized by.
 */
export function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: { ...(init.body !== undefined ? { 'content-length': String(Buffer.byteLength(init.body)) } : {}), ...init.headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const status = res.statusCode ?? 0;
        const body = Buffer.concat(chunks);
        resolve(new Response(status === 204 || status === 304 || body.length === 0 ? null : new Uint8Array(body), { status, headers }));
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const NAVIGATION_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

export interface Hop {
  readonly status: number;
  readonly url: string;
  readonly location: string | null;
  readonly headers: Headers;
}

export interface Landed {
  readonly status: number;
  readonly url: string;
  readonly body: string;
  readonly headers: Headers;
  /** Every answer on the way, redirects included. */
  readonly hops: readonly Hop[];
}

export class CookieJar {
  private readonly byHost = new Map<string, Map<string, { value: string; origin: string }>>();

  /** Takes the Set-Cookie headers of an answer to `url`. */
  take(url: string, res: Response): void {
    const { hostname: host, origin } = new URL(url);
    let jar = this.byHost.get(host);
    if (jar === undefined) this.byHost.set(host, (jar = new Map()));
    for (const c of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      // Browsers ignore a cookie whose name and value exceed 4,096 bytes, without a word (RFC 6265bis).
      if (Buffer.byteLength(name) + Buffer.byteLength(value) > 4096) continue;
      const cleared = attrs.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a)) || attrs.some((a) => /^\s*expires\s*=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now());
      if (cleared) jar.delete(name);
      else jar.set(name, { value, origin });
    }
  }

  /** The Cookie header for `url` (undefined when there is none). */
  header(url: string): string | undefined {
    const jar = this.byHost.get(new URL(url).hostname);
    if (jar === undefined || jar.size === 0) return undefined;
    return [...jar].map(([k, v]) => `${k}=${v.value}`).join('; ');
  }

  get(url: string, name: string): string | undefined {
    return this.byHost.get(new URL(url).hostname)?.get(name)?.value;
  }

  set(url: string, name: string, value: string): void {
    const { hostname: host, origin } = new URL(url);
    if (!this.byHost.has(host)) this.byHost.set(host, new Map());
    this.byHost.get(host)!.set(name, { value, origin });
  }

  delete(url: string, name: string): void {
    this.byHost.get(new URL(url).hostname)?.delete(name);
  }

  /** A Cookie header of the cookies `origin` (port included) set (after a sign-in: its session cookie). */
  setBy(origin: string): string {
    return this.namesSetBy(origin).map((n) => `${n}=${this.get(origin, n)!}`).join('; ');
  }

  /** Names of the cookies `origin` (port included) set. */
  namesSetBy(origin: string): string[] {
    return [...(this.byHost.get(new URL(origin).hostname) ?? [])].filter(([, v]) => v.origin === origin).map(([k]) => k);
  }
}

export interface NavigateOptions {
  /** Submitted on the provider's login form when it appears. */
  readonly login?: { readonly user: string; readonly password: string };
  readonly method?: string;
  readonly body?: string;
  /** Extra headers for the first request only (Origin, say). */
  readonly headers?: Record<string, string>;
  /** The page the navigation starts from (Sec-Fetch-Site): none (typed in the address bar) by default. */
  readonly from?: string;
  /** Stops before requesting a URL this accepts: the result has status 0 and that URL. */
  readonly stopBefore?: (url: string) => boolean;
}

function secFetchSite(from: string | undefined, to: string): string {
  if (from === undefined) return 'none';
  const a = new URL(from);
  const b = new URL(to);
  if (a.origin === b.origin) return 'same-origin';
  return a.hostname === b.hostname ? 'same-site' : 'cross-site';
}

/** A top-level navigation to `url`, followed to where it lands (at most 20 redirects). */
export async function navigate(jar: CookieJar, url: string, o: NavigateOptions = {}): Promise<Landed> {
  const hops: Hop[] = [];
  let at = url;
  let from = o.from;
  let method = o.method ?? 'GET';
  let body = o.body;
  let extra = o.headers ?? {};
  for (let i = 0; i < 20; i++) {
    if (i > 0 && o.stopBefore?.(at)) return { status: 0, url: at, body: '', headers: new Headers(), hops };
    const cookie = jar.header(at);
    const headers: Record<string, string> = { accept: NAVIGATION_ACCEPT, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': secFetchSite(from, at), ...(cookie ? { cookie } : {}), ...extra };
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await send(at, { method, headers, ...(body !== undefined ? { body } : {}) });
    jar.take(at, res);
    const location = res.headers.get('location');
    hops.push({ status: res.status, url: at, location, headers: res.headers });
    if (location !== null && res.status >= 300 && res.status < 400) {
      from = at;
      at = new URL(location, at).href;
      if (res.status !== 307 && res.status !== 308) {
        method = 'GET';
        body = undefined;
      }
      extra = {};
      continue;
    }
    const text = await res.text();
    if (o.login && res.status === 200 && new URL(at).pathname.startsWith('/interaction/') && text.includes('name="password"')) {
      // The provider's login form: submitted as a browser would (same-origin POST, then its redirects).
      from = at;
      at = `${at.replace(/\/$/, '')}/login`;
      method = 'POST';
      body = new URLSearchParams({ user: o.login.user, password: o.login.password }).toString();
      extra = { origin: new URL(at).origin };
      continue;
    }
    return { status: res.status, url: at, body: text, headers: res.headers, hops };
  }
  throw new Error(`more than 20 redirects from ${url}: ${hops.map((h) => `${h.status} ${h.url}`).join(' -> ')}`);
}

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/**
 * Follows the sign-in that starts at `start` (a relying party's sign-in URL) until the next URL is one `landed`
 * accepts (not fetched: where the relying party sends the signed-in browser back to), filling in the provider's
 * login form on the way; the jar then holds the relying party's session cookie (`jar.setBy(origin)`). Throws, naming
 * the status and path (never a query, which carries codes), when the flow stops anywhere else.
 */
export async function signInOverHttp(start: string, credentials: Credentials, landed: (url: URL) => boolean, jar = new CookieJar()): Promise<{ jar: CookieJar; landing: URL }> {
  const end = await navigate(jar, start, { login: credentials, stopBefore: (u) => landed(new URL(u)) });
  if (end.status === 0) return { jar, landing: new URL(end.url) };
  const at = new URL(end.url);
  throw new Error(`the sign-in stopped at ${at.origin}${at.pathname}: ${end.status}`);
}
