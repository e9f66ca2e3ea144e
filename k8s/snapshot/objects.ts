/**
 * The names, labels and keys of the snapshot ConfigMaps: the contract between svc-operator (which writes
 * them, writer.ts) and svc-auth's ConfigMap source (which reads them, reader.ts). No client-node import here: svc-auth loads
 * this eagerly, the Kubernetes client only when that source is chosen.
 */
export const FIELD_MANAGER = 'svc-operator';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const MANAGED_BY = 'svc-operator';
export const SNAPSHOT_LABEL = 'auth.svc.io/snapshot';
export const ROLE_LABEL = 'auth.svc.io/snapshot-role';
export const DIGEST_ANNOTATION = 'auth.svc.io/digest';
export const GENERATION_ANNOTATION = 'auth.svc.io/generation';
export const SNAPSHOT_INDEX_KEY = 'index.json';
export const SHARD_KEY = 'shard';
export const DEFAULT_SNAPSHOT_NAME = 'svc-auth-snapshot';
/** ~700 KiB: a shard ConfigMap stays well under the 1 MiB object limit with its metadata. */
export const DEFAULT_SHARD_MAX_BYTES = 700 * 1024;

type SnapshotRole = 'index' | 'shard';

/** `<snapshot-name>-<first 16 hex of the shard digest>`; content-addressed, so a name never changes content. */
export function shardConfigMapName(snapshotName: string, digest: string): string {
  return `${snapshotName}-${digest.slice(0, 16)}`;
}

export function snapshotLabels(snapshotName: string, role: SnapshotRole): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY, [SNAPSHOT_LABEL]: snapshotName, [ROLE_LABEL]: role };
}

/** Selects the snapshot index and every shard of one snapshot. */
export function snapshotSelector(snapshotName: string): string {
  return `${SNAPSHOT_LABEL}=${snapshotName}`;
}
