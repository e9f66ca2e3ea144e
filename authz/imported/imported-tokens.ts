/**
 * Verification of tokens imported from wis2box-auth (PBKDF2-HMAC-SHA256, 100,000 iterations: ~19 ms of CPU per
 * stored row), kept from costing svc-auth what it cost the original:
 *
 * - off the event loop: node's asynchronous `crypto.pbkdf2` runs on libuv's thread pool, so answers for every
 *   other request go on while a derivation runs (no worker of our own is needed for one call into OpenSSL);
 * - bounded: at most `concurrency` requests derive at once and `queue` more wait; beyond that a request is refused
 *   at once (never granted), so a flood of wrong tokens costs at most `concurrency` threads and never grows memory;
 * - remembered: a token that verified is kept in a bounded LRU map keyed by an HMAC of the token under a key made
 *   at start (never the token, and useless outside this process), with the stored hashes it matched. The next
 *   request finds it there for the cost of one HMAC, and only while the index in service still holds that hash:
 *   removing the record revokes it at the next request.
 */
import { createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { importedCandidates, type AccessIndex, type ImportedCandidate, type ImportedRecord, type Scope } from '../../core/index.js';

export interface ImportedTokensOptions {
  /** Requests deriving at once (each checks its candidates one after the other). */
  readonly concurrency: number;
  /** Requests waiting for a slot; more are refused. */
  readonly queue: number;
  /** Tokens remembered once verified. */
  readonly cacheSize: number;
}

export const DEFAULT_IMPORTED_TOKENS: ImportedTokensOptions = { concurrency: 1, queue: 32, cacheSize: 10_000 };

export type ImportedVerdict = { readonly ok: true; readonly match: ImportedCandidate } | { readonly ok: false; readonly busy: boolean };

function derive(token: string | Buffer, record: ImportedRecord): Promise<boolean> {
  return new Promise((resolve, reject) => {
    pbkdf2(token, record.salt, record.iterations, record.key.length, 'sha256', (e, key) => (e ? reject(e) : resolve(timingSafeEqual(key, record.key))));
  });
}

export class ImportedTokens {
  private readonly secret = randomBytes(32);
  /** HMAC of a verified token → the imported hashes it matched, with their scopes; insertion order is recency (LRU). */
  private readonly verified = new Map<string, Map<string, Scope>>();
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** Refused for want of a slot, since start (a metric and the bench read it). */
  busyRefusals = 0;

  constructor(private readonly options: ImportedTokensOptions = DEFAULT_IMPORTED_TOKENS) {}

  private keyOf(token: string | Buffer): string {
    return createHmac('sha256', this.secret).update(token).digest('base64');
  }

  /** The candidate a remembered token matched, if the index in service still holds its hash. */
  remembered(token: string | Buffer, candidates: readonly ImportedCandidate[]): ImportedCandidate | undefined {
    const key = this.keyOf(token);
    const hashes = this.verified.get(key);
    if (hashes === undefined) return undefined;
    const match = candidates.find((c) => hashes.has(c.record.hash));
    if (match) {
      this.verified.delete(key);
      this.verified.set(key, hashes);
    }
    return match;
  }

  /** Derives the token against each candidate in turn, in a bounded slot; refuses at once when none is free. */
  async verify(token: string | Buffer, candidates: readonly ImportedCandidate[]): Promise<ImportedVerdict> {
    if (!(await this.acquire())) {
      this.busyRefusals++;
      return { ok: false, busy: true };
    }
    try {
      for (const c of candidates) {
        if (await derive(token, c.record)) {
          this.remember(this.keyOf(token), c.record.hash, c.entry.scope);
          return { ok: true, match: c };
        }
      }
      return { ok: false, busy: false };
    } finally {
      this.release();
    }
  }

  /**
   * A remembered token's record in a scope that does not govern this request, if the index in service still
   * holds it: "another scope's token" (403) as for a SHA-256 token. Only remembered tokens are told apart this
   * way: deriving a presented token against every scope's records would let wrong tokens cost that much each.
   */
  rememberedElsewhere(token: string | Buffer, index: AccessIndex, nowMs: number): ImportedCandidate | undefined {
    const held = this.verified.get(this.keyOf(token));
    if (held === undefined) return undefined;
    for (const [hash, scope] of held) {
      const c = importedCandidates(index, [scope], nowMs).find((x) => x.record.hash === hash);
      if (c) return c;
    }
    return undefined;
  }

  private remember(key: string, hash: string, scope: Scope): void {
    const hashes = this.verified.get(key) ?? new Map<string, Scope>();
    hashes.set(hash, scope);
    this.verified.delete(key);
    this.verified.set(key, hashes);
    if (this.verified.size > this.options.cacheSize) this.verified.delete(this.verified.keys().next().value!);
  }

  private acquire(): Promise<boolean> {
    if (this.running < this.options.concurrency) {
      this.running++;
      return Promise.resolve(true);
    }
    if (this.waiting.length >= this.options.queue) return Promise.resolve(false);
    return new Promise((resolve) => this.waiting.push(() => resolve(true)));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next(); // the slot passes on: running stays the same
    else this.running--;
  }

  get size(): number {
    return this.verified.size;
  }
}
