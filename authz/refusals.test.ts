import { describe, expect, it } from '@jest/globals';
import { createLogger } from './log.js';
import { Refusals } from './refusals.js';

function capture() {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}
const at = (s: string) => Date.parse(`2026-11-24T10:00:${s}Z`);

describe('Refusals', () => {
  it('counts per endpoint, outcome, scope, reason and token id, and logs one line per key each window', () => {
    const out = capture();
    const r = new Refusals(createLogger('info', out).logger, { windowMs: 0 });
    r.record({ endpoint: 'auth-request', outcome: 'no-token', scope: 'topic:a.b' }, at('00'));
    r.record({ endpoint: 'auth-request', outcome: 'no-token', scope: 'topic:a.b' }, at('30'));
    r.record({ endpoint: 'auth-request', outcome: 'insufficient-scope', scope: 'topic:a.b', tokenId: 'aaaaaaaaaaaa' }, at('10'));
    r.record({ endpoint: 'forward-auth', outcome: 'malformed', reason: 'the request target has a "#"' }, at('20'));
    r.flush();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.msg, l.endpoint, l.outcome, l.scope, l.tokenId, l.reason, l.refused, l.first, l.last])).toEqual([
      ['requests refused', 'auth-request', 'no-token', 'topic:a.b', undefined, undefined, 2, '2026-11-24T10:00:00.000Z', '2026-11-24T10:00:30.000Z'],
      ['requests refused', 'auth-request', 'insufficient-scope', 'topic:a.b', 'aaaaaaaaaaaa', undefined, 1, '2026-11-24T10:00:10.000Z', '2026-11-24T10:00:10.000Z'],
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
});
