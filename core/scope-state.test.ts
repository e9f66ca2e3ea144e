import { describe, expect, it } from '@jest/globals';
import { networkReach } from './network.js';
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

describe('a network that holds every address is never told as closed; a wide one says what it admits', () => {
  const topic = { kind: 'topic', value: 'a.b' } as const;
  const reach = (cidrs: string[]) => networkReach(cidrs);

  it('0.0.0.0/0 and ::/0: open to every address, whatever else the scope holds', () => {
    const s = stateOf(topic, 2, true, false, 1, false, undefined, 2, reach(['0.0.0.0/0', '::/0']));
    expect(s).toEqual({ state: 'Open', everyAddress: 'all' });
    expect(stateLabel(s)).toBe('Open (every address)');
    expect(describeState(s, 2, 1, 2)).toBe('Open to every address (a granted network holds them all), 2 tokens, 1 subject, 2 networks');
  });

  it('one family: open to every address of it, the others need a grant', () => {
    const s = stateOf(topic, 1, false, false, 0, false, undefined, 1, reach(['0.0.0.0/0']));
    expect(s).toEqual({ state: 'Open', everyAddress: 4 });
    expect(stateLabel(s)).toBe('Open (every IPv4 address)');
    expect(describeState(s, 1, 0, 1)).toBe('Open to every IPv4 address (a granted network holds every one; other clients need a grant), 1 token, 1 network');
  });

  it('a wide network: closed, and every report names it with how many addresses it admits', () => {
    const s = stateOf(topic, 0, false, false, 0, false, undefined, 1, reach(['10.0.0.0/7']));
    expect(s).toEqual({ state: 'Closed', by: 'networks', wide: ['10.0.0.0/7'] });
    expect(stateLabel(s)).toBe('Closed (wide network)');
    expect(describeState(s, 0, 0, 1)).toBe('Closed, 0 tokens, 1 network (10.0.0.0/7 admits 33,554,432 IPv4 addresses without a credential)');
    expect(closedAside({ by: 'flag', wide: ['10.0.0.0/7'] })).toBe(' (closed: true) (10.0.0.0/7 admits 33,554,432 IPv4 addresses without a credential)');
  });

  it('networks within the bound change nothing', () => {
    expect(stateOf(topic, 0, false, false, 0, false, undefined, 1, reach(['203.0.113.7/32']))).toEqual({ state: 'Closed', by: 'networks' });
  });
});
