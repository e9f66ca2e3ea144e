import { describe, expect, it } from '@jest/globals';
import { pbkdf2Sync } from 'node:crypto';
import { buildIndex, compileSnapshot, formatImportedHash, importedCandidates, newProtectedScope, scopeObjectName, tokenIdOf, type ImportedCandidate, type Scope } from '../../core/index.js';
import { ImportedTokens } from './imported-tokens.js';

const SALT = Buffer.alloc(24, 7);
const scope: Scope = { kind: 'path', value: 'wis2downloader' };

function candidatesFor(tokens: string[], iterations = 1000): ImportedCandidate[] {
  const records = tokens.map((t) => {
    const hash = formatImportedHash(iterations, SALT, pbkdf2Sync(t, SALT, iterations, 32, 'sha256'));
    return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
  });
  const index = buildIndex('g', compileSnapshot([newProtectedScope(scope, scopeObjectName(scope), undefined, records)]).lines);
  if (!index.ok) throw new Error(index.error);
  return importedCandidates(index.value, [scope], 0);
}

describe('ImportedTokens', () => {
  it('verifies off the event loop, then remembers the token without keeping it', async () => {
    const c = candidatesFor(['mytoken', 'other-token']);
    const t = new ImportedTokens({ concurrency: 1, queue: 4, cacheSize: 10 });
    expect(t.remembered('mytoken', c)).toBeUndefined();
    const v = await t.verify('mytoken', c);
    expect(v.ok && v.match.record.hash).toBe(c[0]!.record.hash);
    expect(t.remembered('mytoken', c)?.record.hash).toBe(c[0]!.record.hash);
    // The cache is keyed by an HMAC under a key of this process: the token is not in it.
    expect(JSON.stringify([...(t as unknown as { verified: Map<string, Set<string>> }).verified.keys()])).not.toContain('mytoken');
  });
  it('a wrong token never grants and is not remembered', async () => {
    const c = candidatesFor(['mytoken']);
    const t = new ImportedTokens({ concurrency: 1, queue: 4, cacheSize: 10 });
    expect(await t.verify('wrong', c)).toEqual({ ok: false, busy: false });
    expect(t.remembered('wrong', c)).toBeUndefined();
  });
  it('a remembered token no longer grants once its record is gone from the index', async () => {
    const c = candidatesFor(['mytoken']);
    const t = new ImportedTokens({ concurrency: 1, queue: 4, cacheSize: 10 });
    await t.verify('mytoken', c);
    expect(t.remembered('mytoken', candidatesFor(['someone-else']))).toBeUndefined();
  });
  it('is bounded: beyond concurrency + queue, requests are refused at once (busy), never granted', async () => {
    const c = candidatesFor(['mytoken'], 20_000);
    const t = new ImportedTokens({ concurrency: 1, queue: 2, cacheSize: 10 });
    const all = await Promise.all(Array.from({ length: 8 }, () => t.verify('wrong', c)));
    expect(all.filter((v) => !v.ok && v.busy)).toHaveLength(5);
    expect(all.some((v) => v.ok)).toBe(false);
    expect(t.busyRefusals).toBe(5);
    // The slots are free again afterwards.
    expect((await t.verify('mytoken', c)).ok).toBe(true);
  });
  it('the cache is bounded (least recently used goes first)', async () => {
    const names = ['token-a', 'token-b', 'token-c'];
    const c = candidatesFor(names);
    const t = new ImportedTokens({ concurrency: 1, queue: 4, cacheSize: 2 });
    for (const n of names) await t.verify(n, c);
    expect(t.size).toBe(2);
    expect(t.remembered('token-a', c)).toBeUndefined();
    expect(t.remembered('token-c', c)).toBeDefined();
  });
});
