import {
  HASH_PATTERN,
  SCOPE_FIELD,
  checkScope,
  formatFieldErrors,
  groupByScope,
  isDateTime,
  isExpired,
  scopeKey,
  scopeOf,
  tokensOf,
  validateProtectedScope,
  type Condition,
  type FieldError,
  type ProtectedScope,
  type Scope,
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
  const compiled = { ...obj, spec: { [field]: scope.value, tokens } } as unknown as ProtectedScope;
  return { obj, name, scope, errors, compiled };
}

/** The status the operator writes (the CRD's status schema). */
export interface ScopeStatus {
  readonly observedGeneration?: number;
  readonly scope?: string;
  /** The spec field that holds the scope (topicHierarchy, metadataId or path), as the CRD's printer column shows. */
  readonly kind?: string;
  readonly state?: 'Open' | 'Closed';
  readonly tokens?: number;
  readonly activeTokens?: number;
  readonly conditions?: readonly Condition[];
  readonly mergedWith?: readonly string[];
}

export const READY = 'Ready';

export interface Desired {
  readonly name: string;
  readonly status: ScopeStatus;
  /** Key of the scope (`topic:a.b`), when the object has one. */
  readonly scopeKey?: string;
}

export interface Compiled {
  /** Objects as they go into compileSnapshot. */
  readonly included: ProtectedScope[];
  readonly assessments: Assessment[];
  readonly desired: Map<string, Desired>;
  /** Scope key → Open/Closed, for every scope named by at least one readable object. */
  readonly scopeStates: Map<string, 'Open' | 'Closed'>;
  /** Scope key → names of its objects (sorted). */
  readonly scopeObjects: Map<string, string[]>;
  /** The earliest expiry still ahead (ms), if any: the operator reconciles again then. */
  readonly nextExpiryMs?: number;
}

/**
 * Assesses all objects of the namespace and computes each one's desired status at nowMs. lastTransitionTime
 * comes from the object's current Ready condition when its status is unchanged, else nowMs.
 */
export function computeDesired(objects: readonly ProtectedScope[], nowMs: number): Compiled {
  const assessments = objects.map(assess);
  const included = assessments.flatMap((a) => (a.compiled ? [a.compiled] : []));
  const groups = groupByScope(included);
  const scopeStates = new Map<string, 'Open' | 'Closed'>();
  const scopeObjects = new Map<string, string[]>();
  for (const [key, group] of groups) {
    scopeStates.set(key, group.some((o) => tokensOf(o).length > 0) ? 'Closed' : 'Open');
    scopeObjects.set(key, group.map((o) => o.metadata.name).sort());
  }
  let nextExpiryMs: number | undefined;
  const desired = new Map<string, Desired>();
  const nowIso = new Date(nowMs).toISOString();
  for (const a of assessments) {
    const generation = a.obj.metadata?.generation;
    const previousReady = a.obj.status?.conditions?.find((c) => c.type === READY);
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
    if (!a.compiled || !a.scope) {
      desired.set(a.name, {
        name: a.name,
        status: {
          ...(generation !== undefined ? { observedGeneration: generation } : {}),
          conditions: [ready('False', 'Invalid', `left out of the snapshot: ${formatFieldErrors(a.errors)}`.slice(0, 2000))],
        },
      });
      continue;
    }
    const key = scopeKey(a.scope);
    const tokens = tokensOf(a.compiled);
    let active = 0;
    for (const t of tokens) {
      if (isExpired(t, nowMs)) continue;
      active++;
      if (t.expiresAt !== undefined) {
        const at = Date.parse(t.expiresAt);
        if (nextExpiryMs === undefined || at < nextExpiryMs) nextExpiryMs = at;
      }
    }
    const state = scopeStates.get(key) ?? 'Open';
    const others = (scopeObjects.get(key) ?? []).filter((n) => n !== a.name);
    const summary = `scope ${state}; this object has ${tokens.length} token${tokens.length === 1 ? '' : 's'} (${active} active)`;
    const merged = others.length > 0 ? `; merged with ${others.length} other object${others.length === 1 ? '' : 's'} for the same scope` : '';
    const condition =
      a.errors.length === 0
        ? ready('True', 'Compiled', `${summary}${merged}`)
        : ready('False', 'Invalid', `${formatFieldErrors(a.errors)}; unreadable token records are kept as expired placeholders, so the scope stays closed (${summary}${merged})`.slice(0, 2000));
    desired.set(a.name, {
      name: a.name,
      scopeKey: key,
      status: {
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
        scope: a.scope.value,
        kind: SCOPE_FIELD[a.scope.kind],
        state,
        tokens: tokens.length,
        activeTokens: active,
        conditions: [condition],
        ...(others.length > 0 ? { mergedWith: others } : {}),
      },
    });
  }
  return { included, assessments, desired, scopeStates, scopeObjects, ...(nextExpiryMs !== undefined ? { nextExpiryMs } : {}) };
}

/** The status in a canonical form for comparison: no lastTransitionTime, sorted lists, no empty mergedWith. */
function canonical(s: ScopeStatus | undefined): string {
  if (!s) return '{}';
  const conditions = [...(s.conditions ?? [])]
    .map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message, observedGeneration: c.observedGeneration ?? null }))
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  return JSON.stringify({
    observedGeneration: s.observedGeneration ?? null,
    scope: s.scope ?? null,
    kind: s.kind ?? null,
    state: s.state ?? null,
    tokens: s.tokens ?? null,
    activeTokens: s.activeTokens ?? null,
    conditions,
    mergedWith: s.mergedWith && s.mergedWith.length > 0 ? [...s.mergedWith].sort() : null,
  });
}

/** True when the current status already says what the desired one says (lastTransitionTime aside). */
export function statusEquals(current: ScopeStatus | undefined, desired: ScopeStatus | undefined): boolean {
  return canonical(current) === canonical(desired);
}

/** The merge patch that turns any current status into the desired one (absent fields are nulled). */
export function statusPatch(desired: ScopeStatus): Record<string, unknown> {
  return {
    observedGeneration: desired.observedGeneration ?? null,
    scope: desired.scope ?? null,
    kind: desired.kind ?? null,
    state: desired.state ?? null,
    tokens: desired.tokens ?? null,
    activeTokens: desired.activeTokens ?? null,
    conditions: desired.conditions ?? null,
    mergedWith: desired.mergedWith && desired.mergedWith.length > 0 ? desired.mergedWith : null,
  };
}
