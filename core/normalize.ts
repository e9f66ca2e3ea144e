/**
 * Request-target normalization (docs/access-rules.md "Normalization"): decide on the path the backend will
 * serve, and refuse anything that could make the proxy, svc-auth and the backend disagree about it.
 * Hand-written because it is on the hot path of every request and the rules are ours, not a URL parser's
 * (WHATWG URL resolves `..`, decodes and re-encodes in ways that would hide the attacks we must refuse).
 */
type Target =
  | {
      readonly ok: true;
      readonly segments: readonly string[];
      /** `/` + segments joined by `/`: the normalized path, for logs (the raw target when nothing changed). */
      readonly path: string;
      readonly query: string;
    }
  | { readonly ok: false; readonly reason: string };

const MAX_TARGET_LENGTH = 8192;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Drops `scheme://authority` from an absolute URL (`X-Original-URL`); a path is returned as it is.
 * The authority comes from the client's Host header (ingress-nginx builds `$scheme://$http_host$request_uri`),
 * so anything but a plain `host[:port]` followed by a path is refused by returning '' (which
 * normalizeTarget rejects): `Host: h?` would otherwise turn the whole real path into a query.
 */
export function stripOrigin(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme <= 0 || url.charCodeAt(0) === 0x2f) return url;
  for (let i = 0; i < scheme; i++) {
    const c = url.charCodeAt(i);
    const isSchemeChar = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (i > 0 && ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e));
    if (!isSchemeChar) return url;
  }
  const start = scheme + 3;
  let end = start;
  while (end < url.length && isHostChar(url.charCodeAt(end))) end++;
  return end > start && url.charCodeAt(end) === 0x2f ? url.slice(end) : '';
}

/** Letters, digits, `.-_~`, and `:[]` for ports and IPv6 literals: what a real Host header holds. */
function isHostChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2e || c === 0x2d || c === 0x5f || c === 0x7e || c === 0x3a || c === 0x5b || c === 0x5d
  );
}

const SLASH = 0x2f;
const QUESTION_MARK = 0x3f;
const HASH = 0x23;
const CONTROL = 'the request target has raw whitespace or a control character';
const FORBIDDEN = 'the path has a forbidden or invalid character or encoding';
const FRAGMENT = 'the request target has a "#"';

/**
 * One pass over the target (it runs on every request): it finds the segments, where the path ends and
 * which segments need decoding, and refuses raw whitespace and controls anywhere. A control anywhere (path
 * or query) wins over a refused segment, whichever comes first, so the reason does not depend on order.
 */
export function normalizeTarget(raw: string): Target {
  const n = raw.length;
  if (n === 0 || raw.charCodeAt(0) !== SLASH) return fail('the path must start with "/"');
  if (n > MAX_TARGET_LENGTH) return fail('the request target is too long');
  const segments: string[] = [];
  // Whether the normalized path differs from the raw one (decoding, dot or empty segments): most do not,
  // and then the raw path is the normalized path and needs no joining.
  let changed = false;
  let refused = false;
  // Clients never send a fragment, and proxies disagree on whether `#` ends the path: a `#` is malformed.
  let fragment = false;
  let start = 1;
  let encoded = false;
  let end = n;
  for (let i = 1; i <= n; i++) {
    const c = i < n ? raw.charCodeAt(i) : SLASH;
    // Raw whitespace and controls are never valid in a request target; letting them through would let
    // `GET /open /../closed` style keys collide in a proxy's auth cache.
    if (c <= 0x20 || c === 0x7f) return fail(CONTROL);
    if (c === SLASH || c === QUESTION_MARK) {
      if (!refused) {
        const added = addSegment(segments, raw, start, i, encoded);
        if (added === REFUSED) refused = true;
        else if (added === CHANGED) changed = true;
      }
      if (c !== SLASH) {
        end = i;
        break;
      }
      start = i + 1;
      encoded = false;
    } else if (c === 0x5c || c === 0x3b) {
      refused = true; // `\`, `;`
    } else if (c === HASH) {
      fragment = true;
    } else if (c === 0x25 || c >= 0x80) {
      encoded = true;
    }
  }
  let query = '';
  if (end < n) {
    for (let i = end + 1; i < n; i++) {
      const c = raw.charCodeAt(i);
      if (c <= 0x20 || c === 0x7f) return fail(CONTROL);
      if (c === HASH) fragment = true;
    }
    query = raw.slice(end + 1);
  }
  if (fragment) return fail(FRAGMENT);
  if (refused) return fail(FORBIDDEN);
  return { ok: true, segments, path: changed ? `/${segments.join('/')}` : raw.slice(0, end), query };
}

const SAME = 0;
const CHANGED = 1;
const REFUSED = 2;

/**
 * Applies the raw segment `raw[start, stop)` to `segments` (decoded when `encoded`; an empty, `.` or `..`
 * segment changes the path): SAME, CHANGED, or REFUSED when the rules refuse it.
 */
function addSegment(segments: string[], raw: string, start: number, stop: number, encoded: boolean): typeof SAME | typeof CHANGED | typeof REFUSED {
  if (stop === start) return CHANGED;
  const rawSeg = raw.slice(start, stop);
  const seg = encoded ? decodeSegment(rawSeg) : rawSeg;
  if (seg === null) return REFUSED;
  if (seg === '..') {
    segments.pop();
    return CHANGED;
  }
  if (seg === '.') return CHANGED;
  segments.push(seg);
  return seg === rawSeg ? SAME : CHANGED;
}

function fail(reason: string): Target {
  return { ok: false, reason };
}

/**
 * Decodes one segment exactly once; null when it holds anything the rules refuse. Called for segments holding a
 * `%` or a byte >= 0x80 only; a raw control, `\` or `;` would survive decoding as itself and be refused below.
 */
function decodeSegment(seg: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < seg.length; i++) {
    const c = seg.charCodeAt(i);
    if (c === 0x25) {
      const hi = hexValue(seg.charCodeAt(i + 1));
      const lo = hexValue(seg.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) return null;
      bytes.push(hi * 16 + lo);
      i += 2;
    } else if (c <= 0xff) {
      // Header values reach Node as latin1, so a raw non-ASCII byte is one char here: keep it as a byte.
      bytes.push(c);
    } else {
      bytes.push(...Buffer.from(seg[i]!, 'utf8'));
    }
  }
  let decoded: string;
  try {
    decoded = utf8.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
  for (let i = 0; i < decoded.length; i++) {
    const c = decoded.charCodeAt(i);
    // Encoded `/` or `\`, double encoding (a `%` left over), `;`, and C0/C1 controls.
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2f || c === 0x5c || c === 0x25 || c === 0x3b) return null;
  }
  return decoded;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/**
 * Whether two target headers of one request name the same path and query (docs/access-rules.md: two target
 * headers that disagree make the request malformed, never a choice). Equal text, or two targets that
 * normalize to the same path and the same query: then the decision cannot depend on which one is read.
 */
export function sameTarget(a: string, b: string): boolean {
  if (a === b) return true;
  const ta = normalizeTarget(a);
  const tb = normalizeTarget(b);
  return ta.ok && tb.ok && ta.query === tb.query && ta.segments.length === tb.segments.length && ta.segments.every((s, i) => s === tb.segments[i]);
}
