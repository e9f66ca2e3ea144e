/**
 * `GET /authz/auth-request`: nginx `auth_request` and ingress-nginx `auth-url`. The original request is in
 * X-Original-URL (absolute; ingress-nginx sets it) and/or X-Original-URI, and X-Original-Method. An nginx
 * subrequest is always GET whatever the original method was, so the request's own method never counts.
 */
import { sameTarget, stripOrigin } from '../../core/index.js';
import { conclude, isPath, type Contract } from './contract.js';
import { H } from './headers.js';
import { nginxAddress } from './client-address.js';

export const authRequest: Contract<'auth-request'> = {
  endpoint: 'auth-request',
  answers: () => 'nginx',
  matches: (url) => isPath(url, '/authz/auth-request'),
  read(_req, h) {
    const url = h.get(H.originalUrl);
    const uri = h.get(H.originalUri);
    // Only the path and query of the absolute URL count.
    const target = url !== undefined ? stripOrigin(url) : uri;
    const disagree = url !== undefined && uri !== undefined && !sameTarget(target!, uri);
    return conclude(h, {
      target,
      method: h.get(H.originalMethod) ?? null,
      own: [H.originalUrl, H.originalUri, H.originalMethod],
      serves: ['nginx'],
      client: nginxAddress(h, h.trustedHops),
      malformed: disagree ? 'X-Original-URL and X-Original-URI name different targets' : undefined,
    });
  },
};
