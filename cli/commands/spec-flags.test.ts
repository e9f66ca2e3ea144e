import { describe, expect, it } from '@jest/globals';
import { newProtectedScope, scopeObjectName, type ProtectedScope, type Scope } from '../../core/index.js';
import { withFlagCleared, withFlagSet } from './spec-flags.js';

const scope: Scope = { kind: 'path', value: 'processes/station-info' };
const own = newProtectedScope(scope, scopeObjectName(scope), 'ns', []);
const handWritten: ProtectedScope = { ...newProtectedScope(scope, 'hand-written', 'ns', []), metadata: { name: 'hand-written', namespace: 'ns', labels: { team: 'a' } } };

describe.each(['closed', 'public'] as const)('spec flag %s', (flag) => {
  it('is set on the scope\'s own object when there is one, keeping every other field', () => {
    const [written, ...rest] = withFlagSet(flag, scope, 'ns', [handWritten, own]);
    expect(rest).toEqual([]);
    expect(written!.metadata.name).toBe(own.metadata.name);
    expect(written!.spec).toEqual({ ...own.spec, [flag]: true });
  });

  it('is set on the first object when the scope has no object of its own, and on a new one when it has none', () => {
    expect(withFlagSet(flag, scope, 'ns', [handWritten]).map((o) => [o.metadata.name, o.metadata.labels, o.spec[flag]])).toEqual([['hand-written', { team: 'a' }, true]]);
    const [created] = withFlagSet(flag, scope, 'ns', []);
    expect(created!.metadata).toMatchObject({ name: scopeObjectName(scope), namespace: 'ns' });
    expect(created!.spec[flag]).toBe(true);
  });

  it('writes nothing when an object already says it', () => {
    expect(withFlagSet(flag, scope, 'ns', [own, { ...handWritten, spec: { ...handWritten.spec, [flag]: true } }])).toEqual([]);
  });

  it('is cleared from every object that says it (the field removed, not set to false); the others are not written', () => {
    const a = { ...own, spec: { ...own.spec, [flag]: true } };
    const b = { ...handWritten, spec: { ...handWritten.spec, [flag]: true } };
    const cleared = withFlagCleared(flag, [a, handWritten, b]);
    expect(cleared.map((o) => o.metadata.name)).toEqual([own.metadata.name, 'hand-written']);
    for (const o of cleared) expect(flag in o.spec).toBe(false);
    expect(cleared[1]!.metadata.labels).toEqual({ team: 'a' });
    expect(withFlagCleared(flag, [own, handWritten])).toEqual([]);
  });
});
