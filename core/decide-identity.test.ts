import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { buildIndex, type AccessIndex } from './access-index.js';
import { decide, decideForScopeAs, DEFAULT_CONFIG, type AccessConfig, type Decision, type VerifyJwt, type VerifiedJwt } from './decide.js';
import { unverifiedIssuer } from './jwt-shape.js';
import { newProtectedScope, type ProtectedScope } from './protected-scope.js';
import type { Scope } from './scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import type { Identity, Subject } from './subject.js';
import { formatGeneratedToken, hashToken, tokenIdOf } from './token.js';

// Identities (spec.subjects) in the decision: the same most-specific rule as tokens, and a JWT that did not
// verify never grants.

const NOW = Date.parse('2026-11-21T12:00:00Z');
const LATER = NOW + 3600_000;
const ISSUER = 'https://idp.example.org';
const CONFIG: AccessConfig = { ...DEFAULT_CONFIG, oidcIssuers: new Set([ISSUER]) };

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
/** A JWT-shaped string (not signed: decide never verifies; it only routes it). */
const jwtShaped = (claims: Record<string, unknown>, sig = 'c2ln') => `${b64({ alg: 'RS256', kid: 'k' })}.${b64(claims)}.${sig}`;

function world(entries: readonly { scope: Scope; subjects?: Subject[]; tokens?: string[] }[]): AccessIndex {
  const objects: ProtectedScope[] = entries.map((e, i) => {
    const tokens = (e.tokens ?? []).map((t) => {
      const hash = hashToken(t);
      return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
    });
    const o = newProtectedScope(e.scope, `o-${i}`, 'svc', tokens);
    return e.subjects ? { ...o, spec: { ...o.spec, subjects: e.subjects } } : o;
  });
  const s = compileSnapshot(objects);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const topic = (value: string): Scope => ({ kind: 'topic', value });
const user = (name: string): Subject => ({ kind: 'User', name });
const group = (name: string): Subject => ({ kind: 'Group', name });
const file = (levels: string) => `/data/2026-11-21/wis/${levels.split('.').join('/')}/x.bufr4`;
const as = (identity: Partial<Identity> & { user: string }, expiresAt = LATER): VerifiedJwt => ({ ok: true, identity: { issuer: ISSUER, groups: [], ...identity }, carrier: 'bearer', expiresAt });
const ask = (index: AccessIndex, target: string, verified?: VerifiedJwt, authorization?: string): Decision | VerifyJwt =>
  decide(index, CONFIG, { method: 'GET', target, authorization, ...(verified ? { verified } : {}) }, NOW);

describe('identities in the decision', () => {
  const index = world([
    { scope: topic('a.wis2.core'), subjects: [user('alice'), group('ops')] },
    { scope: topic('a.wis2.core.embargo'), subjects: [user('bob')] },
  ]);

  it('a scope with only subjects is closed: no credential, no access', () => {
    expect(ask(index, file('a.wis2.core.weather')).outcome).toBe('no-token');
  });

  it('a user named by the governing scope is granted, without a group', () => {
    const d = ask(index, file('a.wis2.core.weather'), as({ user: 'alice' }));
    expect(d).toMatchObject({ outcome: 'granted-identity', user: 'alice', issuer: ISSUER, scopeKey: 'topic:a.wis2.core', expiresAt: LATER });
    expect('group' in d).toBe(false);
  });

  it('a member of a granted group is granted, and the answer names the group', () => {
    expect(ask(index, file('a.wis2.core.weather'), as({ user: 'carol', groups: ['staff', 'ops'] }))).toMatchObject({ outcome: 'granted-identity', user: 'carol', group: 'ops' });
  });

  it('names are exact: Alice is not alice, OPS is not ops', () => {
    expect(ask(index, file('a.wis2.core.weather'), as({ user: 'Alice', groups: ['OPS'] }))).toMatchObject({ outcome: 'insufficient-scope', user: 'Alice' });
  });

  it('the most specific closed scope decides: the parent\'s subjects do not open the embargoed child', () => {
    expect(ask(index, file('a.wis2.core.embargo.x'), as({ user: 'alice', groups: ['ops'] }))).toMatchObject({ outcome: 'insufficient-scope', governing: [topic('a.wis2.core.embargo')] });
    expect(ask(index, file('a.wis2.core.embargo.x'), as({ user: 'bob' }))).toMatchObject({ outcome: 'granted-identity', user: 'bob' });
  });

  it('a JWT that failed verification is an invalid token, whatever it claims', () => {
    expect(ask(index, file('a.wis2.core.weather'), { ok: false, carrier: 'bearer' })).toMatchObject({ outcome: 'invalid-token', why: 'jwt' });
  });

  it('a JWT past its exp is refused at decision time', () => {
    expect(ask(index, file('a.wis2.core.weather'), as({ user: 'alice' }, NOW))).toMatchObject({ outcome: 'invalid-token', why: 'jwt' });
  });

  it('open data asks for no verification', () => {
    expect(ask(index, file('b.other.data'), undefined, `Bearer ${jwtShaped({ iss: ISSUER, sub: 'alice' })}`).outcome).toBe('open');
  });

  it('a bearer JWT of a configured issuer is routed to verification, never looked up as a token', () => {
    const jwt = jwtShaped({ iss: ISSUER, sub: 'alice' });
    const d = ask(index, file('a.wis2.core.weather'), undefined, `Bearer ${jwt}`);
    expect(d).toMatchObject({ outcome: 'verify-jwt', issuer: ISSUER, carrier: 'bearer' });
    // the query argument too (wget users)
    expect(ask(index, `${file('a.wis2.core.weather')}?token=${jwt}`)).toMatchObject({ outcome: 'verify-jwt', carrier: 'query' });
  });

  it('a JWT of another issuer is an opaque token (unknown here), not a grant', () => {
    expect(ask(index, file('a.wis2.core.weather'), undefined, `Bearer ${jwtShaped({ iss: 'https://evil.example', sub: 'alice' })}`)).toMatchObject({ outcome: 'invalid-token' });
  });

  it('tokens and subjects grant side by side in one scope', () => {
    const token = formatGeneratedToken(Buffer.alloc(32, 7));
    const both = world([{ scope: topic('a.wis2.core'), subjects: [group('ops')], tokens: [token] }]);
    expect(ask(both, file('a.wis2.core.x'), undefined, `Bearer ${token}`).outcome).toBe('granted');
    expect(ask(both, file('a.wis2.core.x'), as({ user: 'u', groups: ['ops'] })).outcome).toBe('granted-identity');
  });

  it("the CLI's has-access-topic --user answers the same", () => {
    expect(decideForScopeAs(index, topic('a.wis2.core'), { issuer: '', user: 'dave', groups: ['ops'] }, NOW)).toMatchObject({ outcome: 'granted-identity', group: 'ops' });
    expect(decideForScopeAs(index, topic('a.wis2.core.embargo'), { issuer: '', user: 'alice', groups: [] }, NOW).outcome).toBe('insufficient-scope');
  });
});

describe('unverifiedIssuer (routing only)', () => {
  it.each([
    ['a compact JWS', jwtShaped({ iss: ISSUER }), ISSUER],
    ['alg none (empty signature) is still a JWT of that issuer', `${b64({ alg: 'none' })}.${b64({ iss: ISSUER })}.`, ISSUER],
    ['no iss', jwtShaped({ sub: 'x' }), undefined],
    ['iss not a string', jwtShaped({ iss: 7 }), undefined],
    ['two parts', `${b64({ alg: 'RS256' })}.${b64({ iss: ISSUER })}`, undefined],
    ['four parts', `${jwtShaped({ iss: ISSUER })}.x`, undefined],
    ['not base64url', `a+b.${b64({ iss: ISSUER })}.c`, undefined],
    ['payload not JSON', `${b64({})}.${Buffer.from('nope').toString('base64url')}.c`, undefined],
    ['an svc_ token', formatGeneratedToken(Buffer.alloc(32, 1)), undefined],
    ['too long', `${b64({})}.${b64({ iss: ISSUER, pad: 'x'.repeat(20_000) })}.c`, undefined],
  ])('%s', (_name, value, want) => {
    expect(unverifiedIssuer(value)).toBe(want);
  });
});

// ---- properties ----

const LEVELS = ['a', 'b', 'c'];
const levelsArb = fc.array(fc.constantFrom(...LEVELS), { minLength: 1, maxLength: 4 });
const subjectArb = fc.oneof(fc.constantFrom('u1', 'u2', 'u3').map(user), fc.constantFrom('g1', 'g2').map(group));
const entryArb = fc.record({ scope: levelsArb.map((l) => topic(l.join('.'))), subjects: fc.array(subjectArb, { minLength: 1, maxLength: 3 }) });
const identityArb = fc.record({ user: fc.constantFrom('u1', 'u2', 'u3', 'u4'), groups: fc.subarray(['g1', 'g2', 'g3']) });
const containsRun = (hay: readonly string[], needle: readonly string[]) => hay.some((_, i) => needle.every((n, j) => hay[i + j] === n));

/** Entries deduplicated by scope (one object per scope keeps the worlds simple; merging is tested elsewhere). */
const dedupe = <T extends { scope: Scope }>(xs: readonly T[]) => [...new Map(xs.map((x) => [x.scope.value, x])).values()];

describe('properties', () => {
  it('adding a subject to one scope never changes the answer for a request that scope does not cover', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 5 }), levelsArb, subjectArb, levelsArb, identityArb, (entries, added, subject, request, identity) => {
        const scopes = dedupe(entries);
        const target = topic(added.join('.'));
        if (containsRun(request, added)) return; // the request is the target scope's own data
        const before = world(scopes);
        const withSubject = [...scopes.filter((e) => e.scope.value !== target.value), { scope: target, subjects: [...(scopes.find((e) => e.scope.value === target.value)?.subjects ?? []), subject] }];
        const after = world(dedupe(withSubject));
        const path = file(request.join('.'));
        for (const v of [undefined, as(identity), { ok: false, carrier: 'bearer' } as const]) {
          expect(ask(after, path, v)).toEqual(ask(before, path, v));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a credential that is not a valid JWT of a configured issuer is never granted by a subject', () => {
    const credentialArb = fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/\s/.test(s)),
      fc.record({ iss: fc.constantFrom(ISSUER, 'https://other.example', 'http://idp.example.org'), sub: fc.constantFrom('u1', 'u2'), groups: fc.constant(['g1', 'g2']) }).map((c) => jwtShaped(c)),
      fc.constant(`${b64({ alg: 'none' })}.${b64({ iss: ISSUER, sub: 'u1', groups: ['g1'] })}.`),
    );
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 5 }), levelsArb, credentialArb, fc.boolean(), (entries, request, credential, inQuery) => {
        // Subjects only: no token exists, so nothing but a verified identity could grant.
        const index = world(dedupe(entries));
        const path = file(request.join('.'));
        const d = inQuery ? ask(index, `${path}?token=${encodeURIComponent(credential)}`) : ask(index, path, undefined, `Bearer ${credential}`);
        expect(d.outcome).not.toBe('granted');
        expect(d.outcome).not.toBe('granted-identity');
        // What verification would say for anything routed to it (forged, none, tampered): failure never grants.
        if (d.outcome === 'verify-jwt') {
          expect(ask(index, path, { ok: false, carrier: d.carrier }).outcome).toBe('invalid-token');
        }
      }),
      { numRuns: 500 },
    );
  });
});
