import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { buildIndex, type AccessIndex } from './access-index.js';
import { extractCredential } from './credentials.js';
import { decide, decideForScope, DEFAULT_CONFIG, type Decision, type VerifyJwt } from './decide.js';
import { enforcedState } from './enforced-state.js';
import { normalizeTarget } from './normalize.js';
import { newProtectedScope } from './protected-scope.js';
import { scopeKey, scopeLevels, type Scope } from './scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import { formatGeneratedToken, hashToken, hashTokenHex, isPlausibleToken, tokenIdOf } from './token.js';

// Property tests of docs/access-rules.md. Worlds (sets of closed scopes) and requests are drawn from small
// alphabets so that scopes overlap, nest and collide. A reference model written straight from the rules'
// text (no trie, no shortcuts) is the oracle. Tokens are drawn by index into a pool, so a counterexample
// prints indices, never a token.

const NOW = Date.parse('2026-11-21T12:00:00Z');
const PAST = '2026-11-01T00:00:00Z';
const FUTURE = '2027-01-01T00:00:00Z';
const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`property-test-${seed}`).digest());
const POOL = [0, 1, 2, 3].map((i) => tok(`pool-${i}`));
const FRESH = tok('fresh'); // never in a random world

interface Grant {
  readonly scope: Scope;
  readonly token: number; // index into POOL, or -1 for FRESH
  readonly expiresAt: string | undefined;
  /** No token at all, `closed: true` instead (token and expiresAt are ignored). */
  readonly closedOnly?: true;
}
const plain = (g: Grant) => (g.token < 0 ? FRESH : POOL[g.token]!);

function indexOf(grants: readonly Grant[]): AccessIndex {
  const objects = grants.map((g, i) => {
    const hash = hashToken(plain(g));
    if (g.closedOnly) {
      const o = newProtectedScope(g.scope, `o-${i}`, 'svc', []);
      return { ...o, spec: { ...o.spec, closed: true } };
    }
    return newProtectedScope(g.scope, `o-${i}`, 'svc', [{ id: tokenIdOf(hash), hash, createdAt: PAST, ...(g.expiresAt ? { expiresAt: g.expiresAt } : {}) }]);
  });
  const s = compileSnapshot(objects);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

// ---- the reference model (docs/access-rules.md "From a request to a decision" and "Answers") ----

const SAFE = ['GET', 'HEAD', 'OPTIONS'];
const containsRun = (hay: readonly string[], needle: readonly string[]) => hay.some((_, i) => needle.every((n, j) => hay[i + j] === n));
const equalOrExtends = (id: string, value: string, sep: string) => id === value || id.startsWith(value + sep);

/**
 * Every scope of `scopes` that is a candidate for the request (step 2), regardless of open/closed. Matching
 * is on the lower-cased path (docs/access-rules.md: a case variant is governed like the path); the worlds' scopes
 * are lower case. A null method is one the proxy did not state: never safe.
 */
function refCandidates(scopes: readonly Scope[], method: string | null, rawSegments: readonly string[]): Scope[] {
  const segments = rawSegments.map((s) => s.toLowerCase());
  const safe = method !== null && SAFE.includes(method);
  const under = (prefix: readonly string[]) => segments.length >= prefix.length && prefix.every((p, i) => segments[i] === p);
  if (under(DEFAULT_CONFIG.wafPrefix)) {
    const rest = segments.slice(DEFAULT_CONFIG.wafPrefix.length);
    if (rest[0] === 'metadata') return [];
    return scopes.filter((s) =>
      s.kind === 'topic' ? containsRun(rest, s.value.split('.')) : s.kind === 'dataset' ? rest.some((seg) => equalOrExtends(seg, s.value, ':')) : false,
    );
  }
  if (under(DEFAULT_CONFIG.apiPrefix)) {
    const [resource, id] = segments.slice(DEFAULT_CONFIG.apiPrefix.length);
    if (id === undefined) return [];
    if (resource === 'collections') {
      if (id === 'stations') return safe ? [] : scopes.filter((s) => s.kind === 'path' && s.value === 'collections/stations');
      if (id === 'discovery-metadata' && safe) return [];
      return scopes.filter((s) => (s.kind === 'topic' ? containsRun(id.split('.'), s.value.split('.')) : s.kind === 'dataset' ? equalOrExtends(id, s.value, ':') : false));
    }
    if (resource === 'processes' && method !== 'OPTIONS') {
      return scopes.filter((s) => s.kind === 'path' && s.value.startsWith('processes/') && equalOrExtends(id, s.value.slice('processes/'.length), '-'));
    }
  }
  return [];
}

/**
 * The default-closed write paths (docs/access-rules.md): the key of the stand-in that governs a stations write or
 * a process request (not OPTIONS) that no path scope covers, else undefined.
 */
function refDefault(method: string | null, rawSegments: readonly string[]): string | undefined {
  const segments = rawSegments.map((s) => s.toLowerCase());
  const [prefix, resource, id] = segments;
  // Unsafe requests on jobs (dismissing one), the list included: closed by default like an execution.
  if (prefix === DEFAULT_CONFIG.apiPrefix[0] && resource === 'jobs' && !(method !== null && SAFE.includes(method))) return 'path:oapi/jobs';
  if (prefix !== DEFAULT_CONFIG.apiPrefix[0] || id === undefined) return undefined;
  if (resource === 'collections' && id === 'stations' && !(method !== null && SAFE.includes(method))) return 'path:collections/stations';
  if (resource === 'processes' && method !== 'OPTIONS') return /^[a-z0-9_]+(-[a-z0-9_]+)*$/.test(id) ? `path:processes/${id}` : 'path:processes';
  return undefined;
}

interface RefAnswer {
  readonly outcome: Decision['outcome'];
  readonly governing: string[];
  /** For granted: the governing scopes that hold the token unexpired (any of them may be named). */
  readonly grantingScopes: string[];
}

function refDecide(grants: readonly Grant[], method: string | null, target: string, authorization: string | undefined): RefAnswer {
  const t = normalizeTarget(target);
  if (!t.ok) return { outcome: 'malformed', governing: [], grantingScopes: [] };
  // Closed scopes and their tokens (hash → latest expiry).
  const tokens = new Map<string, Map<string, number>>();
  const scopes = new Map<string, Scope>();
  for (const g of grants) {
    const key = scopeKey(g.scope);
    scopes.set(key, g.scope);
    const m = tokens.get(key) ?? new Map<string, number>();
    tokens.set(key, m);
    if (g.closedOnly) continue;
    const at = g.expiresAt === undefined ? Infinity : Date.parse(g.expiresAt);
    const h = hashTokenHex(plain(g));
    m.set(h, Math.max(m.get(h) ?? -Infinity, at));
  }
  const candidates = refCandidates([...scopes.values()], method, t.segments);
  const fallback = candidates.length === 0 ? refDefault(method, t.segments) : undefined;
  if (candidates.length === 0 && fallback === undefined) return { outcome: 'open', governing: [], grantingScopes: [] };
  // Step 3: the deepest closed candidates (per kind; two kinds govern together).
  const depth = (s: Scope) => scopeLevels(s).length;
  const governingScopes = candidates.filter((c) => candidates.every((o) => o.kind !== c.kind || depth(o) <= depth(c)));
  const governing = fallback !== undefined ? [fallback] : governingScopes.map(scopeKey).sort();
  const cred = extractCredential(t.query, authorization, DEFAULT_CONFIG.tokenParam);
  const answer = (outcome: Decision['outcome'], grantingScopes: string[] = []): RefAnswer => ({ outcome, governing, grantingScopes });
  if (cred.kind === 'none') return answer('no-token');
  if (cred.kind === 'malformed' || !isPlausibleToken(cred.token)) return answer('invalid-token');
  const h = hashTokenHex(cred.token);
  // The default stand-in holds no token (and shares its key with no closed scope of the world: it governs
  // only when no such scope is a candidate).
  const held = (k: string) => (fallback === undefined ? tokens.get(k) : undefined);
  const granting = governing.filter((k) => (held(k)?.get(h) ?? -Infinity) > NOW);
  if (granting.length > 0) return answer('granted', granting);
  if (governing.some((k) => held(k)?.has(h))) return answer('invalid-token');
  if ([...tokens.values()].some((m) => (m.get(h) ?? -Infinity) > NOW)) return answer('insufficient-scope');
  return answer('invalid-token');
}

// ---- arbitraries ----

const level = fc.constantFrom('a', 'b', 'c', 'core');
const topicArb = fc.array(level, { minLength: 1, maxLength: 3 }).map((l) => l.join('.'));
const urnArb = fc.array(fc.constantFrom('x', 'y', 'z'), { minLength: 1, maxLength: 3 }).map((p) => `urn:${p.join(':')}`);
const processArb = fc.array(fc.constantFrom('svc', 'p', 'q'), { minLength: 1, maxLength: 3 }).map((p) => p.join('-'));
const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  topicArb.map((value): Scope => ({ kind: 'topic', value })),
  urnArb.map((value): Scope => ({ kind: 'dataset', value })),
  processArb.map((p): Scope => ({ kind: 'path', value: `processes/${p}` })),
  fc.constant<Scope>({ kind: 'path', value: 'collections/stations' }),
);
const grantArb: fc.Arbitrary<Grant> = fc.oneof(
  { arbitrary: fc.record({ scope: scopeArb, token: fc.nat({ max: POOL.length - 1 }), expiresAt: fc.constantFrom(undefined, undefined, PAST, FUTURE) }), weight: 6 },
  // A scope closed by `closed: true` with no token (an embargo).
  { arbitrary: scopeArb.map((scope): Grant => ({ scope, token: 0, expiresAt: undefined, closedOnly: true })), weight: 1 },
);
const worldArb = fc.array(grantArb, { maxLength: 8 });

/** null: the proxy did not state the original method. */
const methodArb = fc.constantFrom<string | null>('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', null);
const wafSeg = fc.oneof(level, urnArb, urnArb.map((u) => `${u}:w`), fc.constantFrom('metadata', 'f.bufr4', '2026-11-21', 'wis'));
const plainPathArb = fc.oneof(
  fc.array(wafSeg, { maxLength: 6 }).map((s) => `/data/${s.join('/')}`),
  fc
    .tuple(fc.oneof(topicArb, urnArb, fc.constantFrom('stations', 'discovery-metadata', 'other', 'core.x')), fc.constantFrom('', '/items', '/items/1'))
    .map(([id, rest]) => `/oapi/collections/${id}${rest}`),
  fc.tuple(fc.oneof(processArb, fc.constantFrom('svcx', 'p_q')), fc.constantFrom('', '/execution')).map(([id, rest]) => `/oapi/processes/${id}${rest}`),
  fc.constantFrom('/', '/oapi/collections', '/oapi/processes', '/other/a/b', '/database/a', '/oapi/jobs/svc', '/oapi/jobs', '/oapi/jobs/svc/results'),
);
/** Each letter of `path` in upper case or not, as `flips` says (cycled). */
const flipCase = (path: string, flips: readonly boolean[]) => [...path].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c)).join('');
const flipsArb = fc.array(fc.boolean(), { minLength: 1, maxLength: 12 });
/** Paths, a third of them in a case variant. */
const pathArb = fc.oneof(plainPathArb, plainPathArb, fc.tuple(plainPathArb, flipsArb).map(([p, f]) => flipCase(p, f)));
type Cred = { readonly query: string; readonly authorization: string | undefined };
/** Credentials are drawn as descriptors and only turned into tokens inside a property, so counterexamples never show one. */
type CredDesc = { readonly how: 'none' | 'bearer' | 'query' | 'basic' | 'both' | 'junk' | 'typo' | 'bad-query'; readonly i: number; readonly j: number };
const credOf = ({ how, i, j }: CredDesc): Cred => {
  const t = POOL[i]!;
  switch (how) {
    case 'none':
      return { query: '', authorization: undefined };
    case 'bearer':
      return { query: '', authorization: `Bearer ${t}` };
    case 'query':
      return { query: `?token=${t}`, authorization: undefined };
    case 'basic':
      return { query: '', authorization: `Basic ${Buffer.from(`u:${t}`).toString('base64')}` };
    case 'both':
      return { query: `?x=1&token=${t}`, authorization: `Bearer ${POOL[j]}` };
    case 'junk':
      return { query: '', authorization: 'Bearer not-a-known-token' };
    case 'typo': // a bad checksum (or, rarely, a coincidence: the model judges either way)
      return { query: '', authorization: `Bearer ${t.slice(0, -1)}0` };
    case 'bad-query':
      return { query: '?token=%zz', authorization: undefined };
  }
};
const credArb: fc.Arbitrary<CredDesc> = fc.record({
  how: fc.constantFrom('none', 'bearer', 'query', 'basic', 'both', 'junk', 'typo', 'bad-query'),
  i: fc.nat({ max: POOL.length - 1 }),
  j: fc.nat({ max: POOL.length - 1 }),
});
interface Req {
  readonly method: string | null;
  readonly target: string;
  readonly authorization: string | undefined;
}
interface ReqDesc {
  readonly method: string | null;
  readonly path: string;
  readonly cred: CredDesc;
}
const toReq = ({ method, path, cred }: ReqDesc): Req => {
  const c = credOf(cred);
  return { method, target: path + c.query, authorization: c.authorization };
};
const requestArb: fc.Arbitrary<ReqDesc> = fc.record({ method: methodArb, path: pathArb, cred: credArb });
const requestsArb = fc.array(requestArb, { minLength: 1, maxLength: 12 });

const run = (index: AccessIndex, r: Req) => decide(index, DEFAULT_CONFIG, r, NOW);
const allowed = (d: Decision | VerifyJwt) => d.outcome === 'open' || d.outcome === 'granted';
const closedScopes = (grants: readonly Grant[]) => grants.map((g) => g.scope);

describe('decide agrees with a reference model of docs/access-rules.md', () => {
  it('for random worlds and requests: same outcome, same governing scopes, a granting scope that holds the token', () => {
    fc.assert(
      fc.property(worldArb, requestsArb, (grants, requests) => {
        const index = indexOf(grants);
        for (const r of requests.map(toReq)) {
          const want = refDecide(grants, r.method, r.target, r.authorization);
          const got = run(index, r);
          expect({ outcome: got.outcome, governing: 'governing' in got ? got.governing.map(scopeKey).sort() : [] }).toEqual({
            outcome: want.outcome,
            governing: want.governing,
          });
          if (got.outcome === 'granted') expect(want.grantingScopes).toContain(scopeKey(got.scope));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('case variants are never less protected', () => {
  it('a case variant of a path gets the decision of the path itself (only the logged path differs)', () => {
    fc.assert(
      fc.property(worldArb, methodArb, plainPathArb, flipsArb, credArb, (grants, method, path, flips, cred) => {
        const index = indexOf(grants);
        const c = credOf(cred);
        const variant = flipCase(path, flips);
        const d = run(index, { method, target: path + c.query, authorization: c.authorization });
        const v = run(index, { method, target: variant + c.query, authorization: c.authorization });
        expect({ ...v, path: undefined }).toEqual({ ...d, path: undefined });
      }),
      { numRuns: 500 },
    );
  });
});

describe('(a) adding a token to one scope never changes the answer outside that scope', () => {
  it('every request the scope is not a candidate for gets the identical decision before and after (a token, or closed: true)', () => {
    fc.assert(
      fc.property(worldArb, scopeArb, fc.constantFrom(undefined, PAST, FUTURE), fc.boolean(), requestsArb, (grants, scope, expiresAt, closedOnly, requests) => {
        const before = indexOf(grants);
        const afterGrants: Grant[] = [...grants, closedOnly ? { scope, token: -1, expiresAt: undefined, closedOnly: true } : { scope, token: -1, expiresAt }];
        const after = indexOf(afterGrants);
        for (const r of requests.map(toReq)) {
          const t = normalizeTarget(r.target);
          const under = t.ok && refCandidates(closedScopes(afterGrants), r.method, t.segments).some((c) => scopeKey(c) === scopeKey(scope));
          if (!under) expect(run(after, r)).toEqual(run(before, r));
        }
      }),
      { numRuns: 300 },
    );
  });
  it('and it never opens anything for a request that does not carry the new token', () => {
    fc.assert(
      fc.property(worldArb, scopeArb, requestsArb, (grants, scope, requests) => {
        const before = indexOf(grants);
        const after = indexOf([...grants, { scope, token: -1, expiresAt: undefined }]);
        for (const r of requests.map(toReq)) {
          if (allowed(run(after, r))) expect(allowed(run(before, r))).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
  it('the new token grants exactly where its scope governs', () => {
    fc.assert(
      fc.property(worldArb, scopeArb, methodArb, pathArb, (grants, scope, method, p) => {
        const afterGrants = [...grants, { scope, token: -1, expiresAt: undefined }];
        const d = run(indexOf(afterGrants), { method, target: p, authorization: `Bearer ${FRESH}` });
        const governs = d.outcome !== 'open' && d.outcome !== 'malformed' && d.governing.some((g) => scopeKey(g) === scopeKey(scope));
        expect(d.outcome === 'granted').toBe(governs);
        if (d.outcome === 'open') expect(allowed(d)).toBe(true);
      }),
    );
  });
});

// ---- (b) bypass attempts generated from a protected request ----

/** A request that targets `scope`'s own data, as segments, with a method that is governed. */
const protectedRequestArb: fc.Arbitrary<{ scope: Scope; method: string | null; segments: string[] }> = scopeArb.chain((scope) => {
  const filler = fc.array(fc.constantFrom('2026-11-21', 'wis', 'x', 'f.bufr4'), { maxLength: 2 });
  if (scope.kind === 'topic') {
    return fc.oneof(
      fc.tuple(methodArb, filler, filler).map(([method, pre, post]) => ({ scope, method, segments: ['data', ...pre, ...scope.value.split('.'), ...post] })),
      fc.tuple(methodArb, fc.constantFrom([], ['items'], ['items', 'i.1'])).map(([method, rest]) => ({ scope, method, segments: ['oapi', 'collections', scope.value, ...rest] })),
    );
  }
  if (scope.kind === 'dataset') {
    return fc.oneof(
      fc.tuple(methodArb, filler, fc.constantFrom('', ':w')).map(([method, pre, ext]) => ({ scope, method, segments: ['data', ...pre, scope.value + ext, 'f.bufr4'] })),
      fc.tuple(methodArb, fc.constantFrom([], ['items'])).map(([method, rest]) => ({ scope, method, segments: ['oapi', 'collections', scope.value, ...rest] })),
    );
  }
  if (scope.value === 'collections/stations') {
    return fc
      .tuple(fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE'), fc.constantFrom([], ['items'], ['items', '0-1']))
      .map(([method, rest]) => ({ scope, method, segments: ['oapi', 'collections', 'stations', ...rest] }));
  }
  const p = scope.value.slice('processes/'.length);
  return fc
    .tuple(fc.constantFrom('POST', 'GET', 'DELETE'), fc.constantFrom('', '-ext'), fc.constantFrom([], ['execution']))
    .map(([method, ext, rest]) => ({ scope, method, segments: ['oapi', 'processes', p + ext, ...rest] }));
});

const DOTDOT = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '.%2E', '%2E.'];
const DOT = ['.', '%2e', '%2E'];
/** How one segment is written: each character raw or percent-encoded (either hex case). */
const spellingArb = (seg: string) =>
  fc.array(fc.constantFrom<'raw' | 'lower' | 'upper'>('raw', 'raw', 'lower', 'upper'), { minLength: seg.length, maxLength: seg.length }).map((how) =>
    [...seg]
      .map((c, i) => {
        if (how[i] === 'raw') return c;
        const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
        return `%${how[i] === 'upper' ? hex.toUpperCase() : hex}`;
      })
      .join(''),
  );
/** Noise inserted before a segment; each resolves to nothing. */
const noiseArb = fc.array(
  fc.oneof(
    fc.constant(''), // a doubled slash
    fc.constantFrom(...DOT),
    fc.tuple(fc.constantFrom('x', 'metadata', 'stations', 'svc', 'data', 'oapi'), fc.constantFrom(...DOTDOT)).map(([s, dd]) => `${s}/${dd}`),
  ),
  { maxLength: 2 },
);
const suffixArb = fc.constantFrom('', '?q=stations', '?x=/../metadata&q=/data/metadata/', '?next=/../../metadata', '?a=b', '/', '/.', '/%2e');
const rootClimbArb = fc.array(fc.constantFrom(...DOTDOT), { maxLength: 2 }).map((d) => d.map((x) => `/${x}`).join(''));

const disguisedArb = protectedRequestArb.chain((req) =>
  fc
    .tuple(
      fc.tuple(...req.segments.map((s) => fc.tuple(noiseArb, spellingArb(s)))),
      rootClimbArb,
      suffixArb,
    )
    .map(([parts, climb, suffix]) => ({
      ...req,
      raw: climb + parts.map(([noise, spelled]) => [...noise, spelled].map((p) => `/${p}`).join('')).join('') + suffix,
    })),
);
// Credentials that are not a valid token of any scope.
const BAD_CREDS: Record<string, () => string | undefined> = {
  none: () => undefined,
  junk: () => 'Bearer not-a-token-at-all',
  'bad-checksum': () => `Bearer svc_${'0'.repeat(49)}`,
  'empty-basic': () => 'Basic Og==',
  'token-of-no-scope': () => `Bearer ${FRESH}`,
  'two-tokens': () => 'Bearer a b',
};
const badCredArb = fc.constantFrom(...Object.keys(BAD_CREDS));

describe('(b) no path that normalizes into a closed scope is open or granted without a valid token', () => {
  it('encodings, dot segments, doubled slashes, root climbing, query and fragment noise: same path, still closed', () => {
    fc.assert(
      fc.property(disguisedArb, worldArb, badCredArb, (req, others, cred) => {
        const authorization = BAD_CREDS[cred]!();
        const index = indexOf([...others, { scope: req.scope, token: 0, expiresAt: FUTURE }]);
        const t = normalizeTarget(req.raw);
        expect(t.ok && t.segments).toEqual(req.segments);
        const d = run(index, { method: req.method, target: req.raw, authorization });
        expect(allowed(d)).toBe(false);
        // The disguise changes nothing: the plain path gets the same decision.
        expect(d).toEqual(run(index, { method: req.method, target: `/${req.segments.join('/')}`, authorization }));
      }),
      { numRuns: 500 },
    );
  });
  it('with the scope’s own token the disguised path is granted (the disguise neither opens nor breaks access)', () => {
    fc.assert(
      fc.property(disguisedArb, (req) => {
        const index = indexOf([{ scope: req.scope, token: 0, expiresAt: undefined }]);
        expect(run(index, { method: req.method, target: req.raw, authorization: `Bearer ${POOL[0]}` }).outcome).toBe('granted');
      }),
    );
  });
  const FORBIDDEN = ['%2F', '%2f', '%5C', '%5c', '\\', ';', '%3B', '%00', '%0a', '%0D', '\t', '\x7f', '%7F', '%252e', '%25', '%zz', '%4', '%', '%c0%af', '%c3%28', '%ed%a0%80', '%C2%85'];
  it('an encoded slash or backslash, a ";", a control, double or invalid encoding anywhere in the path: refused', () => {
    fc.assert(
      fc.property(disguisedArb, fc.constantFrom(...FORBIDDEN), fc.nat(), fc.nat(), badCredArb, (req, bad, seg, at, cred) => {
        const authorization = BAD_CREDS[cred]!();
        // Insert the forbidden sequence inside one of the segments of the plain path.
        const segments = [...req.segments];
        const i = seg % segments.length;
        const s = segments[i]!;
        // A truncated escape must end the segment, or the next characters would complete it.
        const j = bad === '%4' || bad === '%' ? s.length : at % (s.length + 1);
        segments[i] = s.slice(0, j) + bad + s.slice(j);
        const index = indexOf([{ scope: req.scope, token: 0, expiresAt: undefined }]);
        const d = run(index, { method: req.method, target: `/${segments.join('/')}`, authorization });
        expect(d.outcome).toBe('malformed');
        // Even the right token does not get a refused path through.
        expect(run(index, { method: req.method, target: `/${segments.join('/')}`, authorization: `Bearer ${POOL[0]}` }).outcome).toBe('malformed');
      }),
    );
  });
});

describe('(c) open scopes never consult tokens', () => {
  const anyAuth = fc.option(fc.string({ unit: 'binary', maxLength: 80 }), { nil: undefined });
  const anyQuery = fc.oneof(fc.constant(''), fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `?token=${s}`));
  it('with no closed candidate, the decision is open whatever credential is sent, and the header is never read', () => {
    fc.assert(
      fc.property(worldArb, methodArb, pathArb, anyQuery, anyAuth, (grants, method, p, query, authorization) => {
        const t = normalizeTarget(p);
        // A query with raw whitespace or controls makes the whole target malformed (refused), not open.
        fc.pre(t.ok && normalizeTarget(p + query).ok && refCandidates(closedScopes(grants), method, t.segments).length === 0 && refDefault(method, t.segments) === undefined);
        let read = false;
        const req = {
          method,
          target: p + query,
          get authorization() {
            read = true;
            return authorization;
          },
        };
        const d = decide(indexOf(grants), DEFAULT_CONFIG, req, NOW);
        expect(d.outcome).toBe('open');
        expect(read).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
  it('with a closed candidate, the decision is never open', () => {
    fc.assert(
      fc.property(worldArb, methodArb, pathArb, anyAuth, (grants, method, p, authorization) => {
        const t = normalizeTarget(p);
        fc.pre(t.ok && refCandidates(closedScopes(grants), method, t.segments).length > 0);
        expect(decide(indexOf(grants), DEFAULT_CONFIG, { method, target: p, authorization }, NOW).outcome).not.toBe('open');
      }),
      { numRuns: 200 },
    );
  });
});

// ---- (d) public scopes (docs/access-rules.md "Open, closed, and closed by default") ----

/**
 * Path scopes of every spelling, refused forms and prefixes included: a snapshot an older operator wrote may hold
 * any of them as public, so the decision must hold whatever the compile let through.
 */
const anyPathArb = fc.oneof(
  processArb.map((p) => `processes/${p}`),
  processArb.map((p) => `oapi/processes/${p}`),
  fc.constantFrom('collections/stations', 'oapi', 'oapi/processes', 'oapi/collections', 'oapi/collections/stations', 'oapi/collections/stations/items'),
  fc.constantFrom('oapi/collections/a.b', 'oapi/jobs', 'oapi/jobs/svc', 'data', 'data/a', 'wis2downloader', 'wis2downloader/x'),
);
/** Closed path scopes of any spelling (a token or `closed: true`), next to a world of the model's scopes. */
const pathGrantArb = fc.record({ value: anyPathArb, closedOnly: fc.boolean() });
const mixedWorldArb = fc.tuple(worldArb, fc.array(pathGrantArb, { maxLength: 4 }));
const publicRequestArb = fc.record({
  method: methodArb,
  path: fc.oneof(pathArb, fc.constantFrom('/oapi/jobs/svc', '/oapi/jobs/svc/results', '/oapi/collections/stations/items', '/wis2downloader/x/y', '/data/a/f.bufr4', '/oapi/processes/svc/execution')),
  cred: credArb,
});

/** The index of a world, its closed path scopes, and public lines for `publics` written as a snapshot may hold them. */
function indexWithPublics(grants: readonly Grant[], paths: readonly { value: string; closedOnly: boolean }[], publics: readonly string[]): AccessIndex {
  const objects = grants.map((g, i) => {
    const hash = hashToken(plain(g));
    const o = newProtectedScope(g.scope, `o-${i}`, 'svc', g.closedOnly ? [] : [{ id: tokenIdOf(hash), hash, createdAt: PAST, ...(g.expiresAt ? { expiresAt: g.expiresAt } : {}) }]);
    return g.closedOnly ? { ...o, spec: { ...o.spec, closed: true } } : o;
  });
  const hash = hashToken(POOL[0]!);
  paths.forEach((p, i) => {
    const o = newProtectedScope({ kind: 'path', value: p.value }, `p-${i}`, 'svc', p.closedOnly ? [] : [{ id: tokenIdOf(hash), hash, createdAt: PAST }]);
    objects.push(p.closedOnly ? { ...o, spec: { ...o.spec, closed: true } } : o);
  });
  const s = compileSnapshot(objects);
  const keys = new Set(s.lines.map((l) => { const { kind, value } = JSON.parse(l) as Scope; return `${kind}:${value}`; }));
  const lines = [...s.lines];
  for (const value of new Set(publics)) if (!keys.has(`path:${value}`)) lines.push(JSON.stringify({ kind: 'path', value, public: true, tokens: [] }));
  const r = buildIndex('g', lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** What a public scope may lift (the model): the closed-by-default request it names exactly. */
function publicNames(value: string, method: string | null, rawSegments: readonly string[]): boolean {
  const segments = rawSegments.map((x) => x.toLowerCase());
  const [prefix, resource, id] = segments;
  if (prefix !== 'oapi') return false;
  const unsafe = !(method !== null && SAFE.includes(method));
  if (resource === 'processes' && id !== undefined && method !== 'OPTIONS') return value === `processes/${id}`;
  if (resource === 'collections' && id === 'stations' && unsafe) return value === 'collections/stations';
  if (resource === 'jobs' && unsafe) return value.startsWith('oapi/jobs') && containsRun(segments.slice(0, value.split('/').length), value.split('/')) && segments.length >= value.split('/').length;
  return false;
}

/** For random worlds, one public path scope and requests: `check` gets each request's decision without the public scope and with it. */
function withAndWithoutPublic(check: (before: Decision | VerifyJwt, after: Decision | VerifyJwt, r: Req, pub: string) => void): void {
  fc.assert(
    fc.property(mixedWorldArb, anyPathArb, fc.array(publicRequestArb, { minLength: 1, maxLength: 12 }), ([grants, paths], pub, requests) => {
      const before = indexWithPublics(grants, paths, []);
      const after = indexWithPublics(grants, paths, [pub]);
      for (const r of requests.map(toReq)) check(run(before, r), run(after, r), r, pub);
    }),
    { numRuns: 500 },
  );
}

describe('(d) a public scope never opens what anything else closes', () => {
  it('adding a public scope never opens a request that a non-public covering scope closes', () => {
    withAndWithoutPublic((b, a) => {
      // Governed by a scope with a token or closed: true (not by the default): the public one changes nothing.
      if (b.outcome !== 'open' && b.outcome !== 'malformed' && !b.closedByDefault) expect(a).toEqual(b);
    });
  });
  it('public lifts only "closed by default", and only for exactly the process id, stations or jobs path it names', () => {
    withAndWithoutPublic((b, a, r, pub) => {
      if (a.outcome === 'open' && b.outcome !== 'open') {
        const t = normalizeTarget(r.target);
        expect(b.outcome !== 'malformed' && b.closedByDefault).toBe(true);
        expect(t.ok && publicNames(pub, r.method, t.segments)).toBe(true);
      } else {
        expect(a).toEqual(b);
      }
    });
  });
});

describe('(e) show, has-access-topic and the operator report what svc-auth enforces', () => {
  /** The request svc-auth governs a path scope by: an execution, a stations write, an unsafe request to the path. */
  const ownTarget = (value: string) =>
    value.startsWith('processes/') ? `/oapi/processes/${value.slice('processes/'.length)}/execution` : value === 'collections/stations' ? '/oapi/collections/stations' : `/${value}`;
  it('enforcedState of a public path scope is Open exactly when decide opens its own request, and decideForScope agrees', () => {
    fc.assert(
      fc.property(mixedWorldArb, anyPathArb, ([grants, paths], pub) => {
        fc.pre(!paths.some((p) => p.value === pub) && !grants.some((g) => g.scope.kind === 'path' && g.scope.value === pub));
        const index = indexWithPublics(grants, paths, [pub]);
        const scope: Scope = { kind: 'path', value: pub };
        const state = enforcedState(index, scope, { tokens: 0, subjects: 0, closedFlag: false, public: true }, DEFAULT_CONFIG);
        const request = run(index, { method: 'DELETE', target: ownTarget(pub), authorization: undefined });
        expect(state.state === 'Open').toBe(request.outcome === 'open');
        expect(decideForScope(index, scope, FRESH, NOW).outcome === 'open').toBe(request.outcome === 'open');
      }),
      { numRuns: 500 },
    );
  });
});
