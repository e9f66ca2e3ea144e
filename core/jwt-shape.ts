/**
 * Which credentials are JWTs of a configured OpenID issuer (issue: single sign-on). Not verification — svc-auth
 * verifies with a JOSE library — only the routing decision: a bearer value that is a compact JWS whose payload
 * names a configured issuer in `iss` is verified as a JWT and never looked up as a token; anything else is an
 * opaque token. Written here rather than with a JOSE library because core stays free of I/O and dependencies,
 * and the shape check is a few lines: three base64url parts, a JSON payload with a string `iss`.
 */
const B64URL = /^[A-Za-z0-9_-]+$/;
/** Longer than any JWT a provider issues; keeps the decode cheap whatever is sent. */
const MAX_JWT_LENGTH = 16 * 1024;

/** The `iss` claim of a compact JWS, unverified; undefined for anything that is not one. */
export function unverifiedIssuer(value: string): string | undefined {
  if (value.length > MAX_JWT_LENGTH) return undefined;
  const first = value.indexOf('.');
  const second = first < 0 ? -1 : value.indexOf('.', first + 1);
  if (first <= 0 || second < 0 || value.indexOf('.', second + 1) >= 0 || second === first + 1) return undefined;
  const payload = value.slice(first + 1, second);
  if (!B64URL.test(value.slice(0, first)) || !B64URL.test(payload)) return undefined;
  // The signature may be empty only in `alg: none` tokens, which are JWTs all the same (and always refused).
  const signature = value.slice(second + 1);
  if (signature.length > 0 && !B64URL.test(signature)) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    const iss = typeof claims === 'object' && claims !== null ? (claims as { iss?: unknown }).iss : undefined;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}
