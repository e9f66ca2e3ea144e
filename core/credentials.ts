/**
 * Where a request's credential comes from, its carrier (docs/access-rules.md "Credentials"): the query argument first,
 * then `Authorization: Bearer`, then the password of `Authorization: Basic`; a browser session (the session cookie)
 * only when none of these is sent.
 */
export type CredentialCarrier = 'query' | 'bearer' | 'basic' | 'session';
export type Credential =
  | { readonly kind: 'none' }
  | { readonly kind: 'token'; readonly token: string; readonly carrier: CredentialCarrier }
  | { readonly kind: 'malformed'; readonly carrier: CredentialCarrier };

const NONE: Credential = { kind: 'none' };

export function extractCredential(query: string, authorization: string | undefined, queryParam: string | null): Credential {
  if (queryParam !== null && queryParam.length > 0 && query.length > 0) {
    const fromQuery = queryToken(query, queryParam);
    if (fromQuery.kind !== 'none') return fromQuery;
  }
  return authorization === undefined ? NONE : headerToken(authorization);
}

/** The first non-empty value of the parameter; `+` is kept as it is (nginx's `$arg_` does not decode either). */
function queryToken(query: string, param: string): Credential {
  let start = 0;
  while (start <= query.length) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    const eq = query.indexOf('=', start);
    if (eq > start && eq < end && query.slice(start, eq) === param && eq + 1 < end) {
      const value = safeDecode(query.slice(eq + 1, end));
      return value === null ? { kind: 'malformed', carrier: 'query' } : { kind: 'token', token: value, carrier: 'query' };
    }
    start = end + 1;
  }
  return NONE;
}

function headerToken(header: string): Credential {
  const value = header.trim();
  const space = value.indexOf(' ');
  if (space < 0) return NONE;
  const scheme = value.slice(0, space).toLowerCase();
  const rest = value.slice(space + 1).trim();
  if (scheme === 'bearer') {
    // An empty or blank Bearer is no credential: wis2box-webapp sends `Bearer <its token field>` on every execution,
    // empty when the user typed none (a signed-in browser's session then decides).
    if (rest.length === 0) return NONE;
    if (/\s/.test(rest)) return { kind: 'malformed', carrier: 'bearer' };
    return { kind: 'token', token: rest, carrier: 'bearer' };
  }
  if (scheme === 'basic') {
    const decoded = Buffer.from(rest, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { kind: 'malformed', carrier: 'basic' };
    const password = decoded.slice(colon + 1);
    return password.length === 0 ? NONE : { kind: 'token', token: password, carrier: 'basic' };
  }
  return NONE;
}

function safeDecode(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * The most bytes a presented value may have to be checked against imported (wis2box-auth) records. wis2box-auth
 * took any value; the bound keeps one derivation's input, and the memory a waiting request holds, small.
 */
export const MAX_IMPORTED_TOKEN_BYTES = 4096;

/** A value presented for imported records: its bytes as wis2box-auth hashed them (`token.encode()`), never logged. */
export interface ImportedCredential {
  readonly value: Buffer;
  readonly carrier: CredentialCarrier;
}

/**
 * The credential as wis2box-auth read it, for imported records only (a value no svc token can be: spaces, other
 * than ASCII, over 512 characters, `svc_` without our checksum). From the same place extractCredential takes it:
 * the query argument decoded as werkzeug decodes a form value (`+` is a space, percent escapes are UTF-8), else the
 * Bearer value (the rest of the header, inner spaces kept, its bytes as sent), else Basic's password. Undefined
 * when there is none, it does not decode, or it is longer than MAX_IMPORTED_TOKEN_BYTES.
 */
export function importedCredential(query: string, authorization: string | undefined, queryParam: string | null): ImportedCredential | undefined {
  if (queryParam !== null && queryParam.length > 0 && query.length > 0) {
    const raw = rawQueryValue(query, queryParam);
    if (raw !== undefined) {
      const value = formDecode(raw);
      return value === null ? undefined : bounded(Buffer.from(value, 'utf8'), 'query');
    }
  }
  if (authorization === undefined) return undefined;
  const header = authorization.trim();
  const space = header.indexOf(' ');
  if (space < 0) return undefined;
  const scheme = header.slice(0, space).toLowerCase();
  const rest = header.slice(space + 1).trim();
  if (scheme === 'bearer' && rest.length > 0) return bounded(headerBytes(rest), 'bearer');
  if (scheme !== 'basic') return undefined;
  const decoded = Buffer.from(rest, 'base64');
  const colon = decoded.indexOf(0x3a);
  return colon < 0 || colon === decoded.length - 1 ? undefined : bounded(decoded.subarray(colon + 1), 'basic');
}

function bounded(value: Buffer, carrier: CredentialCarrier): ImportedCredential | undefined {
  return value.length > 0 && value.length <= MAX_IMPORTED_TOKEN_BYTES ? { value, carrier } : undefined;
}

/** The first non-empty raw value of the parameter, as queryToken finds it. */
function rawQueryValue(query: string, param: string): string | undefined {
  for (let start = 0; start <= query.length;) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    const eq = query.indexOf('=', start);
    if (eq > start && eq < end && query.slice(start, eq) === param && eq + 1 < end) return query.slice(eq + 1, end);
    start = end + 1;
  }
  return undefined;
}

function formDecode(s: string): string | null {
  return safeDecode(s.replaceAll('+', ' '));
}

/**
 * A header value's bytes as the client sent them: node:http reads header bytes as latin1, so a UTF-8 token comes
 * back whole this way (a string with wider characters, from a caller other than node:http, is taken as UTF-8).
 */
function headerBytes(s: string): Buffer {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return Buffer.from(s, 'utf8');
  return Buffer.from(s, 'latin1');
}
