/**
 * The one error vocabulary of k8s/, read from client-node 1.x failures without importing it: API calls throw
 * `ApiException` with `.code` and a JSON string `.body`; watches fail with an `Error` carrying `.statusCode`;
 * network failures carry `.code` strings such as ECONNREFUSED. Long-running programs log `describeError`'s
 * one line and test with `isNotFound` and the like; a program that reports to a person (the CLI) turns each
 * failure into a `KubeError` whose reason a caller can act on and whose message says what to do. Messages
 * never include request bodies (those could be large, and a ConfigMap body is not something to log).
 */
import { API_GROUP, PLURAL } from '../core/index.js';

type KubeErrorReason =
  | 'Config' // no usable kubeconfig / context
  | 'NoConfig' // no kube configuration at all (no KUBECONFIG, no ~/.kube/config, not in a pod)
  | 'Unreachable' // connection refused, DNS, TLS
  | 'Timeout'
  | 'Unauthorized' // 401
  | 'Forbidden' // 403 (RBAC)
  | 'NamespaceNotFound'
  | 'CrdNotInstalled'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict' // resourceVersion precondition failed
  | 'Invalid' // 422: schema / CEL validation
  | 'ServerError' // 429, 5xx
  | 'Other';

export class KubeError extends Error {
  constructor(
    readonly reason: KubeErrorReason,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'KubeError';
  }

  /** Worth another try as is (the caller's own conflict handling aside). */
  get transient(): boolean {
    return this.reason === 'ServerError';
  }
}

export function statusCodeOf(e: unknown): number | undefined {
  if (e instanceof KubeError) return e.status;
  if (typeof e !== 'object' || e === null) return undefined;
  const o = e as { code?: unknown; statusCode?: unknown };
  if (typeof o.code === 'number') return o.code;
  if (typeof o.statusCode === 'number') return o.statusCode;
  return undefined;
}

export const isNotFound = (e: unknown): boolean => statusCodeOf(e) === 404;

/** A read of one object: what `call` returns, or undefined when the API answers 404 (every other error is thrown). */
export async function unlessNotFound<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
export const isConflict = (e: unknown): boolean => statusCodeOf(e) === 409;
export const isGone = (e: unknown): boolean => statusCodeOf(e) === 410;

/** The server's `Status` object (metav1.Status), as much of it as we read. */
interface ApiStatus {
  kind?: string;
  reason?: string;
  message?: string;
  details?: { kind?: string; name?: string; group?: string; retryAfterSeconds?: number; causes?: { field?: string; message?: string }[] };
}

/** The server's `Status` object from an ApiException body, when it has one. */
function apiStatusOf(e: unknown): ApiStatus | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const body = (e as { body?: unknown }).body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  return parsed as ApiStatus;
}

/** Milliseconds the server asked us to wait (429 / 503 with Retry-After), if it said. */
export function retryAfterMs(e: unknown): number | undefined {
  const headers = (e as { headers?: Record<string, string> } | null)?.headers;
  const header = headers?.['retry-after'] ?? headers?.['Retry-After'];
  if (header !== undefined && /^\d+$/.test(header)) return Number(header) * 1000;
  const seconds = apiStatusOf(e)?.details?.retryAfterSeconds;
  return typeof seconds === 'number' ? seconds * 1000 : undefined;
}

/** One short line for logs and conditions: status code and the server's message, or the network error. */
export function describeError(e: unknown): string {
  const code = statusCodeOf(e);
  const status = apiStatusOf(e);
  if (code !== undefined && status?.message) return `${code} ${status.reason ?? ''}: ${status.message}`.replace(/\s+:/, ':').slice(0, 500);
  if (code !== undefined) return `HTTP ${code}`;
  if (e instanceof Error) {
    const netCode = (e as { code?: unknown }).code;
    const first = e.message.split('\n')[0] ?? '';
    return (typeof netCode === 'string' && !first.includes(netCode) ? `${netCode}: ${first}` : first).slice(0, 500);
  }
  return String(e).slice(0, 500);
}

/** Where a call went: what the messages name, and what a person can do instead of a cluster. */
export interface ApiTarget {
  readonly server: string;
  /** The kube context, as a person would name it ("in-cluster" inside a pod). */
  readonly context: string;
  readonly namespace: string;
  readonly timeoutMs: number;
  /** Appended as ", or <otherwise>" where no cluster can be reached (the CLI: use --dir DIR ...). */
  readonly otherwise?: string;
}

interface ApiCall {
  readonly verb: string;
  readonly name?: string;
  /** `plural.group`, or a core resource such as `namespaces`. */
  readonly resource: string;
}

/** ", or <what else to do>", when the program has an alternative to a cluster. */
export const orElse = (otherwise: string | undefined): string => (otherwise ? `, or ${otherwise}` : '');

/** Any failure of one API call as a KubeError that names what failed and says what to do. */
export function toKubeError(e: unknown, target: ApiTarget, call: ApiCall): KubeError {
  if (e instanceof KubeError) return e;
  const code = statusCodeOf(e);
  if (code !== undefined) return fromStatus(e, code, target, call);
  return fromTransport(e, target, call);
}

function fromStatus(e: unknown, code: number, target: ApiTarget, call: ApiCall): KubeError {
  const what = call.name ? `${call.resource} "${call.name}"` : call.resource;
  const where = `namespace "${target.namespace}"`;
  const status = apiStatusOf(e);
  const message = status?.message ?? firstLine(String((e as { body?: unknown }).body ?? (e as Error).message));
  switch (code) {
    case 401:
      return new KubeError('Unauthorized', `the API server at ${target.server} rejected our credentials (401 Unauthorized): log in again or check the kubeconfig user of context ${target.context}`, 401);
    case 403:
      return new KubeError('Forbidden', `forbidden: ${message} (ask a cluster admin for a Role granting get, list, create and update on ${PLURAL}.${API_GROUP} in ${where})`, 403);
    case 404:
      if (!status || status.kind !== 'Status') {
        return new KubeError('CrdNotInstalled', `the ProtectedScope CRD (${PLURAL}.${API_GROUP}) is not installed in this cluster: install crds/protectedscope.yaml or the Helm chart`, 404);
      }
      if (status.details?.kind === 'namespaces' && call.resource !== 'namespaces') {
        return new KubeError('NamespaceNotFound', namespaceNotFound(target.namespace), 404);
      }
      return new KubeError('NotFound', `${what} not found in ${where}`, 404);
    case 409:
      return status?.reason === 'AlreadyExists'
        ? new KubeError('AlreadyExists', `${what} already exists in ${where}`, 409)
        : new KubeError('Conflict', `${what} was changed by someone else in ${where}: ${message}`, 409);
    case 422:
    case 400: {
      const causes = (status?.details?.causes ?? []).map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join('; ');
      return new KubeError('Invalid', `the API server refused ${what}: ${causes || message}`, code);
    }
    default:
      if (code === 429 || code >= 500) return new KubeError('ServerError', `the API server failed to ${call.verb} ${what} (${code}): ${message}`, code);
      return new KubeError('Other', `cannot ${call.verb} ${what} in ${where} (${code}): ${message}`, code);
  }
}

const UNREACHABLE = /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT|EPIPE)$/;
const TLS = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO/;

function fromTransport(e: unknown, target: ApiTarget, call: ApiCall): KubeError {
  const err = e as { name?: string; code?: string; type?: string; message?: string; cause?: { code?: string } } | null;
  if (err?.name === 'AbortError' || err?.name === 'TimeoutError' || err?.type === 'aborted') {
    return new KubeError('Timeout', `no answer from the API server at ${target.server} within ${Math.round(target.timeoutMs / 1000)} s: check the cluster is up and reachable (--request-timeout to wait longer)`);
  }
  const code = err?.code ?? err?.cause?.code;
  if (code && UNREACHABLE.test(code)) {
    const why = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code;
    return new KubeError('Unreachable', `cannot reach the Kubernetes API at ${target.server} (${why}): check the cluster is running and --kubeconfig/--context point at it${orElse(target.otherwise)}`);
  }
  if (code && TLS.test(code)) {
    return new KubeError('Unreachable', `TLS failure talking to ${target.server} (${code}): check the kubeconfig's certificate-authority for context ${target.context}`);
  }
  const what = call.name ? `${call.resource} "${call.name}"` : call.resource;
  return new KubeError('Other', `cannot ${call.verb} ${what} in namespace "${target.namespace}": ${firstLine(err?.message ?? String(e))}`);
}

export const namespaceNotFound = (namespace: string): string => `namespace "${namespace}" not found: check -n/--namespace or the context's namespace`;

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
