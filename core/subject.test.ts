import { describe, it, expect } from '@jest/globals';
import { buildIndex } from './access-index.js';
import { newProtectedScope, validateProtectedScope, type ProtectedScope } from './protected-scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import { parseScopeLine } from './snapshot/lines.js';
import { checkSubject, mergeSubjects } from './subject.js';

const base = newProtectedScope({ kind: 'topic', value: 'a.b' }, 'a-b', 'svc', []);
const withSubjects = (subjects: unknown): unknown => ({ ...base, spec: { ...base.spec, subjects } });

describe('spec.subjects', () => {
  it('accepts users and groups, as a RoleBinding names them', () => {
    expect(validateProtectedScope(withSubjects([{ kind: 'User', name: 'alice@example.org' }, { kind: 'Group', name: 'wis2-ops' }])).ok).toBe(true);
  });

  it.each([
    ['not a list', { kind: 'User', name: 'a' }, 'spec.subjects: must be a list'],
    ['an unknown kind', [{ kind: 'ServiceAccount', name: 'a' }], 'spec.subjects[0]: kind must be one of User, Group'],
    ['an empty name', [{ kind: 'User', name: '' }], 'spec.subjects[0]: name must be 1 to 256'],
    ['a control character', [{ kind: 'User', name: 'a\nb' }], 'without control characters'],
    ['an unknown field (strict, as the API server)', [{ kind: 'User', name: 'a', namespace: 'x' }], 'spec.subjects[0].namespace: unknown field'],
    ['a duplicate', [{ kind: 'Group', name: 'g' }, { kind: 'Group', name: 'g' }], 'duplicate subject Group g'],
  ])('refuses %s', (_name, subjects, message) => {
    const r = validateProtectedScope(withSubjects(subjects));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.map((e) => `${e.field}: ${e.message}`).join('; ')).toContain(message);
  });

  it('checkSubject and mergeSubjects: exact names, users first, each once', () => {
    expect(checkSubject('User', 'x'.repeat(257)).ok).toBe(false);
    expect(mergeSubjects([[{ kind: 'Group', name: 'b' }, { kind: 'User', name: 'z' }], [{ kind: 'User', name: 'Z' }, { kind: 'Group', name: 'b' }]])).toEqual([
      { kind: 'User', name: 'Z' }, { kind: 'User', name: 'z' }, { kind: 'Group', name: 'b' },
    ]);
  });
});

describe('subjects in the snapshot', () => {
  const scope = (name: string, subjects: ProtectedScope['spec']['subjects']): ProtectedScope => ({ ...base, metadata: { name }, spec: { ...base.spec, ...(subjects ? { subjects } : {}) } });

  it('a scope with only subjects is in the snapshot (closed); objects of one scope merge their subjects', () => {
    const s = compileSnapshot([scope('x', [{ kind: 'Group', name: 'ops' }]), scope('y', [{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'ops' }])]);
    expect(s.lines).toEqual(['{"kind":"topic","value":"a.b","tokens":[],"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"ops"}]}']);
    const parsed = parseScopeLine(s.lines[0]!);
    expect(parsed.ok && parsed.value.subjects).toEqual([{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'ops' }]);
    const index = buildIndex(s.generation, s.lines);
    expect(index.ok && index.value.scopeCount).toBe(1);
  });

  it('a scope without subjects keeps the bytes (and generation) it had', () => {
    expect(compileSnapshot([scope('x', [])]).lines).toEqual([]);
    expect(compileSnapshot([{ ...scope('x', undefined), spec: { ...base.spec, closed: true } }]).lines).toEqual(['{"kind":"topic","value":"a.b","closed":true,"tokens":[]}']);
  });

  it.each([
    ['empty subjects', '{"kind":"topic","value":"a.b","tokens":[],"subjects":[]}'],
    ['a bad kind', '{"kind":"topic","value":"a.b","tokens":[],"subjects":[{"kind":"Robot","name":"r"}]}'],
    ['out of order', '{"kind":"topic","value":"a.b","tokens":[],"subjects":[{"kind":"Group","name":"g"},{"kind":"User","name":"u"}]}'],
    ['repeated', '{"kind":"topic","value":"a.b","tokens":[],"subjects":[{"kind":"User","name":"u"},{"kind":"User","name":"u"}]}'],
  ])('a snapshot line with %s is refused (the previous snapshot stays in service)', (_name, line) => {
    expect(parseScopeLine(line).ok).toBe(false);
  });
});
