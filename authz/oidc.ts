/**
 * Verifies the JWTs of the configured OpenID providers (`--oidc-issuer`), with jose doing every JOSE step.
 *
 * Keys. Each issuer's JWKS (from `jwks_uri` of its discovery document) is kept in memory. A JWT whose `kid`
 * the cached set does not hold triggers a refetch, at most once per `refetchCooldownMs` per issuer, so a flood
 * of random `kid`s is not a flood of JWKS requests; the set is also refreshed every `refreshIntervalMs` in the
 * background. A failed fetch keeps the previous keys: while the provider is down, JWTs signed by cached keys
 * keep verifying, and without keys yet JWTs are refused (opaque tokens are unaffected). Rotation at the
 * provider shows up as an unknown `kid`, which fetches the new set without a restart.
 *
 * Algorithms: asymmetric ones only. `none` and the HMAC family are refused whatever the header says, so a
 * public key can never be used as an HMAC secret.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import type { VerifiedJwt } from '../core/index.js';
import { UsageError } from './options.js';

export const ALLOWED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
/** Verified JWTs kept (by hash) for their repeat requests. */
const MAX_CACHED_VERIFICATIONS = 10_000;
/** Clock skew tolerated on exp, nbf and iat. */
export const CLOCK_SKEW_SECONDS = 30;

export interface OidcOptions {
  readonly issuers: readonly string[];
  readonly audiences: readonly string[];
  readonly usernameClaim: string;
  readonly groupsClaim: string;
  /** PEM bundle trusted for the providers' TLS, besides the system's. */
  readonly caFile?: string;
  readonly refetchCooldownMs?: number;
  readonly refreshIntervalMs?: number;
  readonly fetchTimeoutMs?: number;
}

export interface OidcEvents {
  /** A JWKS fetch: `ok` false when it failed (the previous keys stay). */
  jwksFetch(issuer: string, ok: boolean): void;
}

/** What svc-auth's handler gets: verification, or "no keys yet" (answered as unavailable, never as a grant). */
export type VerifyOutcome = Omit<VerifiedJwt & { ok: true }, 'source'> | { readonly ok: false; readonly unavailable?: true; readonly reason: string };

/** Checks the flags; https issuers only, http for loopback providers (local IdPs, tests). */
export function checkOidcOptions(o: OidcOptions): void {
  if (o.issuers.length === 0) {
    if (o.audiences.length > 0 || o.caFile !== undefined) throw new UsageError('--oidc-audience and --oidc-ca-file need --oidc-issuer');
    return;
  }
  if (o.audiences.length === 0) throw new UsageError('--oidc-issuer needs --oidc-audience (the client id the provider puts in aud)');
  for (const issuer of o.issuers) {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new UsageError(`--oidc-issuer ${JSON.stringify(issuer)}: not a URL`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
      throw new UsageError(`--oidc-issuer ${issuer}: use https (http only for a provider on a loopback address)`);
    }
    if (url.search || url.hash) throw new UsageError(`--oidc-issuer ${issuer}: an issuer has no query or fragment`);
  }
  for (const [flag, v] of [['--oidc-username-claim', o.usernameClaim], ['--oidc-groups-claim', o.groupsClaim]] as const) {
    if (!/^[A-Za-z0-9_:./-]+$/.test(v)) throw new UsageError(`${flag} ${JSON.stringify(v)}: a claim name (letters, digits, _:./-)`);
  }
}

class IssuerKeys {
  private keys: JWTVerifyGetKey | undefined;
  private jwksUri: string | undefined;
  private lastAttempt = -Infinity;
  private inflight: Promise<void> | undefined;
  private jwksText = '';
  /** Bumped whenever the key set changes: verifications cached under an older version are redone. */
  version = 0;

  constructor(
    readonly issuer: string,
    private readonly fetchJson: (url: string) => Promise<unknown>,
    private readonly cooldownMs: number,
    private readonly events: OidcEvents,
    private readonly logger: Logger,
  ) {}

  get ready(): boolean {
    return this.keys !== undefined;
  }

  /** Fetches discovery (once it worked) and the JWKS; single flight; keeps the old keys on failure. */
  refresh(): Promise<void> {
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async load(): Promise<void> {
    this.lastAttempt = Date.now();
    try {
      if (this.jwksUri === undefined) {
        const doc = (await this.fetchJson(`${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`)) as { issuer?: unknown; jwks_uri?: unknown };
        // The document must be the issuer's own (OpenID Connect Discovery 1.0, 4.3).
        if (doc.issuer !== this.issuer) throw new Error(`discovery names issuer ${JSON.stringify(doc.issuer)}`);
        if (typeof doc.jwks_uri !== 'string') throw new Error('discovery has no jwks_uri');
        this.jwksUri = doc.jwks_uri;
      }
      const jwks = (await this.fetchJson(this.jwksUri)) as JSONWebKeySet;
      const text = JSON.stringify(jwks);
      if (text !== this.jwksText) {
        this.keys = createLocalJWKSet(jwks);
        this.jwksText = text;
        this.version++;
      }
      this.events.jwksFetch(this.issuer, true);
    } catch (e) {
      this.events.jwksFetch(this.issuer, false);
      this.logger.warn({ issuer: this.issuer, err: (e as Error).message }, this.keys ? 'JWKS refresh failed; the cached keys stay in use' : 'JWKS fetch failed; JWTs of this issuer are refused until it works');
    }
  }

  /** jose's key lookup, refetching once on an unknown kid when the cooldown allows. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (!this.keys) await this.refreshIfAllowed();
    if (!this.keys) throw new KeysUnavailable(this.issuer);
    try {
      return await this.keys(header, token);
    } catch (e) {
      if (!(e instanceof errors.JWKSNoMatchingKey)) throw e;
      const before = this.keys;
      await this.refreshIfAllowed();
      if (this.keys === before) throw e;
      return this.keys(header, token);
    }
  };

  private async refreshIfAllowed(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (Date.now() - this.lastAttempt < this.cooldownMs) return;
    return this.refresh();
  }
}

class KeysUnavailable extends Error {
  constructor(issuer: string) {
    super(`no keys of ${issuer} yet`);
  }
}

export class OidcVerifier {
  private readonly byIssuer = new Map<string, IssuerKeys>();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly o: OidcOptions,
    events: OidcEvents,
    logger: Logger,
    fetchJson?: (url: string) => Promise<unknown>,
  ) {
    const ca = o.caFile !== undefined ? readFileSync(o.caFile, 'utf8') : undefined;
    const get = fetchJson ?? ((url: string) => getJson(url, ca, o.fetchTimeoutMs ?? 5000));
    for (const issuer of o.issuers) this.byIssuer.set(issuer, new IssuerKeys(issuer, get, o.refetchCooldownMs ?? 10_000, events, logger));
    const every = o.refreshIntervalMs ?? 10 * 60_000;
    if (o.issuers.length > 0 && every > 0) {
      this.timer = setInterval(() => this.byIssuer.forEach((k) => void k.refresh()), every);
      this.timer.unref();
    }
  }

  get issuers(): ReadonlySet<string> {
    return new Set(this.byIssuer.keys());
  }

  /** Fetches every issuer's keys once (at start; failures are logged and retried on use). */
  start(): Promise<void> {
    return Promise.all([...this.byIssuer.values()].map((k) => k.refresh())).then(() => undefined);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Successful verifications, by SHA-256 of the JWT: a browser session or a script sends the same ID token on
   * every request, and an RSA verification costs about five times a whole token answer. An entry is used only
   * under the key set it was verified with (a key removed at the provider drops it) and carries the JWT's exp,
   * which decide checks on every request. Failures are not kept. Written here rather than with an LRU library:
   * a bounded Map cleared when full is all this needs.
   */
  private readonly verified = new Map<string, { readonly version: number; readonly outcome: VerifyOutcome & { ok: true } }>();

  async verify(jwt: string, issuer: string): Promise<VerifyOutcome> {
    const keys = this.byIssuer.get(issuer);
    if (!keys) return { ok: false, reason: 'issuer not configured' };
    const cacheKey = createHash('sha256').update(jwt).digest('base64url');
    const hit = this.verified.get(cacheKey);
    if (hit && hit.version === keys.version && hit.outcome.identity.issuer === issuer) return hit.outcome;
    const outcome = await this.verifyFully(jwt, issuer, keys);
    if (outcome.ok) {
      if (this.verified.size >= MAX_CACHED_VERIFICATIONS) this.verified.clear();
      this.verified.set(cacheKey, { version: keys.version, outcome });
    }
    return outcome;
  }

  private async verifyFully(jwt: string, issuer: string, keys: IssuerKeys): Promise<VerifyOutcome> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, keys.getKey, {
        issuer,
        audience: [...this.o.audiences],
        algorithms: [...ALLOWED_ALGORITHMS],
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'iat'],
      }));
    } catch (e) {
      if (e instanceof KeysUnavailable) return { ok: false, unavailable: true, reason: e.message };
      // jose's error codes name the check that failed (ERR_JWT_EXPIRED, ERR_JWS_SIGNATURE_VERIFICATION_FAILED, ...).
      return { ok: false, reason: (e as { code?: string }).code ?? 'invalid' };
    }
    const now = Date.now() / 1000;
    if (typeof payload.iat !== 'number' || payload.iat > now + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'iat in the future' };
    const user = payload[this.o.usernameClaim];
    if (typeof user !== 'string' || user.length === 0) return { ok: false, reason: `no ${this.o.usernameClaim} claim` };
    const raw = payload[this.o.groupsClaim];
    const groups = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string') : [];
    return { ok: true, identity: { issuer, user, groups }, expiresAt: (payload.exp as number) * 1000 };
  }
}

/**
 * GET a JSON document (the provider's discovery document or JWKS), with the extra CA when given (the system's
 * roots stay trusted next to it: Node replaces them when `ca` is set). node:https rather than fetch, which
 * cannot take a CA without the undici package.
 */
function getJson(url: string, ca: string | undefined, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(u, { method: 'GET', headers: { accept: 'application/json' }, timeout: timeoutMs, ...(ca && u.protocol === 'https:' ? { ca: [ca, ...rootCertificates] } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 1024 * 1024) req.destroy(new Error(`${url}: larger than 1 MiB`));
        else chunks.push(c);
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${url}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
