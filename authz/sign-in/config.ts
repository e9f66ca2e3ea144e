/**
 * Browser sign-in's configuration (svc-auth's `--sign-in-*`, `--external-url` and `--session-*` flags), checked at
 * start: anything missing or wrong stops svc-auth with the flag named (a UsageError, exit 2). An unreachable
 * provider is not a configuration error: discovery happens later (./relying-party.ts).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseDuration } from '../../lib/duration.js';
import type { IssuerConfig } from '../identity/oidc-config.js';
import { readSessionKeyFile, SessionKeyError, type SessionKeys } from '../identity/session.js';
import { UsageError } from '../options.js';

/** The scopes asked for when `--sign-in-scope` is not given (`openid` is always asked for). */
export const DEFAULT_SIGN_IN_SCOPES = ['openid', 'email', 'profile'] as const;
export const DEFAULT_SESSION_MAX_AGE = '8h';
/** The longest `--session-max-age` svc-auth takes. */
const MAX_SESSION_AGE_MS = 30 * 86_400_000;

export interface SignInConfig {
  /** The origins browsers reach the data service at (`https://data.example.org`), the first being the default. */
  readonly externalUrls: readonly [string, ...string[]];
  /** Cookies carry Secure (and the `__Host-` names): false only when every external URL is http:// on loopback. */
  readonly secure: boolean;
  readonly clientId: string;
  /** Absent: a public client (PKCE alone). Never logged. */
  readonly clientSecret?: string;
  /** The trusted issuer people sign in with (one of --oidc-issuer / --authentication-config). */
  readonly issuer: IssuerConfig;
  readonly scopes: readonly string[];
  readonly sessionKeys: SessionKeys;
  readonly sessionMaxAgeMs: number;
}

/** The flags as given. */
export interface SignInFlags {
  readonly externalUrl: readonly string[];
  readonly signInClientId?: string;
  readonly signInClientSecretFile?: string;
  readonly signInIssuer?: string;
  readonly signInScope: readonly string[];
  readonly sessionKeyFile?: string;
  readonly sessionMaxAge: string;
}

const isLoopback = (host: string): boolean => {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || (isIP(h) === 4 && h.startsWith('127.')) || h === '::1';
};

/** An external URL as its origin: http(s), no path, query, fragment or credentials; http only on loopback. */
export function externalOrigin(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--external-url ${JSON.stringify(value)}: not a URL; give the address browsers open, e.g. https://data.example.org`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new UsageError(`--external-url ${value}: use https (http only on a loopback address)`);
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || value.includes('#') || url.username || url.password) {
    throw new UsageError(`--external-url ${value}: give the origin only (scheme://host[:port]); svc-auth's sign-in routes are /authz/... on it`);
  }
  return url.origin;
}

const SIGN_IN_FLAGS: readonly (keyof SignInFlags)[] = ['signInClientSecretFile', 'signInIssuer', 'sessionKeyFile'];
const FLAG_NAMES: Record<string, string> = { signInClientSecretFile: '--sign-in-client-secret-file', signInIssuer: '--sign-in-issuer', sessionKeyFile: '--session-key-file' };

/** The sign-in configuration, or undefined when sign-in is off (no --sign-in-client-id); a UsageError names the flag. */
export function signInConfig(f: SignInFlags, issuers: readonly IssuerConfig[], given: (flag: string) => boolean): SignInConfig | undefined {
  if (f.signInClientId === undefined) {
    const stray = [...SIGN_IN_FLAGS.filter((k) => f[k] !== undefined).map((k) => FLAG_NAMES[k]!), ...(f.externalUrl.length > 0 ? ['--external-url'] : []),
      ...(f.signInScope.length > 0 ? ['--sign-in-scope'] : []), ...(given('sessionMaxAge') ? ['--session-max-age'] : [])];
    if (stray.length > 0) throw new UsageError(`${stray.join(', ')} ${stray.length === 1 ? 'goes' : 'go'} with --sign-in-client-id (browser sign-in)`);
    return undefined;
  }
  if (!/^[\x21-\x7e]{1,256}$/.test(f.signInClientId)) throw new UsageError('--sign-in-client-id: the client id registered at the provider (printable, no spaces)');
  const [first, ...rest] = f.externalUrl.map(externalOrigin);
  if (first === undefined) throw new UsageError('--sign-in-client-id needs --external-url (the address browsers open, e.g. https://data.example.org; the callback is <url>/authz/callback)');
  const externalUrls: [string, ...string[]] = [first, ...new Set(rest.filter((u) => u !== first))];
  const schemes = new Set(externalUrls.map((u) => new URL(u).protocol));
  if (schemes.size > 1) throw new UsageError('--external-url: give all https, or all http on loopback (one cookie policy for all)');
  return {
    externalUrls,
    secure: schemes.has('https:'),
    clientId: f.signInClientId,
    ...secretOf(f.signInClientSecretFile),
    issuer: signInIssuer(f.signInIssuer, issuers),
    scopes: scopesOf(f.signInScope),
    sessionKeys: sessionKeysOf(f.sessionKeyFile),
    sessionMaxAgeMs: sessionMaxAge(f.sessionMaxAge),
  };
}

function secretOf(file: string | undefined): { clientSecret?: string } {
  if (file === undefined) return {};
  let secret: string;
  try {
    secret = readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new UsageError(`--sign-in-client-secret-file ${file}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (secret.length === 0 || /[\r\n]/.test(secret)) throw new UsageError(`--sign-in-client-secret-file ${file}: give the client secret alone, on one line`);
  return { clientSecret: secret };
}

/** The issuer people sign in with: the one configured, or the one --sign-in-issuer names among several. */
function signInIssuer(named: string | undefined, issuers: readonly IssuerConfig[]): IssuerConfig {
  if (issuers.length === 0) {
    throw new UsageError('--sign-in-client-id needs the provider configured as for bearer JWTs: --oidc-issuer URL --oidc-audience AUD, or --authentication-config FILE');
  }
  if (named === undefined) {
    if (issuers.length > 1) throw new UsageError(`several issuers are configured: say which one browsers sign in with, --sign-in-issuer ${issuers.map((i) => i.url).join(' or ')}`);
    return issuers[0]!;
  }
  const found = issuers.find((i) => i.url === named);
  if (found === undefined) throw new UsageError(`--sign-in-issuer ${named}: not a configured issuer (${issuers.map((i) => i.url).join(', ')})`);
  return found;
}

function scopesOf(given: readonly string[]): readonly string[] {
  for (const s of given) if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)) throw new UsageError(`--sign-in-scope ${JSON.stringify(s)}: one scope name per flag, no spaces or quotes`);
  const scopes = given.length > 0 ? given : DEFAULT_SIGN_IN_SCOPES;
  return ['openid', ...new Set(scopes.filter((s) => s !== 'openid'))];
}

function sessionKeysOf(file: string | undefined): SessionKeys {
  if (file === undefined) {
    throw new UsageError('--sign-in-client-id needs --session-key-file FILE: one key per line, base64url of 32 random bytes (e.g. "openssl rand -base64 32 > FILE"); the first seals sessions, every one opens them');
  }
  try {
    return readSessionKeyFile(file);
  } catch (e) {
    if (e instanceof SessionKeyError) throw new UsageError(`--session-key-file ${file}: ${e.message}`);
    throw e;
  }
}

function sessionMaxAge(value: string): number {
  try {
    return parseDuration(value, { positive: true, maxMs: MAX_SESSION_AGE_MS, requireUnit: true });
  } catch (e) {
    throw new UsageError(`--session-max-age ${(e as Error).message} (at most 30d; default ${DEFAULT_SESSION_MAX_AGE})`);
  }
}
