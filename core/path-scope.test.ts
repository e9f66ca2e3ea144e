/** Path scopes against the request prefixes (issue 27, items 1 and 14): canonical forms, refusals, public. */
import { describe, expect, it } from '@jest/globals';
import { buildIndex, type AccessIndex } from './access-index.js';
import { decide, DEFAULT_CONFIG, parsePrefix, type ScopeConfig } from './decide.js';
import { enforcedState } from './enforced-state.js';
import { canonicalPath, isJobsPath, parseScopeUnder, publicRefusal, refusedPathForm } from './path-scope.js';
import { newProtectedScope } from './protected-scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import { hashToken, tokenIdOf } from './token.js';
import type { Scope } from './scope.js';

const API = { wafPrefix: parsePrefix('/files'), apiPrefix: parsePrefix('/api/v1') };

describe('canonicalPath: a path naming what the special forms govern', () => {
  it.each([
    ['oapi/processes/svc', 'processes/svc'],
    ['OAPI/Processes/svc-synop2bufr', 'processes/svc-synop2bufr'],
    ['oapi/collections/stations', 'collections/stations'],
    ['oapi/Collections/STATIONS', 'collections/stations'],
    ['wis2downloader', 'wis2downloader'],
    ['oapi/jobs', 'oapi/jobs'],
    ['oapi', 'oapi'],
    ['processes/svc', 'processes/svc'],
  ])('%s → %s', (value, canonical) => {
    expect(canonicalPath(value)).toEqual({ ok: true, value: canonical });
  });
  it.each([
    ['oapi/processes', /use the path processes\/<process-id-prefix>/],
    ['oapi/processes/svc/execution', /use the path processes\/svc\b/],
    ['oapi/processes/a.b', /processes\/<process-id-prefix>/],
    ['oapi/collections', /collections\/stations/],
    ['oapi/collections/stations/items', /use the path collections\/stations/],
    ['oapi/collections/urn:x', /--metadata-id urn:x/],
    ['oapi/collections/a.b', /--topic-hierarchy a\.b/],
  ])('%s is refused, naming the form to use', (value, message) => {
    const r = canonicalPath(value);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });
  it('follows the configured API prefix', () => {
    expect(canonicalPath('api/v1/processes/svc', API)).toEqual({ ok: true, value: 'processes/svc' });
    expect(canonicalPath('oapi/processes/svc', API)).toEqual({ ok: true, value: 'oapi/processes/svc' });
    expect(canonicalPath('api/v1/collections/x', API).ok).toBe(false);
  });
});

describe('parseScopeUnder: what the CLI reads from --path', () => {
  it.each([
    ['/processes/svc', 'processes/svc', true],
    ['/oapi/processes/svc/', 'processes/svc', true],
    ['oapi/collections/stations', 'collections/stations', true],
    ['processes/svc', 'processes/svc', false],
    [' wis2downloader ', 'wis2downloader', false],
  ])('%j is stored as %s (rewritten: %s)', (raw, value, rewritten) => {
    expect(parseScopeUnder('path', raw)).toEqual({ ok: true, value: { scope: { kind: 'path', value }, rewritten } });
  });
  it('refuses a topic with a leading or trailing "/"', () => {
    expect(parseScopeUnder('topic', '/origin/a').ok).toBe(false);
    expect(parseScopeUnder('topic', 'origin/a')).toEqual({ ok: true, value: { scope: { kind: 'topic', value: 'origin.a' }, rewritten: false } });
  });
});

describe('stored forms and public', () => {
  it('refusedPathForm flags a stored path below the API prefix’s processes/ or collections/, and names the form to use', () => {
    expect(refusedPathForm('oapi/processes/svc')).toMatch(/use the path processes\/svc/);
    expect(refusedPathForm('OAPI/collections/stations')).toMatch(/use the path collections\/stations/);
    expect(refusedPathForm('processes/svc')).toBeUndefined();
    expect(refusedPathForm('oapi/jobs')).toBeUndefined();
  });
  it('publicRefusal: a path at or above a prefix may be closed, never public; refused forms neither', () => {
    for (const value of ['oapi', 'OAPI', 'data', 'oapi/processes/x', 'oapi/collections/stations']) expect(publicRefusal(value)).toBeDefined();
    expect(publicRefusal('api', API)).toMatch(/at or above the prefix \/api\/v1/);
    for (const value of ['processes/station-info', 'collections/stations', 'oapi/jobs', 'wis2downloader', 'data/x', 'oapi/x']) expect(publicRefusal(value)).toBeUndefined();
  });
  it('isJobsPath: at or below <api prefix>/jobs', () => {
    expect(isJobsPath('oapi/jobs', DEFAULT_CONFIG)).toBe(true);
    expect(isJobsPath('OAPI/jobs/1', DEFAULT_CONFIG)).toBe(true);
    expect(isJobsPath('oapi/jobsx', DEFAULT_CONFIG)).toBe(false);
    expect(isJobsPath('oapi', DEFAULT_CONFIG)).toBe(false);
  });
});

describe('enforcedState: the state show, public and the operator report is the one svc-auth enforces', () => {
  const P = 'processes-token-0123456789';
  const rec = { id: tokenIdOf(hashToken(P)), hash: hashToken(P), createdAt: '2026-01-01T00:00:00Z' };
  const path = (value: string): Scope => ({ kind: 'path', value });
  const none = { tokens: 0, subjects: 0, closedFlag: false, public: false };
  const pub = { ...none, public: true };
  function world(objects: ReturnType<typeof newProtectedScope>[]): AccessIndex {
    const s = compileSnapshot(objects);
    const r = buildIndex('g', s.lines);
    if (!r.ok) throw new Error(r.error);
    return r.value;
  }
  const publicObject = (value: string) => {
    const o = newProtectedScope(path(value), `o-${value.replaceAll('/', '-')}`, 'svc', []);
    return { ...o, spec: { ...o.spec, public: true } };
  };
  const execute = (index: AccessIndex, id: string, config: ScopeConfig = DEFAULT_CONFIG) =>
    decide(index, { ...DEFAULT_CONFIG, ...config }, { method: 'POST', target: `/oapi/processes/${id}/execution`, authorization: undefined }, 0).outcome;

  it('a public process that a shorter prefix with a token covers is Closed (covered), as svc-auth answers', () => {
    const index = world([newProtectedScope(path('processes/station'), 'a', 'svc', [rec]), publicObject('processes/station-info')]);
    expect(enforcedState(index, path('processes/station-info'), pub, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'covered', governing: ['path:processes/station'] });
    expect(execute(index, 'station-info')).toBe('no-token');
  });
  it('a public process nothing covers is Open, public, as svc-auth answers', () => {
    const index = world([publicObject('processes/station-info')]);
    expect(enforcedState(index, path('processes/station-info'), pub, DEFAULT_CONFIG)).toEqual({ state: 'Open', public: true });
    expect(execute(index, 'station-info')).toBe('open');
  });
  it('public at or above a prefix, or in a refused form, is not public', () => {
    const index = world([publicObject('oapi'), publicObject('oapi/collections/stations')]);
    expect(enforcedState(index, path('oapi'), pub, DEFAULT_CONFIG)).toEqual({ state: 'Open' });
    expect(enforcedState(index, path('oapi/collections/stations'), pub, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'default' });
  });
  it('oapi/jobs without a grant is closed by default (its unsafe requests); with --open-paths-by-default open', () => {
    expect(enforcedState(undefined, path('oapi/jobs'), none, DEFAULT_CONFIG)).toEqual({ state: 'Closed', by: 'default' });
    expect(enforcedState(undefined, path('oapi/jobs'), none, { ...DEFAULT_CONFIG, openPathsByDefault: true })).toEqual({ state: 'Open' });
    expect(enforcedState(undefined, path('wis2downloader'), none, DEFAULT_CONFIG)).toEqual({ state: 'Open' });
  });
});
