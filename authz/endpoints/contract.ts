/**
 * What an auth endpoint is: the proxy contract it serves (which URL, which headers name the original
 * request, which answers the proxy understands). One module per contract (auth-request.ts, authorize.ts,
 * forward-auth.ts, ext-authz.ts); the decision pipeline that runs after the reading (../auth-pipeline.ts)
 * is the same for all of them.
 */
import type { Flavour } from '../http/answers.js';
import type { HeadRequest } from '../http/head.js';
import { disagreement, H, misdirected, type ContractHeaders, type LikelyProxy, type Slot } from './headers.js';
import type { AddressProblem, ClientAddress } from './client-address.js';

/** The original request as the proxy described it, or why its description cannot be read as one request. */
export type Reading =
  | {
      readonly ok: true;
      /** null when the proxy did not state the original method: decide governs it as an unsafe method. */
      readonly method: string | null;
      readonly target: string;
      readonly authorization: string | undefined;
      /** The client address the proxy saw (./client-address.ts); undefined when none can be trusted, and then why. */
      readonly address?: string | undefined;
      readonly addressProblem?: AddressProblem | undefined;
    }
  | {
      readonly ok: false;
      readonly reason: string;
      /** Set when the request carries none of the endpoint's target headers: which proxy most likely sent it. */
      readonly misdirected?: LikelyProxy;
    };

/** `E`: the endpoint's name, a metric label and a log field (index.ts gathers them from CONTRACTS). */
export interface Contract<E extends string = string> {
  readonly endpoint: E;
  /**
   * How the proxy reads answers, from the request URL (path and query) alone: nginx's auth_request understands
   * only 200/401/403 (empty bodies, X-Accel-Expires); the others pass status, challenge and a problem+json body
   * on to the client.
   */
  answers(url: string): Flavour;
  /** The request URL (path and query) is this endpoint's. */
  matches(url: string): boolean;
  read(req: HeadRequest, h: ContractHeaders): Reading;
}

/** `url` is `path` exactly, or `path?query`: the auth endpoints' own query is never part of the decision. */
export function isPath(url: string, path: string): boolean {
  return url.startsWith(path) && (url.length === path.length || url.charCodeAt(path.length) === 0x3f);
}

/** What an endpoint found in its own family: the target (undefined: none), the method, the slots it read. */
export interface OwnReading {
  readonly target: string | undefined;
  readonly method: string | null;
  readonly own: readonly Slot[];
  /** The families this endpoint reads, so a missing target is never blamed on them. */
  readonly serves: readonly LikelyProxy[];
  /** The client address the endpoint read from its proxy's header; absent: none. */
  readonly client?: ClientAddress;
  /** The endpoint's own headers contradict each other. */
  readonly malformed?: string;
}

/**
 * The steps every contract ends with, in the order that keeps refusals precise: a repeated header, the
 * endpoint's own contradiction, a missing target (with the likely sender), then every other family's
 * agreement with the endpoint's reading.
 */
export function conclude(h: ContractHeaders, r: OwnReading): Reading {
  const repeated = h.repeated();
  if (repeated !== undefined) return { ok: false, reason: `${repeated} was sent more than once` };
  if (r.malformed !== undefined) return { ok: false, reason: r.malformed };
  if (r.target === undefined) {
    const m = misdirected(h, r.serves);
    return { ok: false, reason: m.reason, misdirected: m.likely };
  }
  const disagree = disagreement(h, r.own, r.target, r.method);
  if (disagree !== undefined) return { ok: false, reason: disagree };
  return { ok: true, method: r.method, target: r.target, authorization: h.get(H.authorization), address: r.client?.address, addressProblem: r.client?.problem };
}
