/**
 * The conditions the operator writes on a ProtectedScope, in the shape GitOps tools read them: kstatus (what Flux's
 * wait and `healthChecks` judge by) and the Argo CD health check we ship (charts/svc/files/argocd/health.lua).
 *
 * - Ready: True once the object's generation is compiled into a snapshot the operator has published; False while it
 *   is not, with the reason. Always present once the operator has written a status.
 * - Reconciling: True from a new generation to the snapshot that holds it; absent otherwise (kstatus's
 *   "abnormal-true" convention: only the presence of True means anything).
 * - Stalled: True while the spec can never compile as it stands (kstatus reads it as Failed, so a Flux wait fails
 *   at once instead of at its timeout); absent otherwise, so a new generation that fixes the spec removes it.
 *
 * Each carries the generation it speaks for (observedGeneration) and a lastTransitionTime that moves only when its
 * status does, as apimachinery's meta.SetStatusCondition keeps it.
 */
import type { Condition } from '../core/index.js';

export const READY = 'Ready';
export const RECONCILING = 'Reconciling';
export const STALLED = 'Stalled';

/**
 * Reasons for a spec that cannot compile as it stands, whatever the operator retries: Ready=False and Stalled=True
 * carry them. `Invalid`: fields the API server should have refused (an older CRD, a restore); `RefusedPath`: a path
 * svc-auth does not read as written; `PublicRefused`: public at or above a prefix. Scope fields are immutable, so the
 * last two only go with the object (replace it under another name).
 */
export const PERMANENT_REASONS = ['Invalid', 'RefusedPath', 'PublicRefused'] as const;
export type PermanentReason = (typeof PERMANENT_REASONS)[number];

/**
 * Reasons while a new generation waits for its snapshot (Ready=False and Reconciling=True): the compile has not
 * finished yet, or the last snapshot write failed and is being retried.
 */
export const PENDING_REASONS = ['SnapshotPending', 'SnapshotWriteFailed'] as const;
export type PendingReason = (typeof PENDING_REASONS)[number];

/** A condition as the operator decides it; its transition time comes from the object's current conditions. */
export type ConditionSpec = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * The conditions `specs` as they are written: each with the object's generation and the lastTransitionTime of the
 * object's current condition of its type when the status is unchanged (else now). Types not in `specs` go.
 */
export function conditionsFor(previous: readonly Condition[] | undefined, specs: readonly ConditionSpec[], generation: number | undefined, nowIso: string): Condition[] {
  return specs.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    return {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message.slice(0, MAX_MESSAGE),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: before !== undefined && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : nowIso,
    };
  });
}

/** Messages are kept short enough to read in `kubectl describe` and an Event (the CRD allows 32 KiB). */
const MAX_MESSAGE = 2000;

/** The condition of a type in a status's conditions, if any. */
export function conditionOf(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
