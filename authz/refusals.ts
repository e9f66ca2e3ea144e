/**
 * Refused requests, counted per endpoint, outcome, scope, reason and token id, and logged at info once per
 * window (a minute by default) as one "requests refused" line per key with the count and the first and last
 * refusal; plus a bounded sample of individual decision lines (the first `sample` refusals of each window
 * at info, every other one at debug).
 *
 * Why: a refusal is the one answer an outsider can ask for as often as they like. One ~260-byte info line
 * per refusal let a client spraying requests write megabytes a second; with the summary, a flood writes a
 * bounded number of lines per window whatever its rate (README "svc-auth"). Keys are bounded too: reasons
 * come from a fixed set, token ids only from tokens the index holds, and past `maxKeys` distinct keys in a
 * window the rest are counted under one overflow line.
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

interface Count {
  readonly refusal: Refusal;
  count: number;
  first: number;
  last: number;
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
    const key = `${r.endpoint}\0${r.outcome}\0${r.scope ?? ''}\0${r.why ?? ''}\0${r.reason ?? ''}\0${r.tokenId ?? ''}\0${r.issuer ?? ''}\0${r.user ?? ''}`;
    let c = this.window.get(key);
    if (c === undefined) {
      if (this.window.size >= this.maxKeys) {
        c = this.overflow ??= { refusal: { endpoint: '*', outcome: '*', scope: '(more keys than counted per window)' }, count: 0, first: now, last: now };
      } else {
        c = { refusal: r, count: 0, first: now, last: now };
        this.window.set(key, c);
      }
    }
    c.count++;
    c.last = now;
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
    for (const c of overflow ? [...window.values(), overflow] : window.values()) {
      const { refusal: r } = c;
      this.logger.info(
        {
          endpoint: r.endpoint,
          outcome: r.outcome,
          ...(r.scope !== undefined ? { scope: r.scope } : {}),
          ...(r.why !== undefined ? { why: r.why } : {}),
          ...(r.reason !== undefined ? { reason: r.reason } : {}),
          ...(r.tokenId !== undefined ? { tokenId: r.tokenId } : {}),
          ...(r.issuer !== undefined ? { issuer: r.issuer } : {}),
          ...(r.user !== undefined ? { user: r.user } : {}),
          refused: c.count,
          first: new Date(c.first).toISOString(),
          last: new Date(c.last).toISOString(),
        },
        'requests refused',
      );
    }
    if (notSampled > 0) this.logger.info({ written: sampled, notWritten: notSampled }, 'refusal lines sampled: the rest of this window is in the "requests refused" lines');
  }

  /** Logs what is counted and stops the timer. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.flush();
  }
}
