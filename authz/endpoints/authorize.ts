/**
 * `GET /authorize`: the drop-in for the original wis2box-auth's nginx configuration, which sends the
 * original target in X-Original-URI and the method in X-Api-Http-Method (an nginx subrequest is GET).
 */
import { conclude, isPath, type Contract } from './contract.js';
import { H } from './headers.js';
import { nginxAddress } from './client-address.js';

export const authorize: Contract<'authorize'> = {
  endpoint: 'authorize',
  answers: () => 'nginx',
  matches: (url) => isPath(url, '/authorize'),
  read: (_req, h) => conclude(h, { target: h.get(H.originalUri), method: h.get(H.apiHttpMethod) ?? null, own: [H.originalUri, H.apiHttpMethod], serves: ['nginx'], client: nginxAddress(h, h.trustedHops) }),
};
