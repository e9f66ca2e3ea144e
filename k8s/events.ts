/**
 * Kubernetes Events (events.k8s.io/v1) about the objects the operator reconciles. Emitting never blocks
 * and never throws: events go into a bounded queue drained by a couple of workers, and when the queue is
 * full (thousands of transitions at once, e.g. the first reconcile of a large namespace) the overflow is
 * dropped and counted, as client-go's broadcaster does. Notes must never contain token values or hashes.
 */
import { randomBytes } from 'node:crypto';
import type { Kube } from './kube.js';
import { describeError } from './errors.js';

export interface ObjectReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

export type EventType = 'Normal' | 'Warning';

export interface EventRecord {
  readonly regarding: ObjectReference;
  readonly type: EventType;
  readonly reason: string;
  readonly action: string;
  readonly note: string;
  readonly time: Date;
}

export interface EventSink {
  create(event: EventRecord, reportingController: string, reportingInstance: string): Promise<void>;
}

interface EventRecorderOptions {
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly maxQueue?: number;
  readonly concurrency?: number;
  /** Sustained events per second and burst (a token bucket): Events must not crowd out the real writes. */
  readonly qps?: number;
  readonly burst?: number;
  readonly onDropped?: (e: EventRecord) => void;
  readonly onError?: (err: unknown, e: EventRecord) => void;
  readonly now?: () => number;
}

export class EventRecorder {
  private readonly queue: EventRecord[] = [];
  private active = 0;
  private idle: (() => void)[] = [];
  private _dropped = 0;
  private _sent = 0;
  private tokens: number;
  private refilledAt: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly sink: EventSink,
    private readonly opts: EventRecorderOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.tokens = opts.burst ?? 100;
    this.refilledAt = this.now();
  }

  /** Takes a token from the bucket, or says how long until one is there. */
  private take(): number {
    const qps = this.opts.qps ?? 20;
    const burst = this.opts.burst ?? 100;
    const now = this.now();
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilledAt) / 1000) * qps);
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / qps) * 1000);
  }

  get dropped(): number {
    return this._dropped;
  }

  get sent(): number {
    return this._sent;
  }

  emit(regarding: ObjectReference, type: EventType, reason: string, note: string, action = 'Reconcile'): void {
    const record: EventRecord = { regarding, type, reason, action, note: note.slice(0, 1024), time: new Date(this.now()) };
    if (this.queue.length >= (this.opts.maxQueue ?? 1000)) {
      this._dropped++;
      this.opts.onDropped?.(record);
      return;
    }
    this.queue.push(record);
    this.pump();
  }

  /** Resolves when everything queued so far has been sent (or failed). */
  flush(): Promise<void> {
    if (this.queue.length === 0 && this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.active < (this.opts.concurrency ?? 2) && this.queue.length > 0) {
      if (this.timer) return;
      const wait = this.take();
      if (wait > 0) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, wait);
        this.timer.unref?.();
        return;
      }
      const record = this.queue.shift()!;
      this.active++;
      this.sink
        .create(record, this.opts.reportingController, this.opts.reportingInstance)
        .then(
          () => void this._sent++,
          (e: unknown) => this.opts.onError?.(e, record),
        )
        .catch(() => undefined)
        .finally(() => {
          this.active--;
          this.pump();
          if (this.active === 0 && this.queue.length === 0) {
            const waiting = this.idle;
            this.idle = [];
            for (const r of waiting) r();
          }
        });
    }
  }
}

/** An events.k8s.io/v1 Event name like client-go's: `<object>.<hex time>`, unique enough with a random suffix. */
export function eventName(objectName: string, timeMs: number): string {
  const suffix = `${(timeMs * 1000).toString(16)}${randomBytes(2).toString('hex')}`;
  return `${objectName.slice(0, 253 - suffix.length - 1)}.${suffix}`;
}

export function kubeEventSink(kube: Pick<Kube, 'events'>): EventSink {
  return {
    async create(e, reportingController, reportingInstance) {
      const { V1MicroTime } = await import('@kubernetes/client-node');
      const namespace = e.regarding.namespace;
      try {
        await kube.events.createNamespacedEvent({
          namespace,
          body: {
            apiVersion: 'events.k8s.io/v1',
            kind: 'Event',
            metadata: { name: eventName(e.regarding.name, e.time.getTime()), namespace },
            // eventTime is a MicroTime: a plain Date serializes with milliseconds and gets a 400.
            eventTime: new V1MicroTime(e.time.getTime()),
            reportingController,
            reportingInstance: reportingInstance.slice(0, 128),
            action: e.action,
            reason: e.reason,
            note: e.note,
            type: e.type,
            regarding: { ...e.regarding },
          },
        });
      } catch (err) {
        throw new Error(`event ${e.reason} for ${e.regarding.kind}/${e.regarding.name}: ${describeError(err)}`, { cause: err });
      }
    },
  };
}
