// oauth2-proxy (built from its Go module into the tool cache: ensureOauth2Proxy) as the OpenID relying party of
// ./oidc-provider.ts, the way a site without svc-auth's sign-in would put it in front of its data: provider oidc,
// the session in its encrypted cookie (no Redis), /oauth2/auth for the proxy's auth subrequest. A user signs in with
// plain HTTP (./browserless.ts); the cookie that leaves is a real session cookie of oauth2-proxy.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureOauth2Proxy } from '../../controlplane/assets.js';
import { Supervised } from '../../support/process.js';
import { signInOverHttp, type Credentials } from './browserless.js';

/** Where oauth2-proxy sends the signed-in browser (its `rd`); never fetched by the sign-in. */
const LANDING = '/signed-in';

/** The redirect URI to register at the provider for an oauth2-proxy on `port`. */
export function oauth2ProxyCallback(port: number): string {
  return `http://127.0.0.1:${port}/oauth2/callback`;
}

export interface Oauth2ProxyOptions {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly port: number;
  /** A directory of the caller's for the client secret file. */
  readonly dir: string;
  /** Only members of this group are let in (`--allowed-group`, checked at sign-in and on every /oauth2/auth). */
  readonly allowedGroup?: string;
  /** Pinned to this CPU with `taskset -c`, and GOMAXPROCS=1 (the bench). */
  readonly cpu?: string;
  /** Its output: in memory (default) or dropped but stderr (the bench). */
  readonly output?: 'capture' | 'stderr';
}

function args(o: Oauth2ProxyOptions, secretFile: string): string[] {
  return [
    `--http-address=127.0.0.1:${o.port}`,
    '--provider=oidc', `--oidc-issuer-url=${o.issuer}`, `--client-id=${o.clientId}`, `--client-secret-file=${secretFile}`,
    `--redirect-url=${oauth2ProxyCallback(o.port)}`, '--scope=openid email groups', '--code-challenge-method=S256',
    '--email-domain=*', ...(o.allowedGroup ? [`--allowed-group=${o.allowedGroup}`] : []),
    // Plain http on loopback; the cookie lives as long as the bench may take.
    '--cookie-secure=false', '--cookie-expire=8h',
    '--upstream=static://200', '--skip-provider-button', '--set-xauthrequest',
    // No line per request: what a busy auth endpoint is run with, and the faster choice for the peer.
    '--request-logging=false',
  ];
}

/** A running oauth2-proxy; `signIn` returns the Cookie header of a valid session. */
export class Oauth2Proxy {
  private constructor(readonly process: Supervised, readonly base: string, readonly binary: string) {}

  static async start(o: Oauth2ProxyOptions): Promise<Oauth2Proxy> {
    const binary = await ensureOauth2Proxy();
    const secretFile = join(o.dir, 'oauth2-proxy-client-secret');
    writeFileSync(secretFile, o.clientSecret, { mode: 0o600 });
    // The cookie secret through the environment, never on a command line: 32 bytes, AES-256.
    const env: NodeJS.ProcessEnv = { ...process.env, OAUTH2_PROXY_COOKIE_SECRET: randomBytes(16).toString('hex'), ...(o.cpu === undefined ? {} : { GOMAXPROCS: '1' }) };
    const [cmd, argv] = o.cpu === undefined ? [binary, args(o, secretFile)] : ['taskset', ['-c', o.cpu, binary, ...args(o, secretFile)]];
    const p = await Supervised.start('oauth2-proxy', cmd, argv, { env, ports: [o.port], output: o.output ?? 'capture' });
    return new Oauth2Proxy(p, `http://127.0.0.1:${o.port}`, binary);
  }

  /** Signs `credentials` in through /oauth2/start and the provider's login form; the Cookie header of the session it set. */
  async signIn(credentials: Credentials): Promise<string> {
    const start = `${this.base}/oauth2/start?${new URLSearchParams({ rd: LANDING })}`;
    const { jar } = await signInOverHttp(start, credentials, (u) => u.origin === this.base && u.pathname === LANDING);
    const cookie = jar.setBy(this.base);
    if (!/(^|; )_oauth2_proxy(_\d+)?=/.test(cookie)) throw new Error(`oauth2-proxy set no session cookie (it left: ${jar.namesSetBy(this.base).join(', ') || 'none'})`);
    return cookie;
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  stop(): Promise<void> {
    return this.process.stop();
  }
}
