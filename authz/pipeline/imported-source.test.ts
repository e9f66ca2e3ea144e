import { describe, expect, it } from '@jest/globals';
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, compileSnapshot, decide, DEFAULT_CONFIG, extractCredential, formatImportedHash, newProtectedScope, settleRequest, tokenIdOf, type AccessIndex, type Decision, type Scope, type TokenRecord } from '../../core/index.js';
import { CredentialRoad } from './credential-road.js';
import { decidedNow, type Deciding } from './exchange.js';
import { ImportedSource } from './imported-source.js';
import { ImportedTokens } from '../imported/imported-tokens.js';

// The imported-hash check gives the pipeline's one shape of a decision: now, or later when a hash is derived.

const SALT = Buffer.alloc(16, 5);
const ITERATIONS = 1000;
const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
const STATIONS: Scope = { kind: 'path', value: 'collections/stations' };
const T_IMPORTED = 'wis2box-imported-token-one';
const T_STATIONS = 'wis2box-imported-token-two';

function importedRecord(token: string): TokenRecord {
  const hash = formatImportedHash(ITERATIONS, SALT, pbkdf2Sync(token, SALT, ITERATIONS, 32, 'sha256'));
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' };
}

function indexOf(processes: readonly TokenRecord[]): AccessIndex {
  const snapshot = compileSnapshot([newProtectedScope(PROCESSES, 'processes', undefined, processes), newProtectedScope(STATIONS, 'stations', undefined, [importedRecord(T_STATIONS)])]);
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

const NOW = Date.parse('2026-11-21T12:00:00Z');
const PROCESS = { method: 'POST', target: '/oapi/processes/svc/execution' };
const STATION = { method: 'POST', target: '/oapi/collections/stations/items' };
const asked = (req: { method: string; target: string }, token: string) => ({ ...req, authorization: `Bearer ${token}` });

function setup(index = indexOf([importedRecord(T_IMPORTED)]), options = { concurrency: 1, queue: 4, cacheSize: 10 }) {
  let current: AccessIndex | null = index;
  const source = new ImportedSource(new ImportedTokens(options), DEFAULT_CONFIG);
  const road = new CredentialRoad({ access: DEFAULT_CONFIG, current: () => current, metrics: { jwtDecision: () => undefined }, imported: source });
  const run = (req: { method: string; target: string; authorization: string | undefined }): { d: Decision; deciding: Deciding } => {
    const d = decide(index, DEFAULT_CONFIG, req, NOW);
    if (d.outcome === 'verify-jwt') throw new Error('no JWT here');
    const g = settleRequest(index, DEFAULT_CONFIG, req);
    if (g.outcome !== 'governed') return { d, deciding: decidedNow(d) };
    return { d, deciding: source.after(d, g, extractCredential(g.query, req.authorization, DEFAULT_CONFIG.tokenParam), req.authorization, index, NOW, (l) => road.judgedLater({ ok: true, ...req }, l, 'imported')) ?? decidedNow(d) };
  };
  return { run, swap: (next: AccessIndex | null) => (current = next) };
}

async function settled(deciding: Deciding): Promise<Decision | null> {
  expect(deciding.kind).toBe('later');
  return deciding.kind === 'later' ? deciding.promise : deciding.decision;
}

describe('ImportedSource: one shape for a decision now or later', () => {
  it('any decision but an unknown token stands, now', () => {
    const { run } = setup();
    const { d, deciding } = run({ ...PROCESS, authorization: undefined });
    expect(d.outcome).toBe('no-token');
    expect(deciding).toEqual({ kind: 'now', decision: d });
  });

  it('a first use is decided later, once the hash is derived; the token is then remembered and decided now', async () => {
    const { run } = setup();
    const first = run(asked(PROCESS, T_IMPORTED));
    expect(first.d).toMatchObject({ outcome: 'invalid-token', why: 'unknown' });
    expect(await settled(first.deciding)).toMatchObject({ outcome: 'granted', imported: true, tokenId: importedRecord(T_IMPORTED).id, scopeKey: 'path:processes/svc' });
    const again = run(asked(PROCESS, T_IMPORTED)).deciding;
    expect(again).toMatchObject({ kind: 'now', decision: { outcome: 'granted', imported: true } });
  });

  it('a wrong token is decided later as it stood (unknown), and not remembered', async () => {
    const { run } = setup();
    const first = run(asked(PROCESS, 'wis2box-wrong-token'));
    expect(await settled(first.deciding)).toEqual(first.d);
    expect(run(asked(PROCESS, 'wis2box-wrong-token')).deciding.kind).toBe('later');
  });

  it('no free slot: later, to null (answered as unavailable, never as a grant)', async () => {
    const { run } = setup(undefined, { concurrency: 1, queue: 0, cacheSize: 10 });
    const busy = run(asked(PROCESS, 'wis2box-wrong-token'));
    const refused = run(asked(PROCESS, T_IMPORTED));
    expect(await settled(refused.deciding)).toBeNull();
    await settled(busy.deciding);
  });

  it('a record revoked while its hash was derived does not grant; no index in service by then: null', async () => {
    const revoked = setup();
    const pending = revoked.run(asked(PROCESS, T_IMPORTED));
    revoked.swap(indexOf([]));
    // Judged once more against the index in service: the scope now holds nothing, so it is closed by default.
    expect(await settled(pending.deciding)).toMatchObject({ outcome: 'invalid-token', why: 'unknown', closedByDefault: true });
    const gone = setup();
    const pending2 = gone.run(asked(PROCESS, T_IMPORTED));
    gone.swap(null);
    expect(await settled(pending2.deciding)).toBeNull();
  });

  it('a remembered token of another scope is that scope\'s token (403), now', async () => {
    const { run } = setup();
    await settled(run(asked(STATION, T_STATIONS)).deciding);
    expect(run(asked(PROCESS, T_STATIONS)).deciding).toMatchObject({ kind: 'now', decision: { outcome: 'insufficient-scope', tokenId: importedRecord(T_STATIONS).id } });
  });
});
