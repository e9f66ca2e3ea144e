/**
 * Each object's desired status (the CRD's status subresource) and how the operator tells whether the status
 * in the API server already says it: every status field core declares (statusPatchOf), with each condition's
 * transition time moving only when its status does (conditions.ts says what each condition means).
 */
import { closedAside, everyAddressWords, formatFieldErrors, networksOf, SCOPE_FIELD, statusPatchOf, subjectsOf, type ClosedBy, type EveryAddress, type OpenOrClosed, type ProtectedScope, type ProtectedScopeStatus } from '../core/index.js';
import type { ObjectEntry } from './assessment.js';
import { conditionsFor, READY, RECONCILING, STALLED, type ConditionSpec, type PendingReason, type PermanentReason } from './conditions.js';

/** The status the operator writes (the CRD's status schema). */
export type ScopeStatus = ProtectedScopeStatus;

export interface Desired {
  readonly name: string;
  readonly status: ScopeStatus;
  /** Key of the scope (`topic:a.b`), when the object has one. */
  readonly scopeKey?: string;
}

/** The scope-wide facts an object's status repeats: its scope's state, why it is closed, its objects. */
interface ScopeFacts {
  readonly scopeStates: Map<string, OpenOrClosed>;
  readonly closedBy: Map<string, ClosedBy>;
  /** For a public scope closed because others' grants cover it: their keys. */
  readonly coveredBy?: Map<string, readonly string[]>;
  readonly scopeObjects: Map<string, string[]>;
  /** Scopes open because a granted network holds every address (of a family, or of both). */
  readonly everyAddress?: Map<string, EveryAddress>;
}

/** One object's desired status once a published snapshot holds its generation: invalid and left out, or its scope's state and its own token counts. */
export function desiredFor(o: ProtectedScope, e: ObjectEntry, active: number, facts: ScopeFacts, nowIso: string): Desired {
  const name = o.metadata?.name ?? '';
  // The object's metadata.generation (the snapshot's generation is its content hash: another thing).
  const objectGeneration = o.metadata?.generation;
  const observed = objectGeneration !== undefined ? { observedGeneration: objectGeneration } : {};
  const conditions = (specs: readonly ConditionSpec[]) => conditionsFor(o.status?.conditions, specs, objectGeneration, nowIso);
  if (e.scopeKey === undefined) {
    const errors = formatFieldErrors(e.assessment.errors);
    return { name, status: { ...observed, conditions: conditions(notCompiled('Invalid', `left out of the snapshot: ${errors}`, errors)) } };
  }
  const a = e.assessment;
  const key = e.scopeKey;
  const state = facts.scopeStates.get(key) ?? 'Open';
  const others = (facts.scopeObjects.get(key) ?? []).filter((n) => n !== name);
  const subjects = subjectsOf(a.sanitized).length;
  const networks = networksOf(a.sanitized).length;
  const summary = summaryOf(state, facts.closedBy.get(key), e.tokenCount, active, { subjects, networks }, others.length, facts.coveredBy?.get(key), facts.everyAddress?.get(key));
  const specs =
    !a.valid
      ? notCompiled('Invalid', `${formatFieldErrors(a.errors)}; unreadable token records are kept as expired placeholders, so the scope stays closed (${summary})`, formatFieldErrors(a.errors))
      // A path svc-auth does not read as written: compiled, never public, flagged until the object is replaced.
      : a.refused !== undefined
        ? notCompiled(a.refused.reason, `spec.path: ${a.refused.message} (${summary})`, `spec.path: ${a.refused.message}`)
        : [{ type: READY, status: 'True', reason: 'Compiled', message: summary } as const];
  return {
    name,
    scopeKey: key,
    status: {
      ...observed,
      scope: a.scope.value,
      kind: SCOPE_FIELD[a.scope.kind],
      state,
      tokens: e.tokenCount,
      activeTokens: active,
      ...(subjects > 0 ? { subjects } : {}),
      ...(networks > 0 ? { networks } : {}),
      conditions: conditions(specs),
      ...(others.length > 0 ? { mergedWith: others } : {}),
    },
  };
}

/**
 * A spec that cannot compile as it stands: Ready False (its message as it always was: what is wrong and what is
 * enforced instead) and Stalled True with the same reason and only what is wrong, which is what kstatus shows for a
 * Failed object.
 */
function notCompiled(reason: PermanentReason, readyMessage: string, stalledMessage: string): ConditionSpec[] {
  return [
    { type: READY, status: 'False', reason, message: readyMessage },
    { type: STALLED, status: 'True', reason, message: stalledMessage },
  ];
}

/**
 * The status of an object whose current generation no published snapshot holds yet: its status fields as they are
 * (they still describe status.observedGeneration, which is what svc-auth enforces), Ready False and Reconciling True
 * for the new generation, and no Stalled (that verdict was about an older generation). Undefined when the status
 * already describes the current generation: published before (by this process or an earlier one), so nothing is
 * pending and a Ready object never turns Reconciling without a new generation.
 */
export function pendingStatus(o: ProtectedScope, reason: PendingReason, why: string, nowIso: string): ScopeStatus | undefined {
  const generation = o.metadata?.generation;
  if (generation === undefined || o.status?.observedGeneration === generation) return undefined;
  const { conditions: previous, ...fields } = o.status ?? {};
  const message = `generation ${generation} is not in a published snapshot yet: ${why}`;
  return {
    ...fields,
    conditions: conditionsFor(previous, [
      { type: READY, status: 'False', reason, message },
      { type: RECONCILING, status: 'True', reason, message },
    ], generation, nowIso),
  };
}

/** The Ready message: the scope's state and why, this object's tokens, subjects and networks, the objects it shares the scope with. */
function summaryOf(state: OpenOrClosed, by: ClosedBy | undefined, tokens: number, active: number, grants: { subjects: number; networks: number }, others: number, coveredBy?: readonly string[], every?: EveryAddress): string {
  const reason = state === 'Closed' && by !== undefined ? closedAside({ by, governing: coveredBy })
    : every !== undefined ? ` to ${everyAddressWords(every)} (a granted network holds ${every === 'all' ? 'them all' : 'every one of them'})` : '';
  const count = (n: number, word: string) => (n > 0 ? ` and ${n} ${word}${n === 1 ? '' : 's'}` : '');
  const granted = `${count(grants.subjects, 'subject')}${count(grants.networks, 'network')}`;
  const merged = others > 0 ? `; merged with ${others} other object${others === 1 ? '' : 's'} for the same scope` : '';
  return `scope ${state}${reason}; this object has ${tokens} token${tokens === 1 ? '' : 's'} (${active} active)${granted}${merged}`;
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
