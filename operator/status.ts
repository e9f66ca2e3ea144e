import {
  stateOf,
  HASH_PATTERN,
  SCOPE_FIELD,
  checkScope,
  checkSubject,
  mergeSubjects,
  subjectsOf,
  compareScopes,
  compileSnapshot,
  formatFieldErrors,
  generationOf,
  isDateTime,
  scopeKey,
  scopeOf,
  tokensOf,
  statusPatchOf,
  validateProtectedScope,
  type Condition,
  type FieldError,
  type ProtectedScope,
  type ProtectedScopeStatus,
  type Scope,
  type Snapshot,
  type TokenRecord,
} from '../core/index.js';

/**
 * What the operator makes of each ProtectedScope, as pure functions: which objects (and tokens) go into the
 * snapshot, each object's desired status, and when the next token expires.
 *
 * Fail closed. The CRD refuses malformed objects, but if one gets in anyway (an older CRD, a restore from
 * backup) a malformed token record must not silently open its scope: a record whose hash or expiry cannot
 * be read is replaced by an already-expired placeholder no token hashes to, so the scope stays Closed and
 * the record grants nothing. Only an object whose scope itself cannot be read is left out.
 */
export const PLACEHOLDER_HASH = `sha256:${'0'.repeat(64)}` as const;
export const EPOCH = '1970-01-01T00:00:00.000Z';

export interface Assessment {
  readonly obj: ProtectedScope;
  readonly name: string;
  /** The scope, when the object names exactly one well-formed scope. */
  readonly scope?: Scope;
  /** Validation problems (empty for a valid object). */
  readonly errors: readonly FieldError[];
  /** The object as compiled: tokens sanitized as above; undefined when the object is left out. */
  readonly compiled?: ProtectedScope;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function assess(obj: ProtectedScope): Assessment {
  const name = obj.metadata?.name ?? '';
  const checked = validateProtectedScope(obj);
  if (checked.ok) return { obj, name, scope: scopeOf(obj.spec), errors: [], compiled: obj };
  const errors = checked.error;
  const spec = isRecord(obj.spec) ? (obj.spec as Record<string, unknown>) : undefined;
  const fields = spec ? (Object.entries(SCOPE_FIELD) as [Scope['kind'], string][]).filter(([, f]) => spec[f] !== undefined) : [];
  if (fields.length !== 1) return { obj, name, errors };
  const [kind, field] = fields[0]!;
  const value = spec![field];
  const checkedScope = typeof value === 'string' ? checkScope({ kind, value }) : undefined;
  if (!checkedScope?.ok) return { obj, name, errors };
  const scope = checkedScope.value;
  const raw = Array.isArray(spec!.tokens) ? (spec!.tokens as unknown[]) : spec!.tokens === undefined ? [] : [spec!.tokens];
  const tokens: TokenRecord[] = raw.map((t, i) => {
    const r = isRecord(t) ? t : {};
    const hashOk = typeof r.hash === 'string' && HASH_PATTERN.test(r.hash);
    const expiryOk = r.expiresAt === undefined || isDateTime(r.expiresAt);
    const id = typeof r.id === 'string' ? r.id : `invalid-${i}`;
    const createdAt = isDateTime(r.createdAt) ? r.createdAt : EPOCH;
    if (!hashOk || !expiryOk) return { id, hash: PLACEHOLDER_HASH, createdAt, expiresAt: EPOCH };
    return { id, hash: r.hash as TokenRecord['hash'], createdAt, ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt as string } : {}) };
  });
  // Subjects as for tokens: the valid ones still grant; a bad one keeps the scope closed (closed: true), as a
  // bad token record does through its expired placeholder.
  const rawSubjects = Array.isArray(spec!.subjects) ? (spec!.subjects as unknown[]) : spec!.subjects === undefined ? [] : [spec!.subjects];
  const checkedSubjects = rawSubjects.map((x) => (isRecord(x) ? checkSubject(x.kind, x.name) : undefined));
  const subjects = mergeSubjects([checkedSubjects.flatMap((c) => (c?.ok ? [c.value] : []))]);
  const badSubject = checkedSubjects.some((c) => !c?.ok);
  // `closed: true` survives the sanitizing: an invalid object never opens what it closed.
  const closed = spec!.closed === true || badSubject;
  const compiled = {
    ...obj, spec: { [field]: scope.value, tokens, ...(closed ? { closed: true } : {}), ...(subjects.length > 0 ? { subjects } : {}) },
  } as unknown as ProtectedScope;
  return { obj, name, scope, errors, compiled };
}

/** The status the operator writes (the CRD's status schema). */
export type ScopeStatus = ProtectedScopeStatus;

export const READY = 'Ready';

export interface Desired {
  readonly name: string;
  readonly status: ScopeStatus;
  /** Key of the scope (`topic:a.b`), when the object has one. */
  readonly scopeKey?: string;
}

export interface Compiled {
  /** Objects as they go into compileSnapshot (tokens sanitized). */
  readonly included: ProtectedScope[];
  readonly assessments: Assessment[];
  readonly desired: Map<string, Desired>;
  /** Scope key → Open/Closed, for every scope named by at least one readable object. */
  readonly scopeStates: Map<string, 'Open' | 'Closed'>;
  /** Why each closed scope is closed (core's stateOf): tokens, `closed: true`, or the default of path scopes. */
  readonly closedBy: Map<string, 'tokens' | 'subjects' | 'flag' | 'default'>;
  /** Scope key → names of its objects (sorted). */
  readonly scopeObjects: Map<string, string[]>;
  /** The earliest expiry still ahead (ms), if any: the operator reconciles again then. */
  readonly nextExpiryMs?: number;
}

/** What the compiler keeps of one object between reconciles: everything that depends on its spec only. */
export interface ObjectEntry {
  readonly cacheKey: string;
  readonly assessment: Assessment;
  readonly scopeKey?: string;
  readonly tokenCount: number;
  readonly noExpiry: number;
  /** Expiry instants (ms), ascending. */
  readonly expiries: readonly number[];
}

interface GroupEntry {
  /** The object entries compiled into this group's line (identity-compared to detect a change). */
  readonly entries: readonly ObjectEntry[];
  readonly scope: Scope;
  /** The group's canonical snapshot line (absent when the scope is open), from core's compileSnapshot. */
  readonly line?: string;
  readonly tokens: number;
}

/** What the snapshot phase leaves for the status phase. */
export interface SnapshotPhase {
  readonly snapshot: Snapshot;
  readonly members: ReadonlyMap<string, { readonly scope: Scope; readonly entries: readonly ObjectEntry[] }>;
  readonly entries: ReadonlyMap<string, ObjectEntry>;
}

type Steps<T> = Generator<void, T>;

function runSync<T>(steps: Steps<T>): T {
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** Runs a generator, yielding to the event loop every sliceMs (health checks and watches must not wait). */
async function runSliced<T>(steps: Steps<T>, sliceMs: number): Promise<T> {
  let deadline = performance.now() + sliceMs;
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() >= deadline) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      deadline = performance.now() + sliceMs;
    }
  }
}

const byName = (a: ObjectEntry, b: ObjectEntry) => (a.assessment.name < b.assessment.name ? -1 : a.assessment.name > b.assessment.name ? 1 : 0);

/**
 * Compiles a namespace incrementally: an object is assessed (validated, sanitized) once per generation and a
 * scope's snapshot line is compiled (by core's compileSnapshot, on that scope's objects alone) once per change
 * of its objects, so a one-object change costs one assessment and one line, not 10,000. The lines are then put
 * in canonical order and hashed exactly as compileSnapshot would over the whole namespace (a unit test holds
 * the two equal). Two phases, so the snapshot can be written before the 10,000 desired statuses are computed.
 */
export class Compiler {
  /** `openPathsByDefault`: svc-auth's --open-paths-by-default, so path scopes without tokens report Open. */
  constructor(private readonly openPathsByDefault = false) {}

  private objects = new Map<string, ObjectEntry>();
  private groups = new Map<string, GroupEntry>();
  /** Keys of closed groups in canonical order, kept while the set of closed scopes does not change. */
  private order: string[] = [];

  compile(objects: readonly ProtectedScope[], nowMs: number): { compiled: Compiled; snapshot: Snapshot } {
    const phase = runSync(this.snapshotSteps(objects));
    return { compiled: runSync(this.statusSteps(objects, phase, nowMs)), snapshot: phase.snapshot };
  }

  snapshotAsync(objects: readonly ProtectedScope[], sliceMs = 10): Promise<SnapshotPhase> {
    return runSliced(this.snapshotSteps(objects), sliceMs);
  }

  statusesAsync(objects: readonly ProtectedScope[], phase: SnapshotPhase, nowMs: number, sliceMs = 10): Promise<Compiled> {
    return runSliced(this.statusSteps(objects, phase, nowMs), sliceMs);
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
      nextObjects.set(name, cached && cached.cacheKey === cacheKey ? cached : entryFor(o, cacheKey));
    }
    this.objects = nextObjects;

    // 2. Groups by scope; a group's line is recompiled only when its objects (as entries) changed.
    const members = new Map<string, { scope: Scope; entries: ObjectEntry[] }>();
    for (const e of nextObjects.values()) {
      if (!e.scopeKey) continue;
      const m = members.get(e.scopeKey);
      if (m) m.entries.push(e);
      else members.set(e.scopeKey, { scope: e.assessment.scope!, entries: [e] });
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
      const part = compileSnapshot(entries.map((e) => e.assessment.compiled!));
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
  private *statusSteps(objects: readonly ProtectedScope[], phase: SnapshotPhase, nowMs: number): Steps<Compiled> {
    let n = 0;
    const scopeStates = new Map<string, 'Open' | 'Closed'>();
    const closedBy = new Map<string, 'tokens' | 'subjects' | 'flag' | 'default'>();
    const scopeObjects = new Map<string, string[]>();
    for (const [key, { entries }] of phase.members) {
      const tokens = entries.reduce((n, e) => n + e.tokenCount, 0);
      const subjects = entries.reduce((n, e) => n + subjectsOf(e.assessment.compiled!).length, 0);
      const flag = entries.some((e) => e.assessment.compiled?.spec.closed === true);
      const s = stateOf(entries[0]!.assessment.scope!, tokens, flag, this.openPathsByDefault, subjects);
      scopeStates.set(key, s.state);
      if (s.state === 'Closed') closedBy.set(key, s.by);
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
      const d = desiredFor(o, e, active, scopeStates, closedBy, scopeObjects, nowIso);
      desired.set(d.name, d);
    }
    const assessments = [...phase.entries.values()].map((e) => e.assessment);
    const included = assessments.flatMap((a) => (a.compiled ? [a.compiled] : []));
    return { included, assessments, desired, scopeStates, closedBy, scopeObjects, ...(nextExpiryMs !== undefined ? { nextExpiryMs } : {}) };
  }
}

function objectCacheKey(o: ProtectedScope): string {
  const m = o.metadata ?? ({} as ProtectedScope['metadata']);
  // generation moves with every spec change; without one (never on a real API server) fall back to resourceVersion.
  return `${m.name}|${m.uid ?? ''}|${m.generation ?? `rv${m.resourceVersion ?? Math.random()}`}`;
}

function entryFor(o: ProtectedScope, cacheKey: string): ObjectEntry {
  const assessment = assess(o);
  if (!assessment.compiled || !assessment.scope) return { cacheKey, assessment, tokenCount: 0, noExpiry: 0, expiries: [] };
  const tokens = tokensOf(assessment.compiled);
  const expiries: number[] = [];
  let noExpiry = 0;
  for (const t of tokens) {
    if (t.expiresAt === undefined) noExpiry++;
    else expiries.push(Date.parse(t.expiresAt));
  }
  expiries.sort((a, b) => a - b);
  return { cacheKey, assessment, scopeKey: scopeKey(assessment.scope), tokenCount: tokens.length, noExpiry, expiries };
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

function desiredFor(
  o: ProtectedScope,
  e: ObjectEntry,
  active: number,
  scopeStates: Map<string, 'Open' | 'Closed'>,
  closedBy: Map<string, 'tokens' | 'subjects' | 'flag' | 'default'>,
  scopeObjects: Map<string, string[]>,
  nowIso: string,
): Desired {
  const a = e.assessment;
  const name = o.metadata?.name ?? '';
  const generation = o.metadata?.generation;
  const previousReady = o.status?.conditions?.find((c) => c.type === READY);
  const ready = (status: Condition['status'], reason: string, message: string): Condition => {
    // As meta.SetStatusCondition: the transition time moves only when the condition's status does.
    const same = previousReady !== undefined && previousReady.status === status;
    return {
      type: READY,
      status,
      reason,
      message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: same && previousReady?.lastTransitionTime ? previousReady.lastTransitionTime : nowIso,
    };
  };
  if (!a.compiled || !a.scope || !e.scopeKey) {
    return {
      name,
      status: {
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
        conditions: [ready('False', 'Invalid', `left out of the snapshot: ${formatFieldErrors(a.errors)}`.slice(0, 2000))],
      },
    };
  }
  const key = e.scopeKey;
  const tokens = e.tokenCount;
  const state = scopeStates.get(key) ?? 'Open';
  const others = (scopeObjects.get(key) ?? []).filter((n) => n !== name);
  const why = closedBy.get(key);
  const reason = why === 'flag' ? ' (closed: true)' : why === 'default' ? ' (default: nothing executes or writes until a token grants it)' : '';
  const subjects = subjectsOf(a.compiled).length;
  const granted = subjects > 0 ? ` and ${subjects} subject${subjects === 1 ? '' : 's'}` : '';
  const summary = `scope ${state}${reason}; this object has ${tokens} token${tokens === 1 ? '' : 's'} (${active} active)${granted}`;
  const merged = others.length > 0 ? `; merged with ${others.length} other object${others.length === 1 ? '' : 's'} for the same scope` : '';
  const condition =
    a.errors.length === 0
      ? ready('True', 'Compiled', `${summary}${merged}`)
      : ready('False', 'Invalid', `${formatFieldErrors(a.errors)}; unreadable token records are kept as expired placeholders, so the scope stays closed (${summary}${merged})`.slice(0, 2000));
  return {
    name,
    scopeKey: key,
    status: {
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      scope: a.scope.value,
      kind: SCOPE_FIELD[a.scope.kind],
      state,
      tokens,
      activeTokens: active,
      ...(subjects > 0 ? { subjects } : {}),
      conditions: [condition],
      ...(others.length > 0 ? { mergedWith: others } : {}),
    },
  };
}

/**
 * One object's desired status at nowMs from the last compile, or undefined when the object changed since
 * (a new generation: the next compile covers it).
 */
export function desiredNow(o: ProtectedScope, phase: SnapshotPhase, compiled: Compiled, nowMs: number): Desired | undefined {
  const e = phase.entries.get(o.metadata?.name ?? '');
  if (!e || e.cacheKey !== objectCacheKey(o)) return undefined;
  return desiredFor(o, e, activeAt(e, nowMs).active, compiled.scopeStates, compiled.closedBy, compiled.scopeObjects, new Date(nowMs).toISOString());
}

/**
 * Assesses all objects of the namespace and computes each one's desired status at nowMs (a one-off Compiler).
 * lastTransitionTime comes from the object's current Ready condition when its status is unchanged, else nowMs.
 */
export function computeDesired(objects: readonly ProtectedScope[], nowMs: number, openPathsByDefault = false): Compiled {
  return new Compiler(openPathsByDefault).compile(objects, nowMs).compiled;
}

/** Canonical forms of statuses already seen (informer objects are not mutated, so identity is a safe key). */
const canonicalCache = new WeakMap<object, string>();

/** The status in a canonical form for comparison: no lastTransitionTime, sorted lists, no empty mergedWith. */
function canonical(s: ScopeStatus | undefined): string {
  if (!s) return '{}';
  let c = canonicalCache.get(s);
  if (c === undefined) {
    c = canonicalUncached(s);
    canonicalCache.set(s, c);
  }
  return c;
}

function canonicalUncached(s: ScopeStatus): string {
  // Every status field of the CRD (statusPatchOf), with what the API server may vary left out or ordered.
  const fields = statusPatchOf(s);
  const conditions = [...(s.conditions ?? [])]
    .map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message, observedGeneration: c.observedGeneration ?? null }))
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  const mergedWith = s.mergedWith && s.mergedWith.length > 0 ? [...s.mergedWith].sort() : null;
  return JSON.stringify({ ...fields, conditions, mergedWith });
}

/** True when the current status already says what the desired one says (lastTransitionTime aside). */
export function statusEquals(current: ScopeStatus | undefined, desired: ScopeStatus | undefined): boolean {
  return canonical(current) === canonical(desired);
}

/** The merge patch that turns any current status into the desired one: every status field, absent ones nulled. */
export function statusPatch(desired: ScopeStatus): Record<string, unknown> {
  return statusPatchOf(desired);
}
