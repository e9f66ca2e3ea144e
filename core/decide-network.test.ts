import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { buildIndex, type AccessIndex } from './access-index.js';
import { decide, DEFAULT_CONFIG, type Decision, type VerifyJwt } from './decide.js';
import { newProtectedScope, type NetworkRecord } from './protected-scope.js';
import { scopeKey, type Scope } from './scope.js';
import { compileSnapshot } from './snapshot/compile.js';
import { formatGeneratedToken, hashToken, tokenIdOf } from './token.js';
import { createHash } from 'node:crypto';

// Network grants (issue 30, docs/access-rules.md "Networks"): a request whose client address a network of a governing
// scope holds is granted whatever it carries; any other request is decided exactly as without the address.

const NOW = Date.parse('2026-11-21T12:00:00Z');
const TOKEN = formatGeneratedToken(createHash('sha256').update('decide-network-test').digest());

interface Closing {
  readonly scope: Scope;
  readonly how: 'token' | 'closed' | 'networks' | 'public';
  readonly networks?: readonly string[];
}

function indexOf(world: readonly Closing[]): AccessIndex {
  const hash = hashToken(TOKEN);
  const objects = world.map((c, i) => {
    const o = newProtectedScope(c.scope, `o-${i}`, 'svc', c.how === 'token' ? [{ id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' }] : []);
    const networks: NetworkRecord[] | undefined = c.networks?.length ? c.networks.map((cidr) => ({ cidr })) : undefined;
    const extra = { ...(c.how === 'closed' ? { closed: true } : {}), ...(c.how === 'public' && !networks && c.scope.kind === 'path' ? { public: true } : {}), ...(networks ? { networks } : {}) };
    return { ...o, spec: { ...o.spec, ...extra } };
  });
  const s = compileSnapshot(objects);
  const r = buildIndex(s.generation, s.lines);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const topic = (value: string): Scope => ({ kind: 'topic', value });
const path = (value: string): Scope => ({ kind: 'path', value });
const FILE = '/data/2026/wis/a/b/f.bufr4';
const DEEPER = '/data/2026/wis/a/b/c/f.bufr4';
const ask = (index: AccessIndex, target: string, address?: string, authorization?: string, method = 'GET'): Decision | VerifyJwt =>
  decide(index, DEFAULT_CONFIG, { method, target, authorization, ...(address !== undefined ? { address } : {}) }, NOW);

describe('an address that does not parse is no address', () => {
  // Networks that hold every address of their family: only the parse can refuse, whatever an earlier request left.
  const index = indexOf([{ scope: topic('a.b'), how: 'networks', networks: ['0.0.0.0/0', '::/0'] }]);

  it('is decided as a request without one, after addresses of either family', () => {
    for (const before of ['2001:db8::1', '127.0.0.2']) {
      expect(ask(index, FILE, before)).toMatchObject({ outcome: 'granted-network' });
      for (const address of ['not-an-address', '', '127.0.0.256', '2001:db8::1::2', '127.0.0.2:8080']) {
        expect(ask(index, FILE, address)).toMatchObject({ outcome: 'no-token' });
      }
    }
  });
});

describe('a network of a governing scope grants by the client address', () => {
  const index = indexOf([{ scope: topic('a.b'), how: 'networks', networks: ['127.0.0.2/32', '203.0.113.0/24', '2001:db8::/32'] }]);

  it('an address a network holds is granted, naming the scope, the network and the address', () => {
    expect(ask(index, FILE, '127.0.0.2')).toMatchObject({ outcome: 'granted-network', scopeKey: 'topic:a.b', network: '127.0.0.2/32', address: '127.0.0.2', area: 'waf', path: FILE, closedByDefault: false });
    expect(ask(index, FILE, '203.0.113.77')).toMatchObject({ outcome: 'granted-network', network: '203.0.113.0/24' });
    expect(ask(index, FILE, '2001:db8:1::5')).toMatchObject({ outcome: 'granted-network', network: '2001:db8::/32' });
    // An IPv4-mapped IPv6 address is its IPv4 address.
    expect(ask(index, FILE, '::ffff:127.0.0.2')).toMatchObject({ outcome: 'granted-network', network: '127.0.0.2/32' });
  });

  it('whatever credential the request carries', () => {
    expect(ask(index, FILE, '127.0.0.2', 'Bearer not-a-token')).toMatchObject({ outcome: 'granted-network' });
    expect(ask(index, `${FILE}?token=x`, '127.0.0.2', 'Basic Og==')).toMatchObject({ outcome: 'granted-network' });
    expect(ask(index, FILE, '127.0.0.2', 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.x')).toMatchObject({ outcome: 'granted-network' });
  });

  it('an address no network holds, no address, or text that is no address: refused as without one', () => {
    for (const address of ['127.0.0.3', '2001:db9::1', undefined, '', 'not-an-address', '127.0.0.2:80', '[::1]', '127.000.0.2']) {
      expect(ask(index, FILE, address)).toMatchObject({ outcome: 'no-token', governing: [topic('a.b')] });
    }
  });

  it('open requests stay open; the address changes nothing there', () => {
    expect(ask(index, '/data/2026/wis/x/y/f.bufr4', '127.0.0.2')).toEqual({ outcome: 'open', area: 'waf', path: '/data/2026/wis/x/y/f.bufr4' });
  });

  it('the most specific scope governs: a network of a.b never opens a.b.c closed by its own token', () => {
    const nested = indexOf([
      { scope: topic('a.b'), how: 'networks', networks: ['127.0.0.2/32'] },
      { scope: topic('a.b.c'), how: 'token' },
    ]);
    expect(ask(nested, DEEPER, '127.0.0.2')).toMatchObject({ outcome: 'no-token', governing: [topic('a.b.c')] });
    expect(ask(nested, DEEPER, '127.0.0.2', `Bearer ${TOKEN}`)).toMatchObject({ outcome: 'granted', scopeKey: 'topic:a.b.c' });
    expect(ask(nested, FILE, '127.0.0.2')).toMatchObject({ outcome: 'granted-network', scopeKey: 'topic:a.b' });
  });

  it('a network of the governing scope with a token: the address grants, the token still grants from elsewhere', () => {
    const both = indexOf([{ scope: topic('a.b'), how: 'token', networks: ['127.0.0.2/32'] }]);
    expect(ask(both, FILE, '127.0.0.2')).toMatchObject({ outcome: 'granted-network' });
    expect(ask(both, FILE, '127.0.0.3', `Bearer ${TOKEN}`)).toMatchObject({ outcome: 'granted', scopeKey: 'topic:a.b' });
    expect(ask(both, FILE, '127.0.0.3')).toMatchObject({ outcome: 'no-token' });
  });

  it('paths closed by default are never opened by an address (the stand-in holds nothing)', () => {
    const other = indexOf([{ scope: path('processes/x'), how: 'networks', networks: ['127.0.0.0/8'] }]);
    expect(ask(other, '/oapi/processes/svc/execution', '127.0.0.2', undefined, 'POST')).toMatchObject({ outcome: 'no-token', closedByDefault: true });
    expect(ask(other, '/oapi/processes/x/execution', '127.0.0.2', undefined, 'POST')).toMatchObject({ outcome: 'granted-network', scopeKey: 'path:processes/x' });
  });
});

// Properties over random worlds: scopes closed by a token, `closed: true`, networks, or public, over overlapping topics
// and paths; requests into them from addresses inside and outside the networks drawn.
const level = fc.constantFrom('a', 'b', 'c');
const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  fc.array(level, { minLength: 1, maxLength: 3 }).map((l) => topic(l.join('.'))),
  fc.constantFrom('processes/p', 'processes/p-q', 'collections/stations', 'wis2downloader').map(path),
);
const NETS = ['127.0.0.2/32', '127.0.0.0/8', '10.0.0.0/24', '2001:db8::/32', '2001:db8:1::/48'];
const ADDRESSES = ['127.0.0.2', '127.0.0.3', '10.0.0.9', '10.0.1.9', '2001:db8::1', '2001:db8:1::1', '2001:db9::1', '::ffff:127.0.0.2', 'x'];
const closingArb: fc.Arbitrary<Closing> = fc.record({
  scope: scopeArb,
  how: fc.constantFrom('token', 'closed', 'networks', 'public'),
  networks: fc.uniqueArray(fc.constantFrom(...NETS), { maxLength: 2 }),
});
const targetArb = fc.oneof(
  fc.array(fc.oneof(level, fc.constantFrom('2026', 'f.bufr4')), { maxLength: 5 }).map((s) => `/data/${s.join('/')}`),
  fc.array(level, { minLength: 1, maxLength: 3 }).map((l) => `/oapi/collections/${l.join('.')}/items`),
  fc.constantFrom('/oapi/processes/p/execution', '/oapi/processes/p-q/execution', '/oapi/collections/stations/items', '/wis2downloader/x', '/oapi/jobs/1'),
);
const methodArb = fc.constantFrom('GET', 'POST', 'DELETE');
const credentialArb = fc.constantFrom<string | undefined>(undefined, `Bearer ${TOKEN}`, 'Bearer svc_unknown');
const governs = (d: Decision | VerifyJwt, s: Scope): boolean => 'governing' in d && d.governing.some((g) => scopeKey(g) === scopeKey(s));

describe('properties', () => {
  it('adding a network to one scope never changes the answer to a request that scope does not govern', () => {
    const seen = { unchanged: 0, governed: 0 };
    fc.assert(
      fc.property(fc.array(closingArb, { minLength: 1, maxLength: 6 }), fc.nat(), fc.constantFrom(...NETS), targetArb, methodArb, fc.constantFrom(...ADDRESSES), credentialArb, (world, pick, net, target, method, address, authorization) => {
        const i = pick % world.length;
        const before = indexOf(world);
        const c = world[i]!;
        const grown = world.map((w, k) => (k === i ? { ...w, how: w.how === 'public' ? ('networks' as const) : w.how, networks: [...new Set([...(w.networks ?? []), net])] } : w));
        const after = indexOf(grown);
        const d1 = ask(after, target, address, authorization, method);
        if (governs(d1, c.scope)) {
          seen.governed++;
          return;
        }
        seen.unchanged++;
        expect(d1).toEqual(ask(before, target, address, authorization, method));
      }),
      { numRuns: 1500 },
    );
    expect(seen.unchanged).toBeGreaterThan(100);
    expect(seen.governed).toBeGreaterThan(100);
  });

  it('a request from an address no network holds is decided exactly as without the address', () => {
    let outside = 0;
    fc.assert(
      fc.property(fc.array(closingArb, { maxLength: 6 }), targetArb, methodArb, fc.constantFrom(...ADDRESSES), credentialArb, (world, target, method, address, authorization) => {
        const index = indexOf(world);
        const d = ask(index, target, address, authorization, method);
        const without = ask(index, target, undefined, authorization, method);
        if (d.outcome === 'granted-network') {
          // Granted only by a network of a governing scope that holds the address.
          expect(governs(d, d.scope)).toBe(true);
          return;
        }
        outside++;
        expect(d).toEqual(without);
      }),
      { numRuns: 1500 },
    );
    expect(outside).toBeGreaterThan(100);
  });
});

describe('cross-site evidence (issue 37, finding 3): an address is ambient authority, like a session cookie', () => {
  const index = indexOf([{ scope: topic('a.b'), how: 'networks', networks: ['127.0.0.0/24'] }]);
  const asked = (method: string, crossSite: boolean | undefined): Decision | VerifyJwt =>
    decide(index, DEFAULT_CONFIG, { method, target: FILE, authorization: undefined, address: '127.0.0.2', ...(crossSite === undefined ? {} : { crossSite }) }, NOW);

  it('no network grants an unsafe method with it, or with the method unstated; the request is decided as without an address', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND']) {
      expect(asked(method, true)).toMatchObject({ outcome: 'no-token' });
      expect(asked(method, false)).toMatchObject({ outcome: 'granted-network' });
      expect(asked(method, undefined)).toMatchObject({ outcome: 'granted-network' });
    }
    expect(decide(index, DEFAULT_CONFIG, { method: null, target: FILE, authorization: undefined, address: '127.0.0.2', crossSite: true }, NOW)).toMatchObject({ outcome: 'no-token' });
  });

  it('safe methods are granted with it (a link from another site to a file is no write)', () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(asked(method, true)).toMatchObject({ outcome: 'granted-network' });
  });
});

