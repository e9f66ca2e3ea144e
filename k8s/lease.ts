/**
 * Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does it:
 *
 * - a candidate takes the lease when it is free or its holder has not renewed it for leaseDuration, judged by
 *   the candidate's own clock from when it last saw the record change (never by the times written in it, so
 *   clock skew between nodes does not matter);
 * - the leader renews every retryPeriod; it counts as leader only until renewDeadline after the start of its
 *   last successful renewal (renewDeadline < leaseDuration leaves a margin in which nobody leads), and a timer
 *   drops leadership at that moment even if a renewal request hangs;
 * - on stop, a leader releases the lease (empty holder) so a successor takes over at once.
 *
 * Writes are optimistic (resourceVersion), so two candidates cannot both win one round.
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { Kube } from './kube.js';
import { jitter } from '../lib/backoff.js';
import { describeError, isConflict, unlessNotFound } from './errors.js';

export interface LeaseRecord {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTimeMs?: number;
  readonly renewTimeMs?: number;
  readonly leaseTransitions?: number;
  readonly resourceVersion?: string;
}

export interface LeaseClient {
  get(): Promise<LeaseRecord | undefined>;
  /** Fails with a 409 when the lease exists. */
  create(r: LeaseRecord): Promise<LeaseRecord>;
  /** Replaces with r.resourceVersion as precondition; fails with a 409 on conflict. */
  update(r: LeaseRecord): Promise<LeaseRecord>;
}

interface LeaderElectorOptions {
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly onStartedLeading?: () => void;
  readonly onStoppedLeading?: () => void;
  readonly onNewLeader?: (identity: string | undefined) => void;
  readonly onError?: (err: unknown) => void;
  readonly now?: () => number;
  readonly random?: () => number;
}

const LEASE_DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private leading = false;
  private lastRenewMs = 0;
  private observed: LeaseRecord | undefined;
  private observedAtMs = 0;
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private deadline: ReturnType<typeof setTimeout> | undefined;
  private inflight: Promise<void> | undefined;
  private lastLeader: string | undefined;

  constructor(
    private readonly client: LeaseClient,
    private readonly opts: LeaderElectorOptions,
  ) {
    this.leaseDurationMs = opts.leaseDurationMs ?? LEASE_DEFAULTS.leaseDurationMs;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? LEASE_DEFAULTS.renewDeadlineMs;
    this.retryPeriodMs = opts.retryPeriodMs ?? LEASE_DEFAULTS.retryPeriodMs;
    if (!(this.renewDeadlineMs < this.leaseDurationMs)) throw new RangeError('renew deadline must be shorter than the lease duration');
    if (!(this.retryPeriodMs < this.renewDeadlineMs)) throw new RangeError('retry period must be shorter than the renew deadline');
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
  }

  /** True only while the last successful renewal is younger than renewDeadline: check before every write. */
  isLeader(): boolean {
    return this.leading && this.now() - this.lastRenewMs < this.renewDeadlineMs;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops campaigning; a leader releases the lease so another candidate can take it at once. */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inflight;
    const wasLeading = this.isLeader();
    this.loseLeadership();
    if (release && wasLeading && this.observed?.holderIdentity === this.opts.identity) {
      try {
        await this.client.update({ ...this.observed, holderIdentity: '', leaseDurationSeconds: 1, renewTimeMs: this.now() });
      } catch (e) {
        this.opts.onError?.(e);
      }
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.inflight = this.round().finally(() => {
        this.inflight = undefined;
      });
    }, ms);
  }

  private async round(): Promise<void> {
    const startedMs = this.now();
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew(startedMs);
    } catch (e) {
      this.opts.onError?.(new Error(`lease: ${describeError(e)}`));
    }
    if (this.stopped) return;
    if (ok) {
      this.lastRenewMs = startedMs;
      if (!this.leading) {
        this.leading = true;
        this.opts.onStartedLeading?.();
      }
      this.armDeadline();
      this.schedule(this.retryPeriodMs);
    } else {
      if (this.leading && this.now() - this.lastRenewMs >= this.renewDeadlineMs) this.loseLeadership();
      // Candidates spread their retries (client-go's JitterFactor 1.2); a leader retries a failed renewal at once-ish.
      this.schedule(this.leading ? Math.min(this.retryPeriodMs, 500) : jitter(this.retryPeriodMs, [1, 1.2], this.random));
    }
  }

  private armDeadline(): void {
    clearTimeout(this.deadline);
    const left = this.lastRenewMs + this.renewDeadlineMs - this.now();
    this.deadline = setTimeout(() => {
      if (this.leading && this.now() - this.lastRenewMs >= this.renewDeadlineMs) this.loseLeadership();
    }, Math.max(0, left));
  }

  private loseLeadership(): void {
    clearTimeout(this.deadline);
    if (!this.leading) return;
    this.leading = false;
    this.opts.onStoppedLeading?.();
  }

  private noteLeader(holder: string | undefined): void {
    if (holder !== this.lastLeader) {
      this.lastLeader = holder;
      this.opts.onNewLeader?.(holder);
    }
  }

  private async tryAcquireOrRenew(nowMs: number): Promise<boolean> {
    const me = this.opts.identity;
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    const current = await this.client.get();
    if (!current) {
      return this.write(nowMs, () => this.client.create({ holderIdentity: me, leaseDurationSeconds: durationSeconds, acquireTimeMs: nowMs, renewTimeMs: nowMs, leaseTransitions: 0 }));
    }
    if (!this.observed || !sameRecord(this.observed, current)) {
      this.observed = current;
      this.observedAtMs = nowMs;
    }
    const holder = current.holderIdentity || undefined;
    this.noteLeader(holder);
    const heldMs = (current.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== undefined && holder !== me && this.observedAtMs + heldMs > nowMs) return false;
    const mine = holder === me;
    return this.write(nowMs, () =>
      this.client.update({
        holderIdentity: me,
        leaseDurationSeconds: durationSeconds,
        acquireTimeMs: mine ? (current.acquireTimeMs ?? nowMs) : nowMs,
        renewTimeMs: nowMs,
        leaseTransitions: (current.leaseTransitions ?? 0) + (mine ? 0 : 1),
        resourceVersion: current.resourceVersion,
      }),
    );
  }

  /** Creates or updates the Lease as ours: true when it is, false when another candidate won the race (a conflict). */
  private async write(nowMs: number, write: () => Promise<LeaseRecord>): Promise<boolean> {
    try {
      this.observed = await write();
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
    this.observedAtMs = nowMs;
    this.noteLeader(this.opts.identity);
    return true;
  }
}

function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return a.holderIdentity === b.holderIdentity && a.renewTimeMs === b.renewTimeMs && a.acquireTimeMs === b.acquireTimeMs && a.leaseTransitions === b.leaseTransitions && a.leaseDurationSeconds === b.leaseDurationSeconds;
}

const toMs = (t: unknown): number | undefined => {
  if (t instanceof Date) return t.getTime();
  if (typeof t === 'string') {
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
};

export function kubeLeaseClient(kube: Pick<Kube, 'coordination'>, namespace: string, name: string): LeaseClient {
  const fromApi = (l: V1Lease): LeaseRecord => ({
    holderIdentity: l.spec?.holderIdentity,
    leaseDurationSeconds: l.spec?.leaseDurationSeconds,
    acquireTimeMs: toMs(l.spec?.acquireTime),
    renewTimeMs: toMs(l.spec?.renewTime),
    leaseTransitions: l.spec?.leaseTransitions,
    resourceVersion: l.metadata?.resourceVersion,
  });
  const toApi = async (r: LeaseRecord) => {
    // Lease times are MicroTime: a plain Date (milliseconds) is rejected with a 400.
    const { V1MicroTime } = await import('@kubernetes/client-node');
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace, ...(r.resourceVersion ? { resourceVersion: r.resourceVersion } : {}) },
      spec: {
        holderIdentity: r.holderIdentity,
        leaseDurationSeconds: r.leaseDurationSeconds,
        acquireTime: r.acquireTimeMs === undefined ? undefined : new V1MicroTime(r.acquireTimeMs),
        renewTime: r.renewTimeMs === undefined ? undefined : new V1MicroTime(r.renewTimeMs),
        leaseTransitions: r.leaseTransitions,
      },
    };
  };
  return {
    async get() {
      const lease = await unlessNotFound(() => kube.coordination.readNamespacedLease({ name, namespace }));
      return lease === undefined ? undefined : fromApi(lease);
    },
    async create(r) {
      return fromApi(await kube.coordination.createNamespacedLease({ namespace, body: await toApi(r) }));
    },
    async update(r) {
      return fromApi(await kube.coordination.replaceNamespacedLease({ name, namespace, body: await toApi(r) }));
    },
  };
}
