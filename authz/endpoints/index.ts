/**
 * The auth endpoints, one per proxy contract. Their URLs never overlap (each contract's `matches`), so the order
 * of CONTRACTS is only the one the metrics, the logs and deploy/README.md list them in.
 */
import { authRequest } from './auth-request.js';
import { authorize } from './authorize.js';
import type { Contract } from './contract.js';
import { extAuthz } from './ext-authz.js';
import { forwardAuth } from './forward-auth.js';

export const CONTRACTS = [authRequest, authorize, forwardAuth, extAuthz] as const;

/** An auth endpoint's name: the `endpoint` metric label and log field. */
export type EndpointName = (typeof CONTRACTS)[number]['endpoint'];

/** Every endpoint name, in the order of CONTRACTS. */
export const ENDPOINTS: readonly EndpointName[] = CONTRACTS.map((c) => c.endpoint);

/** The contract whose endpoint `url` is, or undefined (Express handles it). */
export function contractFor(url: string): Contract<EndpointName> | undefined {
  if (url.startsWith('/authz/') || url.startsWith('/authorize')) {
    for (const c of CONTRACTS) if (c.matches(url)) return c;
  }
  return undefined;
}

/**
 * Whether the path of an auth endpoint's URL is one that a proxy in front could have read as another path: a `.` or
 * `..` segment, or an encoded dot, slash or backslash (`%2e`, `%2f`, `%5c`), or a backslash. svc-auth picks the
 * endpoint from the raw path, while a proxy may route on the cleaned one: `/authz/ext-authz/data/x/../../../../authz/
 * v1/protected` is the public list to such a proxy and a decision endpoint to svc-auth. Such a URL is malformed.
 */
export function ambiguousEndpointPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  // Every auth request passes here: the common path (no dot, percent or backslash) is settled by three scans.
  if (!path.includes('.') && !path.includes('%') && !path.includes('\\')) return false;
  if (path.includes('\\') || /%(2e|2f|5c)/i.test(path)) return true;
  return path.split('/').some((segment) => segment === '.' || segment === '..');
}

export type { Contract, Reading } from './contract.js';
export { ADDRESS_PROBLEMS, type AddressProblem } from './client-address.js';
export { ContractHeaders, LIKELY_PROXIES, type LikelyProxy } from './headers.js';
