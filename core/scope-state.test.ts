import { describe, expect, it } from '@jest/globals';
import { closedAside, describeState, stateLabel, whyClosed, type ClosedBy } from './scope-state.js';

describe('why a scope is closed, written once', () => {
  const every: readonly ClosedBy[] = ['tokens', 'subjects', 'flag', 'default', 'covered'];

  it('names every reason; a tag only where the counts beside the state do not say it', () => {
    expect(every.map((by) => whyClosed({ by }).tag)).toEqual([undefined, undefined, 'closed: true', 'default', 'covered']);
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
    expect([stateLabel({ state: 'Open' }), stateLabel({ state: 'Open', public: true })]).toEqual(['Open', 'Open (public)']);
  });
});
