// A browser sign-in driven with plain HTTP, no browser: a relying party's sign-in URL is followed redirect by
// redirect with a cookie jar, and the login page of ./oidc-provider.ts is answered with the user's credentials, as
// a person would fill in its form. What is left in the jar for the relying party's origin is its session cookie.
// Used where a valid session cookie is all that is needed (bench:auth measures oauth2-proxy's and svc-auth's
// session decisions); the suites that test the sign-in itself drive a real browser.

/** One cookie as a browser keeps it (host-only: every server here is 127.0.0.1, and cookies ignore ports). */
interface Stored {
  readonly name: string;
  readonly value: string;
  readonly path: string;
  /** The origin whose answer set it. */
  readonly origin: string;
  /** Epoch ms; Infinity for a session cookie. */
  readonly expires: number;
}

/** The default-path of RFC 6265 5.1.4: the request path up to, not including, its last '/'. */
function defaultPath(url: URL): string {
  const p = url.pathname;
  const last = p.lastIndexOf('/');
  return last <= 0 ? '/' : p.slice(0, last);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}

/** Expiry from Max-Age (which wins) or Expires; Infinity for neither. */
function expiryOf(attributes: ReadonlyMap<string, string>, now: number): number {
  const maxAge = attributes.get('max-age');
  if (maxAge !== undefined && /^-?\d+$/.test(maxAge)) return now + Number(maxAge) * 1000;
  const expires = attributes.get('expires');
  const at = expires === undefined ? NaN : Date.parse(expires);
  return Number.isNaN(at) ? Infinity : at;
}

/** The cookies a browser would keep across the sign-in: name and path, expiry (deletion included), the origin that set each. */
export class CookieJar {
  private readonly cookies = new Map<string, Stored>();

  /** Takes every Set-Cookie of `res`, the answer to a request for `url`. */
  take(url: URL, res: Response): void {
    for (const line of res.headers.getSetCookie()) this.set(url, line);
  }

  private set(url: URL, line: string): void {
    const [pair = '', ...rest] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) return;
    const attributes = new Map(rest.map((a) => {
      const i = a.indexOf('=');
      return i < 0 ? [a.trim().toLowerCase(), ''] as const : [a.slice(0, i).trim().toLowerCase(), a.slice(i + 1).trim()] as const;
    }));
    const given = attributes.get('path');
    const path = given?.startsWith('/') ? given : defaultPath(url);
    const name = pair.slice(0, eq).trim();
    const now = Date.now();
    const expires = expiryOf(attributes, now);
    const key = `${name}\0${path}`;
    if (expires <= now) this.cookies.delete(key);
    else this.cookies.set(key, { name, value: pair.slice(eq + 1).trim(), path, origin: url.origin, expires });
  }

  private live(): Stored[] {
    const now = Date.now();
    return [...this.cookies.values()].filter((c) => c.expires > now);
  }

  /** The Cookie header a browser sends with a request for `url`. */
  header(url: URL): string {
    return this.live().filter((c) => pathMatches(url.pathname, c.path)).map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** A Cookie header of the cookies `origin` set that are still alive (after a sign-in: its session cookie). */
  setBy(origin: string): string {
    return this.live().filter((c) => c.origin === origin).map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** Names of the cookies `origin` set that are still alive. */
  namesSetBy(origin: string): string[] {
    return this.live().filter((c) => c.origin === origin).map((c) => c.name);
  }
}

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** The login page of ./oidc-provider.ts: a form at /interaction/<uid> whose POST goes to /interaction/<uid>/login. */
const LOGIN_PAGE = /^\/interaction\/[^/]+$/;

/**
 * Follows the sign-in that starts at `start` (a relying party's sign-in URL) until the next URL is one `landed`
 * accepts (not fetched: where the relying party sends the signed-in browser back to), filling in the provider's
 * login form on the way. Throws, naming the status and path (never a query, which carries codes), when the flow
 * stops anywhere else.
 */
export async function signInOverHttp(start: string, credentials: Credentials, landed: (url: URL) => boolean, jar = new CookieJar()): Promise<{ jar: CookieJar; landing: URL }> {
  let url = new URL(start);
  let form: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (landed(url)) return { jar, landing: url };
    const res = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: jar.header(url), accept: 'text/html', ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form,
    });
    jar.take(url, res);
    const page = await res.text();
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url);
      form = undefined;
    } else if (res.status === 200 && !form && LOGIN_PAGE.test(url.pathname) && page.includes('<form')) {
      url = new URL(`${url.pathname}/login`, url);
      form = new URLSearchParams({ user: credentials.user, password: credentials.password });
    } else {
      throw new Error(`the sign-in stopped at ${form ? 'POST' : 'GET'} ${url.origin}${url.pathname}: ${res.status}${location ? '' : ' without a redirect'}`);
    }
  }
  throw new Error(`the sign-in from ${new URL(start).pathname} took more than 20 hops`);
}
