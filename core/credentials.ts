/**
 * Where a request's token comes from (docs/access-rules.md "Credentials"): the query argument first, then
 * `Authorization: Bearer`, then the password of `Authorization: Basic`.
 */
export type TokenSource = 'query' | 'bearer' | 'basic';
export type Credential =
  | { readonly kind: 'none' }
  | { readonly kind: 'token'; readonly token: string; readonly source: TokenSource }
  | { readonly kind: 'malformed'; readonly source: TokenSource };

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
      return value === null ? { kind: 'malformed', source: 'query' } : { kind: 'token', token: value, source: 'query' };
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
    if (rest.length === 0 || /\s/.test(rest)) return { kind: 'malformed', source: 'bearer' };
    return { kind: 'token', token: rest, source: 'bearer' };
  }
  if (scheme === 'basic') {
    const decoded = Buffer.from(rest, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { kind: 'malformed', source: 'basic' };
    const password = decoded.slice(colon + 1);
    return password.length === 0 ? NONE : { kind: 'token', token: password, source: 'basic' };
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
