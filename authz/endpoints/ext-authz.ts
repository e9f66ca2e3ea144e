/**
 * `* /authz/ext-authz[/<original path>]`: Envoy's HTTP ext_authz and Gateway API's ExternalAuth filter,
 * which has two HTTP dialects today.
 *
 * - Envoy (Envoy itself, Envoy Gateway's SecurityPolicy and its ExternalAuth): the check request keeps the
 *   original method and appends the original path and query to the configured path
 *   (`/authz/ext-authz/oapi/...?...`).
 * - NGINX Gateway Fabric: an nginx subrequest (GET) to exactly the configured path, with the original
 *   target in a `Path` header (`$request_uri`) and the method in `Method` (`$request_method`), and no other
 *   client header unless the filter allows it.
 *
 * The dialect is read from the request, never guessed: with nothing after the endpoint's path the target
 * must come from `Path`; with a path appended, a `Path` (or `Method`) present must name the same request
 * (headers.ts), so a Fabric configured with a trailing slash (`/authz/ext-authz/`, an appended target of
 * `/`) is refused rather than asked about `/`.
 */
import { conclude, type Contract } from './contract.js';
import { H } from './headers.js';
import { forwardedAddress, UNSUPPORTED } from './client-address.js';

const EXT_AUTHZ = '/authz/ext-authz';
const SLASH = 0x2f;
const QUESTION_MARK = 0x3f;

/** Envoy appends an origin-form target, which starts with '/'; anything else (the endpoint's own query) is none. */
function appendedTarget(url: string): string | undefined {
  return url.charCodeAt(EXT_AUTHZ.length) === SLASH ? url.slice(EXT_AUTHZ.length) : undefined;
}

export const extAuthz: Contract<'ext-authz'> = {
  endpoint: 'ext-authz',
  // Gateway Fabric's subrequest is nginx's auth_request, which turns any answer but 200/401/403 into a 500.
  answers: (url) => (appendedTarget(url) === undefined ? 'nginx' : 'proxy'),
  matches: (url) => url.startsWith(EXT_AUTHZ) && (url.length === EXT_AUTHZ.length || url.charCodeAt(EXT_AUTHZ.length) === SLASH || url.charCodeAt(EXT_AUTHZ.length) === QUESTION_MARK),
  read(req, h) {
    const appended = appendedTarget(req.url ?? '');
    const serves = ['envoy', 'gateway-fabric'] as const;
    if (appended === undefined) {
      // NGINX Gateway Fabric's dialect: its subrequest's own method (GET) never counts.
      return conclude(h, { target: h.get(H.path), method: h.get(H.method) ?? null, own: [H.path, H.method], serves, client: UNSUPPORTED });
    }
    return conclude(h, { target: appended, method: req.method ?? null, own: [], serves, client: forwardedAddress(h, h.trustedHops, true) });
  },
};
