import { describe, expect, it } from '@jest/globals';
import { answerSets, headerValue, sendGrantedIdentity, sendGrantedNetwork } from './answers.js';
import { ANSWER_HEADERS, ENVOY_REMOVE_HEADER } from '../../core/index.js';
import type { HeadResponse } from './head.js';

const header = (headers: readonly string[], name: string) => headers[headers.indexOf(name) + 1];

describe('granted answers, prepared on first use and kept by token id', () => {
  const NOW = Date.parse('2026-11-21T12:00:00Z');

  it('name the scope and token of each grant, also when one token id is granted in turn by two scopes', () => {
    const { nginx } = answerSets(30);
    const a = nginx.granted.answer('topic:a.b', 'abc123abc123', Infinity, NOW);
    const b = nginx.granted.answer('dataset:urn:x', 'abc123abc123', Infinity, NOW);
    expect([header(a.headers, 'X-Auth-Request-Scope'), header(a.headers, 'X-Auth-Request-Token-Id')]).toEqual(['topic:a.b', 'abc123abc123']);
    expect(header(b.headers, 'X-Auth-Request-Scope')).toBe('dataset:urn:x');
    expect(header(nginx.granted.answer('topic:a.b', 'abc123abc123', Infinity, NOW).headers, 'X-Auth-Request-Scope')).toBe('topic:a.b');
    // The same grant again is the same prepared answer.
    expect(nginx.granted.answer('topic:a.b', 'abc123abc123', Infinity, NOW)).toBe(nginx.granted.answer('topic:a.b', 'abc123abc123', Infinity, NOW));
  });

  it('follow the token expiry in X-Accel-Expires (nginx) second by second, and carry none for the proxies', () => {
    const { nginx, proxy } = answerSets(30);
    const expires = NOW + 10_500;
    expect(header(nginx.granted.answer('topic:a', 'id0000000001', expires, NOW).headers, 'X-Accel-Expires')).toBe('10');
    expect(header(nginx.granted.answer('topic:a', 'id0000000001', expires, NOW + 1000).headers, 'X-Accel-Expires')).toBe('9');
    expect(header(nginx.granted.answer('topic:a', 'id0000000001', expires, expires).headers, 'X-Accel-Expires')).toBe('0');
    expect(header(nginx.granted.answer('topic:a', 'id0000000002', Infinity, NOW).headers, 'X-Accel-Expires')).toBe('30');
    expect(proxy.granted.answer('topic:a', 'id0000000001', expires, NOW).headers).not.toContain('X-Accel-Expires');
  });

  it('stay right past the cache bound', () => {
    const { proxy } = answerSets(0);
    for (let i = 0; i < 10_000; i++) {
      const id = i.toString(16).padStart(12, '0');
      expect(header(proxy.granted.answer(`path:p${i}`, id, Infinity, NOW).headers, 'X-Auth-Request-Token-Id')).toBe(id);
    }
    expect(header(proxy.granted.answer('path:p1', '000000000001', Infinity, NOW).headers, 'X-Auth-Request-Scope')).toBe('path:p1');
  });

  it('refuse a scope that cannot be a header value (the handler answers with a refusal instead)', () => {
    expect(() => answerSets(30).nginx.granted.answer('topic:a\r\nSet-Cookie: x', 'abc123abc123', Infinity, NOW)).toThrow(TypeError);
  });
});

describe('identity names as header values', () => {
  it('two different names never give the same value (RFC 8187 ext-value for anything but plain ASCII without %)', () => {
    const names = ['alice', '\u0430lice', '%D0%B0lice', "UTF-8''%D0%B0lice", 'a b', 'a%20b', 'ü', '%C3%BC', 'x*y', "UTF-8''x"];
    const values = names.map(headerValue);
    expect(new Set(values).size).toBe(names.length);
    expect(values.slice(0, 3)).toEqual(['alice', "UTF-8''%D0%B0lice", "UTF-8''%25D0%25B0lice"]);
  });

  it('decodes back to the name the way the README tells a backend to', () => {
    const decode = (v: string) => (v.startsWith("UTF-8''") ? decodeURIComponent(v.slice(7)) : v);
    for (const n of ['alice', '\u0430lice', '%D0%B0lice', "UTF-8''%D0%B0lice", 'Ölçü grubu', 'a\tb']) expect(decode(headerValue(n))).toBe(n);
  });
});

describe('identity grants (a verified JWT), prepared on first use and kept by scope, user and group', () => {
  const NOW = Date.parse('2026-11-21T12:00:00Z');
  /** The headers one identity grant is answered with. */
  const sent = (set: ReturnType<typeof answerSets>['nginx'], expMs: number, nowMs: number): readonly string[] => {
    let headers: readonly string[] = [];
    const res: HeadResponse = { writeHead: (_s, h) => (headers = h), end: () => undefined, headersSent: false, shouldKeepAlive: true, destroy: () => undefined };
    sendGrantedIdentity(res, set, 'topic:a', 'alice', 'ops', expMs, nowMs);
    return headers;
  };

  it('follow the JWT exp in X-Accel-Expires second by second, the kept answer included (never the first answer\'s bound again)', () => {
    const { nginx, proxy } = answerSets(30);
    const exp = NOW + 5_500;
    expect(header(sent(nginx, exp, NOW), 'X-Accel-Expires')).toBe('5');
    expect(header(sent(nginx, exp, NOW + 2_000), 'X-Accel-Expires')).toBe('3');
    expect(header(sent(nginx, exp, exp + 10_000), 'X-Accel-Expires')).toBe('0');
    expect(header(sent(nginx, NOW + 3_600_000, NOW), 'X-Accel-Expires')).toBe('30');
    expect(sent(proxy, exp, NOW)).not.toContain('X-Accel-Expires');
    for (const set of [nginx, proxy]) expect(header(sent(set, exp, NOW), 'Cache-Control')).toBe('no-store');
  });
});

describe('Envoy removes the client\'s copies of every answer header an allow does not set', () => {
  const NOW = Date.parse('2026-11-21T12:00:00Z');
  const removed = (headers: readonly string[]): string[] => (header(headers, ENVOY_REMOVE_HEADER) ?? '').split(',').filter((h) => h.length > 0);
  const set = (headers: readonly string[]): string[] => ANSWER_HEADERS.filter((h) => headers.includes(h)).map((h) => h.toLowerCase());
  const capture = (): { res: HeadResponse; headers: () => string[] } => {
    let sent: string[] = [];
    const res: HeadResponse = { writeHead: (_s, h) => void (sent = [...((h as string[] | undefined) ?? [])]), end: () => undefined, headersSent: false, shouldKeepAlive: true, destroy: () => undefined };
    return { res, headers: () => sent };
  };

  it('each proxy-flavour allow: what it sets plus what it removes is the whole family, never both', () => {
    const { proxy } = answerSets(30);
    const allows: string[][] = [[...proxy.open.headers], [...proxy.granted.answer('topic:a', 'id0000000001', Infinity, NOW).headers]];
    for (const group of [undefined, 'partners']) {
      const c = capture();
      sendGrantedIdentity(c.res, proxy, 'topic:a', 'alice', group, NOW + 60_000, NOW);
      allows.push(c.headers());
    }
    const n = capture();
    sendGrantedNetwork(n.res, proxy, 'topic:a', '127.0.0.2/32');
    allows.push(n.headers());
    for (const headers of allows) {
      const r = removed(headers);
      expect(r.length).toBeGreaterThan(0);
      expect(r.filter((h) => set(headers).includes(h))).toEqual([]);
      expect([...r, ...set(headers)].sort()).toEqual(ANSWER_HEADERS.map((h) => h.toLowerCase()).sort());
    }
    expect(removed([...proxy.open.headers])).toEqual(ANSWER_HEADERS.map((h) => h.toLowerCase()));
  });

  it('nginx answers never carry it (nginx copies the family itself: auth_request_set)', () => {
    const { nginx } = answerSets(30);
    expect(nginx.open.headers).not.toContain(ENVOY_REMOVE_HEADER);
    expect(nginx.granted.answer('topic:a', 'id0000000001', Infinity, NOW).headers).not.toContain(ENVOY_REMOVE_HEADER);
  });
});
