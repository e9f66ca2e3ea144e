import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DecisionLog, type DecisionFields } from './decision-log.js';
import { createLogger } from './log.js';

/** A destination that keeps lines. */
function capture() {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

/** What pino itself writes for the same fields (undefined fields are left out, as pino does). */
function pinoLine(level: 'info' | 'debug', f: DecisionFields): Record<string, unknown> {
  const out = capture();
  const { logger } = createLogger('debug', out);
  logger[level]({ ...f }, 'decision');
  return JSON.parse(out.lines[0]!) as Record<string, unknown>;
}

function ours(level: 'info' | 'debug', f: DecisionFields): { text: string; parsed: Record<string, unknown> } {
  const out = capture();
  const { logger } = createLogger('debug', out);
  new DecisionLog(logger).write(level, f);
  expect(out.lines.length).toBe(1);
  return { text: out.lines[0]!, parsed: JSON.parse(out.lines[0]!) as Record<string, unknown> };
}

const withoutTime = (o: Record<string, unknown>) => ({ ...o, time: 0 });

describe('DecisionLog', () => {
  it('writes the line pino writes, field for field and in the same order', () => {
    const f: DecisionFields = { endpoint: 'auth-request', method: 'GET', outcome: 'granted', path: '/data/a/b.bufr4', scope: 'topic:origin.a', tokenId: '0123456789ab', tokenSource: 'bearer' };
    const mine = ours('info', f);
    const theirs = pinoLine('info', f);
    expect(withoutTime(mine.parsed)).toEqual(withoutTime(theirs));
    expect(Object.keys(mine.parsed)).toEqual(Object.keys(theirs));
    expect(mine.text.endsWith('}\n')).toBe(true);
    expect(typeof mine.parsed.time).toBe('number');
    expect(mine.parsed).toMatchObject({ level: 'info', name: 'svc-auth', pid: process.pid, msg: 'decision' });
  });

  it('escapes whatever a decoded path, a scope, a method or a reason may hold, as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string(), (path, scope, reason) => {
        const f: DecisionFields = { endpoint: 'forward-auth', method: reason, outcome: 'invalid-token', path, scope, why: 'unknown', reason };
        expect(withoutTime(ours('debug', f).parsed)).toEqual(withoutTime(pinoLine('debug', f)));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves out absent fields and follows the logger level at call time', () => {
    const out = capture();
    const { logger } = createLogger('info', out);
    const log = new DecisionLog(logger);
    expect(log.enabled('debug')).toBe(false);
    logger.level = 'debug';
    expect(log.enabled('debug')).toBe(true);
    log.write('info', { endpoint: 'authorize', method: undefined, outcome: 'unavailable' });
    expect(Object.keys(JSON.parse(out.lines[0]!) as object)).toEqual(['level', 'time', 'pid', 'hostname', 'name', 'endpoint', 'outcome', 'msg']);
  });

  it('uses the bindings of a child logger', () => {
    const out = capture();
    const { logger } = createLogger('info', out);
    new DecisionLog(logger.child({ shard: 3 })).write('info', { endpoint: 'ext-authz', method: 'POST', outcome: 'open' });
    expect(JSON.parse(out.lines[0]!)).toMatchObject({ shard: 3, name: 'svc-auth', endpoint: 'ext-authz' });
  });
});
