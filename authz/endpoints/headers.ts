/**
 * The header contract shared by every auth endpoint (deploy/README.md "The header contract").
 *
 * Each proxy family names the original request in its own headers: nginx and ingress-nginx in
 * X-Original-*, the original wis2box configuration in X-Original-URI + X-Api-Http-Method, Traefik in
 * X-Forwarded-*, Envoy in the check request's own line (and X-Envoy-Original-Path after a rewrite), NGINX
 * Gateway Fabric in `Path` + `Method`, and frameworks honour the method-override headers. An endpoint
 * reads its own family; every *other* family present must name the same target and method, because most
 * proxies pass the client's headers on and a header the proxy did not set is the client's word. Two
 * headers that could mean two different requests make the request malformed (docs/access-rules.md:
 * "ambiguity fails closed"); svc-auth never picks one.
 *
 * The client address headers (X-Real-IP, X-Forwarded-For, X-Envoy-External-Address) are read here too but are no
 * part of the request's description: a repeat of one or a disagreement only turns network grants off for the request
 * (./client-address.ts), it never makes the request malformed.
 *
 * Every header is read straight from rawHeaders in one pass (no req.headers: it lowercases and copies every
 * header of the request), so this runs on the hot path.
 */
import { sameTarget, stripOrigin } from '../../core/index.js';
import { named } from '../http/head.js';

/** What a header says about the original request. */
type Role =
  /** A path and query (`/oapi/...?...`). */
  | 'target'
  /** An absolute URL whose path and query are the target (ingress-nginx's X-Original-URL). */
  | 'url'
  | 'method'
  /** Traefik's record of a prefix stripped before the check: the path asked about is not the one requested. */
  | 'prefix'
  | 'credentials'
  /** The client address as a proxy saw it (./client-address.ts): never part of the request's description. */
  | 'address';

interface HeaderSpec {
  /** Lower case: compared ASCII case-insensitively with the name as sent. */
  readonly name: string;
  /** As documented (log lines and refusal reasons). */
  readonly display: string;
  readonly role: Role;
}

/** Every header of every family, in slot order (H below names the slots). */
const SPECS = [
  { name: 'x-original-url', display: 'X-Original-URL', role: 'url' },
  { name: 'x-original-uri', display: 'X-Original-URI', role: 'target' },
  { name: 'x-original-method', display: 'X-Original-Method', role: 'method' },
  { name: 'x-api-http-method', display: 'X-Api-Http-Method', role: 'method' },
  { name: 'x-forwarded-uri', display: 'X-Forwarded-Uri', role: 'target' },
  { name: 'x-forwarded-method', display: 'X-Forwarded-Method', role: 'method' },
  { name: 'x-forwarded-prefix', display: 'X-Forwarded-Prefix', role: 'prefix' },
  { name: 'x-envoy-original-path', display: 'X-Envoy-Original-Path', role: 'target' },
  { name: 'path', display: 'Path', role: 'target' },
  { name: 'method', display: 'Method', role: 'method' },
  { name: 'x-http-method-override', display: 'X-HTTP-Method-Override', role: 'method' },
  { name: 'x-http-method', display: 'X-HTTP-Method', role: 'method' },
  { name: 'x-method-override', display: 'X-Method-Override', role: 'method' },
  { name: 'authorization', display: 'Authorization', role: 'credentials' },
  { name: 'x-real-ip', display: 'X-Real-IP', role: 'address' },
  { name: 'x-forwarded-for', display: 'X-Forwarded-For', role: 'address' },
  { name: 'x-envoy-external-address', display: 'X-Envoy-External-Address', role: 'address' },
] as const satisfies readonly HeaderSpec[];

/** Slot numbers of SPECS, by name. */
export const H = {
  originalUrl: 0,
  originalUri: 1,
  originalMethod: 2,
  apiHttpMethod: 3,
  forwardedUri: 4,
  forwardedMethod: 5,
  forwardedPrefix: 6,
  envoyOriginalPath: 7,
  path: 8,
  method: 9,
  httpMethodOverride: 10,
  httpMethod: 11,
  methodOverride: 12,
  authorization: 13,
  realIp: 14,
  forwardedFor: 15,
  envoyExternalAddress: 16,
} as const;
export type Slot = (typeof H)[keyof typeof H];

export const SLOTS = SPECS.length;

/** The first letters of every contract header name: most headers of a request are rejected on one compare. */
const FIRST = new Uint8Array(128);
for (const s of SPECS) {
  const c = s.name.charCodeAt(0);
  FIRST[c] = 1;
  FIRST[c - 0x20] = 1;
}

/**
 * The slots whose name has each length: a header is compared with the one to three names of its length, not with
 * all seventeen (this runs for every header of every auth request).
 */
const BY_LENGTH: Slot[][] = [];
SPECS.forEach((spec, slot) => (BY_LENGTH[spec.name.length] ??= []).push(slot as Slot));

/**
 * The contract headers of one request. A header sent twice is `repeated` rather than joined or first-wins:
 * two values for the original target, method or credentials can only mean a confused or malicious client.
 * An empty copy counts as a copy (`X-Original-URI:` then a real one is a repeat); a single empty value
 * counts as absent, the way nginx's `proxy_set_header X-Forwarded-Uri "";` clears a header.
 */
export class ContractHeaders {
  private readonly values: (string | undefined)[] = new Array<string | undefined>(SLOTS).fill(undefined);
  /** The first slot sent more than once, or -1 (address headers apart: a repeat there only turns network grants off). */
  private repeatedSlot = -1;
  /** An address header was sent more than once. */
  private addressRepeated = false;

  /** `--trusted-proxy-hops`: load balancers in front of the proxy whose address entries are skipped (./client-address.ts). */
  constructor(readonly trustedHops = 0) {}

  /** Reads the request's headers into the slots (the object is reused request after request). */
  read(raw: readonly string[]): this {
    // A loop, not fill(): fill on this holey array took longer than reading the headers themselves.
    for (let s = 0; s < SLOTS; s++) this.values[s] = undefined;
    this.repeatedSlot = -1;
    this.addressRepeated = false;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      const c = name.charCodeAt(0);
      if (c >= 128 || FIRST[c] !== 1) continue;
      const slots = BY_LENGTH[name.length];
      if (slots === undefined) continue;
      for (const s of slots) {
        if (!named(name, SPECS[s]!.name)) continue;
        if (this.values[s] !== undefined) {
          if (SPECS[s]!.role === 'address') this.addressRepeated = true;
          else if (this.repeatedSlot < 0) this.repeatedSlot = s;
        }
        this.values[s] = raw[i + 1]!;
        break;
      }
    }
    return this;
  }

  /** The header's value, undefined when absent or empty. */
  get(slot: Slot): string | undefined {
    const v = this.values[slot];
    return v === '' ? undefined : v;
  }

  /** An address header (X-Real-IP, X-Forwarded-For, X-Envoy-External-Address) came more than once. */
  repeatedAddress(): boolean {
    return this.addressRepeated;
  }

  /** The display name of the first header sent more than once, if any. */
  repeated(): string | undefined {
    return this.repeatedSlot < 0 ? undefined : SPECS[this.repeatedSlot]!.display;
  }
}

export function display(slot: Slot): string {
  return SPECS[slot].display;
}

/** ASCII case-insensitive: frameworks upper-case an override's value before using it. */
export function sameMethod(a: string, b: string): boolean {
  return a.length === b.length && named(a, b.toLowerCase());
}

/**
 * Why the request is malformed because another family's header names another request than the
 * endpoint's own reading, or undefined when every header present agrees. `own` lists the slots the
 * endpoint read itself (already reconciled by it). An unstated method (null) is governed as unsafe, the
 * most closed reading, so other method headers cannot open more and are not compared with it.
 */
export function disagreement(h: ContractHeaders, own: readonly Slot[], target: string, method: string | null): string | undefined {
  for (let s = 0 as Slot; s < SLOTS; s = (s + 1) as Slot) {
    const spec = SPECS[s];
    if (spec.role === 'credentials' || spec.role === 'address' || own.includes(s)) continue;
    const v = h.get(s);
    if (v === undefined) continue;
    switch (spec.role) {
      case 'target':
        if (!sameTarget(target, v)) return `${spec.display} names another target than the request`;
        break;
      case 'url':
        if (!sameTarget(target, stripOrigin(v))) return `${spec.display} names another target than the request`;
        break;
      case 'method':
        if (method !== null && !sameMethod(v, method)) return `${spec.display} names another method than the request`;
        break;
      case 'prefix':
        return `${spec.display} is set: the path was rewritten before the auth check (check before rewriting)`;
    }
  }
  return undefined;
}

/** Which proxy most likely sent a request that carries none of its endpoint's target headers. */
export const LIKELY_PROXIES = ['forward-auth', 'nginx', 'gateway-fabric', 'envoy', 'unknown'] as const;
export type LikelyProxy = (typeof LIKELY_PROXIES)[number];

export interface Misdirected {
  readonly likely: LikelyProxy;
  /** The refusal reason: which headers are there and where to point the proxy (a fixed text per case). */
  readonly reason: string;
}

const ADVICE: Record<LikelyProxy, string> = {
  'forward-auth': 'X-Forwarded-Uri is present: a ForwardAuth proxy (Traefik); point its address or auth-url at /authz/forward-auth',
  nginx: 'X-Original-URL or X-Original-URI is present: an nginx auth_request or ingress-nginx auth-url; point it at /authz/auth-request',
  'gateway-fabric': 'Path is present: NGINX Gateway Fabric\'s ExternalAuth; set its http.path to /authz/ext-authz',
  envoy: 'X-Envoy-Original-Path is present: Envoy ext_authz; set its path prefix to /authz/ext-authz',
  unknown: 'the proxy sets none of this endpoint\'s headers (deploy/README.md lists what each endpoint reads)',
};

/**
 * The most likely sender of a request without its endpoint's target, from the families it does carry;
 * `serves` are the families the endpoint itself reads (never the advice).
 */
export function misdirected(h: ContractHeaders, serves: readonly LikelyProxy[]): Misdirected {
  const carries = (p: LikelyProxy): boolean => {
    if (serves.includes(p)) return false;
    switch (p) {
      case 'forward-auth':
        return h.get(H.forwardedUri) !== undefined;
      case 'nginx':
        return h.get(H.originalUrl) !== undefined || h.get(H.originalUri) !== undefined;
      case 'gateway-fabric':
        return h.get(H.path) !== undefined;
      case 'envoy':
        return h.get(H.envoyOriginalPath) !== undefined;
      case 'unknown':
        return true;
    }
  };
  const likely = LIKELY_PROXIES.find(carries) ?? 'unknown';
  return { likely, reason: `no original request target: ${ADVICE[likely]}` };
}
