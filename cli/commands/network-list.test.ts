import { describe, expect, it } from '@jest/globals';
import { checkEntries, entriesOfFile, entriesOfFlags, problemLine } from './network-list.js';

describe('the list file grammar', () => {
  const file = [
    '# WIS2 Global Services, as the Secretariat sent them',
    '',
    '203.0.113.7/32      Global Cache, Offenbach',
    '  2001:db8:7::/48\tGlobal Broker   # the broker, a comment after the description',
    '198.51.100.0/24#no space before the comment',
    '   # an indented comment',
    '192.0.2.0/24',
    '\r',
  ].join('\n');

  it('one network a line, then its description; "#" starts a comment; blank lines skipped; line numbers kept', () => {
    expect(entriesOfFile(file, 'gs.txt')).toEqual([
      { at: 'gs.txt:3', cidr: '203.0.113.7/32', description: 'Global Cache, Offenbach' },
      { at: 'gs.txt:4', cidr: '2001:db8:7::/48', description: 'Global Broker' },
      { at: 'gs.txt:5', cidr: '198.51.100.0/24' },
      { at: 'gs.txt:7', cidr: '192.0.2.0/24' },
    ]);
  });

  it('CRLF line ends are read as line ends', () => {
    expect(entriesOfFile('203.0.113.7/32 a\r\n198.51.100.0/24 b\r\n', 'f')).toEqual([
      { at: 'f:1', cidr: '203.0.113.7/32', description: 'a' },
      { at: 'f:2', cidr: '198.51.100.0/24', description: 'b' },
    ]);
  });

  it('checks every entry: each bad network named where it stands, with the form to use', () => {
    const r = checkEntries([...entriesOfFlags(['203.0.113.9/24'], undefined), ...entriesOfFile('2001:DB8::/32 x\nnonsense\n198.51.100.0/24', 'f')]);
    expect(r).toEqual({
      ok: false,
      problems: [
        '--cidr: "203.0.113.9/24" has host bits set: use 203.0.113.0/24',
        'f:1: "2001:DB8::/32" is not written in canonical form: use 2001:db8::/32',
        expect.stringMatching(/^f:2: "nonsense" is not a network/),
      ],
    });
  });

  it('a network given twice is one; the first description wins; --description goes with every --cidr', () => {
    const r = checkEntries([...entriesOfFlags([' 203.0.113.7/32 ', '2001:db8::/32'], 'partner'), ...entriesOfFile('203.0.113.7/32 other', 'f')]);
    expect(r).toEqual({ ok: true, networks: [{ cidr: '203.0.113.7/32', description: 'partner' }, { cidr: '2001:db8::/32', description: 'partner' }] });
  });

  it('a description longer than 256 characters is refused', () => {
    const r = checkEntries(entriesOfFile(`203.0.113.7/32 ${'x'.repeat(257)}`, 'f'));
    expect(r).toEqual({ ok: false, problems: ['f:1: the description of 203.0.113.7/32 is longer than 256 characters'] });
  });

  it('problems as one line: five, and how many more', () => {
    expect(problemLine(['a', 'b'])).toBe('a; b');
    expect(problemLine(['1', '2', '3', '4', '5', '6', '7'])).toBe('1; 2; 3; 4; 5; and 2 more');
  });
});
