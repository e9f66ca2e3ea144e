import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { buildIndex, compileSnapshot, DEFAULT_CONFIG, formatGeneratedToken, hashToken, everyAddressNote, networkLimitNote, newProtectedScope, tokenIdOf, type AccessIndex, type Scope, type TokenRecord } from '../../core/index.js';
import { renderProtectedList } from './protected-list.js';

const record = (seed: string): TokenRecord => {
  const hash = hashToken(formatGeneratedToken(createHash('sha256').update(seed).digest()));
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-21T00:00:00Z' };
};

function indexOf(scopes: readonly [Scope, readonly TokenRecord[]][]): AccessIndex {
  const snapshot = compileSnapshot(scopes.map(([scope, tokens], i) => newProtectedScope(scope, `o${i}`, undefined, tokens)));
  const index = buildIndex(snapshot.generation, snapshot.lines);
  if (!index.ok) throw new Error(index.error);
  return index.value;
}

const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const DATASET: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' };

describe('the public list of closed scopes', () => {
  it('keeps its body and ETag while only tokens change (no token churn visible to pollers)', () => {
    const one = indexOf([[TOPIC, [record('a')]]]);
    const two = indexOf([[TOPIC, [record('a'), record('b')]]]);
    const other = indexOf([[TOPIC, [record('c')]]]);
    expect(two.generation).not.toBe(one.generation);
    expect(renderProtectedList(two, DEFAULT_CONFIG)).toEqual(renderProtectedList(one, DEFAULT_CONFIG));
    expect(renderProtectedList(other, DEFAULT_CONFIG).etag).toBe(renderProtectedList(one, DEFAULT_CONFIG).etag);
  });

  it('changes its ETag when what it lists changes (a scope closes or opens)', () => {
    const one = indexOf([[TOPIC, [record('a')]]]);
    const more = indexOf([[TOPIC, [record('a')]], [DATASET, [record('d')]]]);
    expect(renderProtectedList(more, DEFAULT_CONFIG).etag).not.toBe(renderProtectedList(one, DEFAULT_CONFIG).etag);
    expect(JSON.parse(renderProtectedList(more, DEFAULT_CONFIG).body).scopes).toEqual([{ kind: 'dataset', value: DATASET.value }, { kind: 'topic', value: TOPIC.value }]);
  });
});

describe('prefix and public path scopes in the public list', () => {
  const DOWNLOADER: Scope = { kind: 'path', value: 'wis2downloader' };
  const STATION_INFO: Scope = { kind: 'path', value: 'processes/station-info' };

  function withPublic(): AccessIndex {
    const objects = [newProtectedScope(DOWNLOADER, 'd', undefined, [record('w')]), newProtectedScope(STATION_INFO, 's', undefined, [])];
    objects[1] = { ...objects[1]!, spec: { ...objects[1]!.spec, public: true } };
    const snapshot = compileSnapshot(objects);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    return index.value;
  }

  it('lists a closed prefix path as a closed scope and a public process apart, never as closed', () => {
    const body = JSON.parse(renderProtectedList(withPublic(), DEFAULT_CONFIG).body) as { scopes: unknown[]; public?: unknown[] };
    expect(body.scopes).toEqual([{ kind: 'path', value: 'wis2downloader' }]);
    expect(body.public).toEqual([{ kind: 'path', value: 'processes/station-info' }]);
  });

  it('lists only the public scopes svc-auth opens: one that a closed scope covers is closed, not public', () => {
    const objects = [newProtectedScope({ kind: 'path', value: 'processes/station' }, 'c', undefined, [record('p')]), newProtectedScope(STATION_INFO, 's', undefined, [])];
    objects[1] = { ...objects[1]!, spec: { ...objects[1]!.spec, public: true } };
    const snapshot = compileSnapshot(objects);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    const body = JSON.parse(renderProtectedList(index.value, DEFAULT_CONFIG).body) as Record<string, unknown>;
    expect(body.public).toBeUndefined();
    expect(body.closedByDefault).toContainEqual(expect.objectContaining({ kind: 'path', value: 'oapi/jobs' }));
  });

  it('a list without public scopes has no public field (its bytes and ETag as before)', () => {
    const body = JSON.parse(renderProtectedList(indexOf([[DOWNLOADER, [record('w')]]]), DEFAULT_CONFIG).body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['credentials', 'scopes', 'closedByDefault']);
  });
});

describe('scopes with networks in the public list', () => {
  it('say that download is limited to the networks granted, never which ones', () => {
    const o = newProtectedScope(TOPIC, 't', undefined, [record('a')]);
    const snapshot = compileSnapshot([{ ...o, spec: { ...o.spec, networks: [{ cidr: '203.0.113.7/32', description: 'partner gateway' }] } }, newProtectedScope(DATASET, 'd', undefined, [record('d')])]);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    const body = renderProtectedList(index.value, DEFAULT_CONFIG).body;
    expect(JSON.parse(body).scopes).toEqual([
      { kind: 'dataset', value: DATASET.value },
      { kind: 'topic', value: TOPIC.value, description: networkLimitNote(`data under the topic ${TOPIC.value}`) },
    ]);
    expect(body).not.toMatch(/203\.0\.113|partner gateway/);
  });
});

describe('scopes whose networks hold every address', () => {
  const withNetworks = (cidrs: readonly string[]) => {
    const o = newProtectedScope(TOPIC, 't', undefined, [record('a')]);
    const snapshot = compileSnapshot([{ ...o, spec: { ...o.spec, networks: cidrs.map((cidr) => ({ cidr })) } }, newProtectedScope(DATASET, 'd', undefined, [record('d')])]);
    const index = buildIndex(snapshot.generation, snapshot.lines);
    if (!index.ok) throw new Error(index.error);
    return JSON.parse(renderProtectedList(index.value, DEFAULT_CONFIG).body) as { scopes: unknown[]; openToEveryAddress?: unknown[] };
  };

  it('0.0.0.0/0 and ::/0: not listed as access-controlled, but apart as open to every address', () => {
    const body = withNetworks(['0.0.0.0/0', '::/0']);
    expect(body.scopes).toEqual([{ kind: 'dataset', value: DATASET.value }]);
    expect(body.openToEveryAddress).toEqual([{ kind: 'topic', value: TOPIC.value, description: everyAddressNote(`data under the topic ${TOPIC.value}`, 'all') }]);
    expect(JSON.stringify(body.openToEveryAddress)).toMatch(/open to every address/);
  });

  it('one family only: listed, saying which clients get in without a token and that the others present one', () => {
    const body = withNetworks(['0.0.0.0/0', '2001:db8::/48']);
    expect(body.openToEveryAddress).toBeUndefined();
    expect(body.scopes).toContainEqual({ kind: 'topic', value: TOPIC.value, description: everyAddressNote(`data under the topic ${TOPIC.value}`, 4) });
    expect(everyAddressNote('x', 4)).toBe('Download of x is open to every IPv4 address (the data provider grants a network that holds them all); IPv6 clients present a token as described here.');
  });
});
