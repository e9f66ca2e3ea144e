import { describe, it, expect } from '@jest/globals';
import { compileSnapshot, hashToken, tokenIdOf, type ProtectedScope, type TokenRecord } from '../core/index.js';
import { DEFAULT_CONFIG, STATUS_FIELDS } from '../core/index.js';
import { PLACEHOLDER_HASH, assess } from './assessment.js';
import { Compiler, computeDesired } from './compiler.js';
import { statusEquals, statusPatch, type ScopeStatus } from './desired-status.js';

const NOW = Date.parse('2026-11-21T12:00:00Z');

function token(secret: string, expiresAt?: string): TokenRecord {
  const hash = hashToken(secret);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z', ...(expiresAt ? { expiresAt } : {}) };
}

function ps(name: string, spec: Record<string, unknown>, extra: Partial<ProtectedScope['metadata']> = {}, status?: ScopeStatus): ProtectedScope {
  return {
    apiVersion: 'auth.svc.io/v1alpha1',
    kind: 'ProtectedScope',
    metadata: { name, namespace: 'ns', generation: 3, ...extra },
    spec: { tokens: [], ...spec } as unknown as ProtectedScope['spec'],
    ...(status ? { status: status as ProtectedScope['status'] } : {}),
  };
}

describe('computeDesired', () => {
  it('reports scope, kind, state, token counts and a Ready condition', () => {
    const objs = [
      ps('a', { topicHierarchy: 'origin.a.wis2', tokens: [token('tok-one-0123456789'), token('tok-two-0123456789', '2026-11-21T11:00:00Z'), token('tok-three-012345678', '2026-11-22T00:00:00Z')] }),
      ps('b', { path: 'collections/stations' }),
    ];
    const c = computeDesired(objs, NOW);
    const a = c.desired.get('a')!.status;
    expect(a).toMatchObject({ observedGeneration: 3, scope: 'origin.a.wis2', kind: 'topicHierarchy', state: 'Closed', tokens: 3, activeTokens: 2 });
    expect(a.conditions![0]).toMatchObject({ type: 'Ready', status: 'True', reason: 'Compiled', observedGeneration: 3, lastTransitionTime: new Date(NOW).toISOString() });
    expect(a.mergedWith).toBeUndefined();
    const b = c.desired.get('b')!.status;
    // A path scope without tokens is closed by default (stations writes, process execution).
    expect(b).toMatchObject({ scope: 'collections/stations', kind: 'path', state: 'Closed', tokens: 0, activeTokens: 0 });
    expect(b.conditions![0]!.message).toMatch(/^scope Closed \(closed by default: nothing executes or writes until a token grants it\)/);
    expect(c.nextExpiryMs).toBe(Date.parse('2026-11-22T00:00:00Z'));
    expect(c.included).toHaveLength(2);
  });

  it('merges objects for the same scope: state of the scope, own counts, mergedWith the others', () => {
    const objs = [
      ps('x1', { metadataId: 'urn:wmo:md:a', tokens: [token('tok-one-0123456789')] }),
      ps('x2', { metadataId: 'urn:wmo:md:a' }),
      ps('x3', { metadataId: 'urn:wmo:md:a', tokens: [token('tok-one-0123456789')] }),
    ];
    const c = computeDesired(objs, NOW);
    expect(c.desired.get('x2')!.status).toMatchObject({ state: 'Closed', tokens: 0, mergedWith: ['x1', 'x3'] });
    expect(c.desired.get('x1')!.status.mergedWith).toEqual(['x2', 'x3']);
    expect(c.desired.get('x1')!.status.conditions![0]!.message).toMatch(/merged with 2 other objects/);
    expect(c.scopeStates.get('dataset:urn:wmo:md:a')).toBe('Closed');
    expect(compileSnapshot(c.included).tokenCount).toBe(1);
  });

  it('counts subjects: a scope with only subjects is Closed and in the snapshot with them', () => {
    const c = computeDesired([ps('s', { topicHierarchy: 'origin.a', subjects: [{ kind: 'Group', name: 'ops' }, { kind: 'User', name: 'alice' }] })], NOW);
    expect(c.desired.get('s')!.status).toMatchObject({ state: 'Closed', tokens: 0, subjects: 2 });
    expect(c.desired.get('s')!.status.conditions![0]!.message).toMatch(/this object has 0 tokens \(0 active\) and 2 subjects/);
    expect(compileSnapshot(c.included).lines).toEqual(['{"kind":"topic","value":"origin.a","tokens":[],"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"ops"}]}']);
  });

  it('counts networks: a scope with only networks is Closed (it grants networks) and in the snapshot with them', () => {
    const c = computeDesired([ps('n', { topicHierarchy: 'origin.a', networks: [{ cidr: '203.0.113.7/32', description: 'Global Cache' }, { cidr: '2001:db8::/32' }] })], NOW);
    expect(c.desired.get('n')!.status).toMatchObject({ state: 'Closed', tokens: 0, networks: 2 });
    expect(c.desired.get('n')!.status.subjects).toBeUndefined();
    expect(c.closedBy.get('topic:origin.a')).toBe('networks');
    expect(c.desired.get('n')!.status.conditions![0]!.message).toMatch(/this object has 0 tokens \(0 active\) and 2 networks/);
    expect(compileSnapshot(c.included).lines).toEqual(['{"kind":"topic","value":"origin.a","tokens":[],"networks":["2001:db8::/32","203.0.113.7/32"]}']);
    const both = computeDesired([ps('b', { topicHierarchy: 'origin.a', subjects: [{ kind: 'User', name: 'alice' }], networks: [{ cidr: '203.0.113.7/32' }] })], NOW);
    expect(both.desired.get('b')!.status.conditions![0]!.message).toMatch(/and 1 subject and 1 network/);
  });

  it('a network admitted that holds every address reports the scope Open to every address, never Closed (issue 41)', () => {
    const all = computeDesired([ps('w', { topicHierarchy: 'origin.a', tokens: [token('t')], networks: [{ cidr: '0.0.0.0/0' }, { cidr: '::/0' }] })], NOW);
    expect(all.desired.get('w')!.status).toMatchObject({ state: 'Open', networks: 2 });
    expect(all.scopeStates.get('topic:origin.a')).toBe('Open');
    expect(all.desired.get('w')!.status.conditions![0]!.message).toMatch(/^scope Open to every address \(a granted network holds them all\)/);
    const v4 = computeDesired([ps('v', { topicHierarchy: 'origin.a', networks: [{ cidr: '0.0.0.0/0' }] })], NOW);
    expect(v4.desired.get('v')!.status.conditions![0]!.message).toMatch(/^scope Open to every IPv4 address/);
  });

  it('an invalid subject never opens what it closed: the valid ones still grant, the scope stays closed', () => {
    const c = computeDesired([ps('s', { topicHierarchy: 'origin.a', subjects: [{ kind: 'User', name: 'alice' }, { kind: 'Robot', name: 'r2' }] })], NOW);
    const status = c.desired.get('s')!.status;
    expect(status).toMatchObject({ state: 'Closed' });
    expect(status.conditions![0]).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(compileSnapshot(c.included).lines).toEqual(['{"kind":"topic","value":"origin.a","closed":true,"tokens":[],"subjects":[{"kind":"User","name":"alice"}]}']);
  });

  it('keeps lastTransitionTime while the Ready status stays the same', () => {
    const earlier = '2026-01-01T00:00:00.000Z';
    const prev: ScopeStatus = { conditions: [{ type: 'Ready', status: 'True', reason: 'Compiled', message: 'old message', lastTransitionTime: earlier }] };
    const c = computeDesired([ps('a', { topicHierarchy: 'a' }, {}, prev)], NOW);
    expect(c.desired.get('a')!.status.conditions![0]!.lastTransitionTime).toBe(earlier);
  });

  it('closed: true keeps a scope Closed with no token; --open-paths-by-default reports path scopes without tokens Open', () => {
    const c = computeDesired([ps('e', { metadataId: 'urn:x:embargo', closed: true }), ps('p', { path: 'processes/svc' }), ps('t', { topicHierarchy: 'a' })], NOW);
    expect(c.desired.get('e')!.status).toMatchObject({ state: 'Closed', tokens: 0 });
    expect(c.desired.get('e')!.status.conditions![0]!.message).toMatch(/^scope Closed \(closed: true\)/);
    expect(c.desired.get('p')!.status.state).toBe('Closed');
    expect(c.desired.get('t')!.status.state).toBe('Open');
    expect(c.included.map((o) => o.metadata.name)).toEqual(['e', 'p', 't']);
    const open = computeDesired([ps('p', { path: 'processes/svc' })], NOW, { ...DEFAULT_CONFIG, openPathsByDefault: true });
    expect(open.desired.get('p')!.status.state).toBe('Open');
  });

  it('a public scope reports the state svc-auth enforces: Open while nothing covers it, Closed (covered) under a token', () => {
    const pub = ps('si', { path: 'processes/station-info', public: true });
    const alone = computeDesired([pub], NOW);
    expect(alone.desired.get('si')!.status).toMatchObject({ state: 'Open', conditions: [{ status: 'True', reason: 'Compiled' }] });
    const covered = computeDesired([pub, ps('st', { path: 'processes/station', tokens: [token('tok-station-0123456')] })], NOW);
    expect(covered.desired.get('si')!.status).toMatchObject({ state: 'Closed' });
    expect(covered.desired.get('si')!.status.conditions![0]!.message).toMatch(/^scope Closed \(declared public, but path:processes\/station covers it/);
  });

  it('a public path below the WAF prefix that a topic covers reports Closed too (the topic lines are read then)', () => {
    const c = computeDesired([ps('w', { path: 'data/origin/a', public: true }), ps('t', { topicHierarchy: 'origin.a', tokens: [token('tok-topic-012345678')] })], NOW);
    expect(c.desired.get('w')!.status.state).toBe('Closed');
    expect(c.desired.get('w')!.status.conditions![0]!.message).toMatch(/declared public, but topic:origin\.a covers it/);
  });

  it('an object stored in a refused form is compiled as not public and flagged, without failing the snapshot', () => {
    const objs = [
      ps('a', { path: 'oapi/collections/stations', public: true }),
      ps('b', { path: 'OAPI/processes/svc', tokens: [token('tok-refused-0123456')] }),
      ps('c', { path: 'oapi', public: true }),
      ps('d', { topicHierarchy: 'origin.a', tokens: [token('tok-topic-012345678')] }),
      ps('e', { path: 'api/v1/processes/x', public: true }),
    ];
    const compiler = new Compiler();
    const { compiled, snapshot } = compiler.compile(objs, NOW);
    // The snapshot holds the closed scopes; no public line, whatever the objects say.
    expect(snapshot.lines.map((l) => JSON.parse(l) as { value: string; public?: true })).toEqual([
      expect.objectContaining({ value: 'OAPI/processes/svc' }),
      expect.objectContaining({ value: 'api/v1/processes/x', public: true }),
      expect.objectContaining({ value: 'origin.a' }),
    ]);
    const cond = (name: string) => compiled.desired.get(name)!.status.conditions![0]!;
    expect(cond('a')).toMatchObject({ status: 'False', reason: 'RefusedPath' });
    expect(cond('a').message).toMatch(/^spec\.path: compiled as not public: oapi\/collections\/stations names what the path collections\/stations governs: use the path collections\/stations/);
    expect(compiled.desired.get('a')!.status.state).toBe('Closed');
    expect(cond('b')).toMatchObject({ status: 'False', reason: 'RefusedPath' });
    expect(cond('b').message).toMatch(/compiled as written \(a prefix path\): .*use the path processes\/svc/);
    expect(cond('c')).toMatchObject({ status: 'False', reason: 'PublicRefused' });
    expect(cond('c').message).toMatch(/at or above the prefix \/oapi/);
    expect(cond('d')).toMatchObject({ status: 'True', reason: 'Compiled' });
    // Other prefixes, other forms: under /api/v1 the path api/v1/processes/x is refused, oapi is not a prefix.
    const other = new Compiler({ wafPrefix: ['files'], apiPrefix: ['api', 'v1'] }).compile(objs, NOW);
    expect(other.compiled.desired.get('e')!.status.conditions![0]).toMatchObject({ status: 'False', reason: 'RefusedPath' });
    expect(other.compiled.desired.get('c')!.status.conditions![0]).toMatchObject({ status: 'True', reason: 'Compiled' });
  });

  it('fails closed on unreadable token records: placeholder, expired, scope stays Closed', () => {
    const bad = ps('bad', { topicHierarchy: 'a.b', tokens: [{ id: 'zz', hash: 'md5:abc', createdAt: 'yesterday' }] });
    const a = assess(bad);
    expect(a.valid).toBe(false);
    expect(a.sanitized?.spec.tokens?.[0]).toMatchObject({ hash: PLACEHOLDER_HASH, expiresAt: '1970-01-01T00:00:00.000Z' });
    const c = computeDesired([bad], NOW);
    const s = c.desired.get('bad')!.status;
    expect(s).toMatchObject({ state: 'Closed', tokens: 1, activeTokens: 0 });
    expect(s.conditions![0]).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(s.conditions![0]!.message).not.toContain('md5:abc');
    const snap = compileSnapshot(c.included);
    expect(snap.scopeCount).toBe(1);
  });

  it('an imported hash above 600000 PBKDF2 iterations grants nothing: placeholder, Closed, the scope named in the status', () => {
    const costly = `pbkdf2-sha256:600001:${'00'.repeat(24)}:${'ab'.repeat(32)}`;
    const a = assess(ps('costly', { path: 'wis2downloader', tokens: [{ id: 'abababababab', hash: costly, createdAt: '2026-01-01T00:00:00Z' }] }));
    expect(a.sanitized?.spec.tokens?.[0]).toMatchObject({ hash: PLACEHOLDER_HASH });
    expect(a.valid ? '' : a.errors.map((e) => e.message).join(' ')).toMatch(/imported hash of "path:wis2downloader" asks for 600001 PBKDF2 iterations: at most 600000/);
    const s = computeDesired([ps('costly', { path: 'wis2downloader', tokens: [{ id: 'abababababab', hash: costly, createdAt: '2026-01-01T00:00:00Z' }] })], NOW).desired.get('costly')!.status;
    expect(s).toMatchObject({ state: 'Closed', activeTokens: 0 });
  });

  it('leaves out an object whose scope cannot be read, and says so', () => {
    const c = computeDesired([ps('two', { topicHierarchy: 'a', path: 'collections/stations' }), ps('bad', { topicHierarchy: 'a b' })], NOW);
    expect(c.included).toHaveLength(0);
    expect(c.desired.get('two')!.status.conditions![0]).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(c.desired.get('bad')!.status.state).toBeUndefined();
  });
});

describe('statusEquals / statusPatch', () => {
  const base: ScopeStatus = {
    observedGeneration: 1,
    scope: 'a',
    kind: 'topicHierarchy',
    state: 'Open',
    tokens: 0,
    activeTokens: 0,
    conditions: [{ type: 'Ready', status: 'True', reason: 'Compiled', message: 'm', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' }],
  };

  it('ignores lastTransitionTime and list order, but nothing else', () => {
    expect(statusEquals(base, { ...base, conditions: [{ ...base.conditions![0]!, lastTransitionTime: '2027-01-01T00:00:00Z' }] })).toBe(true);
    expect(statusEquals({ ...base, mergedWith: ['b', 'a'] }, { ...base, mergedWith: ['a', 'b'] })).toBe(true);
    expect(statusEquals({ ...base, mergedWith: [] }, base)).toBe(true);
    expect(statusEquals(base, { ...base, activeTokens: 1 })).toBe(false);
    expect(statusEquals(base, { ...base, observedGeneration: 2 })).toBe(false);
    expect(statusEquals(undefined, base)).toBe(false);
  });

  it('compares and patches every status field the CRD declares (status.subjects included)', () => {
    const full: Required<ScopeStatus> = { ...base, subjects: 2, networks: 3, mergedWith: ['x'] } as Required<ScopeStatus>;
    expect(Object.keys(statusPatch(full)).sort()).toEqual([...STATUS_FIELDS].sort());
    for (const f of STATUS_FIELDS) expect(statusPatch(full)[f]).not.toBeNull();
    expect(statusEquals(full, { ...full, subjects: 3 })).toBe(false);
    expect(statusPatch({ ...base }).subjects).toBeNull();
    expect(statusEquals(full, { ...full, networks: 4 })).toBe(false);
    expect(statusPatch({ ...base }).networks).toBeNull();
  });

  it('writes the subjects count into the desired status of an object that grants subjects', () => {
    const ps = { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: 'x', generation: 1 }, spec: { topicHierarchy: 'a.b', tokens: [], subjects: [{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'p' }] } } as const;
    const desired = computeDesired([ps as unknown as Parameters<typeof computeDesired>[0][number]], NOW).desired.get('x')?.status;
    expect(desired?.subjects).toBe(2);
    expect(statusPatch(desired!).subjects).toBe(2);
  });

  it('nulls what the desired status does not have', () => {
    const p = statusPatch({ conditions: base.conditions! });
    expect(p).toMatchObject({ scope: null, state: null, mergedWith: null });
    expect(statusPatch({ ...base, mergedWith: ['x'] }).mergedWith).toEqual(['x']);
  });
});

describe('Compiler (incremental)', () => {
  const fcScopes = ['a', 'a.b', 'b', 'c.d.e'];
  it('produces exactly what compileSnapshot produces over the whole namespace, through any sequence of edits', async () => {
    const fc = (await import('fast-check')).default;
    const edit = fc.record({
      name: fc.constantFrom('o1', 'o2', 'o3', 'o4', 'o5'),
      scope: fc.constantFrom(...fcScopes),
      kind: fc.constantFrom('topicHierarchy', 'metadataId'),
      tokens: fc.array(fc.record({ secret: fc.constantFrom('s1-0123456789abcdef', 's2-0123456789abcdef', 's3-0123456789abcdef'), exp: fc.option(fc.constantFrom('2026-11-21T11:00:00Z', '2027-01-01T00:00:00Z'), { nil: undefined }) }), { maxLength: 3 }),
      remove: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 25 }), (edits) => {
        const compiler = new Compiler();
        const state = new Map<string, ProtectedScope>();
        let generation = 0;
        for (const e of edits) {
          if (e.remove) state.delete(e.name);
          else {
            const tokens = [...new Map(e.tokens.map((t) => [t.secret, token(t.secret, t.exp)])).values()];
            const value = e.kind === 'metadataId' ? `urn:x:${e.scope}` : e.scope;
            state.set(e.name, ps(e.name, { [e.kind]: value, tokens }, { generation: ++generation, uid: `u-${e.name}` }));
          }
          const objects = [...state.values()];
          const { snapshot, compiled } = compiler.compile(objects, NOW);
          const whole = compileSnapshot(objects);
          expect(snapshot).toEqual(whole);
          expect(compiled.desired.size).toBe(objects.length);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('reuses per-object work while the generation is unchanged', () => {
    const compiler = new Compiler();
    const a = ps('a', { topicHierarchy: 'a', tokens: [token('tok-one-0123456789')] }, { uid: 'u1', generation: 1 });
    const first = compiler.compile([a], NOW);
    const withStatus = { ...a, status: { state: 'Closed' as const } };
    const second = compiler.compile([withStatus], NOW);
    expect(second.compiled.assessments[0]).toBe(first.compiled.assessments[0]);
    expect(second.snapshot.generation).toBe(first.snapshot.generation);
  });
});
