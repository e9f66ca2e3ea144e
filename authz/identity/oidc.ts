/**
 * Verifies the JWTs of the configured OpenID providers (./oidc-config: flags or kube-apiserver's
 * AuthenticationConfiguration), with jose doing every JOSE step, and maps their claims to the prefixed names
 * ProtectedScope subjects hold.
 *
 * Keys. Each issuer's JWKS (from `jwks_uri` of its discovery document) is kept in memory. A JWT whose `kid`
 * the cached set does not hold triggers a refetch, at most once per `refetchCooldownMs` per issuer, so a flood
 * of random `kid`s is not a flood of JWKS requests; the set is also refreshed every `refreshIntervalMs` in the
 * background. A failed fetch keeps the previous keys: while the provider is down, JWTs signed by cached keys
 * keep verifying, and without keys yet JWTs are refused (opaque tokens are unaffected). Rotation at the
 * provider shows up as an unknown `kid`, which fetches the new set without a restart.
 *
 * Bounds. A key load (discovery and JWKS together) has one deadline for the whole transfer, not an idle
 * timeout: a provider trickling a byte a second would otherwise hold the load, every request waiting on it, and
 * every later refresh (they join the load in flight) for ever. At most `maxWaiting` requests per issuer wait
 * on a load; the rest are refused at once, so requests with made-up `kid`s cannot pile up sockets.
 *
 * Algorithms: asymmetric ones only. `none` and the HMAC family are refused whatever the header says, so a
 * public key can never be used as an HMAC secret.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose';
import type { Logger } from 'pino';
import type { CredentialCarrier, VerifiedJwt } from '../../core/index.js';
import type { IssuerConfig } from './oidc-config.js';
import { tailKey } from './tail-key.js';

export const ALLOWED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
/** Verified JWTs kept for their repeat requests, and the characters they may hold together (8 MiB of latin1). */
const MAX_CACHED_VERIFICATIONS = 10_000;
const MAX_CACHED_CHARS = 8 * 1024 * 1024;
/** Clock skew tolerated on exp, nbf and iat. */
export const CLOCK_SKEW_SECONDS = 30;

/**
 * The JWT's own exp (ms since the epoch) from the `expiresAt` this verifier hands decide, which is exp plus the
 * skew: the last instant a JWT is granted. The skew forgives clocks that disagree; it is no lifetime to hand to a
 * proxy's decision cache, which may keep a JWT's grant only until exp (issue 27: with exp + skew as the cache
 * bound, a JWT 10 s past its exp was cacheable for 19 s more). Never later than `expiresAt`, so never more lenient.
 */
export function jwtExpOf(expiresAt: number): number {
  return expiresAt - CLOCK_SKEW_SECONDS * 1000;
}

export interface OidcOptions {
  readonly issuers: readonly IssuerConfig[];
  /** PEM bundle trusted for the providers' TLS, besides the system's (an issuer's own certificateAuthority wins). */
  readonly caFile?: string;
  readonly refetchCooldownMs?: number;
  readonly refreshIntervalMs?: number;
  /** Deadline of one whole key load (discovery and JWKS), from its start. */
  readonly fetchTimeoutMs?: number;
  /** Requests of one issuer waiting on a key load at once; past it they are refused as unavailable. */
  readonly maxWaiting?: number;
}

export interface OidcEvents {
  /** A JWKS fetch: `ok` false when it failed (the previous keys stay). */
  jwksFetch(issuer: string, ok: boolean): void;
}

/** What svc-auth's handler gets: verification, or "no keys yet" (answered as unavailable, never as a grant). */
export type VerifyOutcome = Omit<VerifiedJwt & { ok: true }, 'carrier'> | { readonly ok: false; readonly unavailable?: true; readonly reason: string };

type FetchJson = (url: string, deadline: number) => Promise<unknown>;

class IssuerKeys {
  private keys: JWTVerifyGetKey | undefined;
  private jwksUri: string | undefined;
  private lastAttempt = -Infinity;
  private inflight: Promise<void> | undefined;
  private jwksText = '';
  private waiting = 0;
  /** Bumped whenever the key set changes: verifications cached under an older version are redone. */
  version = 0;

  constructor(
    readonly config: IssuerConfig,
    private readonly fetchJson: FetchJson,
    private readonly limits: { readonly cooldownMs: number; readonly loadTimeoutMs: number; readonly maxWaiting: number },
    private readonly events: OidcEvents,
    private readonly logger: Logger,
  ) {}

  get issuer(): string {
    return this.config.url;
  }

  /** Fetches discovery (once it worked) and the JWKS; single flight; keeps the old keys on failure. */
  refresh(): Promise<void> {
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async load(): Promise<void> {
    this.lastAttempt = Date.now();
    // One deadline for discovery and JWKS together: the load ends by then whatever the provider does.
    const deadline = this.lastAttempt + this.limits.loadTimeoutMs;
    try {
      this.jwksUri ??= await this.discover(deadline);
      const jwks = (await this.fetchJson(this.jwksUri, deadline)) as JSONWebKeySet;
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

  private async discover(deadline: number): Promise<string> {
    const url = this.config.discoveryUrl ?? `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const doc = (await this.fetchJson(url, deadline)) as { issuer?: unknown; jwks_uri?: unknown };
    // The document must be the issuer's own (OpenID Connect Discovery 1.0, 4.3), wherever it was fetched from.
    if (doc.issuer !== this.issuer) throw new Error(`discovery names issuer ${JSON.stringify(doc.issuer)}`);
    if (typeof doc.jwks_uri !== 'string') throw new Error('discovery has no jwks_uri');
    return doc.jwks_uri;
  }

  /** jose's key lookup, refetching once on an unknown kid when the cooldown allows. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (!this.keys) await this.waitForLoad();
    if (!this.keys) throw new KeysUnavailable(`no keys of ${this.issuer} yet`);
    try {
      return await this.keys(header, token);
    } catch (e) {
      if (!(e instanceof errors.JWKSNoMatchingKey)) throw e;
      const before = this.keys;
      await this.waitForLoad();
      if (this.keys === before) throw e;
      return this.keys(header, token);
    }
  };

  /** Waits on a key load when one is in flight or allowed; a bounded number of requests wait, the rest are refused. */
  private async waitForLoad(): Promise<void> {
    const load = this.inflight ?? (Date.now() - this.lastAttempt < this.limits.cooldownMs ? undefined : this.refresh());
    if (!load) return;
    if (this.waiting >= this.limits.maxWaiting) throw new KeysUnavailable(`${this.limits.maxWaiting} requests already wait for the keys of ${this.issuer}`);
    this.waiting++;
    try {
      await load;
    } finally {
      this.waiting--;
    }
  }
}

class KeysUnavailable extends Error {}

/** A verification kept for the repeat requests of the same JWT, and its views per credential carrier. */
interface CachedVerification {
  readonly jwt: string;
  readonly keys: IssuerKeys;
  readonly version: number;
  readonly outcome: VerifyOutcome & { ok: true };
  readonly views: Partial<Record<CredentialCarrier, VerifiedJwt>>;
}

export class OidcVerifier {
  private readonly byIssuer = new Map<string, IssuerKeys>();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(o: OidcOptions, events: OidcEvents, logger: Logger, fetchJson?: FetchJson) {
    const shared = o.caFile !== undefined ? readFileSync(o.caFile, 'utf8') : undefined;
    const limits = { cooldownMs: o.refetchCooldownMs ?? 10_000, loadTimeoutMs: o.fetchTimeoutMs ?? 5000, maxWaiting: o.maxWaiting ?? 256 };
    for (const config of o.issuers) {
      const ca = config.certificateAuthority ?? shared;
      const get = fetchJson ?? ((url: string, deadline: number) => getJson(url, ca, deadline));
      this.byIssuer.set(config.url, new IssuerKeys(config, get, limits, events, logger));
    }
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

  /** Fetches an issuer's keys now, whatever the cooldown (the sign-in found the provider back after an outage). */
  refresh(issuer: string): Promise<void> {
    return this.byIssuer.get(issuer)?.refresh() ?? Promise.resolve();
  }

  /**
   * Successful verifications: a browser session or a script sends the same ID token on every request, and an
   * RSA verification costs about five times a whole token answer. Keyed by a few characters of the signature's
   * end (./tail-key.ts) and then compared whole, because hashing the whole string on every request (SHA-256, or
   * V8's own hash of a fresh 1 KB string) cost as much as the rest of a token's decision; a JWT sharing a key with
   * a cached one is simply not found, and only JWTs that verified are ever stored. The characters kept
   * are bounded (a JWT is at most 16 KiB). An entry is used only under the key set it was verified with (a key
   * removed at the provider drops it) and carries the JWT's exp, which decide checks on every request. Failures
   * are not kept. Written here rather than with an LRU library: a bounded Map cleared when full is all this needs.
   */
  private readonly verified = new Map<number, CachedVerification>();
  private cachedChars = 0;

  /**
   * A JWT verified before, synchronously (the credential road's source 2: a repeat JWT is judged now, as a token is).
   * Only JWTs are ever kept, and every JWT starts with `eyJ` (`{"` encoded), so opaque tokens skip the lookup.
   */
  known(jwt: string, carrier: CredentialCarrier): VerifiedJwt | undefined {
    if (this.verified.size === 0 || !jwt.startsWith('eyJ')) return undefined;
    const hit = this.verified.get(tailKey(jwt));
    if (!hit || hit.jwt !== jwt || hit.version !== hit.keys.version) return undefined;
    return (hit.views[carrier] ??= { ...hit.outcome, carrier });
  }

  async verify(jwt: string, issuer: string): Promise<VerifyOutcome> {
    const keys = this.byIssuer.get(issuer);
    if (!keys) return { ok: false, reason: 'issuer not configured' };
    const hit = this.verified.get(tailKey(jwt));
    if (hit && hit.jwt === jwt && hit.keys === keys && hit.version === keys.version) return hit.outcome;
    const outcome = await this.verifyFully(jwt, keys);
    if (outcome.ok) this.remember({ jwt, keys, version: keys.version, outcome, views: {} });
    return outcome;
  }

  /**
   * A sign-in's ID token (authz/sign-in): verified exactly as a bearer JWT of `issuer` (keys, algorithms, times,
   * required claims, email_verified, names and prefixes) but for `audience`, the sign-in client id. Never kept in
   * the cache of verifications: a bearer JWT is found there without its audience being checked again.
   */
  async verifyIdToken(jwt: string, issuer: string, audience: string): Promise<VerifyOutcome> {
    const keys = this.byIssuer.get(issuer);
    if (!keys) return { ok: false, reason: 'issuer not configured' };
    return this.verifyFully(jwt, keys, [audience]);
  }

  private remember(entry: CachedVerification): void {
    if (this.verified.size >= MAX_CACHED_VERIFICATIONS || this.cachedChars + entry.jwt.length > MAX_CACHED_CHARS) {
      this.verified.clear();
      this.cachedChars = 0;
    }
    const key = tailKey(entry.jwt);
    this.cachedChars += entry.jwt.length - (this.verified.get(key)?.jwt.length ?? 0);
    this.verified.set(key, entry);
  }

  private async verifyFully(jwt: string, keys: IssuerKeys, audiences: readonly string[] = keys.config.audiences): Promise<VerifyOutcome> {
    let payload: JWTPayload;
    try {
      payload = await verifySignature(jwt, keys.getKey, {
        issuer: keys.issuer,
        audience: [...audiences],
        algorithms: [...ALLOWED_ALGORITHMS],
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'iat'],
      });
    } catch (e) {
      if (e instanceof KeysUnavailable) return { ok: false, unavailable: true, reason: e.message };
      // jose's error codes name the check that failed (ERR_JWT_EXPIRED, ERR_JWS_SIGNATURE_VERIFICATION_FAILED, ...).
      return { ok: false, reason: (e as { code?: string }).code ?? 'invalid' };
    }
    if (typeof payload.iat !== 'number' || payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'iat in the future' };
    const identity = identityOf(payload, keys.config);
    if (typeof identity === 'string') return { ok: false, reason: identity };
    // exp is honoured with the same skew as jose's check, here and in decide on every later request.
    return { ok: true, identity, expiresAt: ((payload.exp as number) + CLOCK_SKEW_SECONDS) * 1000 };
  }
}

/**
 * jwtVerify, trying every candidate key when several fit the header (a kid reused across keys, or no kid and
 * two keys of the algorithm's type): jose then throws JWKSMultipleMatchingKeys, which iterates the candidates,
 * and a valid signature by any of them must verify.
 */
async function verifySignature(jwt: string, getKey: JWTVerifyGetKey, options: JWTVerifyOptions): Promise<JWTPayload> {
  try {
    return (await jwtVerify(jwt, getKey, options)).payload;
  } catch (e) {
    if (!(e instanceof errors.JWKSMultipleMatchingKeys)) throw e;
    for await (const key of e) {
      try {
        return (await jwtVerify(jwt, key, options)).payload;
      } catch (inner) {
        if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

/**
 * The identity a verified JWT names, as kube-apiserver maps it: the required claims hold their values; the
 * username claim is a non-empty string, and an `email` username is refused when `email_verified` is present
 * and not true; names carry the issuer's prefixes. A string is the reason for a refusal.
 */
function identityOf(payload: JWTPayload, config: IssuerConfig): { issuer: string; user: string; groups: string[] } | string {
  for (const rule of config.requiredClaims) {
    if (payload[rule.claim] !== rule.requiredValue) return `claim ${rule.claim} is not ${JSON.stringify(rule.requiredValue)}`;
  }
  const { claim, prefix } = config.username;
  const user = payload[claim];
  if (typeof user !== 'string' || user.length === 0) return `no ${claim} claim`;
  if (claim === 'email' && 'email_verified' in payload && payload.email_verified !== true) return 'email not verified';
  const raw = config.groups ? payload[config.groups.claim] : undefined;
  const names = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string' && g.length > 0) : [];
  const groupsPrefix = config.groups?.prefix ?? '';
  return { issuer: config.url, user: prefix + user, groups: groupsPrefix === '' ? names : names.map((g) => groupsPrefix + g) };
}

/**
 * GET a JSON document (the provider's discovery document or JWKS), with the extra CA when given (the system's
 * roots stay trusted next to it: Node replaces them when `ca` is set). node:https rather than fetch, which
 * cannot take a CA without the undici package. The deadline bounds the whole exchange, connect to last byte.
 */
function getJson(url: string, ca: string | undefined, deadline: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(u, { method: 'GET', headers: { accept: 'application/json' }, ...(ca && u.protocol === 'https:' ? { ca: [ca, ...rootCertificates] } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 1024 * 1024) req.destroy(new Error(`${url}: larger than 1 MiB`));
        else chunks.push(c);
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return fail(new Error(`${url}: HTTP ${res.statusCode}`));
        try {
          done(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          fail(new Error(`${url}: not JSON`));
        }
      });
      res.on('error', (e) => fail(e));
      res.on('close', () => fail(new Error(`${url}: the answer was cut short`)));
    });
    const timer = setTimeout(() => req.destroy(new Error(`${url}: not complete within the deadline`)), Math.max(0, deadline - Date.now()));
    const done = (v: unknown): void => {
      clearTimeout(timer);
      resolve(v);
    };
    const fail = (e: Error): void => {
      clearTimeout(timer);
      reject(e);
    };
    req.on('error', fail);
    req.end();
  });
}
