import { describe, expect, it } from '@jest/globals';
import { authRequest } from './auth-request.js';
import { authorize } from './authorize.js';
import { extAuthz } from './ext-authz.js';
import { forwardAuth } from './forward-auth.js';
import { hopFromEnd } from './client-address.js';
import { ContractHeaders } from './headers.js';
import type { Contract } from './contract.js';

// Which header each endpoint reads the client address from, after --trusted-proxy-hops (docs/access-rules.md
// "Networks"), and when network grants are off for a request (fail closed: no address, and why).

function reader(contract: Contract, url: string, own: readonly string[], method = 'GET') {
  return (hops: number, ...address: string[]) => {
    const raw = [...own, ...address];
    const r = contract.read({ method, url, rawHeaders: raw }, new ContractHeaders(hops).read(raw));
    if (!r.ok) throw new Error(r.reason);
    return { address: r.address, problem: r.addressProblem };
  };
}
const nginx = reader(authRequest, '/authz/auth-request', ['X-Original-URI', '/data/a', 'X-Original-Method', 'GET']);
const original = reader(authorize, '/authorize', ['X-Original-URI', '/data/a', 'X-Api-Http-Method', 'GET']);
const traefik = reader(forwardAuth, '/authz/forward-auth', ['X-Forwarded-Uri', '/data/a', 'X-Forwarded-Method', 'GET']);
const envoy = reader(extAuthz, '/authz/ext-authz/data/a', []);
const fabric = reader(extAuthz, '/authz/ext-authz', ['Path', '/data/a', 'Method', 'GET']);

describe('hopFromEnd', () => {
  it('counts list entries from the end, trimmed; undefined past the start or on an empty entry', () => {
    expect(['a', 'a, b', 'a,b ,c', ' c '].map((l) => hopFromEnd(l, 0))).toEqual(['a', 'b', 'c', 'c']);
    expect(hopFromEnd('a, b, c', 1)).toBe('b');
    expect(hopFromEnd('a, b, c', 2)).toBe('a');
    expect(hopFromEnd('a, b, c', 3)).toBeUndefined();
    expect(hopFromEnd('a,,c', 1)).toBeUndefined();
    expect(hopFromEnd('a, ', 0)).toBeUndefined();
  });
});

describe('nginx endpoints: X-Real-IP', () => {
  it('read X-Real-IP and nothing a client could add besides (X-Forwarded-For, Forwarded, X-Client-IP)', () => {
    for (const read of [nginx, original]) {
      expect(read(0, 'X-Real-IP', '127.0.0.3', 'X-Forwarded-For', '127.0.0.2', 'Forwarded', 'for=127.0.0.2', 'X-Client-IP', '127.0.0.2')).toEqual({ address: '127.0.0.3' });
      expect(read(0, 'X-Forwarded-For', '127.0.0.2')).toEqual({ problem: 'missing' });
      expect(read(0, 'X-Real-IP', '127.0.0.2', 'X-Real-IP', '127.0.0.2')).toEqual({ problem: 'repeated' });
    }
  });

  it('with trusted hops, an X-Forwarded-For longer than the hops must name X-Real-IP that many entries from its end', () => {
    // ingress-nginx with use-forwarded-headers: X-Real-IP is the resolved client; X-Forwarded-For is just it, or
    // (compute-full-forwarded-for) the chain with the load balancer's address appended.
    expect(nginx(1, 'X-Real-IP', '127.0.0.2')).toEqual({ address: '127.0.0.2' });
    expect(nginx(1, 'X-Real-IP', '127.0.0.2', 'X-Forwarded-For', '127.0.0.2')).toEqual({ address: '127.0.0.2' });
    expect(nginx(1, 'X-Real-IP', '127.0.0.2', 'X-Forwarded-For', '127.0.0.9, 127.0.0.2, 127.0.0.1')).toEqual({ address: '127.0.0.2' });
    // The controller did not resolve the client (X-Real-IP is the load balancer's): off.
    expect(nginx(1, 'X-Real-IP', '127.0.0.1', 'X-Forwarded-For', '127.0.0.2, 127.0.0.1')).toEqual({ problem: 'disagree' });
  });
});

describe('Traefik ForwardAuth: the X-Forwarded-For entry the hops from its end', () => {
  it('reads the entry Traefik appended, never X-Real-IP, Forwarded or X-Client-IP', () => {
    expect(traefik(0, 'X-Forwarded-For', '127.0.0.3', 'X-Real-IP', '127.0.0.2', 'Forwarded', 'for=127.0.0.2', 'X-Client-IP', '127.0.0.2')).toEqual({ address: '127.0.0.3' });
    expect(traefik(0, 'X-Forwarded-For', '127.0.0.2, 127.0.0.3')).toEqual({ address: '127.0.0.3' });
    expect(traefik(1, 'X-Forwarded-For', '127.0.0.9, 127.0.0.2, 127.0.0.1')).toEqual({ address: '127.0.0.2' });
    expect(traefik(1, 'X-Forwarded-For', '127.0.0.1')).toEqual({ problem: 'short-chain' });
    expect(traefik(0)).toEqual({ problem: 'missing' });
    expect(traefik(0, 'X-Forwarded-For', '127.0.0.2', 'X-Forwarded-For', '127.0.0.3')).toEqual({ problem: 'repeated' });
  });
});

describe('ext-authz: Envoy reads X-Forwarded-For like Traefik, checked against X-Envoy-External-Address; Gateway Fabric reads none', () => {
  it('Envoy', () => {
    expect(envoy(0, 'X-Forwarded-For', '127.0.0.2, 127.0.0.3')).toEqual({ address: '127.0.0.3' });
    expect(envoy(0, 'X-Forwarded-For', '203.0.113.7', 'X-Envoy-External-Address', '203.0.113.7')).toEqual({ address: '203.0.113.7' });
    expect(envoy(0, 'X-Forwarded-For', '203.0.113.7', 'X-Envoy-External-Address', '203.0.113.8')).toEqual({ problem: 'disagree' });
    expect(envoy(1, 'X-Forwarded-For', '203.0.113.7, 10.0.0.1')).toEqual({ address: '203.0.113.7' });
  });

  it('Gateway Fabric: off whatever it carries', () => {
    expect(fabric(0, 'X-Real-IP', '127.0.0.2', 'X-Forwarded-For', '127.0.0.2')).toEqual({ problem: 'unsupported' });
  });
});

describe('address headers never make the request malformed', () => {
  it('repeats and disagreements only turn network grants off', () => {
    const raw = ['X-Original-URI', '/data/a', 'X-Original-Method', 'GET', 'X-Real-IP', '1.2.3.4', 'X-Real-IP', '5.6.7.8', 'Authorization', 'Bearer t'];
    expect(authRequest.read({ method: 'GET', url: '/authz/auth-request', rawHeaders: raw }, new ContractHeaders().read(raw))).toMatchObject({ ok: true, authorization: 'Bearer t', addressProblem: 'repeated' });
  });
});
