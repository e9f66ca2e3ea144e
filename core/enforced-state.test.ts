import { describe, expect, it } from '@jest/globals';
import { buildIndex } from './access-index.js';
import { DEFAULT_CONFIG } from './decide.js';
import { enforcedState } from './enforced-state.js';
import { newProtectedScope, type ProtectedScope } from './protected-scope.js';
import type { Scope } from './scope.js';
import { compileSnapshot } from './snapshot/compile.js';

// A scope with a network is closed, as the snapshot compiles it (its line is in the decision index) and as show,
// public and the operator's status say it (enforcedState).
const topic = (value: string): Scope => ({ kind: 'topic', value });
const path = (value: string): Scope => ({ kind: 'path', value });
const withNetworks = (scope: Scope, name: string, cidrs: string[], extra: Partial<ProtectedScope['spec']> = {}): ProtectedScope => {
  const o = newProtectedScope(scope, name, 'svc', []);
  return { ...o, spec: { ...o.spec, networks: cidrs.map((cidr) => ({ cidr })), ...extra } as ProtectedScope['spec'] };
};
const grants = (networks: number) => ({ tokens: 0, subjects: 0, networks, closedFlag: false, public: false });

describe('enforcedState: networks', () => {
  it('a topic or a path with only networks is Closed by networks, and in the index', () => {
    const objects = [withNetworks(topic('a.b'), 'a', ['203.0.113.7/32']), withNetworks(path('data'), 'b', ['2001:db8::/32'])];
    const snapshot = compileSnapshot(objects);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    expect(snapshot.scopeCount).toBe(2);
    expect(enforcedState(index.value, topic('a.b'), grants(1), DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks' });
    expect(enforcedState(index.value, path('data'), grants(1), DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks' });
    expect(enforcedState(undefined, path('data'), grants(0), DEFAULT_CONFIG)).toEqual({ state: 'Open' });
  });

  it('tokens and subjects say why first; networks before closed: true and the default of path scopes', () => {
    expect(enforcedState(undefined, topic('a'), { ...grants(2), tokens: 1 }, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'tokens' });
    expect(enforcedState(undefined, topic('a'), { ...grants(2), subjects: 1 }, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'subjects' });
    expect(enforcedState(undefined, topic('a'), { ...grants(2), closedFlag: true }, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks' });
    expect(enforcedState(undefined, path('processes/svc'), grants(1), DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks' });
  });

  it('a networks count left out reads as none (callers from before networks)', () => {
    expect(enforcedState(undefined, topic('a'), { tokens: 0, subjects: 0, closedFlag: false, public: false }, DEFAULT_CONFIG)).toEqual({ state: 'Open' });
  });
});

describe('enforcedState: networks that hold every address, or wide ones', () => {
  it('with the networks given, 0.0.0.0/0 and ::/0 make the scope open to every address, a path scope with an index too', () => {
    const objects = [withNetworks(path('data'), 'd', ['0.0.0.0/0', '::/0']), { ...withNetworks(path('processes/x'), 'p', []), spec: { path: 'processes/x', tokens: [], public: true } } as ProtectedScope];
    const snapshot = compileSnapshot(objects);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    expect(enforcedState(index.value, path('data'), { ...grants(2), networkCidrs: ['0.0.0.0/0', '::/0'] }, DEFAULT_CONFIG)).toEqual({ state: 'Open', everyAddress: 'all' });
    expect(enforcedState(undefined, topic('a'), { ...grants(1), tokens: 1, networkCidrs: ['::/0'] }, DEFAULT_CONFIG)).toEqual({ state: 'Open', everyAddress: 6 });
    expect(enforcedState(undefined, topic('a'), { ...grants(1), networkCidrs: ['10.0.0.0/7'] }, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks', wide: ['10.0.0.0/7'] });
  });

  it('a count without the networks (a caller that has only counts) says what the counts say', () => {
    expect(enforcedState(undefined, topic('a'), grants(1), DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'networks' });
    expect(enforcedState(undefined, topic('a'), { tokens: 0, subjects: 0, closedFlag: false, public: false, networkCidrs: ['0.0.0.0/0'] }, DEFAULT_CONFIG)).toEqual({ state: 'Open', everyAddress: 4 });
  });
});
