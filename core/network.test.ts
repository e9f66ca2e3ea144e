import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isIP } from 'node:net';
import {
  addressCount, readNetworks, everyAddressNote, everyAddressWords, formatAddress, networkOf, networkReach, networksHolding, NetworkSet, parseAddressInto, parseNetwork, wideNetworkRefusal, WIDEST_PREFIX,
  type AddressFamily, type Network,
} from './network.js';

const net = (text: string): Network => {
  const r = parseNetwork(text);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const refusal = (text: string): string => {
  const r = parseNetwork(text);
  if (r.ok) throw new Error(`accepted ${text}`);
  return r.error;
};
const address = (text: string): { family: AddressFamily | 0; words: number[] } => {
  const out = new Uint32Array(4);
  const family = parseAddressInto(text, out);
  return { family, words: family === 4 ? [out[0]!] : family === 6 ? [...out] : [] };
};

describe('parseNetwork: one canonical text per network', () => {
  it.each([
    ['203.0.113.0/24', 4, 24],
    ['203.0.113.7/32', 4, 32],
    ['0.0.0.0/0', 4, 0],
    ['2001:db8::/32', 6, 32],
    ['2001:db8::7/128', 6, 128],
    ['::/0', 6, 0],
    ['::1/128', 6, 128],
    ['fe80::/10', 6, 10],
    ['2001:db8:0:1::/64', 6, 64],
    ['2001:0:0:1::1/128', 6, 128],
    ['1:0:0:2::/64', 6, 64],
    ['1:0:2::/64', 6, 64],
    ['1::2:0:0:3/128', 6, 128],
    ['::102:304/128', 6, 128],
  ])('accepts %s', (text, family, prefix) => {
    expect(net(text)).toMatchObject({ family, prefix, cidr: text });
  });

  it.each([
    ['203.0.113.9/24', '"203.0.113.9/24" has host bits set: use 203.0.113.0/24'],
    ['10.1.2.3/8', '"10.1.2.3/8" has host bits set: use 10.0.0.0/8'],
    ['2001:db8::1/32', '"2001:db8::1/32" has host bits set: use 2001:db8::/32'],
    ['2001:DB8::/32', '"2001:DB8::/32" is not written in canonical form: use 2001:db8::/32'],
    ['2001:0db8::/32', 'use 2001:db8::/32'],
    ['2001:db8:0:0:0:0:0:0/32', 'use 2001:db8::/32'],
    ['2001:db8::0:1/128', 'use 2001:db8::1/128'],
    ['1:0:0:2::3:4/128', 'use 1::2:0:0:3:4/128'],
    ['1:0:0:2:0:0:0:3/128', 'use 1:0:0:2::3/128'],
    ['2001:db8:0::1/128', 'use 2001:db8::1/128'],
    ['::1:0:0:0:0:0/128', 'use 0:0:1::/128'],
    ['::1.2.3.4/128', '"::1.2.3.4/128" is not written in canonical form: use ::102:304/128'],
    ['::ffff:203.0.113.0/120', '"::ffff:203.0.113.0/120" is an IPv4 network written as IPv6: use 203.0.113.0/24'],
    ['::ffff:203.0.113.7/128', 'use 203.0.113.7/32'],
    ['::ffff:cb00:7107/128', 'is an IPv4 network written as IPv6: use 203.0.113.7/32'],
    ['::ffff:0:0/96', 'use 0.0.0.0/0'],
    ['::ffff:203.0.113.7/64', '"::ffff:203.0.113.7/64" has host bits set: use ::/64'],
    ['203.0.113.0/024', '"203.0.113.0/024" is not written in canonical form: use 203.0.113.0/24'],
    ['203.0.113.7', '"203.0.113.7" is an address, not a network: use 203.0.113.7/32 for this one address'],
    ['2001:db8::7', 'use 2001:db8::7/128 for this one address'],
    ['::ffff:203.0.113.7', 'use 203.0.113.7/32 for this one address'],
  ])('refuses %s naming the form to use', (text, message) => {
    expect(refusal(text)).toContain(message);
  });

  it.each([
    '', '/', '/24', '203.0.113.0/', '203.0.113.0/33', '2001:db8::/129', '203.0.113.0/-1', '203.0.113.0/2x', '010.0.0.0/8', '1.2.3/24',
    '1.2.3.4.5/32', '256.0.0.0/8', ' 203.0.113.0/24', '203.0.113.0/24 ', '[2001:db8::]/32', 'fe80::%eth0/64', '2001:db8::/32/1',
    '1:2:3:4:5:6:7:8:9/128', '1::2::3/128', ':1::/64', '1:/64', '12345::/16', 'g::/16', '1:2:3:4:5:6:7:1.2.3.4/128', 'x'.repeat(100),
  ])('refuses %j as no network', (text) => {
    expect(refusal(text)).toMatch(/not a network|no prefix length|prefix length must be|longer than any network/);
  });

  it('says what a network is', () => {
    expect(refusal('gateway')).toBe('"gateway" is not a network: write ADDRESS/PREFIX, e.g. 203.0.113.0/24 or 2001:db8::/32 (IPv4 parts without leading zeros; no zone, no brackets)');
    expect(refusal('203.0.113.0/33')).toBe('"203.0.113.0/33": the prefix length must be 0 to 32');
  });
});

describe('parseAddressInto: an address as a proxy header carries it', () => {
  it.each([
    ['203.0.113.7', 4, [0xcb007107]],
    ['0.0.0.0', 4, [0]],
    ['255.255.255.255', 4, [0xffffffff]],
    ['::ffff:203.0.113.7', 4, [0xcb007107]],
    ['::FFFF:cb00:7107', 4, [0xcb007107]],
    ['0:0:0:0:0:ffff:203.0.113.7', 4, [0xcb007107]],
    ['::1', 6, [0, 0, 0, 1]],
    ['::', 6, [0, 0, 0, 0]],
    ['2001:DB8::7', 6, [0x20010db8, 0, 0, 7]],
    ['2001:0db8:0000:0000:0000:0000:0000:0007', 6, [0x20010db8, 0, 0, 7]],
    ['1:2:3:4:5:6:7::', 6, [0x10002, 0x30004, 0x50006, 0x70000]],
    ['::1.2.3.4', 6, [0, 0, 0, 0x01020304]],
    ['64:ff9b::192.0.2.1', 6, [0x0064ff9b, 0, 0, 0xc0000201]],
  ])('%s', (text, family, words) => {
    expect(address(text)).toEqual({ family, words });
  });

  it.each(['', '1.2.3', '01.2.3.4', '1.2.3.4:80', '[::1]', '::1%lo', 'fe80::1%eth0', '::1/128', ' 1.2.3.4', '1.2.3.4,5.6.7.8', 'localhost', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7:8::', '::ffff:1.2.3', '1'.repeat(46)])(
    'refuses %j',
    (text) => expect(parseAddressInto(text, new Uint32Array(4))).toBe(0),
  );
});

// A reference with BigInt: an address as one integer, and the networks holding it by arithmetic.
const toBig = (family: AddressFamily, words: readonly number[]) => words.reduce((acc, w) => (acc << 32n) | BigInt(w >>> 0), 0n) & (family === 4 ? 0xffffffffn : (1n << 128n) - 1n);
const holds = (n: Network, family: AddressFamily, words: readonly number[]) => {
  if (n.family !== family) return false;
  const bits = BigInt(family === 4 ? 32 : 128);
  const shift = bits - BigInt(n.prefix);
  return toBig(family, words) >> shift === toBig(family, n.words) >> shift;
};

const word = fc.integer({ min: 0, max: 0xffffffff });
/** Addresses clustered near a few bases so networks and addresses overlap often. */
const base4 = fc.constantFrom(0xcb007100, 0xc6336400, 0x0a000000);
const v4words = fc.tuple(base4, fc.integer({ min: 0, max: 0xffff })).map(([b, x]) => [((b & 0xffff0000) | x) >>> 0]);
const v6words = fc.tuple(fc.constantFrom(0x20010db8, 0xfe800000, 0), word, fc.constantFrom(0, 1, 0xffff0000), fc.integer({ min: 0, max: 0xff }))
  .map(([a, b, c, d]) => [a, b >>> 16 === 0 ? b : 0, c, d]);
const anyAddress = fc.oneof(
  v4words.map((words) => ({ family: 4 as const, words })),
  v6words.filter((w) => !(w[0] === 0 && w[1] === 0 && w[2] === 0xffff)).map((words) => ({ family: 6 as const, words })),
  fc.tuple(word, word, word, word).filter((w) => !(w[0] === 0 && w[1] === 0 && w[2] === 0xffff)).map((words) => ({ family: 6 as const, words })),
);
const anyNetwork = anyAddress.chain(({ family, words }) => fc.integer({ min: 0, max: family === 4 ? 32 : 128 }).map((p) => networkOf(family, words, p)));

describe('properties', () => {
  it('format and parse round trip: the canonical text parses to the same network and prints the same', () => {
    fc.assert(fc.property(anyNetwork, (n) => {
      expect(parseNetwork(n.cidr)).toEqual({ ok: true, value: n });
    }), { numRuns: 2000 });
  });

  it('IPv6 text is what a WHATWG URL serializer (RFC 5952 compression) writes', () => {
    fc.assert(fc.property(fc.tuple(word, word, word, word), (words) => {
      const family = words[0] === 0 && words[1] === 0 && words[2] === 0xffff ? 4 : 6;
      if (family === 4) return;
      const text = formatAddress(6, words);
      expect(new URL(`http://[${text}]/`).hostname).toBe(`[${text}]`);
      expect(address(text)).toEqual({ family: 6, words: words.map((w) => w >>> 0) });
    }), { numRuns: 2000 });
  });

  it('any spelling of an address (upper case, leading zeros, no ::, an IPv4 tail) parses to the same words', () => {
    const spelling = fc.tuple(fc.tuple(word, word, word, word), fc.boolean(), fc.boolean(), fc.boolean());
    fc.assert(fc.property(spelling, ([words, upper, padded, tail]) => {
      const g = words.flatMap((w) => [w >>> 16, w & 0xffff]);
      let parts = g.map((x) => (padded ? x.toString(16).padStart(4, '0') : x.toString(16)));
      if (tail) parts = [...parts.slice(0, 6), `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`];
      const text = upper ? parts.join(':').toUpperCase() : parts.join(':');
      const mapped = words[0] === 0 && words[1] === 0 && words[2] === 0xffff;
      expect(address(text)).toEqual(mapped ? { family: 4, words: [words[3]] } : { family: 6, words });
    }), { numRuns: 1000 });
  });

  it('whatever parseAddressInto accepts, node:net accepts as an address of the same family (mapped aside)', () => {
    const chars = fc.constantFrom(...'0123456789abcdefABCDEF:.%/ []'.split(''));
    fc.assert(fc.property(fc.string({ unit: chars, maxLength: 45 }), (text) => {
      const family = parseAddressInto(text, new Uint32Array(4));
      if (family !== 0) expect(isIP(text)).toBe(text.includes(':') ? 6 : 4);
    }), { numRuns: 5000 });
  });

  it('NetworkSet finds exactly the networks a BigInt reference finds, the most specific first', () => {
    fc.assert(fc.property(fc.array(anyNetwork, { maxLength: 40 }), anyAddress, (networks, a) => {
      const set = new NetworkSet(networks);
      const words = new Uint32Array(4);
      words.set(a.words);
      const expected = set.networks.filter((n) => holds(n, a.family, a.words));
      const found = set.findAll(a.family, words);
      expect([...found].sort((x, y) => (x.cidr < y.cidr ? -1 : 1))).toEqual(expected);
      expect(found.map((n) => n.prefix)).toEqual([...found.map((n) => n.prefix)].sort((x, y) => y - x));
      expect(set.find(a.family, words)).toBe(found[0]);
    }), { numRuns: 2000 });
  });
});

describe('NetworkSet', () => {
  const set = new NetworkSet(['203.0.113.0/24', '203.0.113.7/32', '2001:db8::/32', '0.0.0.0/0', '198.51.100.0/24', '203.0.113.0/24'].map(net));

  it('lists each network once, in text order', () => {
    expect(set.networks.map((n) => n.cidr)).toEqual(['0.0.0.0/0', '198.51.100.0/24', '2001:db8::/32', '203.0.113.0/24', '203.0.113.7/32']);
    expect(set.size).toBe(5);
  });

  it('matches a request address, IPv4-mapped ones as IPv4, never an IPv4 address against an IPv6 network', () => {
    expect(networksHolding(set, '203.0.113.7').map((n) => n.cidr)).toEqual(['203.0.113.7/32', '203.0.113.0/24', '0.0.0.0/0']);
    expect(networksHolding(set, '::ffff:203.0.113.8').map((n) => n.cidr)).toEqual(['203.0.113.0/24', '0.0.0.0/0']);
    expect(networksHolding(set, '2001:db8:1::5').map((n) => n.cidr)).toEqual(['2001:db8::/32']);
    expect(networksHolding(set, '2001:db9::5')).toEqual([]);
    expect(networksHolding(new NetworkSet([net('::/0')]), '::ffff:203.0.113.7')).toEqual([]);
    expect(networksHolding(set, 'not an address')).toEqual([]);
  });

  it('an empty set holds nothing', () => {
    const empty = new NetworkSet([]);
    expect(empty.find(4, new Uint32Array(4))).toBeUndefined();
    expect(empty.find(6, new Uint32Array(4))).toBeUndefined();
  });
});

describe('how wide a network may be granted (docs/cli-safety.md)', () => {
  const why = (cidr: string) => wideNetworkRefusal(net(cidr));

  it('a network holding every address of a family is refused in words', () => {
    expect(why('0.0.0.0/0')).toBe('0.0.0.0/0 holds every IPv4 address: granted, it would let everyone in without a token');
    expect(why('::/0')).toBe('::/0 holds every IPv6 address: granted, it would let everyone in without a token');
  });

  it('IPv4 shorter than /8 and IPv6 shorter than /32 are refused with how many addresses they hold; the bounds themselves pass', () => {
    expect(why('10.0.0.0/7')).toBe('10.0.0.0/7 holds 33,554,432 IPv4 addresses, more than one organisation\'s network (the widest granted is a /8)');
    expect(why('2001:d00::/24')).toBe('2001:d00::/24 holds 2^104 IPv6 addresses, more than one organisation\'s network (the widest granted is a /32)');
    for (const ok of ['10.0.0.0/8', '203.0.113.7/32', '2001:db8::/32', '2001:db8:5::/48']) expect(why(ok)).toBeUndefined();
    expect(WIDEST_PREFIX).toEqual({ 4: 8, 6: 32 });
  });

  it('networkReach: every address of both families, of one, or wide networks named', () => {
    expect(networkReach(['0.0.0.0/0', '::/0', '203.0.113.7/32'])).toEqual({ every: 'all', wide: [] });
    expect(networkReach(['0.0.0.0/0', '2001:db8::/32'])).toEqual({ every: 4, wide: [] });
    expect(networkReach(['::/0'])).toEqual({ every: 6, wide: [] });
    expect(networkReach(['10.0.0.0/7', '203.0.113.7/32', '2001:d00::/24', 'not a network'])).toEqual({ wide: ['10.0.0.0/7', '2001:d00::/24'] });
    expect(networkReach([])).toEqual({ wide: [] });
  });

  it('says what a client is told in words', () => {
    expect(everyAddressWords('all')).toBe('every address');
    expect(everyAddressWords(6)).toBe('every IPv6 address');
    expect(everyAddressNote('the dataset x', 'all')).toBe('Download of the dataset x is open to every address: the data provider grants a network that holds them all.');
    expect(addressCount(net('0.0.0.0/1'))).toBe('2,147,483,648');
    expect(addressCount(net('::/1'))).toBe('2^127');
  });
});

describe('readNetworks: network records as a grant reads them', () => {
  it('each readable one once, in canonical order; anything unreadable is reported (it closes the scope)', () => {
    expect(readNetworks([{ cidr: '203.0.113.0/24' }, { cidr: '2001:db8::/32' }, { cidr: '203.0.113.0/24' }])).toEqual({
      networks: [expect.objectContaining({ cidr: '2001:db8::/32' }), expect.objectContaining({ cidr: '203.0.113.0/24' })], unreadable: false,
    });
    for (const bad of [{ cidr: '203.0.113.9/24' }, { cidr: 7 }, 'x', null, {}]) {
      const r = readNetworks([{ cidr: '198.51.100.0/24' }, bad]);
      expect(r.unreadable).toBe(true);
      expect(r.networks.map((n) => n.cidr)).toEqual(['198.51.100.0/24']);
    }
    expect(readNetworks([])).toEqual({ networks: [], unreadable: false });
  });
});
