// The Kubernetes store: ProtectedScopes of one namespace, edited with optimistic concurrency, written only where an
// svc-operator serves the namespace (served.ts), and waited on until svc-operator has compiled a change (--wait).
import { jitter } from '../../lib/backoff.js';
import { KubeError, namespaceNotFound } from '../../k8s/errors.js';
import { ProtectedScopeClient } from '../../k8s/protected-scopes.js';
import { ROLE_LABEL, SNAPSHOT_LABEL } from '../../k8s/snapshot/objects.js';
import { formatFieldErrors, scopeKey, scopeOf, validateProtectedScope, type ProtectedScope, type Scope } from '../../core/index.js';
import { CliError, failure, usageError } from '../errors.js';
import {
  sameSpec, type Compiled, type Mutate, type ScopeStore, type StoreOptions, type StoredScope, type UpdateOptions, type UpdateResult, type WaitOutcome,
} from './backend.js';
import { judge, RECORD_NAMESPACE, recordOf, SERVED_LABEL, servedHint, type Evidence, type Probe, type ServedRecord } from './served.js';

/**
 * The Kubernetes backend: ProtectedScopes of one namespace through the kube context. Every edit is a
 * replace carrying the resourceVersion it was computed from (or a create, which fails if the name was
 * taken meanwhile); on a conflict the objects are read again and the edit recomputed, so concurrent
 * invocations never lose a token. Loaded by dynamic import only when a command needs it.
 */
const MAX_ATTEMPTS = 100;
/** The way out every "no cluster" message offers. */
const OTHERWISE = 'use --dir DIR for a manifest directory';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class KubernetesStore implements ScopeStore {
  readonly kind = 'kubernetes' as const;
  readonly where: string;
  readonly namespace: string;
  /** The served check, once per invocation (import writes scope by scope). */
  private served: Promise<void> | undefined;
  /** The chart's record of this namespace, when the served check found one (cacheMaxAge). */
  private record: ServedRecord | undefined;
  /** The objects of the last list: the served check counts those an operator observed. */
  private listed: readonly ProtectedScope[] | undefined;
  /** What the served check could not confirm, said once after the first write. */
  private warning: string | undefined;

  constructor(
    private readonly client: ProtectedScopeClient,
    private readonly options: Pick<StoreOptions, 'allowUnserved' | 'note'> = {},
    /** The wall clock: a Lease's renewal and --wait's deadline are real times, never the command's (tests fix that one). */
    private readonly now: () => number = Date.now,
  ) {
    this.namespace = client.namespace;
    this.where = `namespace ${client.namespace} (context ${client.context})`;
  }

  /**
   * The store of the namespace `-n` names, else the context's (or the pod's); with neither, the one namespace the
   * chart's records in kube-public say an svc-operator serves (said on stderr), else "default".
   */
  static async open(options: StoreOptions, env: Readonly<Record<string, string | undefined>>): Promise<KubernetesStore> {
    let client: ProtectedScopeClient;
    try {
      client = ProtectedScopeClient.fromOptions({
        kubeconfigEnv: env.KUBECONFIG,
        otherwise: OTHERWISE,
        ...(env.HOME !== undefined ? { homeDir: env.HOME } : {}),
        ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
        ...(options.context !== undefined ? { context: options.context } : {}),
        ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
        ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
      });
    } catch (e) {
      throw toCliError(e);
    }
    if (client.namespaceSource === 'default') client = await servedNamespaceOf(client, options.note);
    return new KubernetesStore(client, options);
  }

  async list(): Promise<StoredScope[]> {
    return guard(async () => {
      const items = await this.read(() => this.client.list());
      if (items.length === 0 && (await this.client.namespaceExists()) === false) {
        throw new KubeError('NamespaceNotFound', namespaceNotFound(this.namespace), 404);
      }
      this.listed = items;
      return items.map((o) => ({ object: this.valid(o), location: `${this.namespace}/${o.metadata?.name}`, compiled: compiledOf(o) }));
    });
  }

  cacheMaxAge(): number | undefined {
    return this.record?.cacheMaxAge;
  }

  ensureServed(): Promise<void> {
    this.served ??= this.checkServed();
    return this.served;
  }

  /** Reads the evidence (docs/cli-safety.md; served.ts judges it) and refuses, warns or lets the write through. */
  private async checkServed(): Promise<void> {
    const objects = this.listed ?? (await this.list()).map((s) => s.object);
    const [records, snapshots] = await Promise.all([
      probe(`the records in ${RECORD_NAMESPACE}`, () => this.records()),
      probe(`the ConfigMaps of namespace ${this.namespace}`, () => this.snapshotsHere()),
    ]);
    if (records.ok) this.record = records.value.find((r) => r.namespace === this.namespace);
    const snapshotName = (snapshots.ok ? snapshots.value[0] : undefined) ?? this.record?.snapshotName ?? DEFAULT_SNAPSHOT;
    const leaseName = `${snapshotName}-operator`;
    const lease = await this.client.getLease(this.namespace, leaseName).catch(() => undefined);
    const evidence: Evidence = {
      namespace: this.namespace, records, snapshots, observedObjects: objects.filter((o) => compiledOf(o) !== 'unseen').length, nowMs: this.now(),
      ...(lease !== undefined ? { lease: { name: leaseName, ...lease } } : {}),
    };
    const verdict = judge(evidence);
    if (verdict.served === true) return;
    // Said once the write is done (a refused write says only why it was refused).
    if (verdict.served === 'unknown') {
      this.warning = `warning: ${verdict.why}: the change is enforced only if one does (svc-operator --namespace ${this.namespace}, or the chart installed there)`;
      return;
    }
    if (this.options.allowUnserved) {
      this.warning = `warning: ${verdict.why}; written anyway (--allow-unserved): nothing enforces it until an svc-operator serves namespace ${this.namespace}`;
      return;
    }
    const hint = servedHint(this.namespace, await this.servedNamespaces(records));
    throw usageError(`${verdict.why}: nothing would enforce this change, and show would call the scope closed. ${hint ? `${hint} ` : ''}If an svc-operator is being set up for namespace ${this.namespace}, add --allow-unserved (nothing was changed)`);
  }

  /** The chart's records in kube-public. */
  private async records(): Promise<ServedRecord[]> {
    const cms = await this.client.listConfigMaps(RECORD_NAMESPACE, SERVED_LABEL);
    return cms.flatMap((cm) => recordOf(cm) ?? []);
  }

  /** The snapshot index ConfigMaps svc-operator wrote in this namespace: their snapshot names. */
  private async snapshotsHere(): Promise<string[]> {
    const cms = await this.client.listConfigMaps(this.namespace, `${ROLE_LABEL}=index`);
    return cms.map((cm) => cm.labels[SNAPSHOT_LABEL] ?? cm.name);
  }

  /** Every namespace known to be served, for the refusal: the records, else the snapshot indexes the user may list. */
  private async servedNamespaces(records: Probe<readonly ServedRecord[]>): Promise<string[]> {
    if (records.ok && records.value.length > 0) return records.value.map((r) => r.namespace);
    try {
      return (await this.client.listConfigMaps(undefined, `${ROLE_LABEL}=index`)).map((cm) => cm.namespace);
    } catch {
      return [];
    }
  }

  /**
   * Polls the objects (a GET each, every 250 ms to 1 s) until each one's status says generation ≥ the one written with
   * Ready=True, or that svc-operator can never compile it as it stands (Stalled, or Ready=False for such a reason: the
   * operator's message said), or the time is up. Ready=False while the snapshot is pending is waited out.
   */
  async waitForCompiled(objects: readonly ProtectedScope[], timeoutMs: number): Promise<WaitOutcome> {
    const started = this.now();
    const waiting = new Map(objects.map((o) => [o.metadata.name, o.metadata.generation ?? 1]));
    let last = new Map<string, ProtectedScope | undefined>();
    for (let round = 0; ; round++) {
      last = new Map();
      for (const [name, generation] of waiting) {
        const o = await guard(() => this.read(() => this.client.get(name)));
        last.set(name, o);
        if (o === undefined) return { ok: false, message: `ProtectedScope ${name} is gone from ${this.where}: someone deleted it while we waited` };
        const conditions = o.status?.conditions ?? [];
        const current = (c: { observedGeneration?: number } | undefined) => c !== undefined && (c.observedGeneration ?? o.status?.observedGeneration ?? 0) >= generation;
        // A spec that can never compile as it stands (Stalled, or Ready=False for that reason): waiting changes nothing.
        const stalled = conditions.find((c) => c.type === 'Stalled' && c.status === 'True');
        const ready = conditions.find((c) => c.type === 'Ready');
        const refused = stalled ?? (ready?.status === 'False' && STALLED_REASONS.has(ready.reason) ? ready : undefined);
        if (refused !== undefined && current(refused)) {
          return { ok: false, message: `svc-operator cannot compile ${name} as it stands (${refused.reason}): ${refused.message}` };
        }
        const observed = o.status?.observedGeneration;
        if (observed !== undefined && observed >= generation && ready?.status === 'True' && current(ready)) waiting.delete(name);
      }
      if (waiting.size === 0) return { ok: true, waitedMs: this.now() - started };
      const left = timeoutMs - (this.now() - started);
      if (left <= 0) break;
      await sleep(Math.min(left, Math.min(250 * (round + 1), 1000)));
    }
    const behind = [...waiting].map(([name, generation]) => {
      const status = last.get(name)?.status;
      const observed = status?.observedGeneration;
      const ready = status?.conditions?.find((c) => c.type === 'Ready');
      const says = observed === undefined ? 'no operator has observed it' : `generation ${observed}${ready !== undefined ? `, Ready ${ready.status} (${ready.reason})` : ''}`;
      return `${name} (generation ${generation}; its status says ${says})`;
    });
    return { ok: false, message: `svc-operator has not compiled ${behind.join(', ')} within ${Math.round(timeoutMs / 1000)} s` };
  }

  async get(scope: Scope): Promise<StoredScope[]> {
    const key = scopeKey(scope);
    return (await this.list()).filter((s) => scopeKey(scopeOf(s.object.spec)) === key);
  }

  async update(scope: Scope, mutate: Mutate, options: UpdateOptions = {}): Promise<UpdateResult> {
    const key = scopeKey(scope);
    const known = new Map<string, ProtectedScope>((await this.get(scope)).map((s) => [s.object.metadata.name, s.object]));
    // Before anything is written (a dry run too: it says what the write would do).
    await guard(() => this.ensureServed());
    return guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const next = mutate([...known.values()], attempt);
        const written: string[] = [];
        try {
          for (const object of next) {
            const checked = validateProtectedScope(object);
            if (!checked.ok) throw failure(`refusing to write ProtectedScope "${object.metadata.name}": ${formatFieldErrors(checked.error)} (nothing was changed)`);
            const before = known.get(object.metadata.name);
            if (before && sameSpec(before, object)) continue;
            const body = forWrite(object, before?.metadata.resourceVersion);
            const after = before
              ? await this.client.replace(body, { dryRun: options.dryRun === true })
              : await this.client.create(body, { dryRun: options.dryRun === true });
            known.set(object.metadata.name, after);
            written.push(object.metadata.name);
          }
          if (this.warning !== undefined) this.options.note?.(this.warning);
          this.warning = undefined;
          return { objects: [...known.values()], written };
        } catch (e) {
          if (!(e instanceof KubeError) || (e.reason !== 'Conflict' && e.reason !== 'AlreadyExists')) throw e;
          // Someone else wrote first: read what is there now and compute the edit again.
          const names = new Set([...known.keys(), ...next.map((o) => o.metadata.name)]);
          for (const name of names) {
            const fresh = await this.read(() => this.client.get(name));
            if (fresh && scopeKey(scopeOf(this.valid(fresh).spec)) === key) known.set(name, fresh);
            else if (fresh) throw failure(`ProtectedScope "${name}" in namespace "${this.namespace}" now holds ${scopeKey(scopeOf(fresh.spec))}, not ${key}: rename one of them`);
            else known.delete(name);
          }
          await sleep(jitter(Math.min(20 * (attempt + 1), 500), [0, 1]));
        }
      }
      throw failure(`gave up after ${MAX_ATTEMPTS} conflicting edits of ${key} in ${this.where}: too many concurrent writers; try again`);
    });
  }

  private valid(o: ProtectedScope): ProtectedScope {
    const checked = validateProtectedScope(o);
    if (!checked.ok) {
      throw failure(`ProtectedScope "${o.metadata?.name}" in namespace "${this.namespace}" is invalid: ${formatFieldErrors(checked.error)} (fix it with kubectl edit protectedscope ${o.metadata?.name} -n ${this.namespace})`);
    }
    return checked.value;
  }

  /** Reads retry a few times on 429/5xx; writes do not (their conflicts are handled above). */
  private async read<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof KubeError) || !e.transient || attempt >= 3) throw e;
        await sleep(200 * (attempt + 1));
      }
    }
  }
}

const DEFAULT_SNAPSHOT = 'svc-auth-snapshot';
/** Ready=False reasons svc-operator gives a spec that can never compile as it stands (the Stalled condition's). */
const STALLED_REASONS: ReadonlySet<string> = new Set(['Invalid', 'RefusedPath', 'PublicRefused']);

/** Whether an object's status says an operator compiled it: at its generation, at an older one, or never. */
function compiledOf(o: ProtectedScope): Compiled {
  const observed = o.status?.observedGeneration;
  if (observed === undefined) return 'unseen';
  return o.metadata.generation !== undefined && observed < o.metadata.generation ? 'pending' : 'compiled';
}

/** A read whose failure (403 most often) is evidence missing, not an error of the command; `what` names it for messages. */
async function probe<T>(what: string, read: () => Promise<T>): Promise<Probe<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (e) {
    if (e instanceof KubeError && (e.reason === 'Unreachable' || e.reason === 'Timeout' || e.reason === 'Unauthorized')) throw toCliError(e);
    return { ok: false, why: `${what}: ${e instanceof KubeError && e.reason === 'Forbidden' ? 'not allowed to read them' : (e as Error).message}` };
  }
}

/**
 * No -n and no namespace in the context: the one namespace the chart's records say an svc-operator serves (said on
 * stderr), a usage error when they name several, and "default" when they name none or cannot be read.
 */
async function servedNamespaceOf(client: ProtectedScopeClient, note: ((line: string) => void) | undefined): Promise<ProtectedScopeClient> {
  let records: ServedRecord[];
  try {
    records = (await client.listConfigMaps(RECORD_NAMESPACE, SERVED_LABEL)).flatMap((cm) => recordOf(cm) ?? []);
  } catch (e) {
    if (e instanceof KubeError && (e.reason === 'Unreachable' || e.reason === 'Timeout' || e.reason === 'Unauthorized' || e.reason === 'NoConfig')) throw toCliError(e);
    return client;
  }
  const namespaces = [...new Set(records.map((r) => r.namespace))].sort();
  if (namespaces.length === 0) return client;
  if (namespaces.length > 1) {
    throw usageError(`the context ${client.context} names no namespace and svc-operator serves several (${namespaces.join(', ')}, from ${RECORD_NAMESPACE}): give -n NAMESPACE`);
  }
  const record = records.find((r) => r.namespace === namespaces[0])!;
  note?.(`Namespace ${record.namespace}: the one an svc-operator serves (${record.source}); the context names none. Give -n to choose another.`);
  return client.withNamespace(record.namespace, 'context');
}

/** The body of a create or replace: server-managed fields dropped, the precondition set. */
function forWrite(object: ProtectedScope, resourceVersion: string | undefined): ProtectedScope {
  const { managedFields: _m, ...metadata } = object.metadata as ProtectedScope['metadata'] & { managedFields?: unknown };
  const { status: _s, ...rest } = object;
  return { ...rest, metadata: { ...metadata, ...(resourceVersion ? { resourceVersion } : {}) } } as ProtectedScope;
}

async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toCliError(e);
  }
}

function toCliError(e: unknown): unknown {
  if (e instanceof CliError || !(e instanceof KubeError)) return e;
  return e.reason === 'Config' ? usageError(e.message) : failure(e.message);
}
