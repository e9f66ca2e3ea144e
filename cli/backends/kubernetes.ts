import { jitter } from '../../lib/backoff.js';
import { KubeError, namespaceNotFound } from '../../k8s/errors.js';
import { ProtectedScopeClient } from '../../k8s/protected-scopes.js';
import { formatFieldErrors, scopeKey, scopeOf, validateProtectedScope, type ProtectedScope, type Scope } from '../../core/index.js';
import { CliError, failure, usageError } from '../errors.js';
import { sameSpec, type Mutate, type ScopeStore, type StoreOptions, type StoredScope, type UpdateOptions, type UpdateResult } from './backend.js';

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

  constructor(private readonly client: ProtectedScopeClient) {
    this.namespace = client.namespace;
    this.where = `namespace ${client.namespace} (context ${client.context})`;
  }

  static open(options: StoreOptions, env: Readonly<Record<string, string | undefined>>): KubernetesStore {
    try {
      return new KubernetesStore(
        ProtectedScopeClient.fromOptions({
          kubeconfigEnv: env.KUBECONFIG,
          otherwise: OTHERWISE,
          ...(env.HOME !== undefined ? { homeDir: env.HOME } : {}),
          ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
          ...(options.context !== undefined ? { context: options.context } : {}),
          ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
          ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
        }),
      );
    } catch (e) {
      throw toCliError(e);
    }
  }

  async list(): Promise<StoredScope[]> {
    return guard(async () => {
      const items = await this.read(() => this.client.list());
      if (items.length === 0 && (await this.client.namespaceExists()) === false) {
        throw new KubeError('NamespaceNotFound', namespaceNotFound(this.namespace), 404);
      }
      return items.map((o) => ({ object: this.valid(o), location: `${this.namespace}/${o.metadata?.name}` }));
    });
  }

  async get(scope: Scope): Promise<StoredScope[]> {
    const key = scopeKey(scope);
    return (await this.list()).filter((s) => scopeKey(scopeOf(s.object.spec)) === key);
  }

  async update(scope: Scope, mutate: Mutate, options: UpdateOptions = {}): Promise<UpdateResult> {
    const key = scopeKey(scope);
    const known = new Map<string, ProtectedScope>((await this.get(scope)).map((s) => [s.object.metadata.name, s.object]));
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
