/**
 * An in-memory stand-in for the parts of the API server this project uses, in the spirit of client-go's fake
 * clientset: resourceVersions from one counter, list/watch with replay from a resourceVersion (and 410 Gone
 * when it fell out of the window), server-side-apply and immutable ConfigMaps, status merge patches, Leases
 * with optimistic concurrency, and an `outage` switch that fails every call and cuts every watch. For unit
 * tests of the operator and of svc-auth's ConfigMap source; integration tests use the real control plane.
 */
import type { ConfigMapClient, ConfigMapObject } from './configmaps.js';
import type { EventRecord, EventSink } from './events.js';
import type { ListWatch, ObjectWithMeta, WatchEventType } from './informer.js';
import type { LeaseClient, LeaseRecord } from './lease.js';
import type { ScopeStatusClient, StatusPatch } from './watched-scopes.js';

export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface Watcher {
  onEvent: (type: WatchEventType, obj: unknown) => void;
  onDone: (err?: unknown) => void;
  selector?: (obj: unknown) => boolean;
}

const clone = <T>(v: T): T => structuredClone(v);

export class FakeApi {
  private rv = 100;
  outage = false;
  /** Calls made, by verb and resource ("apply configmaps", "patch protectedscopes/status", ...). */
  readonly calls: string[] = [];

  nextRv(): string {
    return String(++this.rv);
  }

  check(call: string): void {
    this.calls.push(call);
    if (this.outage) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
  }

  count(prefix: string): number {
    return this.calls.filter((c) => c.startsWith(prefix)).length;
  }
}

export class FakeStore<T extends ObjectWithMeta & { metadata: { name: string } }> {
  readonly objects = new Map<string, T>();
  private readonly history: { rv: number; type: WatchEventType; obj: T }[] = [];
  private readonly watchers = new Set<Watcher>();
  /** Events kept for replay; older resourceVersions get 410 Gone. */
  historyLimit = 1000;

  constructor(
    readonly api: FakeApi,
    readonly resource: string,
  ) {}

  get(name: string): T | undefined {
    const o = this.objects.get(name);
    return o ? clone(o) : undefined;
  }

  list(): T[] {
    return [...this.objects.values()].map(clone);
  }

  /** Stores an object (create or replace), bumping its resourceVersion; no API call is recorded. */
  put(obj: T): T {
    const stored = clone(obj);
    stored.metadata.resourceVersion = this.api.nextRv();
    if (!stored.metadata.uid) stored.metadata.uid = `uid-${this.resource}-${stored.metadata.name}-${stored.metadata.resourceVersion}`;
    const existed = this.objects.has(stored.metadata.name);
    this.objects.set(stored.metadata.name, stored);
    this.publish(existed ? 'MODIFIED' : 'ADDED', stored);
    return clone(stored);
  }

  remove(name: string): boolean {
    const old = this.objects.get(name);
    if (!old) return false;
    this.objects.delete(name);
    const tomb = clone(old);
    tomb.metadata.resourceVersion = this.api.nextRv();
    this.publish('DELETED', tomb);
    return true;
  }

  /** Ends every open watch (cleanly, or with an error). */
  cutWatches(err?: unknown): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      w.onDone(err);
    }
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  private publish(type: WatchEventType, obj: T): void {
    this.history.push({ rv: Number(obj.metadata.resourceVersion), type, obj: clone(obj) });
    if (this.history.length > this.historyLimit) this.history.splice(0, this.history.length - this.historyLimit);
    for (const w of [...this.watchers]) if (!w.selector || w.selector(obj)) w.onEvent(type, clone(obj));
  }

  listWatch(selector?: (obj: T) => boolean): ListWatch<T> {
    return {
      list: async () => {
        this.api.check(`list ${this.resource}`);
        return { items: this.list().filter((o) => !selector || selector(o)), resourceVersion: String(this.currentRv()) };
      },
      watch: async (resourceVersion, _timeoutSeconds, onEvent, onDone) => {
        this.api.check(`watch ${this.resource}`);
        const from = Number(resourceVersion || this.currentRv());
        const oldest = this.history[0]?.rv;
        if (oldest !== undefined && from < oldest - 1 && this.history.length >= this.historyLimit) throw new ApiError(410, 'Gone');
        const w: Watcher = { onEvent, onDone, ...(selector ? { selector: selector as (obj: unknown) => boolean } : {}) };
        // Replay what happened after `from`, then go live.
        for (const h of this.history) if (h.rv > from && (!selector || selector(h.obj))) onEvent(h.type, clone(h.obj));
        this.watchers.add(w);
        return { abort: () => void this.watchers.delete(w) };
      },
    };
  }

  private currentRv(): number {
    return Number(this.api.nextRv());
  }
}

/** ConfigMaps with server-side apply (labels, annotations and data replaced by what is applied) and `immutable`. */
export function fakeConfigMapClient(store: FakeStore<ConfigMapObject>): ConfigMapClient {
  return {
    async get(name) {
      store.api.check('get configmaps');
      return store.get(name);
    },
    async apply(cm) {
      store.api.check('apply configmaps');
      const existing = store.objects.get(cm.metadata.name);
      if (existing?.immutable && JSON.stringify(existing.data ?? {}) !== JSON.stringify(cm.data ?? {})) {
        throw new ApiError(422, `ConfigMap "${cm.metadata.name}" is invalid: data: Forbidden: field is immutable when \`immutable\` is set`);
      }
      const merged: ConfigMapObject = {
        ...(existing ?? {}),
        ...cm,
        metadata: { ...(existing?.metadata ?? {}), ...cm.metadata, labels: { ...(existing?.metadata.labels ?? {}), ...(cm.metadata.labels ?? {}) } },
      };
      const strip = (o: ConfigMapObject) => JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined, uid: undefined } });
      if (existing && strip(existing) === strip(merged)) return clone(existing); // a no-op apply writes nothing
      return store.put(merged);
    },
    async delete(name, uid) {
      store.api.check('delete configmaps');
      const existing = store.objects.get(name);
      if (!existing) return;
      if (uid && existing.metadata.uid !== uid) return;
      store.remove(name);
    },
  };
}

/** Merge patches of `.status`; a null removes the field. Does not bump metadata.generation. */
export function fakeStatusClient<T extends ObjectWithMeta & { metadata: { name: string }; status?: unknown }>(store: FakeStore<T>): ScopeStatusClient {
  return {
    async patchStatus(name: string, patch: StatusPatch) {
      store.api.check('patch protectedscopes/status');
      const existing = store.objects.get(name);
      if (!existing) return false;
      const status: Record<string, unknown> = { ...((existing.status as Record<string, unknown> | undefined) ?? {}) };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete status[k];
        else status[k] = clone(v);
      }
      if (JSON.stringify(status) === JSON.stringify(existing.status ?? {})) return true;
      store.put({ ...existing, status });
      return true;
    },
  };
}

export class FakeEventSink implements EventSink {
  readonly events: EventRecord[] = [];
  constructor(private readonly api?: FakeApi) {}
  async create(e: EventRecord): Promise<void> {
    this.api?.check('create events');
    this.events.push(e);
  }
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

/** One Lease with resourceVersion preconditions, shared by several electors. */
export class FakeLease {
  record: LeaseRecord | undefined;
  private rv = 1;
  failing = new Set<string>();

  client(identity = 'any', api?: FakeApi): LeaseClient {
    const guard = () => {
      api?.check('lease');
      if (this.failing.has(identity)) throw Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' });
    };
    return {
      get: async () => {
        guard();
        return this.record ? { ...this.record } : undefined;
      },
      create: async (r) => {
        guard();
        if (this.record) throw new ApiError(409, 'AlreadyExists');
        this.record = { ...r, resourceVersion: String(++this.rv) };
        return { ...this.record };
      },
      update: async (r) => {
        guard();
        if (!this.record || r.resourceVersion !== this.record.resourceVersion) throw new ApiError(409, 'Conflict');
        this.record = { ...r, resourceVersion: String(++this.rv) };
        return { ...this.record };
      },
    };
  }
}
