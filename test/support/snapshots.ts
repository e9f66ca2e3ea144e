/**
 * Small worlds of ProtectedScopes for the snapshot's property tests (core/snapshot/*.test.ts): scopes from a small
 * pool, so objects collide, and tokens from a small pool, so hashes repeat.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { compileSnapshot } from '../../core/snapshot/compile.js';
import { newProtectedScope, type ProtectedScope, type TokenRecord } from '../../core/protected-scope.js';
import { hashToken, tokenIdOf, type TokenHash } from '../../core/token.js';
import type { Scope } from '../../core/scope.js';

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
export const H = (seed: string): TokenHash => hashToken(`snapshot-test-${seed}`);
export const rec = (hash: TokenHash, expiresAt?: string): TokenRecord => ({
  id: tokenIdOf(hash),
  hash,
  createdAt: '2026-11-21T10:00:00Z',
  ...(expiresAt === undefined ? {} : { expiresAt }),
});
let names = 0;
export const obj = (scope: Scope, tokens: TokenRecord[], networks?: readonly string[]): ProtectedScope => {
  const o = newProtectedScope(scope, `o-${names++}`, 'svc', tokens);
  return networks === undefined ? o : { ...o, spec: { ...o.spec, networks: networks.map((cidr) => ({ cidr })) } };
};
export const topic = (value: string): Scope => ({ kind: 'topic', value });
export const dataset = (value: string): Scope => ({ kind: 'dataset', value });
export const path = (value: string): Scope => ({ kind: 'path', value });

export const scopePool: Scope[] = [topic('a'), topic('a.b'), topic('a.b.c'), dataset('urn:x'), dataset('urn:x:y'), path('processes/svc'), path('collections/stations')];
export const hashPool = Array.from({ length: 6 }, (_, i) => H(`pool-${i}`));
export const expiryArb = fc.constantFrom(undefined, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', '2027-01-01T01:00:00+01:00', '2030-06-01T12:00:00.5Z');
/** Networks that overlap (a /32 inside a /24) and of both families. */
export const networkPool = ['203.0.113.0/24', '203.0.113.7/32', '198.51.100.0/24', '2001:db8::/32', '2001:db8::7/128'];
export const objectArb = fc
  .tuple(
    fc.constantFrom(...scopePool),
    fc.uniqueArray(fc.tuple(fc.constantFrom(...hashPool), expiryArb), { maxLength: 4, selector: ([h]) => h }),
    fc.option(fc.uniqueArray(fc.constantFrom(...networkPool), { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 3 }),
  )
  .map(([scope, tokens, networks]) => obj(scope, tokens.map(([h, e]) => rec(h, e)), networks));
export const objectsArb = fc.array(objectArb, { maxLength: 10 });
export const snapshotArb = objectsArb.map(compileSnapshot);
