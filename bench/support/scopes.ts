// The snapshot svc-auth's benches serve: 10,000 scopes of 10 tokens each (6,000 topic hierarchies, 3,000 datasets,
// 1,000 process paths), one token of which the bench knows.
import { randomBytes } from 'node:crypto';
import { hashToken, tokenIdOf, type ProtectedScope, type TokenRecord } from '../../core/index.js';

export const SCOPES = 10_000;
export const TOKENS_PER_SCOPE = 10;
/** The scope whose fourth token is the bench's. */
export const KNOWN_SCOPE = 42;
/** A WAF file that scope KNOWN_SCOPE governs. */
export const PROTECTED_PATH = '/data/2026-11-21/wis/origin/a/wis2/centre-42/data/core/weather/surface/x.bufr4';

export function tokenRecord(hash: TokenRecord['hash']): TokenRecord {
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-21T00:00:00Z' };
}

/** A record of a token nobody knows. */
export const randomRecord = (): TokenRecord => tokenRecord(`sha256:${randomBytes(32).toString('hex')}`);

function scopeSpec(i: number): Record<string, string> {
  if (i % 10 < 6) return { topicHierarchy: `origin.a.wis2.centre-${i}.data.core` };
  if (i % 10 < 9) return { metadataId: `urn:wmo:md:centre-${i}:surface-weather-observations` };
  return { path: `processes/proc${i}` };
}

/** The SCOPES objects, random tokens but `token` (the fourth of scope KNOWN_SCOPE). */
export function benchScopes(token: string): ProtectedScope[] {
  return Array.from({ length: SCOPES }, (_, i): ProtectedScope => {
    const tokens = Array.from({ length: TOKENS_PER_SCOPE }, (_, j) => (i === KNOWN_SCOPE && j === 3 ? tokenRecord(hashToken(token)) : randomRecord()));
    return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: `scope-${i}` }, spec: { ...scopeSpec(i), tokens } as unknown as ProtectedScope['spec'] };
  });
}

/** `o` with one more random token: the next generation differs by one token in one scope, so every swap is a real reload. */
export function withOneMoreToken(o: ProtectedScope): ProtectedScope {
  return { ...o, spec: { ...o.spec, tokens: [...(o.spec.tokens ?? []), randomRecord()] } };
}
