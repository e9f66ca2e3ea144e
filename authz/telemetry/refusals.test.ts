import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLogger } from './log.js';
import { MAX_LISTED, Refusals, type Refusal } from './refusals.js';

function capture() {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}
const at = (s: string) => Date.parse(`2026-11-24T10:00:${s}Z`);

describe('Refusals', () => {
  it('counts per endpoint, outcome, scope and reason, and logs one line per key each window, token ids listed in it', () => {
    const out = capture();
    const r = new Refusals(createLogger('info', out).logger, { windowMs: 0 });
    r.record({ endpoint: 'auth-request', outcome: 'no-token', scope: 'topic:a.b' }, at('00'));
    r.record({ endpoint: 'auth-request', outcome: 'no-token', scope: 'topic:a.b' }, at('30'));
    r.record({ endpoint: 'auth-request', outcome: 'insufficient-scope', scope: 'topic:a.b', tokenId: 'aaaaaaaaaaaa' }, at('10'));
    r.record({ endpoint: 'forward-auth', outcome: 'malformed', reason: 'the request target has a "#"' }, at('20'));
    r.flush();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.msg, l.endpoint, l.outcome, l.scope, l.tokenIds, l.reason, l.refused, l.first, l.last])).toEqual([
      ['requests refused', 'auth-request', 'no-token', 'topic:a.b', undefined, undefined, 2, '2026-11-24T10:00:00.000Z', '2026-11-24T10:00:30.000Z'],
      ['requests refused', 'auth-request', 'insufficient-scope', 'topic:a.b', { aaaaaaaaaaaa: 1 }, undefined, 1, '2026-11-24T10:00:10.000Z', '2026-11-24T10:00:10.000Z'],
      ['requests refused', 'forward-auth', 'malformed', undefined, undefined, 'the request target has a "#"', 1, '2026-11-24T10:00:20.000Z', '2026-11-24T10:00:20.000Z'],
    ]);
    r.flush();
    expect(out.lines.length).toBe(3);
  });

  it('samples individual lines: the first N of each window, then none until the next', () => {
    const out = capture();
    const r = new Refusals(createLogger('info', out).logger, { windowMs: 0, sample: 3 });
    const sampled = Array.from({ length: 10 }, (_, i) => r.record({ endpoint: 'auth-request', outcome: 'no-token', scope: 'topic:a' }, at(`0${i}`)));
    expect(sampled).toEqual([true, true, true, false, false, false, false, false, false, false]);
    r.flush();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ written: 3, notWritten: 7 });
    expect(r.record({ endpoint: 'auth-request', outcome: 'no-token' }, at('20'))).toBe(true);
  });

  it('bounds the keys of a window: past maxKeys, refusals share one overflow line', () => {
    const out = capture();
    const r = new Refusals(createLogger('info', out).logger, { windowMs: 0, maxKeys: 2 });
    for (let i = 0; i < 10; i++) r.record({ endpoint: 'auth-request', outcome: 'insufficient-scope', scope: `topic:s${i}`, tokenId: 'aaaaaaaaaaaa' }, at('00'));
    r.stop();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'requests refused');
    expect(lines.map((l) => [l.scope, l.refused])).toEqual([['topic:s0', 1], ['topic:s1', 1], ['(more keys than counted per window)', 8]]);
  });

  it('lists token ids and identities inside their line with counts, the first MAX_LISTED of each, the rest counted', () => {
    const out = capture();
    const r = new Refusals(createLogger('info', out).logger, { windowMs: 0 });
    const ids = Array.from({ length: MAX_LISTED + 3 }, (_, i) => i.toString(16).padStart(12, '0'));
    for (const id of [...ids, ids[0]!]) r.record({ endpoint: 'auth-request', outcome: 'insufficient-scope', scope: 'topic:a', tokenId: id }, at('00'));
    for (const user of ['alice', 'bob', 'alice']) r.record({ endpoint: 'auth-request', outcome: 'insufficient-scope', scope: 'topic:a', issuer: 'https://idp.example', user }, at('01'));
    r.flush();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'requests refused');
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatchObject({ refused: ids.length + 4, tokenIdsNotListed: 3, identities: [{ issuer: 'https://idp.example', user: 'alice', refused: 2 }, { issuer: 'https://idp.example', user: 'bob', refused: 1 }] });
    expect(Object.keys(lines[0]!.tokenIds as object).length).toBe(MAX_LISTED);
    expect((lines[0]!.tokenIds as Record<string, number>)[ids[0]!]).toBe(2);
    expect(lines[0]!.identitiesNotListed).toBeUndefined();
  });

  it('property: lines per window are the distinct (endpoint, outcome, scope, why, reason), whatever the token ids and identities', () => {
    const refusal: fc.Arbitrary<Refusal> = fc.record(
      {
        endpoint: fc.constantFrom('auth-request', 'forward-auth'),
        outcome: fc.constantFrom('no-token', 'invalid-token', 'insufficient-scope'),
        scope: fc.constantFrom('topic:a', 'dataset:urn:x', 'dataset (several govern)'),
        why: fc.constantFrom('unknown', 'expired'),
        tokenId: fc.stringMatching(/^[0-9a-f]{12}$/),
        issuer: fc.constantFrom('https://a.example', 'https://b.example'),
        user: fc.string(),
      },
      { requiredKeys: ['endpoint', 'outcome'] },
    );
    fc.assert(
      fc.property(fc.array(refusal, { maxLength: 400 }), (refusals) => {
        const out = capture();
        const r = new Refusals(createLogger('info', out).logger, { windowMs: 0 });
        for (const x of refusals) r.record(x, at('00'));
        r.flush();
        const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'requests refused');
        const keys = new Set(refusals.map((x) => JSON.stringify([x.endpoint, x.outcome, x.scope, x.why, x.reason])));
        expect(lines.length).toBe(keys.size);
        // endpoints × outcomes × (reasons: 2 whys or none) × (scopes: 3 or none)
        expect(lines.length).toBeLessThanOrEqual(2 * 3 * 3 * 4);
        expect(lines.reduce((n, l) => n + (l.refused as number), 0)).toBe(refusals.length);
        for (const l of lines) expect(Object.keys((l.tokenIds as object | undefined) ?? {}).length).toBeLessThanOrEqual(MAX_LISTED);
      }),
      { numRuns: 100 },
    );
  });
});
