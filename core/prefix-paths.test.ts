/** Prefix path scopes (`wis2downloader`) and public path scopes in the decision (docs/access-rules.md, issue: wis2box). */
import { describe, expect, it } from '@jest/globals';
import { buildIndex, compileSnapshot, decide, decideForScope, DEFAULT_CONFIG, hashToken, newProtectedScope, scopeObjectName, stateOf, validateProtectedScope, type ProtectedScope, type Scope, type TokenRecord } from './index.js';
import { tokenIdOf } from './token.js';

const T = 'downloader-token-0123456789';
const P = 'processes-token-0123456789';
const rec = (t: string): TokenRecord => ({ id: tokenIdOf(hashToken(t)), hash: hashToken(t), createdAt: '2026-01-01T00:00:00Z' });
const obj = (scope: Scope, tokens: TokenRecord[], extra: Record<string, unknown> = {}): ProtectedScope => {
  const o = newProtectedScope(scope, scopeObjectName(scope), undefined, tokens);
  return { ...o, spec: { ...o.spec, ...extra } as ProtectedScope['spec'] };
};
const path = (value: string): Scope => ({ kind: 'path', value });

function indexOf(objects: ProtectedScope[]) {
  const r = buildIndex('g', compileSnapshot(objects).lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}
const ask = (objects: ProtectedScope[], method: string | null, target: string, token?: string) =>
  decide(indexOf(objects), DEFAULT_CONFIG, { method, target, authorization: token === undefined ? undefined : `Bearer ${token}` }, 0).outcome;

describe('a path scope for any path of the host', () => {
  const closed = [obj(path('wis2downloader'), [rec(T)])];
  it.each([
    ['GET', '/wis2downloader'], ['GET', '/wis2downloader/'], ['POST', '/wis2downloader/subscriptions'], ['DELETE', '/wis2downloader/subscriptions/x'],
    [null, '/wis2downloader/list'], ['GET', '/WIS2Downloader/list'], ['GET', '/x/../wis2downloader/list'], ['GET', '//wis2downloader//list'], ['GET', '/%77is2downloader/list'],
  ])('%s %s is governed by it', (method, target) => {
    expect(ask(closed, method, target)).toBe('no-token');
    expect(ask(closed, method, target, T)).toBe('granted');
    expect(ask(closed, method, target, 'some-other-token-123456')).toBe('invalid-token');
  });
  it.each(['/wis2downloaderx', '/wis2downloaderx/a', '/a/wis2downloader', '/data/wis2downloader', '/oapi/collections/x/items?q=wis2downloader'])('%s is not (segment-exact, from the root)', (target) => {
    expect(ask(closed, 'GET', target)).toBe('open');
  });
  it('a malformed path is never open', () => {
    expect(ask(closed, 'GET', '/wis2downloader%2fx')).toBe('malformed');
  });
  it('is open until its first token, like a topic (not closed by default)', () => {
    expect(ask([obj(path('wis2downloader'), [])], 'POST', '/wis2downloader/x')).toBe('open');
    expect(stateOf(path('wis2downloader'), 0, false, false)).toEqual({ state: 'Open' });
  });
  it('the most specific wins: a deeper path with its own token governs alone', () => {
    const objects = [obj(path('wis2downloader'), [rec(T)]), obj(path('wis2downloader/admin'), [rec(P)])];
    expect(ask(objects, 'GET', '/wis2downloader/admin/x', T)).toBe('insufficient-scope');
    expect(ask(objects, 'GET', '/wis2downloader/admin/x', P)).toBe('granted');
    expect(ask(objects, 'GET', '/wis2downloader/list', T)).toBe('granted');
  });
  it('also below the API prefix, next to the process rules', () => {
    expect(ask([obj(path('oapi/jobs'), [rec(T)])], 'GET', '/oapi/jobs/1')).toBe('no-token');
  });
  it('has-access-topic decides the same (an ancestor governs)', () => {
    const index = indexOf(closed);
    expect(decideForScope(index, path('wis2downloader/sub'), T, 0).outcome).toBe('granted');
    expect(decideForScope(index, path('wis2downloaderx'), T, 0).outcome).toBe('open');
  });
});

describe('a public path scope', () => {
  const pub = (value: string) => obj(path(value), [], { public: true });
  it('opens a process that is closed by default, for every method, and nothing else', () => {
    const objects = [pub('processes/station-info')];
    expect(ask(objects, 'POST', '/oapi/processes/station-info/execution')).toBe('open');
    expect(ask(objects, null, '/oapi/processes/STATION-INFO/execution')).toBe('open');
    expect(ask(objects, 'POST', '/oapi/processes/station-infox/execution')).toBe('no-token');
    expect(ask(objects, 'POST', '/oapi/processes/wis2box-synop2bufr/execution')).toBe('no-token');
  });
  it('a more specific public process inside a closed prefix is open; the rest of the prefix stays closed', () => {
    const objects = [obj(path('processes/wis2box'), [rec(P)]), pub('processes/wis2box-bufr2UpperAirChart')];
    expect(ask(objects, 'POST', '/oapi/processes/wis2box-bufr2UpperAirChart/execution')).toBe('open');
    expect(ask(objects, 'POST', '/oapi/processes/wis2box-synop2bufr/execution')).toBe('no-token');
  });
  it('a case variant that is closed wins over the public one (never more open)', () => {
    const objects = [pub('processes/station-info'), obj(path('processes/Station-Info'), [rec(P)])];
    expect(ask(objects, 'POST', '/oapi/processes/station-info/execution')).toBe('no-token');
  });
  it('two objects of one scope, one public and one with a token: closed (fails closed)', () => {
    const a = pub('processes/station-info');
    const b = { ...obj(path('processes/station-info'), [rec(P)]), metadata: { name: 'hand-written' } };
    expect(ask([a, b], 'POST', '/oapi/processes/station-info/execution')).toBe('no-token');
  });
  it('is invalid with tokens, subjects, closed: true, or on a topic', () => {
    expect(validateProtectedScope(pub('processes/station-info')).ok).toBe(true);
    expect(validateProtectedScope(obj(path('processes/x'), [rec(P)], { public: true })).ok).toBe(false);
    expect(validateProtectedScope(obj(path('processes/x'), [], { public: true, closed: true })).ok).toBe(false);
    expect(validateProtectedScope(obj(path('processes/x'), [], { public: true, subjects: [{ kind: 'User', name: 'a' }] })).ok).toBe(false);
    expect(validateProtectedScope(obj({ kind: 'topic', value: 'a.b' }, [], { public: true })).ok).toBe(false);
    expect(validateProtectedScope(obj(path('processes/x'), [], { public: 'yes' })).ok).toBe(false);
  });
  it('its state reads Open, public', () => {
    expect(stateOf(path('processes/station-info'), 0, false, false, 0, true)).toEqual({ state: 'Open', public: true });
    expect(stateOf(path('processes/station-info'), 1, false, false, 0, true)).toEqual({ state: 'Closed', by: 'tokens' });
  });
});
