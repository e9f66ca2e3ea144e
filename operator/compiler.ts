/**
 * The operator's incremental compiler: from the namespace's ProtectedScopes to the snapshot svc-auth loads
 * and to each object's desired status, as pure functions of the objects and the clock. An object is assessed
 * once per generation (assessment.ts) and a scope's line compiled once per change of its objects; the desired
 * statuses (desired-status.ts) follow in a second phase, so the snapshot can be written first.
 */
import {
  buildIndex,
  compareScopes,
  compileSnapshot,
  DEFAULT_CONFIG,
  enforcedState,
  generationOf,
  publicByFlag,
  subjectsOf,
  networksOf,
  type AccessIndex,
  type ClosedBy,
  type EveryAddress,
  type OpenOrClosed,
  type ProtectedScope,
  type Scope,
  type ScopeConfig,
  type Snapshot,
} from '../core/index.js';
import { finishInSlices } from '../lib/time-slice.js';
import { entryFor, type Assessment, type IncludedEntry, type ObjectEntry } from './assessment.js';
import { desiredFor, type Desired } from './desired-status.js';

export interface Compilation {
  /** Objects as they go into compileSnapshot (tokens sanitized). */
  readonly included: ProtectedScope[];
  readonly assessments: Assessment[];
  readonly desired: Map<string, Desired>;
  /** Scope key → Open/Closed, for every scope named by at least one readable object. */
  readonly scopeStates: Map<string, OpenOrClosed>;
  /** Why each closed scope is closed (core's ClosedBy, as enforcedState finds it; whyClosed words it). */
  readonly closedBy: Map<string, ClosedBy>;
  /** For a public scope that others' grants cover: their keys. */
  readonly coveredBy: Map<string, readonly string[]>;
  /** Scope key → names of its objects (sorted). */
  readonly scopeObjects: Map<string, string[]>;
  /** The earliest expiry still ahead (ms), if any: the operator reconciles again then. */
  readonly nextExpiryMs?: number;
}

interface GroupEntry {
  /** The object entries compiled into this group's line (identity-compared to detect a change). */
  readonly entries: readonly IncludedEntry[];
  readonly scope: Scope;
  /** The group's canonical snapshot line (absent when the scope is open), from core's compileSnapshot. */
  readonly line?: string;
  readonly tokens: number;
}

/** What the snapshot phase leaves for the status phase. */
export interface SnapshotPhase {
  readonly snapshot: Snapshot;
  readonly members: ReadonlyMap<string, { readonly scope: Scope; readonly entries: readonly IncludedEntry[] }>;
  readonly entries: ReadonlyMap<string, ObjectEntry>;
}

type Steps<T> = Generator<void, T>;

function runSync<T>(steps: Steps<T>): T {
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

const byName = (a: IncludedEntry, b: IncludedEntry) => (a.assessment.name < b.assessment.name ? -1 : a.assessment.name > b.assessment.name ? 1 : 0);

/**
 * Compiles a namespace incrementally: an object is assessed (validated, sanitized) once per generation and a
 * scope's snapshot line is compiled (by core's compileSnapshot, on that scope's objects alone) once per change
 * of its objects, so a one-object change costs one assessment and one line, not 10,000. The lines are then put
 * in canonical order and hashed exactly as compileSnapshot would over the whole namespace (a unit test holds
 * the two equal). Two phases, so the snapshot can be written before the 10,000 desired statuses are computed.
 */
export class Compiler {
  /**
   * `config`: svc-auth's --open-paths-by-default (path scopes without tokens report Open) and its prefixes (a path
   * spelt below the API prefix's processes/ or collections/ is flagged and never public).
   */
  constructor(private readonly config: ScopeConfig = DEFAULT_CONFIG) {}

  private objects = new Map<string, ObjectEntry>();
  private groups = new Map<string, GroupEntry>();
  /** Keys of closed groups in canonical order, kept while the set of closed scopes does not change. */
  private order: string[] = [];

  compile(objects: readonly ProtectedScope[], nowMs: number): { compiled: Compilation; snapshot: Snapshot } {
    const phase = runSync(this.snapshotSteps(objects));
    return { compiled: runSync(this.statusSteps(objects, phase, nowMs)), snapshot: phase.snapshot };
  }

  snapshotAsync(objects: readonly ProtectedScope[], sliceMs = 10): Promise<SnapshotPhase> {
    return finishInSlices(this.snapshotSteps(objects), sliceMs);
  }

  statusesAsync(objects: readonly ProtectedScope[], phase: SnapshotPhase, nowMs: number, sliceMs = 10): Promise<Compilation> {
    return finishInSlices(this.statusSteps(objects, phase, nowMs), sliceMs);
  }

  private *snapshotSteps(objects: readonly ProtectedScope[]): Steps<SnapshotPhase> {
    let n = 0;
    // 1. Per-object entries, reused while uid and generation are unchanged (status patches do not bump generation).
    const nextObjects = new Map<string, ObjectEntry>();
    for (const o of objects) {
      if ((++n & 63) === 0) yield;
      const name = o.metadata?.name ?? '';
      const cacheKey = objectCacheKey(o);
      const cached = this.objects.get(name);
      nextObjects.set(name, cached && cached.cacheKey === cacheKey ? cached : entryFor(o, cacheKey, this.config));
    }
    this.objects = nextObjects;

    // 2. Groups by scope; a group's line is recompiled only when its objects (as entries) changed.
    const members = new Map<string, { scope: Scope; entries: IncludedEntry[] }>();
    for (const e of nextObjects.values()) {
      if (!e.scopeKey) continue;
      const m = members.get(e.scopeKey);
      if (m) m.entries.push(e);
      else members.set(e.scopeKey, { scope: e.assessment.scope, entries: [e] });
    }
    const nextGroups = new Map<string, GroupEntry>();
    let orderChanged = false;
    for (const [key, { scope, entries }] of members) {
      if ((++n & 255) === 0) yield;
      if (entries.length > 1) entries.sort(byName);
      const cached = this.groups.get(key);
      if (cached && cached.entries.length === entries.length && cached.entries.every((e, i) => e === entries[i])) {
        nextGroups.set(key, cached);
        continue;
      }
      const part = compileSnapshot(entries.map((e) => e.assessment.sanitized), this.config);
      const group: GroupEntry = { entries, scope, ...(part.lines[0] !== undefined ? { line: part.lines[0] } : {}), tokens: part.tokenCount };
      if ((cached?.line !== undefined) !== (group.line !== undefined)) orderChanged = true;
      nextGroups.set(key, group);
    }
    for (const [key, g] of this.groups) if (g.line !== undefined && !nextGroups.has(key)) orderChanged = true;
    this.groups = nextGroups;

    // 3. The snapshot: closed scopes' lines in canonical (compareScopes) order; re-sorted only when that set changed.
    if (orderChanged) {
      const closed = [...nextGroups].filter(([, g]) => g.line !== undefined).sort(([, a], [, b]) => compareScopes(a.scope, b.scope));
      this.order = closed.map(([k]) => k);
      yield;
    }
    const lines: string[] = [];
    let tokenCount = 0;
    for (const key of this.order) {
      const g = nextGroups.get(key)!;
      lines.push(g.line!);
      tokenCount += g.tokens;
    }
    yield;
    const snapshot: Snapshot = { generation: generationOf(lines), scopeCount: lines.length, tokenCount, lines };
    return { snapshot, members, entries: nextObjects };
  }

  /** 4. Desired statuses (they depend on the clock and on each object's current status, so they are not cached). */
  private *statusSteps(objects: readonly ProtectedScope[], phase: SnapshotPhase, nowMs: number): Steps<Compilation> {
    let n = 0;
    const scopeStates = new Map<string, OpenOrClosed>();
    const closedBy = new Map<string, ClosedBy>();
    const coveredBy = new Map<string, readonly string[]>();
    const scopeObjects = new Map<string, string[]>();
    const everyAddress = new Map<string, EveryAddress>();
    const index = decisionIndexFor(phase, this.config);
    for (const [key, { entries }] of phase.members) {
      const sanitized = entries.map((e) => e.assessment.sanitized);
      const own = {
        tokens: entries.reduce((n, e) => n + e.tokenCount, 0),
        subjects: sanitized.reduce((n, o) => n + subjectsOf(o).length, 0),
        // The texts, not a count: a granted network that holds every address opens the scope to everyone, which the
        // status must say (core's networkReach), never "Closed".
        networkCidrs: [...new Set(sanitized.flatMap((o) => networksOf(o).map((x) => x.cidr)))],
        closedFlag: sanitized.some((o) => o.spec.closed === true),
        public: sanitized.some(publicByFlag),
      };
      const s = enforcedState(index, entries[0]!.assessment.scope, own, this.config);
      scopeStates.set(key, s.state);
      if (s.state === 'Open' && s.everyAddress !== undefined) everyAddress.set(key, s.everyAddress);
      if (s.state === 'Closed') closedBy.set(key, s.by);
      if (s.state === 'Closed' && s.governing) coveredBy.set(key, s.governing);
      scopeObjects.set(key, entries.map((e) => e.assessment.name));
    }
    let nextExpiryMs: number | undefined;
    const desired = new Map<string, Desired>();
    const nowIso = new Date(nowMs).toISOString();
    for (const o of objects) {
      if ((++n & 255) === 0) yield;
      const e = phase.entries.get(o.metadata?.name ?? '') ?? entryFor(o, objectCacheKey(o));
      const { active, next } = activeAt(e, nowMs);
      if (next !== undefined && (nextExpiryMs === undefined || next < nextExpiryMs)) nextExpiryMs = next;
      const d = desiredFor(o, e, active, { scopeStates, closedBy, coveredBy, scopeObjects, everyAddress }, nowIso);
      desired.set(d.name, d);
    }
    const assessments = [...phase.entries.values()].map((e) => e.assessment);
    const included = assessments.flatMap((a) => (a.sanitized ? [a.sanitized] : []));
    return { included, assessments, desired, scopeStates, closedBy, coveredBy, scopeObjects, ...(nextExpiryMs !== undefined ? { nextExpiryMs } : {}) };
  }
}

/**
 * The decision index of the snapshot just compiled, when a path scope's state may depend on other scopes (an object
 * asks for public, or its path is in a refused form): built only then, as 10,000 scopes take a while.
 */
function decisionIndexFor(phase: SnapshotPhase, prefixes: ScopeConfig): AccessIndex | undefined {
  const flagged: string[] = [];
  for (const e of phase.entries.values()) {
    const a = e.assessment;
    if (((a.valid && a.refused !== undefined) || a.obj.spec?.public === true) && a.scope?.kind === 'path') flagged.push(a.scope.value);
  }
  if (flagged.length === 0) return undefined;
  // Only path scopes can cover an execution, a stations or jobs write, or a path outside the WAF and the API's
  // collections: the token-heavy topic and dataset lines are left out of the index unless one is needed.
  const lines = flagged.some((value) => mayCoverWithData(value, prefixes)) ? phase.snapshot.lines : phase.snapshot.lines.filter((l) => l.startsWith('{"kind":"path"'));
  const built = buildIndex(phase.snapshot.generation, lines);
  return built.ok ? built.value : undefined;
}

/** Whether a topic or dataset scope may govern a path scope's own request: under the WAF, or an API collection. */
function mayCoverWithData(value: string, prefixes: ScopeConfig): boolean {
  const segments = value.toLowerCase().split('/');
  const under = (prefix: readonly string[]) => prefix.every((p, i) => segments[i] === p);
  const resource = segments[prefixes.apiPrefix.length];
  return under(prefixes.wafPrefix) || (under(prefixes.apiPrefix) && resource === 'collections' && segments[prefixes.apiPrefix.length + 1] !== 'stations');
}

function objectCacheKey(o: ProtectedScope): string {
  const m = o.metadata ?? ({} as ProtectedScope['metadata']);
  // generation moves with every spec change; without one (never on a real API server) fall back to resourceVersion.
  return `${m.name}|${m.uid ?? ''}|${m.generation ?? `rv${m.resourceVersion ?? Math.random()}`}`;
}

/** Tokens not expired at nowMs (as core's isExpired: expired from the instant on), and the next expiry ahead. */
function activeAt(e: ObjectEntry, nowMs: number): { active: number; next?: number } {
  let lo = 0;
  let hi = e.expiries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (e.expiries[mid]! <= nowMs) lo = mid + 1;
    else hi = mid;
  }
  const next = e.expiries[lo];
  return { active: e.noExpiry + e.expiries.length - lo, ...(next !== undefined ? { next } : {}) };
}

/**
 * One object's desired status at nowMs from the last compile, or undefined when the object changed since
 * (a new generation: the next compile covers it).
 */
export function desiredNow(o: ProtectedScope, phase: SnapshotPhase, compiled: Compilation, nowMs: number): Desired | undefined {
  const e = phase.entries.get(o.metadata?.name ?? '');
  if (!e || e.cacheKey !== objectCacheKey(o)) return undefined;
  return desiredFor(o, e, activeAt(e, nowMs).active, compiled, new Date(nowMs).toISOString());
}

/**
 * Assesses all objects of the namespace and computes each one's desired status at nowMs (a one-off Compiler).
 * lastTransitionTime comes from the object's current Ready condition when its status is unchanged, else nowMs.
 */
export function computeDesired(objects: readonly ProtectedScope[], nowMs: number, config: ScopeConfig = DEFAULT_CONFIG): Compilation {
  return new Compiler(config).compile(objects, nowMs).compiled;
}
