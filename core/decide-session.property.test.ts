import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { buildIndex, type AccessIndex } from './access-index.js';
import { isSafeMethod } from './browser.js';
import { decide, DEFAULT_CONFIG, judgeRequest, settleRequest, type Decision, type VerifiedJwt, type VerifyJwt } from './decide.js';
import { newProtectedScope } from './protected-scope.js';
import type { Scope } from './scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import type { Identity, Subject } from './subject.js';
import { hashToken, tokenIdOf } from './token.js';

// Property (issue 29): a browser session never grants what the same identity as a bearer JWT would not. Worlds put
// users, groups, tokens and `closed: true` on overlapping scopes; identities draw from the same names; requests from
// every area and method, with or without same-origin evidence. The session's answer is the JWT's answer, except that
// an unsafe method without same-origin evidence is refused where the JWT is granted (the CSRF rule): never the other
// way round.

const NOW = Date.parse('2026-11-21T12:00:00Z');
const LATER = NOW + 3600_000;
const ISSUER = 'https://idp.example.org';

const level = fc.constantFrom('a', 'b', 'core');
const topicArb = fc.array(level, { minLength: 1, maxLength: 3 }).map((l) => l.join('.'));
const urnArb = fc.array(fc.constantFrom('x', 'y'), { minLength: 1, maxLength: 2 }).map((p) => `urn:${p.join(':')}`);
const processArb = fc.array(fc.constantFrom('svc', 'p'), { minLength: 1, maxLength: 2 }).map((p) => p.join('-'));
const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  topicArb.map((value): Scope => ({ kind: 'topic', value })),
  urnArb.map((value): Scope => ({ kind: 'dataset', value })),
  processArb.map((p): Scope => ({ kind: 'path', value: `processes/${p}` })),
  fc.constant<Scope>({ kind: 'path', value: 'collections/stations' }),
  fc.constant<Scope>({ kind: 'path', value: 'wis2downloader' }),
);
const USERS = ['alice', 'bob', 'carol'];
const GROUPS = ['ops', 'staff', 'guests'];
const subjectArb: fc.Arbitrary<Subject> = fc.oneof(
  fc.constantFrom(...USERS).map((name): Subject => ({ kind: 'User', name })),
  fc.constantFrom(...GROUPS).map((name): Subject => ({ kind: 'Group', name })),
);
interface Closing {
  readonly scope: Scope;
  readonly subjects: readonly Subject[];
  readonly how: 'subjects' | 'token' | 'closed';
}
const closingArb: fc.Arbitrary<Closing> = fc.record({ scope: scopeArb, subjects: fc.array(subjectArb, { maxLength: 3 }), how: fc.constantFrom('subjects', 'subjects', 'token', 'closed') });

function indexOf(world: readonly Closing[]): AccessIndex {
  const hash = hashToken('svc-session-property-token-0000');
  const objects = world.map((c, i) => {
    const o = newProtectedScope(c.scope, `o-${i}`, 'svc', c.how === 'token' ? [{ id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' }] : []);
    const subjects = c.how === 'subjects' && c.subjects.length > 0 ? { subjects: [...c.subjects] } : {};
    return { ...o, spec: { ...o.spec, ...subjects, ...(c.how === 'closed' || (c.how === 'subjects' && c.subjects.length === 0) ? { closed: true } : {}) } };
  });
  const s = compileSnapshot(objects);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const identityArb: fc.Arbitrary<Identity> = fc.record({
  issuer: fc.constant(ISSUER),
  user: fc.constantFrom(...USERS, 'mallory'),
  groups: fc.uniqueArray(fc.constantFrom(...GROUPS, 'other'), { maxLength: 4 }),
});
const methodArb = fc.constantFrom<string | null>('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', null);
const pathArb = fc.oneof(
  fc.array(fc.oneof(level, urnArb, fc.constantFrom('2026', 'wis', 'f.bufr4', 'metadata')), { maxLength: 6 }).map((s) => `/data/${s.join('/')}`),
  fc.tuple(fc.oneof(topicArb, urnArb, fc.constantFrom('stations', 'discovery-metadata')), fc.constantFrom('', '/items')).map(([id, rest]) => `/oapi/collections/${id}${rest}`),
  fc.tuple(fc.oneof(processArb, fc.constant('svcx')), fc.constantFrom('', '/execution')).map(([id, rest]) => `/oapi/processes/${id}${rest}`),
  fc.constantFrom('/', '/oapi/jobs/1', '/wis2downloader/subscriptions', '/other', '/data/%2e%2e/oapi'),
);

/** A request into a scope's own data, so that worlds and requests meet often. */
function targetFor(scope: Scope): string {
  if (scope.kind === 'topic') return `/data/2026/wis/${scope.value.split('.').join('/')}/f.bufr4`;
  if (scope.kind === 'dataset') return `/data/2026/wis/${scope.value}/f.bufr4`;
  if (scope.value.startsWith('processes/')) return `/oapi/processes/${scope.value.slice('processes/'.length)}/execution`;
  return scope.value === 'collections/stations' ? '/oapi/collections/stations/items' : `/${scope.value}/x`;
}
/** A world, and requests that are half the time into one of its scopes. */
const caseArb = fc.array(closingArb, { maxLength: 8 }).chain((world) =>
  fc.tuple(fc.constant(world), world.length === 0 ? pathArb : fc.oneof(pathArb, fc.constantFrom(...world.map((c) => targetFor(c.scope))))),
);

const asJwt = (identity: Identity): VerifiedJwt => ({ ok: true, identity, carrier: 'bearer', expiresAt: LATER });
const asSession = (identity: Identity): VerifiedJwt => ({ ok: true, identity, carrier: 'session', expiresAt: LATER });
const granted = (d: Decision | VerifyJwt): boolean => d.outcome === 'open' || d.outcome === 'granted' || d.outcome === 'granted-identity';

describe('a session never grants what the same identity as a bearer JWT would not', () => {
  it('for random worlds, identities, requests and same-origin evidence', () => {
    const seen = { granted: 0, crossSite: 0, refused: 0 };
    fc.assert(
      fc.property(caseArb, identityArb, methodArb, fc.boolean(), ([world, target], identity, method, sameOrigin) => {
        const index = indexOf(world);
        const jwt = decide(index, DEFAULT_CONFIG, { method, target, authorization: undefined, verified: asJwt(identity) }, NOW);
        const session = decide(index, DEFAULT_CONFIG, { method, target, authorization: undefined, verified: asSession(identity), sameOrigin }, NOW);
        if (session.outcome === 'granted-identity') seen.granted++;
        else if (session.outcome === 'insufficient-scope') seen[session.crossSite ? 'crossSite' : 'refused']++;
        if (granted(session)) expect(granted(jwt)).toBe(true);
        if (session.outcome === 'granted-identity') {
          expect(jwt).toMatchObject({ outcome: 'granted-identity', scopeKey: session.scopeKey, user: session.user });
          expect(jwt.outcome === 'granted-identity' && jwt.group).toBe(session.group);
        }
        // The CSRF rule, both ways: refused as cross-site exactly where the JWT is granted an unsafe method and the
        // request has no same-origin evidence.
        const csrf = jwt.outcome === 'granted-identity' && !isSafeMethod(method) && !sameOrigin;
        expect(session.outcome === 'insufficient-scope' && session.crossSite === true).toBe(csrf);
        // The only difference: an unsafe method without same-origin evidence, refused as cross-site.
        if (session.outcome !== jwt.outcome) {
          expect(jwt.outcome).toBe('granted-identity');
          expect(isSafeMethod(method) || sameOrigin).toBe(false);
          expect(session).toMatchObject({ outcome: 'insufficient-scope', crossSite: true, user: identity.user, carrier: 'session' });
        }
      }),
      { numRuns: 2000 },
    );
    // Not vacuous: sessions were granted, refused, and refused as cross-site where the JWT was granted.
    expect(seen.granted).toBeGreaterThan(50);
    expect(seen.crossSite).toBeGreaterThan(10);
    expect(seen.refused).toBeGreaterThan(50);
  });

  it('an expired session grants nothing, wherever the same identity would be granted', () => {
    fc.assert(
      fc.property(fc.array(closingArb, { maxLength: 6 }), identityArb, pathArb, (world, identity, target) => {
        const index = indexOf(world);
        const expired: VerifiedJwt = { ok: true, identity, carrier: 'session', expiresAt: NOW };
        const d = decide(index, DEFAULT_CONFIG, { method: 'GET', target, authorization: undefined, verified: expired, sameOrigin: true }, NOW);
        expect(d.outcome === 'granted-identity' || d.outcome === 'granted').toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe('a session as a resolved credential (settleRequest, then judgeRequest)', () => {
  const credentialArb = fc.constantFrom<string | undefined>(undefined, 'Bearer', 'Bearer ', `Bearer svc_${'x'.repeat(40)}`, 'Basic dTpw', 'Bearer a b', 'Token x');
  it('decides as decide does with the session verified; settling alone never reads a credential', () => {
    fc.assert(
      fc.property(caseArb, identityArb, methodArb, credentialArb, fc.boolean(), ([world, target], identity, method, authorization, sameOrigin) => {
        const index = indexOf(world);
        const settled = settleRequest(index, DEFAULT_CONFIG, { method, target, authorization });
        // What governs a request does not depend on its credential.
        expect(settleRequest(index, DEFAULT_CONFIG, { method, target, authorization: undefined })).toEqual(settled);
        const without = decide(index, DEFAULT_CONFIG, { method, target, authorization }, NOW);
        if (settled.outcome !== 'governed') {
          expect(without).toEqual(settled);
          return;
        }
        const session = { kind: 'session' as const, session: asSession(identity), sameOrigin };
        expect(judgeRequest(index, settled, session, NOW)).toEqual(decide(index, DEFAULT_CONFIG, { method, target, authorization: undefined, verified: asSession(identity), sameOrigin }, NOW));
        // No credential judged is the anonymous decision.
        expect(judgeRequest(index, settled, { kind: 'none' }, NOW)).toEqual(decide(index, DEFAULT_CONFIG, { method, target, authorization: undefined }, NOW));
      }),
      { numRuns: 1000 },
    );
  });
});
