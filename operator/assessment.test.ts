import { describe, it, expect } from '@jest/globals';
import { hashToken, tokenIdOf, type ProtectedScope } from '../core/index.js';
import { assess, entryFor, EPOCH, PLACEHOLDER_HASH, type Assessment, type InvalidAssessment } from './assessment.js';

function ps(name: string, spec: Record<string, unknown>): ProtectedScope {
  return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name }, spec: { tokens: [], ...spec } as unknown as ProtectedScope['spec'] };
}

const hash = hashToken('a-token-of-the-scope-0001');
const record = { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' };

function invalid(a: Assessment): InvalidAssessment {
  if (a.valid) throw new Error(`expected ${a.name} to be invalid`);
  return a;
}

describe('assess: valid, or invalid with its errors', () => {
  it('a valid object is compiled as written: its scope, no errors', () => {
    const o = ps('ok', { topicHierarchy: 'a.b', tokens: [record] });
    const a = assess(o);
    expect(a).toEqual({ valid: true, obj: o, name: 'ok', scope: { kind: 'topic', value: 'a.b' }, sanitized: o });
    expect('errors' in a).toBe(false);
  });

  it('a valid public path at a prefix is compiled without public, and says why', () => {
    const a = assess(ps('p', { path: 'oapi', public: true }));
    expect(a.valid && a.refused?.reason).toBe('PublicRefused');
    expect(a.sanitized?.spec).toEqual({ path: 'oapi', tokens: [] });
  });

  it('an invalid object whose scope can be read is compiled sanitized: unreadable records expired, closed kept, in SPEC_FIELDS order', () => {
    const a = invalid(assess(ps('bad', { topicHierarchy: 'a.b', closed: true, tokens: [record, { id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] })));
    expect(a.errors.length).toBeGreaterThan(0);
    expect(a.scope).toEqual({ kind: 'topic', value: 'a.b' });
    expect(a.sanitized?.spec).toEqual({ topicHierarchy: 'a.b', tokens: [record, { id: 'zz', hash: PLACEHOLDER_HASH, createdAt: EPOCH, expiresAt: EPOCH }], closed: true });
    expect(Object.keys(a.sanitized!.spec)).toEqual(['topicHierarchy', 'tokens', 'closed']);
  });

  it('a bad subject keeps the scope closed; the good ones still grant', () => {
    const a = invalid(assess(ps('subj', { path: 'processes/svc', subjects: [{ kind: 'User', name: 'alice' }, { kind: 'Robot', name: 'x' }] })));
    expect(a.sanitized?.spec).toEqual({ path: 'processes/svc', tokens: [], closed: true, subjects: [{ kind: 'User', name: 'alice' }] });
  });

  it('a bad network keeps the scope closed; the canonical ones still grant, each once', () => {
    const networks = [{ cidr: '203.0.113.0/24', description: 'gc' }, { cidr: '203.0.113.9/24' }, 'x', { cidr: '2001:db8::/32' }, { cidr: '203.0.113.0/24' }];
    const a = invalid(assess(ps('net', { topicHierarchy: 'a.b', networks })));
    expect(a.sanitized?.spec).toEqual({ topicHierarchy: 'a.b', tokens: [], closed: true, networks: [{ cidr: '2001:db8::/32' }, { cidr: '203.0.113.0/24' }] });
  });

  it('an object whose scope cannot be read is left out: errors, no scope, nothing compiled', () => {
    for (const spec of [{ topicHierarchy: 'a', path: 'collections/stations' }, { topicHierarchy: 'a b' }, { metadataId: 42 }]) {
      const a = invalid(assess(ps('out', spec)));
      expect([a.scope, a.sanitized, a.errors.length > 0]).toEqual([undefined, undefined, true]);
      expect(entryFor(a.obj, 'k').scopeKey).toBeUndefined();
    }
  });
});
