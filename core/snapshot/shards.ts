/**
 * The sharded form of a snapshot (svc-operator's ConfigMaps): shards are runs of whole lines, each named by the
 * SHA-256 of its text, so they can be verified one by one and concatenated back into the snapshot's bytes; the
 * snapshot index names the generation, the counts and each shard's digest, in order. What a shard's text is and
 * how it is checked is decided here alone; where the shards are stored is k8s/snapshot/.
 */
import { createHash } from 'node:crypto';
import { API_GROUP_VERSION } from '../protected-scope.js';
import { err, ok, type Result } from '../result.js';
import { GenerationHash, type Snapshot } from './lines.js';

export interface ShardRef {
  readonly digest: string;
  readonly scopes: number;
  readonly bytes: number;
}

export interface SnapshotIndex {
  readonly apiVersion: typeof API_GROUP_VERSION;
  readonly kind: 'SnapshotIndex';
  readonly generation: string;
  readonly scopes: number;
  readonly tokens: number;
  readonly shards: readonly ShardRef[];
}

export interface Shard extends ShardRef {
  readonly text: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Splits a snapshot into shards of whole lines, each at most maxBytes (a single larger line gets its own shard). */
export function shardSnapshot(s: Snapshot, maxBytes: number): { snapshotIndex: SnapshotIndex; shards: Shard[] } {
  const shards: Shard[] = [];
  let current: string[] = [];
  let size = 0;
  const flush = () => {
    if (current.length === 0) return;
    const text = current.join('');
    shards.push({ digest: sha256(text), scopes: current.length, bytes: Buffer.byteLength(text), text });
    current = [];
    size = 0;
  };
  for (const line of s.lines) {
    const entry = `${line}\n`;
    const bytes = Buffer.byteLength(entry);
    if (size > 0 && size + bytes > maxBytes) flush();
    current.push(entry);
    size += bytes;
  }
  flush();
  const snapshotIndex: SnapshotIndex = {
    apiVersion: API_GROUP_VERSION,
    kind: 'SnapshotIndex',
    generation: s.generation,
    scopes: s.scopeCount,
    tokens: s.tokenCount,
    shards: shards.map(({ digest, scopes, bytes }) => ({ digest, scopes, bytes })),
  };
  return { snapshotIndex, shards };
}

export function parseSnapshotIndex(text: string): Result<SnapshotIndex> {
  let snapshotIndex: SnapshotIndex;
  try {
    snapshotIndex = JSON.parse(text) as SnapshotIndex;
  } catch {
    return err('the snapshot index is not JSON');
  }
  if (snapshotIndex?.kind !== 'SnapshotIndex' || snapshotIndex.apiVersion !== API_GROUP_VERSION || !Array.isArray(snapshotIndex.shards) ||
    typeof snapshotIndex.generation !== 'string') {
    return err(`not a ${API_GROUP_VERSION} SnapshotIndex`);
  }
  return ok(snapshotIndex);
}

/** Verifies a shard's text against the digest the snapshot index names for it; returns its lines. */
export function verifyShard(ref: ShardRef, text: string): Result<string[]> {
  if (sha256(text) !== ref.digest) return err(`shard ${ref.digest.slice(0, 16)} does not match its digest`);
  const lines = text.split('\n');
  if (lines.pop() !== '') return err(`shard ${ref.digest.slice(0, 16)} does not end with a newline`);
  if (lines.length !== ref.scopes) return err(`shard ${ref.digest.slice(0, 16)} has ${lines.length} scopes, the snapshot index says ${ref.scopes}`);
  return ok(lines);
}

/** Verifies the assembled shards against the snapshot index's generation (the shards in its order). */
export function verifyAssembled(snapshotIndex: SnapshotIndex, lines: readonly string[]): Result<true> {
  const steps = verifyAssembledSteps(snapshotIndex, [lines]);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * verifyAssembled a few lines at a time, over each shard's lines in the snapshot index's order, for a caller that
 * yields to its event loop between steps (hashing 10 MB of lines holds it for ~25 ms otherwise).
 */
export function* verifyAssembledSteps(snapshotIndex: SnapshotIndex, shards: readonly (readonly string[])[]): Generator<void, Result<true>, void> {
  const count = shards.reduce((n, lines) => n + lines.length, 0);
  if (count !== snapshotIndex.scopes) return err(`the shards hold ${count} scopes, the snapshot index says ${snapshotIndex.scopes}`);
  const generation = new GenerationHash();
  let n = 0;
  for (const lines of shards) {
    for (const line of lines) {
      generation.add(line);
      if ((++n & 15) === 0) yield;
    }
  }
  if (generation.digest() !== snapshotIndex.generation) return err("the shards do not add up to the snapshot index's generation");
  return ok(true);
}
