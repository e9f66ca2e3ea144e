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

export type { Contract, Reading } from './contract.js';
export { ADDRESS_PROBLEMS, type AddressProblem } from './client-address.js';
export { ContractHeaders, LIKELY_PROXIES, type LikelyProxy } from './headers.js';
