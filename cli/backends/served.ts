/**
 * Whether an svc-operator serves a namespace: what the CLI checks before it writes ProtectedScopes there, so that it
 * never reports a scope as closed where nothing enforces it (docs/cli-safety.md). The evidence, each read where RBAC
 * lets the user read it:
 *
 * - the chart's record: a ConfigMap per release in kube-public (`svc-served.<namespace>`, label
 *   `auth.svc.io/served-namespace`), readable by every authenticated user (charts/svc/templates/served-namespace.yaml);
 * - the snapshot index ConfigMap svc-operator writes in the namespace (label `auth.svc.io/snapshot-role=index`);
 * - svc-operator's leader-election Lease (`<snapshot name>-operator`), fresh or not;
 * - ProtectedScopes of the namespace whose status says an operator observed them (`status.observedGeneration`).
 *
 * Pure: the Kubernetes backend reads the evidence, this decides.
 */

/** The namespace the chart's records live in: world-readable by convention, and by the chart's Role there. */
export const RECORD_NAMESPACE = 'kube-public';
/** The label of a record; its value is the namespace the release's svc-operator serves. */
export const SERVED_LABEL = 'auth.svc.io/served-namespace';
/** A Lease not renewed for this long means its operator is gone (it renews every 2 s and gives up after 15 s). */
export const STALE_LEASE_MS = 60_000;

/** What a record says: the namespace served, the snapshot's name, and how long a proxy may cache an allow. */
export interface ServedRecord {
  readonly namespace: string;
  readonly snapshotName?: string;
  readonly cacheMaxAge?: number;
  /** `kube-public/svc-served.svc`, for messages. */
  readonly source: string;
}

/** A read that may be forbidden or fail: the value, or why there is none. */
export type Probe<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

export interface Evidence {
  readonly namespace: string;
  /** Every record in kube-public. */
  readonly records: Probe<readonly ServedRecord[]>;
  /** The snapshot index ConfigMaps of the namespace: the snapshot name of each. */
  readonly snapshots: Probe<readonly string[]>;
  /** The operator's Lease, when one was read: undefined when there is none (or it could not be read). */
  readonly lease?: { readonly name: string; readonly holderIdentity?: string; readonly renewTimeMs?: number };
  /** ProtectedScopes of the namespace whose status says an operator observed them. */
  readonly observedObjects: number;
  readonly nowMs: number;
}

export type Verdict =
  | { readonly served: true; readonly how: string }
  | { readonly served: false; readonly why: string }
  | { readonly served: 'unknown'; readonly why: string };

/** A ConfigMap of kube-public as a record, or undefined when it is not one (no namespace named). */
export function recordOf(cm: { name: string; namespace: string; labels: Readonly<Record<string, string>>; data: Readonly<Record<string, string>> }): ServedRecord | undefined {
  const namespace = (cm.data.namespace ?? cm.labels[SERVED_LABEL] ?? '').trim();
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace)) return undefined;
  const age = cm.data.cacheMaxAge !== undefined && /^\d{1,5}$/.test(cm.data.cacheMaxAge.trim()) ? Number(cm.data.cacheMaxAge.trim()) : undefined;
  const snapshotName = cm.data.snapshotName?.trim();
  return { namespace, ...(snapshotName ? { snapshotName } : {}), ...(age !== undefined ? { cacheMaxAge: age } : {}), source: `${cm.namespace}/${cm.name}` };
}

function ago(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
}

/**
 * Served, not served, or cannot tell. A stale Lease says the operator is gone whatever else remains of it (a snapshot
 * and statuses outlive an uninstalled operator); then any sign of an operator says served; then a record list that
 * names other namespaces but not this one, or a readable namespace without a snapshot, says not served.
 */
export function judge(e: Evidence): Verdict {
  const record = e.records.ok ? e.records.value.find((r) => r.namespace === e.namespace) : undefined;
  if (e.lease !== undefined) {
    const age = e.lease.renewTimeMs !== undefined ? e.nowMs - e.lease.renewTimeMs : undefined;
    if (!e.lease.holderIdentity || age === undefined || age > STALE_LEASE_MS) {
      const when = age === undefined ? 'never renewed' : `last renewed ${ago(age)} ago`;
      return { served: false, why: `svc-operator's Lease ${e.lease.name} in namespace ${e.namespace} is ${e.lease.holderIdentity ? `held by ${e.lease.holderIdentity} but ${when}` : `held by nobody (${when})`}: the operator is not running (check kubectl -n ${e.namespace} get deploy,pods)` };
    }
    return { served: true, how: `svc-operator holds its Lease ${e.lease.name}` };
  }
  if (record !== undefined) return { served: true, how: `the chart's record ${record.source}` };
  if (e.snapshots.ok && e.snapshots.value.length > 0) return { served: true, how: `svc-operator's snapshot ${e.snapshots.value[0]}` };
  if (e.observedObjects > 0) return { served: true, how: `svc-operator's status on ${e.observedObjects} object${e.observedObjects === 1 ? '' : 's'}` };
  const against = [
    ...(e.snapshots.ok ? ['no snapshot ConfigMap there'] : []),
    ...(e.records.ok && e.records.value.length > 0 ? [`no record for it in ${RECORD_NAMESPACE}`] : []),
  ];
  if (against.length > 0) return { served: false, why: `no svc-operator serves namespace ${e.namespace} (${[...against, 'no object with an operator\'s status'].join(', ')})` };
  const unread = [e.snapshots, e.records].flatMap((p) => (p.ok ? [] : [p.why]));
  return { served: 'unknown', why: `cannot tell whether an svc-operator serves namespace ${e.namespace}${unread.length > 0 ? ` (${unread.join('; ')})` : ''}` };
}

/** `did you mean -n svc?`, `svc-operator serves namespaces a and b: give -n with one of them`, or '' when none is known. */
export function servedHint(namespace: string, served: readonly string[]): string {
  const others = [...new Set(served)].filter((n) => n !== namespace).sort();
  if (others.length === 0) return '';
  if (others.length === 1) return `svc-operator serves namespace ${others[0]}: did you mean -n ${others[0]}?`;
  return `svc-operator serves namespaces ${others.slice(0, -1).join(', ')} and ${others.at(-1)}: give -n with one of them`;
}
