/**
 * Each object's desired status (the CRD's status subresource) and how the operator tells whether the status
 * in the API server already says it: every status field core declares (statusPatchOf), with the
 * Ready condition's transition time moving only when its status does.
 */
import { formatFieldErrors, SCOPE_FIELD, statusPatchOf, subjectsOf, type Condition, type ProtectedScope, type ProtectedScopeStatus } from '../core/index.js';
import type { ClosedBy, ObjectEntry } from './compiler.js';

/** The status the operator writes (the CRD's status schema). */
export type ScopeStatus = ProtectedScopeStatus;

export const READY = 'Ready';

export interface Desired {
  readonly name: string;
  readonly status: ScopeStatus;
  /** Key of the scope (`topic:a.b`), when the object has one. */
  readonly scopeKey?: string;
}

export function desiredFor(
  o: ProtectedScope,
  e: ObjectEntry,
  active: number,
  scopeStates: Map<string, 'Open' | 'Closed'>,
  closedBy: Map<string, ClosedBy>,
  scopeObjects: Map<string, string[]>,
  nowIso: string,
): Desired {
  const a = e.assessment;
  const name = o.metadata?.name ?? '';
  // The object's metadata.generation (the snapshot's generation is its content hash: another thing).
  const objectGeneration = o.metadata?.generation;
  const previousReady = o.status?.conditions?.find((c) => c.type === READY);
  const ready = (status: Condition['status'], reason: string, message: string): Condition => {
    // As meta.SetStatusCondition: the transition time moves only when the condition's status does.
    const same = previousReady !== undefined && previousReady.status === status;
    return {
      type: READY,
      status,
      reason,
      message,
      ...(objectGeneration !== undefined ? { observedGeneration: objectGeneration } : {}),
      lastTransitionTime: same && previousReady?.lastTransitionTime ? previousReady.lastTransitionTime : nowIso,
    };
  };
  if (!a.sanitized || !a.scope || !e.scopeKey) {
    return {
      name,
      status: {
        ...(objectGeneration !== undefined ? { observedGeneration: objectGeneration } : {}),
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
  const subjects = subjectsOf(a.sanitized).length;
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
      ...(objectGeneration !== undefined ? { observedGeneration: objectGeneration } : {}),
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
