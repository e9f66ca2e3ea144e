// Grants summed per scope and token id, identity or network, and logged at info once per window.
import type { Logger } from 'pino';

/**
 * Granted requests, counted per scope and token id (or, for single sign-on, per scope and identity: issuer, user
 * and the granting group) and logged at info once per window (a minute by default) as one "tokens used" (or
 * "identities used") line per pair (per scope and network for grants by address: "networks used"), with the count and the first and last grant in the window.
 *
 * Why not a line per grant: at the request rates svc-auth serves, that is one info line per request (tens
 * of megabytes a minute) repeating what the proxy's access log already holds, and it cost a fifth of a
 * granted answer. The per-grant line is still there at debug; refusals keep their own info line each.
 * What an audit needs from svc-auth (which token opened which scope, how often, when) is in these lines.
 */
interface Use {
  count: number;
  first: number;
  last: number;
  /** Set for an identity's grants (the key is then not a token id). */
  identity?: { readonly issuer: string; readonly user: string; readonly group: string | undefined };
  /** The token is an imported wis2box-auth hash: the line says so, so it can be replaced partner by partner. */
  imported?: true;
  /** Set for grants by a network of the scope (the key is then the network's canonical text). */
  network?: true;
}

/** Identities whose window keys are kept between windows (see identityKey). */
const MAX_IDENTITY_KEYS = 10_000;

/** Counts a repeat grant under `key` (false: none yet in the window, the caller adds the first). */
function repeated(uses: Map<string, Use>, key: string, now: number): boolean {
  const use = uses.get(key);
  if (use === undefined) return false;
  use.count++;
  use.last = now;
  return true;
}

export class TokenUsage {
  private window = new Map<string, Map<string, Use>>();
  private readonly identityKeys = new Map<string, Map<string, Map<string, string>>>();
  private identityKeyCount = 0;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    windowMs = 60_000,
  ) {
    if (windowMs > 0) {
      this.timer = setInterval(() => this.flush(), windowMs);
      this.timer.unref();
    }
  }

  record(scopeKey: string, tokenId: string, now: number, imported = false): void {
    const uses = this.usesOf(scopeKey);
    if (!repeated(uses, tokenId, now)) uses.set(tokenId, imported ? { count: 1, first: now, last: now, imported: true } : { count: 1, first: now, last: now });
  }

  /** An identity's grant (a verified JWT): counted per scope, issuer, user and granting group. */
  recordIdentity(scopeKey: string, issuer: string, user: string, group: string | undefined, now: number): void {
    const key = this.identityKey(issuer, user, group);
    const uses = this.usesOf(scopeKey);
    if (!repeated(uses, key, now)) uses.set(key, { count: 1, first: now, last: now, identity: { issuer, user, group } });
  }

  /** The window's grants of a scope, by key (token id, identity key or network). */
  private usesOf(scopeKey: string): Map<string, Use> {
    let uses = this.window.get(scopeKey);
    if (uses === undefined) this.window.set(scopeKey, (uses = new Map()));
    return uses;
  }

  /**
   * The window's key of an identity, built once per identity rather than per grant: a fresh joined string is
   * hashed in full by every Map lookup, which on the JWT path cost about as much as the rest of the bookkeeping.
   * Identities come from verified JWTs only; the cache starts over past MAX_IDENTITY_KEYS.
   */
  private identityKey(issuer: string, user: string, group: string | undefined): string {
    let byUser = this.identityKeys.get(issuer);
    if (byUser === undefined) this.identityKeys.set(issuer, (byUser = new Map()));
    let byGroup = byUser.get(user);
    if (byGroup === undefined) {
      if (++this.identityKeyCount > MAX_IDENTITY_KEYS) {
        this.identityKeys.clear();
        this.identityKeyCount = 1;
        this.identityKeys.set(issuer, (byUser = new Map()));
      }
      byUser.set(user, (byGroup = new Map()));
    }
    const g = group ?? '';
    let key = byGroup.get(g);
    if (key === undefined) byGroup.set(g, (key = `\0${issuer}\0${user}\0${g}`));
    return key;
  }

  /**
   * A grant by a network of the scope (spec.networks), counted per scope and network: the key is the network's own
   * text, which no token id (hex) or identity key (starting with NUL) can be, and the index's string, so nothing is
   * built per grant.
   */
  recordNetwork(scopeKey: string, network: string, now: number): void {
    const uses = this.usesOf(scopeKey);
    if (!repeated(uses, network, now)) uses.set(network, { count: 1, first: now, last: now, network: true });
  }

  /** Logs the window so far and starts a new one. */
  flush(): void {
    const window = this.window;
    if (window.size === 0) return;
    this.window = new Map();
    for (const [scope, byToken] of window) {
      for (const [tokenId, use] of byToken) {
        const when = { granted: use.count, first: new Date(use.first).toISOString(), last: new Date(use.last).toISOString() };
        const id = use.identity;
        if (use.network) this.logger.info({ scope, network: tokenId, ...when }, 'networks used');
        else if (id) this.logger.info({ scope, issuer: id.issuer, user: id.user, ...(id.group !== undefined ? { group: id.group } : {}), ...when }, 'identities used');
        else this.logger.info({ scope, tokenId, ...(use.imported ? { imported: true } : {}), ...when }, 'tokens used');
      }
    }
  }

  /** Logs what is counted and stops the timer. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.flush();
  }
}
