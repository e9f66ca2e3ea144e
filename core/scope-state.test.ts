import { describe, expect, it } from '@jest/globals';
import { closedAside, describeState, stateLabel, stateOf, whyClosed, type ClosedBy } from './scope-state.js';

describe('why a scope is closed, written once', () => {
  const every: readonly ClosedBy[] = ['tokens', 'subjects', 'networks', 'flag', 'default', 'covered'];

  it('names every reason; a tag only where the counts beside the state do not say it', () => {
    expect(every.map((by) => whyClosed({ by }).tag)).toEqual([undefined, undefined, undefined, 'closed: true', 'default', 'covered']);
    expect(whyClosed({ by: 'networks' }).reason).toBe('it grants networks');
    expect(whyClosed({ by: 'default' }).reason).toBe('closed by default: nothing executes or writes until a token grants it');
    expect(whyClosed({ by: 'covered', governing: ['path:processes/station'] }).reason).toBe(
      'declared public, but path:processes/station covers it: public never opens what a grant or closed: true covers',
    );
  });

  it('describeState, stateLabel and closedAside say the same reason', () => {
    for (const by of every) {
      const s = { state: 'Closed', by, governing: ['path:a'] } as const;
      const { reason, tag } = whyClosed(s);
      expect(closedAside(s)).toBe(tag === undefined ? '' : ` (${reason})`);
      expect(describeState(s, 0)).toBe(`Closed, 0 tokens${closedAside(s)}`);
      expect(stateLabel(s)).toBe(tag === undefined ? 'Closed' : `Closed (${tag})`);
    }
    expect(describeState({ state: 'Closed', by: 'tokens' }, 2, 1)).toBe('Closed, 2 tokens, 1 subject');
    expect(describeState({ state: 'Closed', by: 'networks' }, 0, 0, 2)).toBe('Closed, 0 tokens, 2 networks');
    expect(describeState({ state: 'Closed', by: 'tokens' }, 1, 2, 1)).toBe('Closed, 1 token, 2 subjects, 1 network');
    expect([stateLabel({ state: 'Open' }), stateLabel({ state: 'Open', public: true })]).toEqual(['Open', 'Open (public)']);
  });
});

describe('stateOf: a network closes a scope as a token or a subject does', () => {
  const topic = { kind: 'topic', value: 'a.b' } as const;
  const path = { kind: 'path', value: 'processes/svc' } as const;
  it('closed by networks when nothing before it in the order closes it', () => {
    expect(stateOf(topic, 0, false, false, 0, false, undefined, 1)).toEqual({ state: 'Closed', by: 'networks' });
    expect(stateOf(topic, 1, false, false, 0, false, undefined, 1)).toEqual({ state: 'Closed', by: 'tokens' });
    expect(stateOf(topic, 0, false, false, 1, false, undefined, 1)).toEqual({ state: 'Closed', by: 'subjects' });
    expect(stateOf(topic, 0, true, false, 0, false, undefined, 1)).toEqual({ state: 'Closed', by: 'networks' });
    expect(stateOf(path, 0, false, true, 0, true, undefined, 1)).toEqual({ state: 'Closed', by: 'networks' });
    expect(stateOf(topic, 0, false, false)).toEqual({ state: 'Open' });
  });
});
