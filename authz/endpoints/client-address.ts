/**
 * The client address an endpoint reads, only from the header its proxy sets and overwrites (docs/access-rules.md
 * "Networks: where the address comes from"), after `--trusted-proxy-hops N` load balancers in front of the proxy:
 *
 * - nginx endpoints (auth-request, authorize): `X-Real-IP`, which ingress-nginx's external-auth location and our nginx
 *   configurations set from `$remote_addr` (with N load balancers in front, the controller resolves the client itself:
 *   ingress-nginx `use-forwarded-headers` with `proxy-real-ip-cidr`, nginx's realip module). With N ≥ 1 an
 *   `X-Forwarded-For` of more than N entries must name the same address N entries from its end.
 * - forward-auth (Traefik): the entry N from the end of `X-Forwarded-For`, which ForwardAuth (trustForwardHeader off)
 *   sets to the peer it routes: behind a balancer, the client a PROXY protocol header named, so N stays 0 (a trusted
 *   X-Forwarded-* family would carry a client's target headers too). Traefik passes no other address header unless
 *   authRequestHeaders lets a client's through, so no other is read.
 * - ext-authz, Envoy's dialect: the entry N from the end of `X-Forwarded-For`, to which Envoy appends the peer with
 *   `use_remote_address: true` (N is its `xff_num_trusted_hops`); an `X-Envoy-External-Address` (Envoy's trusted
 *   client address, set for external peers) must agree. Gateway Fabric's dialect: none (its subrequest carries no
 *   address header this endpoint can tell from a client's), so network grants are off there.
 *
 * Anything else (a missing header, a repeated one, too short a chain, two that disagree) turns network grants off for
 * the request: it is decided as if no network matched, and the pipeline counts it.
 */
import { H, type ContractHeaders } from './headers.js';

/** Why an endpoint has no address it can trust (svc_auth_client_address_untrusted_total's `reason`). */
export const ADDRESS_PROBLEMS = ['missing', 'repeated', 'short-chain', 'disagree', 'unsupported'] as const;
export type AddressProblem = (typeof ADDRESS_PROBLEMS)[number];

export type ClientAddress = { readonly address: string; readonly problem?: undefined } | { readonly address?: undefined; readonly problem: AddressProblem };

const MISSING: ClientAddress = { problem: 'missing' };
const REPEATED: ClientAddress = { problem: 'repeated' };
const SHORT_CHAIN: ClientAddress = { problem: 'short-chain' };
const DISAGREE: ClientAddress = { problem: 'disagree' };
export const UNSUPPORTED: ClientAddress = { problem: 'unsupported' };

const SPACE = 0x20;
const TAB = 0x09;

function trimmed(s: string, start: number, end: number): string | undefined {
  while (start < end && (s.charCodeAt(start) === SPACE || s.charCodeAt(start) === TAB)) start++;
  while (end > start && (s.charCodeAt(end - 1) === SPACE || s.charCodeAt(end - 1) === TAB)) end--;
  return start === end ? undefined : s.slice(start, end);
}

/** The entry `hops` places from the end of a comma-separated list (0: the last), trimmed; undefined when the list is shorter or that entry is empty. */
export function hopFromEnd(list: string, hops: number): string | undefined {
  let end = list.length;
  for (let k = 0; ; k++) {
    const comma = end === 0 ? -1 : list.lastIndexOf(',', end - 1);
    if (k === hops) return trimmed(list, comma + 1, end);
    if (comma < 0) return undefined;
    end = comma;
  }
}

/** How many entries a comma-separated list has. */
function entries(list: string): number {
  let n = 1;
  for (let i = list.indexOf(','); i >= 0; i = list.indexOf(',', i + 1)) n++;
  return n;
}

/** The nginx endpoints' address: X-Real-IP, checked against X-Forwarded-For when load balancers are trusted. */
export function nginxAddress(h: ContractHeaders, hops: number): ClientAddress {
  if (h.repeatedAddress()) return REPEATED;
  const real = h.get(H.realIp);
  if (real === undefined) return MISSING;
  const address = real.trim();
  if (hops > 0) {
    const xff = h.get(H.forwardedFor);
    if (xff !== undefined && entries(xff) > hops && hopFromEnd(xff, hops) !== address) return DISAGREE;
  }
  return { address };
}

/** Traefik's and Envoy's address: the X-Forwarded-For entry `hops` from the end; Envoy's own header must agree. */
export function forwardedAddress(h: ContractHeaders, hops: number, envoy: boolean): ClientAddress {
  if (h.repeatedAddress()) return REPEATED;
  const xff = h.get(H.forwardedFor);
  if (xff === undefined) return MISSING;
  const address = hopFromEnd(xff, hops);
  if (address === undefined) return SHORT_CHAIN;
  const external = envoy ? h.get(H.envoyExternalAddress) : undefined;
  if (external !== undefined && external.trim() !== address) return DISAGREE;
  return { address };
}
