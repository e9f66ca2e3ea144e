/**
 * The namespace reconcile, level-triggered: whatever changed, read every ProtectedScope from the informer
 * cache, compile the snapshot, write what differs, then patch each object's status where it differs
 * (lastTransitionTime aside), emit Events for transitions, and ask to run again at the next token expiry
 * or stale-shard deadline. Only the leader writes; it checks before every single write, so a lost lease
 * stops writing at once.
 */
import { API_GROUP_VERSION, closedAside, DEFAULT_PREFIXES, KIND, shardSnapshot, type OpenOrClosed, type PathPrefixes, type ProtectedScope } from '../core/index.js';
import { describeError } from '../k8s/errors.js';
import type { ObjectReference, EventType } from '../k8s/events.js';
import { NotLeaderError, type SnapshotWriter } from '../k8s/snapshot/writer.js';
import type { ScopeStatusClient } from '../k8s/watched-scopes.js';
import { SliceClock } from '../lib/time-slice.js';
import type { ProcessResult } from './queue.js';
import { Compiler, desiredNow, type Compilation, type SnapshotPhase } from './compiler.js';
import { conditionOf, READY } from './conditions.js';
import { pendingStatus, statusEquals, statusPatch, type ScopeStatus } from './desired-status.js';
import type { OperatorMetrics } from './metrics.js';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface EventEmitter {
  emit(regarding: ObjectReference, type: EventType, reason: string, note: string): void;
}

export interface ReconcilerOptions {
  readonly namespace: string;
  /** The ProtectedScope objects of the namespace, as the informer holds them. */
  readonly objects: () => readonly ProtectedScope[];
  readonly writer: SnapshotWriter;
  readonly status: ScopeStatusClient;
  readonly events: EventEmitter;
  readonly isLeader: () => boolean;
  readonly shardMaxBytes: number;
  /** Looks one ProtectedScope up in the cache (for the per-object status work). */
  readonly scope: (name: string) => ProtectedScope | undefined;
  /** Queues the status work of one object (the operator's status queue). */
  readonly enqueueStatus: (name: string) => void;
  /** A safety net: reconcile at least this often even if nothing is heard. */
  readonly resyncMs?: number;
  /** svc-auth's --open-paths-by-default: path scopes without tokens are Open rather than Closed (default). */
  readonly openPathsByDefault?: boolean;
  /** svc-auth's prefixes: a path spelt below the API prefix's processes/ or collections/ is flagged, never public. */
  readonly prefixes?: PathPrefixes;
  readonly now?: () => number;
  readonly metrics?: OperatorMetrics;
  readonly log?: Logger;
}

interface ReconcileReport {
  readonly generation: string;
  readonly scopes: number;
  readonly tokens: number;
  readonly shards: number;
  readonly shardsWritten: number;
  readonly snapshotIndexWritten: boolean;
  readonly deleted: number;
  /** Objects whose status differs from the desired one: queued for a status patch each. */
  readonly statusQueued: number;
  readonly events: number;
  /** Phase times: compile (assess, compile, shard), snapshot writes, status patches. */
  readonly compileMs: number;
  readonly writeMs: number;
  /** Computing the desired statuses and comparing them with the current ones (the patches run in their own queue). */
  readonly statusMs: number;
}

/** A scope's state as last published, with an object to attach an Event to. */
interface PublishedState {
  readonly state: OpenOrClosed;
  readonly ref: ObjectReference;
}

type WriteOutcome = Awaited<ReturnType<SnapshotWriter['write']>>;

/** What publishing the snapshot produced, with the instants of its phases. */
interface Published {
  readonly phase: SnapshotPhase;
  /** The snapshot's index document (its generation, counts and shard digests), not the decision index. */
  readonly snapshotIndex: ReturnType<typeof shardSnapshot>['snapshotIndex'];
  readonly shards: ReturnType<typeof shardSnapshot>['shards'];
  readonly outcome: WriteOutcome;
  readonly compiledAt: number;
  readonly writtenAt: number;
}

/** Emits Events and counts them (the report says how many a reconcile emitted). */
class EventTally {
  count = 0;
  constructor(private readonly events: EventEmitter) {}
  emit(regarding: ObjectReference, type: EventType, reason: string, note: string): void {
    this.count++;
    this.events.emit(regarding, type, reason, note);
  }
}

/** Slack after an expiry instant before reconciling, so the token is past it by then. */
const EXPIRY_SLACK_MS = 5;

export class Reconciler {
  /** The last desired status of each object, for the informer predicate. */
  private readonly lastDesired = new Map<string, ScopeStatus>();
  /** Scope states as last published, with an object to attach an Event to. */
  private scopeStates = new Map<string, PublishedState>();
  private readonly now: () => number;
  private readonly compiler: Compiler;
  private _lastReport: ReconcileReport | undefined;
  private last: { phase: SnapshotPhase; compiled: Compilation } | undefined;
  /** Merge sets already announced, by object, so a status patch still in flight is not announced twice. */
  private readonly announcedMerges = new Map<string, string>();
  private _lastSuccessAt = 0;
  /** Why the last snapshot write failed, until one succeeds: what the statuses of the objects it held say. */
  private publishFailure: string | undefined;

  constructor(private readonly opts: ReconcilerOptions) {
    this.compiler = new Compiler({ ...(opts.prefixes ?? DEFAULT_PREFIXES), openPathsByDefault: opts.openPathsByDefault === true });
    this.now = opts.now ?? Date.now;
  }

  get lastReport(): ReconcileReport | undefined {
    return this._lastReport;
  }

  get lastSuccessAt(): number {
    return this._lastSuccessAt;
  }

  /**
   * The predicate for ProtectedScope updates. A spec change (new generation) needs a compile: 'snapshot'. A status
   * that is not the one we last computed (someone else wrote it, or our patch is missing) needs only that
   * object's status work: 'status'. Our own status echoes need nothing.
   */
  needsReconcile(oldObj: ProtectedScope | undefined, obj: ProtectedScope): 'snapshot' | 'status' | undefined {
    if (!oldObj || oldObj.metadata?.generation !== obj.metadata?.generation) return 'snapshot';
    const desired = this.lastDesired.get(obj.metadata?.name ?? '');
    if (desired === undefined) return 'snapshot';
    return statusEquals(obj.status as ScopeStatus | undefined, desired) ? undefined : 'status';
  }

  /**
   * The status work of one object: recompute its desired status from the last compile (at this instant) and
   * patch it if the object's status differs. Runs in its own queue, so 10,000 status patches never hold up the
   * next snapshot. An object whose generation no published snapshot holds yet (a compile still running, a snapshot
   * write failing) gets the pending status instead: Ready False, Reconciling True, and why.
   */
  async reconcileStatus(name: string): Promise<ProcessResult> {
    const { opts } = this;
    if (!opts.isLeader()) return {};
    const o = opts.scope(name);
    if (!o) return {};
    const status = this.statusNow(o);
    if (!status) return {};
    this.lastDesired.set(name, status);
    if (statusEquals(o.status as ScopeStatus | undefined, status)) return {};
    if (!opts.isLeader()) return {};
    await opts.status.patchStatus(name, statusPatch(status));
    opts.metrics?.statusPatches.inc();
    return {};
  }

  /** What an object's status says now: from the last published compile when it covers the object, else pending (or nothing to say). */
  private statusNow(o: ProtectedScope): ScopeStatus | undefined {
    const nowMs = this.now();
    const compiled = this.last && desiredNow(o, this.last.phase, this.last.compiled, nowMs);
    if (compiled) return compiled.status;
    const failure = this.publishFailure;
    return failure === undefined
      ? pendingStatus(o, 'SnapshotPending', 'svc-operator is compiling it', new Date(nowMs).toISOString())
      : pendingStatus(o, 'SnapshotWriteFailed', `the snapshot write failed (${failure}); svc-operator retries`, new Date(nowMs).toISOString());
  }

  async reconcile(): Promise<ProcessResult> {
    const { opts } = this;
    if (!opts.isLeader()) return {};
    const started = this.now();
    try {
      const result = await this.reconcileOnce(started);
      opts.metrics?.reconciles.inc({ result: 'success' });
      return result;
    } catch (e) {
      if (e instanceof NotLeaderError) {
        opts.log?.info({ namespace: opts.namespace }, 'lost the lease during a reconcile; stopped writing');
        return {};
      }
      opts.metrics?.reconciles.inc({ result: 'error' });
      opts.metrics?.errors.inc({ source: 'reconcile' });
      throw e;
    } finally {
      opts.metrics?.duration.observe((this.now() - started) / 1000);
    }
  }

  /**
   * One reconcile as its steps: publish the snapshot (it is what svc-auth enforces), compute the desired
   * statuses, announce what changed, queue the status patches, then record metrics and the report.
   */
  private async reconcileOnce(nowMs: number): Promise<ProcessResult> {
    const objects = this.opts.objects();
    const published = await this.publishOrNoteFailure(objects);
    const compiled = await this.computeStatuses(objects, published.phase, nowMs);
    const events = new EventTally(this.opts.events);
    const byName = new Map(objects.map((o) => [o.metadata.name, o]));
    const nextStates = this.announceScopeTransitions(compiled, byName, events);
    const changed = await this.statusesThatDiffer(objects, compiled);
    this.announceObjectWarnings(changed, compiled, byName, events);
    if (!this.opts.isLeader()) throw new NotLeaderError();
    this.last = { phase: published.phase, compiled };
    for (const o of changed) this.opts.enqueueStatus(o.metadata.name);
    this.scopeStates = nextStates;
    this.recordMetrics(objects, compiled, published.shards);
    this.report(published, changed.length, events.count, nowMs);
    return { requeueAfterMs: this.nextWake(compiled, published.outcome, nowMs) };
  }

  /**
   * Publishes the snapshot. When that fails (and not because the lease went), the failure is remembered until a
   * write succeeds and every object waiting for its generation is queued, so its status says Reconciling and why.
   */
  private async publishOrNoteFailure(objects: readonly ProtectedScope[]): Promise<Published> {
    try {
      const published = await this.publishSnapshot(objects);
      this.publishFailure = undefined;
      return published;
    } catch (e) {
      if (!(e instanceof NotLeaderError)) {
        this.publishFailure = describeError(e);
        for (const o of objects) if (this.awaitsSnapshot(o)) this.opts.enqueueStatus(o.metadata.name);
      }
      throw e;
    }
  }

  /** An object whose generation neither the last published compile nor its own status (an earlier publish) holds. */
  private awaitsSnapshot(o: ProtectedScope): boolean {
    if (this.last && desiredNow(o, this.last.phase, this.last.compiled, this.now()) !== undefined) return false;
    return o.metadata.generation !== undefined && o.status?.observedGeneration !== o.metadata.generation;
  }

  /** The snapshot first: compiled, sharded and written (only what differs) before any status work. */
  private async publishSnapshot(objects: readonly ProtectedScope[]): Promise<Published> {
    const phase = await this.compiler.snapshotAsync(objects);
    const { snapshotIndex, shards } = shardSnapshot(phase.snapshot, this.opts.shardMaxBytes);
    const compiledAt = this.now();
    const outcome = await this.opts.writer.write(snapshotIndex, shards);
    return { phase, snapshotIndex, shards, outcome, compiledAt, writtenAt: this.now() };
  }

  /** The desired statuses; from here on our own status echoes are expected (the informer predicate). */
  private async computeStatuses(objects: readonly ProtectedScope[], phase: SnapshotPhase, nowMs: number): Promise<Compilation> {
    const compiled = await this.compiler.statusesAsync(objects, phase, nowMs);
    this.lastDesired.clear();
    for (const [name, d] of compiled.desired) this.lastDesired.set(name, d.status);
    return compiled;
  }

  /**
   * Events for scopes that opened or closed. Before the first reconcile of this process, the previous state is
   * what the objects' statuses say, so a restart does not re-announce every scope.
   */
  private announceScopeTransitions(compiled: Compilation, byName: ReadonlyMap<string, ProtectedScope>, events: EventTally): Map<string, PublishedState> {
    const nextStates = new Map<string, PublishedState>();
    for (const [key, state] of compiled.scopeStates) {
      const names = compiled.scopeObjects.get(key) ?? [];
      const ref = this.refOf(byName.get(names[0]!)!);
      nextStates.set(key, { state, ref });
      let previous = this.scopeStates.get(key)?.state;
      if (previous === undefined) {
        const recorded = names.map((n) => byName.get(n)?.status?.state).filter((s) => s !== undefined);
        previous = recorded.includes('Closed') ? 'Closed' : 'Open';
      }
      if (previous === state) continue;
      if (state === 'Open') {
        // Tokens are not the only grant: subjects, networks and `closed: true` close a scope too.
        events.emit(ref, 'Normal', 'ScopeOpened', `${key} is open: nothing closes it any more (${objectCount(names.length)})`);
        continue;
      }
      const by = compiled.closedBy.get(key);
      // What closes it, counted (tokens are not the only grant), then why in core's one wording where counts do not say it.
      const aside = by !== undefined ? closedAside({ by, governing: compiled.coveredBy.get(key) }) : '';
      events.emit(ref, 'Normal', 'ScopeClosed', `${key} is closed: ${grantsIn(names, compiled)} in ${objectCount(names.length)}${aside}`);
    }
    for (const [key, { state, ref }] of this.scopeStates) {
      // A deleted path scope falls back to the default, which is closed unless --open-paths-by-default.
      const staysClosed = key.startsWith('path:') && this.opts.openPathsByDefault !== true;
      if (!nextStates.has(key) && state === 'Closed' && !staysClosed) events.emit(ref, 'Normal', 'ScopeOpened', `${key} is open: its ProtectedScope was deleted`);
    }
    return nextStates;
  }

  /** The objects whose status differs from the desired one, compared in slices (10,000 objects, one thread). */
  private async statusesThatDiffer(objects: readonly ProtectedScope[], compiled: Compilation): Promise<ProtectedScope[]> {
    const changed: ProtectedScope[] = [];
    const clock = new SliceClock(10);
    for (const o of objects) {
      const d = compiled.desired.get(o.metadata.name);
      if (d !== undefined && !statusEquals(o.status as ScopeStatus | undefined, d.status)) changed.push(o);
      await clock.pause();
    }
    return changed;
  }

  /** Warnings for objects newly merged with others for one scope, or newly failing to compile. */
  private announceObjectWarnings(changed: readonly ProtectedScope[], compiled: Compilation, byName: ReadonlyMap<string, ProtectedScope>, events: EventTally): void {
    for (const o of changed) {
      const d = compiled.desired.get(o.metadata.name)!.status;
      const before = o.status as ScopeStatus | undefined;
      const merged = [...(d.mergedWith ?? [])].sort().join(',');
      if (merged && merged !== [...(before?.mergedWith ?? [])].sort().join(',') && this.announcedMerges.get(o.metadata.name) !== merged) {
        events.emit(this.refOf(o), 'Warning', 'ScopesMerged', `merged with ${d.mergedWith!.join(', ')}: ${d.mergedWith!.length + 1} objects protect ${d.kind}=${d.scope}; their tokens are combined`.slice(0, 1000));
      }
      if (merged) this.announcedMerges.set(o.metadata.name, merged);
      else this.announcedMerges.delete(o.metadata.name);
      const ready = conditionOf(d.conditions, READY);
      const beforeReady = conditionOf(before?.conditions, READY);
      if (ready?.status === 'False' && !(beforeReady?.status === 'False' && beforeReady.reason === ready.reason)) {
        events.emit(this.refOf(o), 'Warning', 'CompileFailed', ready.message);
      }
    }
    for (const name of [...this.announcedMerges.keys()]) if (!byName.has(name)) this.announcedMerges.delete(name);
  }

  private recordMetrics(objects: readonly ProtectedScope[], compiled: Compilation, shards: readonly { readonly bytes: number }[]): void {
    const m = this.opts.metrics;
    if (!m) return;
    let closed = 0;
    for (const s of compiled.scopeStates.values()) if (s === 'Closed') closed++;
    let active = 0;
    let records = 0;
    for (const d of compiled.desired.values()) {
      active += d.status.activeTokens ?? 0;
      records += d.status.tokens ?? 0;
    }
    m.objects.set(objects.length);
    m.scopes.set({ state: 'Closed' }, closed);
    m.scopes.set({ state: 'Open' }, compiled.scopeStates.size - closed);
    m.tokens.set({ state: 'active' }, active);
    m.tokens.set({ state: 'expired' }, records - active);
    m.invalid.set(compiled.assessments.filter((a) => !a.valid).length);
    for (const reason of ['RefusedPath', 'PublicRefused'] as const) {
      m.refusedPaths.set({ reason }, compiled.assessments.filter((a) => a.valid && a.refused?.reason === reason).length);
    }
    m.snapshotBytes.set(shards.reduce((n, s) => n + s.bytes, 0));
    m.shards.set(shards.length);
  }

  /** The report of this reconcile, logged when it wrote or queued anything. */
  private report(p: Published, statusQueued: number, events: number, nowMs: number): void {
    const { snapshotIndex, shards, outcome } = p;
    this._lastReport = {
      generation: snapshotIndex.generation,
      scopes: snapshotIndex.scopes,
      tokens: snapshotIndex.tokens,
      shards: shards.length,
      shardsWritten: outcome.shardsWritten,
      snapshotIndexWritten: outcome.snapshotIndexWritten,
      deleted: outcome.deleted,
      statusQueued,
      events,
      compileMs: p.compiledAt - nowMs,
      writeMs: p.writtenAt - p.compiledAt,
      statusMs: this.now() - p.writtenAt,
    };
    this._lastSuccessAt = this.now();
    if (outcome.shardsWritten > 0 || outcome.snapshotIndexWritten || outcome.deleted > 0 || statusQueued > 0) {
      this.opts.log?.info({ namespace: this.opts.namespace, ...this._lastReport, durationMs: this.now() - nowMs }, 'reconciled');
    }
  }

  /** Run again at the resync, the next token expiry or the next stale-shard cleanup, whichever comes first. */
  private nextWake(compiled: Compilation, outcome: WriteOutcome, nowMs: number): number {
    const waits = [this.opts.resyncMs ?? 10 * 60_000];
    if (compiled.nextExpiryMs !== undefined) waits.push(compiled.nextExpiryMs - nowMs + EXPIRY_SLACK_MS);
    if (outcome.nextCleanupAtMs !== undefined) waits.push(outcome.nextCleanupAtMs - nowMs + EXPIRY_SLACK_MS);
    return Math.max(EXPIRY_SLACK_MS, Math.min(...waits));
  }

  private refOf(o: ProtectedScope): ObjectReference {
    return { apiVersion: API_GROUP_VERSION, kind: KIND, name: o.metadata.name, namespace: this.opts.namespace, ...(o.metadata.uid ? { uid: o.metadata.uid } : {}) };
  }

}

/** `1 token record and 2 networks`, or `no grant`: what a scope's objects hold that closes it. */
function grantsIn(names: readonly string[], compiled: Compilation): string {
  const sum = (f: (s: ScopeStatus) => number | undefined) => names.reduce((n, name) => n + (f(compiled.desired.get(name)?.status ?? {}) ?? 0), 0);
  const counted = [[sum((s) => s.tokens), 'token record'], [sum((s) => s.subjects), 'subject'], [sum((s) => s.networks), 'network']] as const;
  const parts = counted.filter(([n]) => n > 0).map(([n, word]) => `${n} ${word}${n === 1 ? '' : 's'}`);
  return parts.length === 0 ? 'no grant' : parts.join(' and ');
}

/** `1 object`, `3 objects`: how many ProtectedScopes protect a scope, in its Events. */
function objectCount(n: number): string {
  return `${n} object${n === 1 ? '' : 's'}`;
}
