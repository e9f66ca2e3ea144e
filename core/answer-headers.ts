/**
 * The headers svc-auth's answers may carry for the proxy or the backend (docs/access-rules.md "What the proxy in
 * front may pass"): one list, which every proxy configuration the product prescribes copies from the answer into
 * the request to the backend, replacing whatever the client sent under those names. A header of this family that a
 * client wrote must never reach the backend: it would write the backend's audit log (who was granted, by which
 * token, network or identity), or a page's redirect.
 */
export const ANSWER_HEADERS = [
  'X-Auth-Request-Scope',
  'X-Auth-Request-Token-Id',
  'X-Auth-Request-User',
  'X-Auth-Request-Group',
  'X-Auth-Request-Network',
  'X-Svc-Sign-In',
  'X-Svc-Denied',
] as const;

export type AnswerHeader = (typeof ANSWER_HEADERS)[number];

/**
 * Envoy's ext_authz removes from the request to the backend the headers an allow names in
 * `x-envoy-auth-headers-to-remove`; it copies only those `allowed_upstream_headers` lists that the allow carries, so a
 * client's copy of any other survives. Every allow of svc-auth's Envoy-facing answers names the family members it
 * does not set (the ones it sets replace the client's copies), so none of the client's reaches the backend.
 */
export const ENVOY_REMOVE_HEADER = 'x-envoy-auth-headers-to-remove';

/** The value of ENVOY_REMOVE_HEADER for an allow that sets `set`: every other member of the family, lower case. */
export function headersToRemove(set: readonly AnswerHeader[]): string {
  return ANSWER_HEADERS.filter((h) => !set.includes(h)).map((h) => h.toLowerCase()).join(',');
}
