/**
 * Refused requests, counted per endpoint, outcome, scope and reason, and logged at info once per window (a minute
 * by default) as one "requests refused" line per key with the count, the first and last refusal, and the token ids
 * and identities refused under it (up to MAX_LISTED each, with their counts; the rest counted as not listed); plus
 * a bounded sample of individual decision lines (the first `sample` refusals of each window at info, every other
 * one at debug).
 *
 * Why: a refusal is the one answer an outsider can ask for as often as they like. One ~260-byte info line
 * per refusal let a client spraying requests write megabytes a second; with the summary, a flood writes a
 * bounded number of lines per window whatever its rate (docs/svc-auth.md). Keys hold nothing a client can
 * multiply (issue 27): reasons come from a fixed set, the scope is a closed scope of the store or a kind label
 * (the pipeline's summaryScope), and token ids and identities are listed inside the line, never keys of their
 * own. So a window has at most endpoints × outcomes × reasons × (closed scopes + scope kinds) lines; past
 * `maxKeys` the rest are counted under one overflow line all the same.
 */
import type { Logger } from 'pino';

export interface Refusal {
  readonly endpoint: string;
  readonly outcome: string;
  readonly scope?: string | undefined;
  readonly why?: string | undefined;
  readonly reason?: string | undefined;
  readonly tokenId?: string | undefined;
  /** A verified JWT's issuer and user (refused for want of a grant). */
  readonly issuer?: string | undefined;
  readonly user?: string | undefined;
}

/** Token ids and identities listed per summary line, with their counts; the others are only counted. */
export const MAX_LISTED = 10;

/** Counts by name, the first MAX_LISTED names listed and the rest summed. */
class Listed {
  readonly counts = new Map<string, number>();
  notListed = 0;

  add(name: string): void {
    const n = this.counts.get(name);
    if (n !== undefined) this.counts.set(name, n + 1);
    else if (this.counts.size < MAX_LISTED) this.counts.set(name, 1);
    else this.notListed++;
  }
}

interface Count {
  readonly refusal: Refusal;
  count: number;
  first: number;
  last: number;
  tokenIds?: Listed;
  /** Identities as issuer NUL user (an issuer URL holds no NUL). */
  identities?: Listed;
}

export interface RefusalsOptions {
  readonly windowMs?: number;
  /** Individual refusal lines written at info per window. */
  readonly sample?: number;
  /** Distinct keys counted per window; the rest share one overflow line. */
  readonly maxKeys?: number;
}

export class Refusals {
  private window = new Map<string, Count>();
  private overflow: Count | undefined;
  private sampled = 0;
  private notSampled = 0;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly sample: number;
  private readonly maxKeys: number;

  constructor(
    private readonly logger: Logger,
    options: RefusalsOptions = {},
  ) {
    this.sample = options.sample ?? 20;
    this.maxKeys = options.maxKeys ?? 1000;
    const windowMs = options.windowMs ?? 60_000;
    if (windowMs > 0) {
      this.timer = setInterval(() => this.flush(), windowMs);
      this.timer.unref();
    }
  }

  /** Counts a refusal; true while this window's sample of individual lines is not used up. */
  record(r: Refusal, now: number): boolean {
    const key = `${r.endpoint}\0${r.outcome}\0${r.scope ?? ''}\0${r.why ?? ''}\0${r.reason ?? ''}`;
    let c = this.window.get(key);
    if (c === undefined) {
      if (this.window.size >= this.maxKeys) {
        c = this.overflow ??= { refusal: { endpoint: '*', outcome: '*', scope: '(more keys than counted per window)' }, count: 0, first: now, last: now };
      } else {
        // The line's own fields: what the key holds, never the first refusal's token id or identity.
        c = { refusal: { endpoint: r.endpoint, outcome: r.outcome, scope: r.scope, why: r.why, reason: r.reason }, count: 0, first: now, last: now };
        this.window.set(key, c);
      }
    }
    c.count++;
    c.last = now;
    if (r.tokenId !== undefined) (c.tokenIds ??= new Listed()).add(r.tokenId);
    if (r.user !== undefined) (c.identities ??= new Listed()).add(`${r.issuer ?? ''}\0${r.user}`);
    if (this.sampled < this.sample) {
      this.sampled++;
      return true;
    }
    this.notSampled++;
    return false;
  }

  /** Logs the window so far and starts a new one. */
  flush(): void {
    const { window, overflow, sampled, notSampled } = this;
    this.window = new Map();
    this.overflow = undefined;
    this.sampled = 0;
    this.notSampled = 0;
    for (const c of overflow ? [...window.values(), overflow] : window.values()) this.logger.info(summaryLine(c), 'requests refused');
    if (notSampled > 0) this.logger.info({ written: sampled, notWritten: notSampled }, 'refusal lines sampled: the rest of this window is in the "requests refused" lines');
  }

  /** Logs what is counted and stops the timer. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.flush();
  }
}

/** The fields of one "requests refused" line. */
function summaryLine(c: Count): Record<string, unknown> {
  const { refusal: r, tokenIds, identities } = c;
  return {
    endpoint: r.endpoint,
    outcome: r.outcome,
    ...(r.scope !== undefined ? { scope: r.scope } : {}),
    ...(r.why !== undefined ? { why: r.why } : {}),
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    ...(tokenIds ? { tokenIds: Object.fromEntries(tokenIds.counts) } : {}),
    ...(tokenIds && tokenIds.notListed > 0 ? { tokenIdsNotListed: tokenIds.notListed } : {}),
    ...(identities ? { identities: [...identities.counts].map(([who, refused]) => identityOf(who, refused)) } : {}),
    ...(identities && identities.notListed > 0 ? { identitiesNotListed: identities.notListed } : {}),
    refused: c.count,
    first: new Date(c.first).toISOString(),
    last: new Date(c.last).toISOString(),
  };
}

function identityOf(who: string, refused: number): { issuer: string; user: string; refused: number } {
  const nul = who.indexOf('\0');
  return { issuer: who.slice(0, nul), user: who.slice(nul + 1), refused };
}
