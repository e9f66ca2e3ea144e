/** The auth endpoints, one per proxy contract, in the order their URLs are matched. */
import { authRequest } from './auth-request.js';
import { authorize } from './authorize.js';
import type { Contract } from './contract.js';
import { extAuthz } from './ext-authz.js';
import { forwardAuth } from './forward-auth.js';

export const CONTRACTS: readonly Contract[] = [authRequest, forwardAuth, extAuthz, authorize];

/** The contract whose endpoint `url` is, or undefined (Express handles it). */
export function contractFor(url: string): Contract | undefined {
  if (url.startsWith('/authz/') || url.startsWith('/authorize')) {
    for (const c of CONTRACTS) if (c.matches(url)) return c;
  }
  return undefined;
}

export type { Contract, Reading } from './contract.js';
export { ContractHeaders, LIKELY_PROXIES, type LikelyProxy } from './headers.js';
