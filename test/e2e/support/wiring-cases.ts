// What every controller reading the chart's wiring must answer, written once for the e2e suite (controllers as host
// processes, test/e2e/wiring.test.ts) and the node suite (Envoy Gateway's Kubernetes provider, test/node/
// envoy-gateway.test.ts): closed, open, token, another scope's token, a navigation sent to sign in and a fetch() kept
// at 401, every other controller's header and method family refused (never a bypass), svc-auth's pages routed and its
// decision endpoints not. Tokens never appear in a test name or a failure message.
import { expect, it } from '@jest/globals';
import { dumpManifests, newProtectedScope, scopeObjectName, type Scope } from '../../../core/index.js';
import { WAF, type WafTree } from './fixtures.js';
import type { TokenName } from './harness.js';
import { header, rawRequest, type RawResponse } from './net.js';
import { newToken, tokenRecord } from './scopes.js';
import { EXTERNAL_URL, WIRED_HOST } from './wiring.js';

export interface WiredRequest {
  readonly method?: string;
  readonly target: string;
  readonly headers?: readonly (readonly [string, string])[];
  readonly body?: string;
}

/** What the cases need of a running controller, read when the tests run. */
export interface WiredContext {
  /** One request through the controller (Host: data.example.org), with a token as Bearer or ?token=. */
  send(req: WiredRequest, token?: TokenName, via?: 'bearer' | 'query'): Promise<RawResponse>;
  /** svc-auth's own answer to `target` (the pages must be routed to exactly it). */
  direct(target: string): Promise<RawResponse>;
  readonly waf: WafTree;
  /** Requests that reached the WAF backend and the API backend so far ("METHOD /path"). */
  wafSeen(): readonly string[];
  apiSeen(): readonly string[];
}

/**
 * One request to `port` (at `address`, default 127.0.0.1) with Host `host` (default data.example.org), the named token
 * as a Bearer header or a ?token= argument.
 */
export function sendWith(tokens: Readonly<Record<TokenName, string>>, port: number, opts: { address?: string; host?: string } = {}) {
  return (req: WiredRequest, token?: TokenName, via: 'bearer' | 'query' = 'bearer'): Promise<RawResponse> => {
    let target = req.target;
    const headers = [...(req.headers ?? [])];
    if (token !== undefined) {
      if (via === 'query') target = `${target}${target.includes('?') ? '&' : '?'}token=${tokens[token]}`;
      else headers.push(['Authorization', `Bearer ${tokens[token]}`]);
    }
    return rawRequest(port, { method: req.method ?? 'GET', target, headers, body: req.body, host: opts.host ?? WIRED_HOST, ...(opts.address ? { address: opts.address } : {}) });
  };
}

/** The topic of WAF.boundaryTopicFile: closed by a token, and granted to the client's own network. */
const NEAR: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core2' };
/** The dataset of WAF.datasetChildFile: closed by a token, and granted to a network the client is not in. */
const FAR: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs:hourly' };
/** A documentation network (TEST-NET-3): not this machine's, whatever its address. */
const FAR_NETWORK = '203.0.113.0/24';

/**
 * The ProtectedScopes of the network cases (spec.networks, issue 30), as manifests: WAF.boundaryTopicFile's topic granted
 * to `clientCidrs` (the addresses the controllers report the suite's requests from), WAF.datasetChildFile's dataset to a
 * documentation network. Each also holds a token nobody knows, so it stays closed when its network is not the client's.
 */
export function networkScopes(clientCidrs: readonly string[]): string {
  return dumpManifests(([[NEAR, clientCidrs], [FAR, [FAR_NETWORK]]] as const).map(([scope, cidrs]) => {
    const o = newProtectedScope(scope, scopeObjectName(scope), undefined, [tokenRecord(newToken())]);
    return { ...o, spec: { ...o.spec, networks: cidrs.map((cidr) => ({ cidr, description: 'a WIS2 Global Cache' })) } };
  }));
}

/** A browser's top-level navigation, and a page's fetch(): what Chromium sends. */
export const NAVIGATION = [['Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'], ['Sec-Fetch-Mode', 'navigate'], ['Sec-Fetch-Site', 'none'], ['Sec-Fetch-Dest', 'document']] as const;
export const FETCH = [['Accept', '*/*'], ['Sec-Fetch-Mode', 'cors'], ['Sec-Fetch-Site', 'same-origin'], ['Sec-Fetch-Dest', 'empty']] as const;

/** Every other controller's header family, sent by the client to pass the closed file off as an open one. */
export const FAMILIES: readonly [string, readonly (readonly [string, string])[]][] = [
  ['ingress-nginx\'s X-Original-URL and X-Original-URI', [['X-Original-URL', `http://${WIRED_HOST}${WAF.openTopicFile}`], ['X-Original-URI', WAF.openTopicFile], ['X-Original-Method', 'GET']]],
  ['Traefik\'s X-Forwarded-Uri and X-Forwarded-Method', [['X-Forwarded-Uri', WAF.openTopicFile], ['X-Forwarded-Method', 'GET']]],
  ['Envoy\'s X-Envoy-Original-Path', [['X-Envoy-Original-Path', WAF.openTopicFile]]],
  ['NGINX Gateway Fabric\'s Path and Method', [['Path', WAF.openTopicFile], ['Method', 'GET']]],
  ['the original\'s X-Api-Http-Method and a rewrite prefix', [['X-Api-Http-Method', 'GET'], ['X-Forwarded-Prefix', '/data/metadata'], ['X-Rewrite-URL', WAF.openTopicFile]]],
  ['every family at once', [['X-Original-URL', `http://${WIRED_HOST}${WAF.openTopicFile}`], ['X-Original-URI', WAF.openTopicFile], ['X-Forwarded-Uri', WAF.openTopicFile], ['X-Envoy-Original-Path', WAF.openTopicFile], ['Path', WAF.openTopicFile]]],
];
/** The same families' method headers on a stations write, and the method overrides. */
export const METHOD_FAMILIES: readonly [string, string, string][] = [
  ['X-Original-Method', 'GET', 'ingress-nginx\'s'],
  ['X-Forwarded-Method', 'GET', 'Traefik\'s'],
  ['Method', 'GET', 'NGINX Gateway Fabric\'s'],
  ['X-Api-Http-Method', 'GET', 'the original\'s'],
  ['X-HTTP-Method-Override', 'GET', 'a method override'],
  ['X-Method-Override', 'GET', 'a method override'],
];
const STATIONS = '/oapi/collections/stations/items';
const stationsPost = (extra: readonly (readonly [string, string])[] = []): WiredRequest => ({ method: 'POST', target: STATIONS, headers: [['Content-Type', 'application/geo+json'], ...extra], body: '{}' });

function accessCases(c: () => WiredContext): void {
  it('a closed file needs its token: 401 with the challenge, and the backend is never asked', async () => {
    const before = c().wafSeen().length;
    const res = await c().send({ target: WAF.topicFile });
    expect(res.status).toBe(401);
    expect(header(res, 'www-authenticate')).toMatch(/^Bearer /);
    expect(res.body.includes(c().waf.markers.topicFile)).toBe(false);
    expect(c().wafSeen().length).toBe(before);
  });

  it('an open file needs none', async () => {
    const res = await c().send({ target: WAF.openTopicFile });
    expect(res.status).toBe(200);
    expect(res.body.includes(c().waf.markers.openTopicFile)).toBe(true);
  });

  it.each([['Authorization: Bearer', 'bearer'], ['?token=', 'query']] as const)('the token holder gets the closed file (%s)', async (_n, via) => {
    const res = await c().send({ target: WAF.topicFile }, 'topic', via);
    expect(res.status).toBe(200);
    expect(res.body.includes(c().waf.markers.topicFile)).toBe(true);
  });

  it('another scope\'s token is refused with 403', async () => {
    const res = await c().send({ target: WAF.topicFile }, 'dataset');
    expect(res.status).toBe(403);
    expect(res.body.includes(c().waf.markers.topicFile)).toBe(false);
  });

  it('a browser\'s navigation to the closed file is sent to sign in; a page\'s fetch() keeps its 401', async () => {
    const nav = await c().send({ target: WAF.topicFile, headers: NAVIGATION });
    expect(nav.status).toBe(302);
    expect(header(nav, 'location')).toMatch(new RegExp(`^${EXTERNAL_URL.replaceAll('.', '\\.')}/authz/sign-in\\?rd=`));
    const fetched = await c().send({ target: WAF.topicFile, headers: FETCH });
    expect(fetched.status).toBe(401);
  });
}

function familyCases(c: () => WiredContext): void {
  it.each(FAMILIES)('the client\'s %s naming an open file: refused, never the closed file', async (_n, headers) => {
    const before = c().wafSeen().length;
    const res = await c().send({ target: WAF.topicFile, headers });
    expect([400, 401, 403]).toContain(res.status);
    expect(res.body.includes(c().waf.markers.topicFile)).toBe(false);
    expect(c().wafSeen().length).toBe(before);
  });

  it.each(METHOD_FAMILIES)('a stations POST with the client\'s %s: %s (%s): refused, the API never reached', async (name, value) => {
    const before = c().apiSeen().length;
    const res = await c().send(stationsPost([[name, value]]));
    expect([400, 401, 403]).toContain(res.status);
    expect(c().apiSeen().length).toBe(before);
  });

  it('a stations POST with its token reaches the API (the method is the request\'s)', async () => {
    const res = await c().send(stationsPost(), 'stations');
    expect(res.status).toBe(200);
    expect(c().apiSeen().at(-1)).toBe(`POST ${STATIONS}`);
  });
}

function networkCases(c: () => WiredContext): void {
  it('a client in a network of the closed scope gets its file without a token: the controller passes the address it saw', async () => {
    const res = await c().send({ target: WAF.boundaryTopicFile });
    expect(res.status).toBe(200);
    expect(res.body.includes(c().waf.markers.boundaryTopicFile)).toBe(true);
  });

  it.each([['no header', []], ['the client\'s own X-Forwarded-For and X-Real-IP naming the granted network', [['X-Forwarded-For', '203.0.113.7'], ['X-Real-IP', '203.0.113.7']]]] as const)(
    'a network that does not hold the client grants nothing (%s)', async (_n, headers) => {
      const res = await c().send({ target: WAF.datasetChildFile, headers });
      expect(res.status).toBe(401);
      expect(res.body.includes(c().waf.markers.datasetChildFile)).toBe(false);
    });
}

function pagesCases(c: () => WiredContext): void {
  it('svc-auth\'s pages are routed on the host: the public list, exactly as svc-auth answers it', async () => {
    const [direct, via] = await Promise.all([c().direct('/authz/v1/protected'), c().send({ target: '/authz/v1/protected' })]);
    expect(via.status).toBe(200);
    expect(via.body).toBe(direct.body);
  });

  it.each(['/authz/auth-request', '/authz/forward-auth', '/authz/ext-authz', `/authz/ext-authz${WAF.topicFile}`, '/authorize'])('svc-auth\'s decision endpoint %s is not routed (404), even with a token', async (target) => {
    const res = await c().send({ target, headers: [['X-Original-URL', `http://${WIRED_HOST}${WAF.topicFile}`], ['X-Forwarded-Uri', WAF.topicFile]] }, 'topic');
    expect(res.status).toBe(404);
  });
}

/** Registers every case for one controller (inside its describe). */
export function wiredCases(context: () => WiredContext): void {
  accessCases(context);
  familyCases(context);
  networkCases(context);
  pagesCases(context);
}
