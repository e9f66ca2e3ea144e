/**
 * `* /authz/forward-auth`: Traefik's ForwardAuth (its file and CRD providers, and the ingress-nginx
 * provider's `auth-url`). Traefik asks with GET and sets X-Forwarded-Method and X-Forwarded-Uri from the
 * request it routes (with trustForwardHeader off, the client's copies are replaced). An X-Forwarded-Prefix
 * means StripPrefix ran first, so the URI asked about is not the one requested: refused (headers.ts).
 */
import { conclude, isPath, type Contract } from './contract.js';
import { H } from './headers.js';
import { forwardedAddress } from './client-address.js';

export const forwardAuth: Contract<'forward-auth'> = {
  endpoint: 'forward-auth',
  answers: () => 'proxy',
  matches: (url) => isPath(url, '/authz/forward-auth'),
  read: (_req, h) => conclude(h, { target: h.get(H.forwardedUri), method: h.get(H.forwardedMethod) ?? null, own: [H.forwardedUri, H.forwardedMethod], serves: ['forward-auth'], client: forwardedAddress(h, h.trustedHops, false) }),
};
