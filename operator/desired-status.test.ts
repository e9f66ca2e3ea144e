// The conditions of each object's desired status, as kstatus (Flux) and the Argo CD health check read them: Ready
// as it always was, Stalled with it for a spec that can never compile, Reconciling while a new generation waits for
// its snapshot; each with its generation, and a lastTransitionTime that moves only when its status does.
import { describe, it, expect } from '@jest/globals';
import { hashToken, tokenIdOf, type Condition, type ProtectedScope } from '../core/index.js';
import { computeDesired } from './compiler.js';
import { pendingStatus, statusEquals, type ScopeStatus } from './desired-status.js';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const T1 = T0 + 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const hash = hashToken('a-token-of-the-scope-0001');
const record = { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' };

function ps(name: string, spec: Record<string, unknown>, generation = 1, status?: ScopeStatus): ProtectedScope {
  return {
    apiVersion: 'auth.svc.io/v1alpha1',
    kind: 'ProtectedScope',
    metadata: { name, namespace: 'ns', generation },
    spec: { tokens: [], ...spec } as unknown as ProtectedScope['spec'],
    ...(status ? { status } : {}),
  };
}

/** The desired status of one object alone in its namespace, at nowMs. */
function desired(o: ProtectedScope, nowMs = T0, prefixes?: { wafPrefix: readonly string[]; apiPrefix: readonly string[] }): ScopeStatus {
  return computeDesired([o], nowMs, prefixes ? { ...prefixes } : undefined).desired.get(o.metadata.name)!.status;
}

const types = (s: ScopeStatus) => (s.conditions ?? []).map((c) => `${c.type}=${c.status}`);
const condition = (s: ScopeStatus, type: string): Condition | undefined => s.conditions?.find((c) => c.type === type);

describe('desired conditions once a published snapshot holds the generation', () => {
  it('a valid object: Ready True (Compiled) and nothing else, as before Stalled and Reconciling existed', () => {
    const s = desired(ps('a', { topicHierarchy: 'origin.a', tokens: [record] }, 4));
    expect(s.conditions).toEqual([
      { type: 'Ready', status: 'True', reason: 'Compiled', message: 'scope Closed; this object has 1 token (1 active)', observedGeneration: 4, lastTransitionTime: iso(T0) },
    ]);
    expect(s.observedGeneration).toBe(4);
  });

  it('an invalid object: Ready False as before, and Stalled True with the reason and only the field errors', () => {
    const s = desired(ps('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] }, 2));
    expect(types(s)).toEqual(['Ready=False', 'Stalled=True']);
    const ready = condition(s, 'Ready')!;
    expect(ready).toMatchObject({ reason: 'Invalid', observedGeneration: 2 });
    expect(ready.message).toMatch(/^spec\.tokens\[0\]\.id: .*; unreadable token records are kept as expired placeholders, so the scope stays closed \(scope Closed;/);
    const stalled = condition(s, 'Stalled')!;
    expect(stalled).toMatchObject({ status: 'True', reason: 'Invalid', observedGeneration: 2, lastTransitionTime: iso(T0) });
    expect(stalled.message).toMatch(/^spec\.tokens\[0\]\.id: must be 12 lowercase hex characters; spec\.tokens\[0\]\.hash: /);
    expect(stalled.message).not.toMatch(/placeholders/);
  });

  it('an object left out (its scope unreadable): Ready False and Stalled True, no observedGeneration lost', () => {
    const s = desired(ps('none', { topicHierarchy: 'bad topic!' }, 5));
    expect(s).toMatchObject({ observedGeneration: 5 });
    expect(condition(s, 'Ready')).toMatchObject({ status: 'False', reason: 'Invalid', observedGeneration: 5 });
    expect(condition(s, 'Ready')!.message).toMatch(/^left out of the snapshot: spec\.topicHierarchy: /);
    expect(condition(s, 'Stalled')).toMatchObject({ status: 'True', reason: 'Invalid', observedGeneration: 5 });
    expect(condition(s, 'Stalled')!.message).toMatch(/^spec\.topicHierarchy: /);
  });

  it('a refused path and a public path at a prefix: Stalled with RefusedPath and PublicRefused', () => {
    const prefixes = { wafPrefix: ['files'], apiPrefix: ['api'] };
    const refused = desired(ps('r', { path: 'api/processes/x', tokens: [record] }), T0, prefixes);
    expect(condition(refused, 'Ready')).toMatchObject({ status: 'False', reason: 'RefusedPath' });
    expect(condition(refused, 'Stalled')).toMatchObject({ status: 'True', reason: 'RefusedPath' });
    expect(condition(refused, 'Stalled')!.message).toMatch(/^spec\.path: compiled as written \(a prefix path\): /);
    expect(condition(refused, 'Ready')!.message.startsWith(condition(refused, 'Stalled')!.message)).toBe(true);
    const notPublic = desired(ps('p', { path: 'files', public: true }), T0, prefixes);
    expect(condition(notPublic, 'Stalled')).toMatchObject({ status: 'True', reason: 'PublicRefused' });
    expect(condition(notPublic, 'Stalled')!.message).toMatch(/^spec\.path: compiled as not public: /);
  });

  it('a new generation that fixes the spec removes Stalled; Ready turns True with a new transition time', () => {
    const broken = ps('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] }, 1);
    const stalled = desired(broken, T0);
    const fixed = desired(ps('bad', { topicHierarchy: 'origin.b', tokens: [record] }, 2, stalled), T1);
    expect(types(fixed)).toEqual(['Ready=True']);
    expect(condition(fixed, 'Ready')).toMatchObject({ reason: 'Compiled', observedGeneration: 2, lastTransitionTime: iso(T1) });
  });
});

describe('lastTransitionTime moves only when a condition\'s status does', () => {
  it('Ready True stays True across a new generation and a new message: its time is kept', () => {
    const first = desired(ps('a', { topicHierarchy: 'origin.a' }, 1), T0);
    const second = desired(ps('a', { topicHierarchy: 'origin.a', tokens: [record] }, 2, first), T1);
    expect(condition(second, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 2, lastTransitionTime: iso(T0) });
    expect(condition(second, 'Ready')!.message).not.toBe(condition(first, 'Ready')!.message);
  });

  it('Stalled True stays True while a new generation is still broken: its time is kept', () => {
    const first = desired(ps('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] }, 1), T0);
    const second = desired(ps('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'yy', hash: 'md5:def', createdAt: 'today' }] }, 2, first), T1);
    expect(condition(second, 'Stalled')).toMatchObject({ status: 'True', observedGeneration: 2, lastTransitionTime: iso(T0) });
    expect(condition(second, 'Ready')).toMatchObject({ status: 'False', lastTransitionTime: iso(T0) });
  });

  it('a no-op resync computes the same status: equal, so nothing is patched and nothing flaps through Reconciling', () => {
    const o = ps('a', { topicHierarchy: 'origin.a', tokens: [record] }, 3);
    const written = desired(o, T0);
    const resynced = desired(ps('a', { topicHierarchy: 'origin.a', tokens: [record] }, 3, written), T1);
    expect(statusEquals(written, resynced)).toBe(true);
    expect(resynced).toEqual(written);
    expect(types(resynced)).toEqual(['Ready=True']);
  });

  it('statusEquals ignores lastTransitionTime alone, not a condition added or removed', () => {
    const s = desired(ps('a', { topicHierarchy: 'origin.a' }, 1), T0);
    const later = { ...s, conditions: s.conditions!.map((c) => ({ ...c, lastTransitionTime: iso(T1) })) };
    expect(statusEquals(s, later)).toBe(true);
    const withStalled = { ...s, conditions: [...s.conditions!, { type: 'Stalled', status: 'True' as const, reason: 'Invalid', message: 'x', lastTransitionTime: iso(T0) }] };
    expect(statusEquals(s, withStalled)).toBe(false);
  });
});

describe('pendingStatus: a new generation no published snapshot holds yet', () => {
  it('Ready False and Reconciling True for the new generation; the other fields still describe the published one', () => {
    const ready = desired(ps('a', { topicHierarchy: 'origin.a', tokens: [record] }, 1), T0);
    const edited = ps('a', { topicHierarchy: 'origin.a' }, 2, ready);
    const p = pendingStatus(edited, 'SnapshotPending', 'svc-operator is compiling it', iso(T1))!;
    expect(p).toMatchObject({ observedGeneration: 1, state: 'Closed', tokens: 1, activeTokens: 1, scope: 'origin.a' });
    const message = 'generation 2 is not in a published snapshot yet: svc-operator is compiling it';
    expect(p.conditions).toEqual([
      { type: 'Ready', status: 'False', reason: 'SnapshotPending', message, observedGeneration: 2, lastTransitionTime: iso(T1) },
      { type: 'Reconciling', status: 'True', reason: 'SnapshotPending', message, observedGeneration: 2, lastTransitionTime: iso(T1) },
    ]);
    // Published: Reconciling goes, Ready turns True again with a new transition time.
    const published = desired(ps('a', { topicHierarchy: 'origin.a' }, 2, p), T1 + 1000);
    expect(types(published)).toEqual(['Ready=True']);
    expect(condition(published, 'Ready')).toMatchObject({ observedGeneration: 2, lastTransitionTime: iso(T1 + 1000) });
  });

  it('drops Stalled (it spoke of an older generation) and keeps Reconciling\'s time while the write keeps failing', () => {
    const stalled = desired(ps('bad', { topicHierarchy: 'origin.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] }, 1), T0);
    const first = pendingStatus(ps('bad', { topicHierarchy: 'origin.b' }, 2, stalled), 'SnapshotWriteFailed', 'the snapshot write failed (403 Forbidden: denied); svc-operator retries', iso(T1))!;
    expect(types(first)).toEqual(['Ready=False', 'Reconciling=True']);
    expect(condition(first, 'Ready')).toMatchObject({ reason: 'SnapshotWriteFailed', lastTransitionTime: iso(T0) });
    const again = pendingStatus(ps('bad', { topicHierarchy: 'origin.b' }, 2, first), 'SnapshotWriteFailed', 'the snapshot write failed (HTTP 500); svc-operator retries', iso(T1 + 5000))!;
    expect(condition(again, 'Reconciling')).toMatchObject({ lastTransitionTime: iso(T1), message: 'generation 2 is not in a published snapshot yet: the snapshot write failed (HTTP 500); svc-operator retries' });
  });

  it('nothing is pending when the status already describes the generation, or the object never had one and has no generation', () => {
    const ready = desired(ps('a', { topicHierarchy: 'origin.a' }, 3), T0);
    expect(pendingStatus(ps('a', { topicHierarchy: 'origin.a' }, 3, ready), 'SnapshotPending', 'x', iso(T1))).toBeUndefined();
    const noGeneration = { ...ps('a', { topicHierarchy: 'origin.a' }), metadata: { name: 'a' } };
    expect(pendingStatus(noGeneration, 'SnapshotPending', 'x', iso(T1))).toBeUndefined();
  });

  it('a new object (no status, or only the CRD\'s default Ready=Unknown) is pending with only its conditions, timed now', () => {
    expect(pendingStatus(ps('n', { topicHierarchy: 'origin.n' }, 1), 'SnapshotPending', 'x', iso(T0))).toEqual({
      conditions: [expect.objectContaining({ type: 'Ready', status: 'False' }), expect.objectContaining({ type: 'Reconciling', status: 'True' })],
    });
    const defaulted: ScopeStatus = { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'AwaitingOperator', message: 'svc-operator has not compiled this object yet', lastTransitionTime: '1970-01-01T00:00:00Z' }] };
    const p = pendingStatus(ps('n', { topicHierarchy: 'origin.n' }, 1, defaulted), 'SnapshotPending', 'x', iso(T0))!;
    expect(p.observedGeneration).toBeUndefined();
    expect(p.conditions!.map((c) => c.lastTransitionTime)).toEqual([iso(T0), iso(T0)]);
    // The compiled status replaces the placeholder's time too (Unknown never stays).
    expect(condition(desired(ps('n', { topicHierarchy: 'origin.n' }, 1, defaulted), T1), 'Ready')).toMatchObject({ status: 'True', lastTransitionTime: iso(T1) });
  });
});
