// The contract between the CLI's commands and the two stores they edit (a Kubernetes namespace, a manifest directory).
import type { ProtectedScope, Scope } from '../../core/index.js';

/**
 * Whether an svc-operator has compiled an object (Kubernetes only; a directory has no operator): `unseen`, no status
 * says a generation was observed (nothing enforces the object); `pending`, the status is of an older generation (the
 * latest change is not in force yet).
 */
export type Compiled = 'compiled' | 'pending' | 'unseen';

/** One ProtectedScope as a backend holds it, with where it lives (for messages): a file, or namespace/name. */
export interface StoredScope {
  readonly object: ProtectedScope;
  readonly location: string;
  /** Set by a store with an operator (Kubernetes): whether its status says the object is compiled. */
  readonly compiled?: Compiled;
}

/** What waiting for the operator found (ScopeStore.waitForCompiled). */
export type WaitOutcome =
  | { readonly ok: true; readonly waitedMs: number }
  | { readonly ok: false; readonly message: string };

/**
 * Computes the objects to write from the objects currently holding a scope (every object whose spec names
 * it, whatever its name). It returns the new versions of the objects it changes (matched by
 * metadata.name; a name not among `current` is created) and leaves the others out. It must be pure: a
 * backend calls it again with fresh objects when a concurrent edit got in first. It may throw a CliError
 * to refuse the edit, in which case nothing is written. `attempt` is 0 on the first call.
 */
export type Mutate = (current: readonly ProtectedScope[], attempt: number) => readonly ProtectedScope[];

/** One scope's edit among several (ScopeStore.updateAll). */
export interface ScopeEdit {
  readonly scope: Scope;
  readonly mutate: Mutate;
}

export interface UpdateOptions {
  /** Compute (and, on Kubernetes, have the API server validate) but write nothing. */
  readonly dryRun?: boolean;
}

export interface UpdateResult {
  /** The objects of the scope after the edit (written or, in a dry run, as they would be). */
  readonly objects: readonly ProtectedScope[];
  /** The names of the objects written (or that would be). */
  readonly written: readonly string[];
}

/**
 * A place ProtectedScopes live: a Kubernetes namespace or a manifest directory. Edits are
 * read-modify-write with optimistic concurrency, so concurrent invocations never lose a token.
 */
export interface ScopeStore {
  readonly kind: 'kubernetes' | 'directory';
  /** For messages: `namespace svc (context kind-svc)` or `directory ./scopes`. */
  readonly where: string;
  /** The namespace new objects get (undefined for a directory used without -n). */
  readonly namespace: string | undefined;
  /** Every valid ProtectedScope; an invalid one is an error naming it and the field. */
  list(): Promise<StoredScope[]>;
  /** The objects holding one scope (usually one: the CLI's deterministic name; hand-written ones too). */
  get(scope: Scope): Promise<StoredScope[]>;
  update(scope: Scope, mutate: Mutate, options?: UpdateOptions): Promise<UpdateResult>;
  /**
   * Edits of several scopes together, all or none (`svc auth import`): only where the store can do that, a
   * directory (one lock, every file composed before the first is written, those written put back when a later
   * write fails). A Kubernetes namespace has no transaction over several objects: it leaves this out, and the
   * caller edits scope by scope.
   */
  updateAll?(edits: readonly ScopeEdit[], options?: UpdateOptions): Promise<UpdateResult[]>;
  /**
   * Refuses (a usage error, nothing written) when no svc-operator serves the store, unless told it is coming
   * (StoreOptions.allowUnserved); a store with no operator (a directory) leaves this out. update() calls it before any
   * write; a command editing several scopes calls it first, so it fails once, up front.
   */
  ensureServed?(): Promise<void>;
  /**
   * Waits until svc-operator's status says every object given is compiled at (at least) its generation with
   * Ready=True, or `timeoutMs` passes. Only where an operator compiles the store (Kubernetes).
   */
  waitForCompiled?(objects: readonly ProtectedScope[], timeoutMs: number): Promise<WaitOutcome>;
  /** How long a proxy's auth cache may keep an allow, in seconds, where the store knows (the chart's record). */
  cacheMaxAge?(): number | undefined;
  close?(): Promise<void>;
}

/** The global options that choose and configure a backend. */
export interface StoreOptions {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
  readonly dir?: string;
  readonly requestTimeoutMs?: number;
  /** Write even where no svc-operator serves the namespace (`--allow-unserved`: the operator is being set up). */
  readonly allowUnserved?: boolean;
  /** Where a store says what it found on the way (stderr): the namespace it chose, a namespace nobody serves. */
  readonly note?: (line: string) => void;
}

/** Same content, ignoring server-managed fields: lets a backend skip writes that change nothing. */
export function sameSpec(a: ProtectedScope, b: ProtectedScope): boolean {
  return JSON.stringify(a.spec) === JSON.stringify(b.spec) && JSON.stringify(a.metadata.labels ?? {}) === JSON.stringify(b.metadata.labels ?? {})
    && JSON.stringify(a.metadata.annotations ?? {}) === JSON.stringify(b.metadata.annotations ?? {});
}
