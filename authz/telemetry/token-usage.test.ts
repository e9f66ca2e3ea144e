import { describe, expect, it } from '@jest/globals';
import { createLogger } from './log.js';
import { TokenUsage } from './token-usage.js';

function capture() {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

describe('TokenUsage', () => {
  it('logs one line per scope and token id with the count and the first and last grant, then starts afresh', () => {
    const out = capture();
    const usage = new TokenUsage(createLogger('info', out).logger, 0);
    usage.record('topic:a.b', 'aaaaaaaaaaaa', Date.parse('2026-11-21T10:00:00Z'));
    usage.record('topic:a.b', 'aaaaaaaaaaaa', Date.parse('2026-11-21T10:00:30Z'));
    usage.record('topic:a.b', 'bbbbbbbbbbbb', Date.parse('2026-11-21T10:00:10Z'));
    usage.record('path:processes/svc', 'aaaaaaaaaaaa', Date.parse('2026-11-21T10:00:20Z'));
    usage.flush();
    const lines = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.level, l.msg, l.scope, l.tokenId, l.granted, l.first, l.last])).toEqual([
      ['info', 'tokens used', 'topic:a.b', 'aaaaaaaaaaaa', 2, '2026-11-21T10:00:00.000Z', '2026-11-21T10:00:30.000Z'],
      ['info', 'tokens used', 'topic:a.b', 'bbbbbbbbbbbb', 1, '2026-11-21T10:00:10.000Z', '2026-11-21T10:00:10.000Z'],
      ['info', 'tokens used', 'path:processes/svc', 'aaaaaaaaaaaa', 1, '2026-11-21T10:00:20.000Z', '2026-11-21T10:00:20.000Z'],
    ]);
    usage.flush();
    expect(out.lines.length).toBe(3);
    usage.record('topic:a.b', 'aaaaaaaaaaaa', Date.parse('2026-11-21T10:01:00Z'));
    usage.stop();
    expect(JSON.parse(out.lines[3]!)).toMatchObject({ scope: 'topic:a.b', granted: 1 });
  });

  it('writes on its own timer', async () => {
    const out = capture();
    const usage = new TokenUsage(createLogger('info', out).logger, 20);
    usage.record('dataset:urn:x', 'cccccccccccc', Date.now());
    await new Promise((r) => setTimeout(r, 120));
    usage.stop();
    expect(out.lines.map((l) => (JSON.parse(l) as { granted: number }).granted)).toEqual([1]);
  });
});
