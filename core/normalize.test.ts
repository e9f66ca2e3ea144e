import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { normalizeTarget, stripOrigin } from './normalize.js';

// docs/access-rules.md "Normalization": split off query and fragment, decode each segment once, refuse what
// could make proxy, svc-auth and backend disagree, collapse `//`, drop `.`, resolve `..` never above root.

const segs = (raw: string) => {
  const t = normalizeTarget(raw);
  return t.ok ? t.segments : null;
};
const refused = (raw: string) => !normalizeTarget(raw).ok;

describe('splitting', () => {
  it('the query starts at the first "?" and is returned raw', () => {
    expect(normalizeTarget('/a/b?x=1&token=%41?y')).toEqual({ ok: true, segments: ['a', 'b'], path: '/a/b', query: 'x=1&token=%41?y' });
  });
  it('a "#" anywhere is refused: clients never send a fragment, and proxies disagree on where it ends the path', () => {
    for (const t of ['/a/b#frag', '/a?x=1#frag', '/a#f?token=x', '/a#/../../c', '/a#', '/#', '/a%23b#']) expect(refused(t)).toBe(true);
    expect(normalizeTarget('/a#b')).toEqual({ ok: false, reason: 'the request target has a "#"' });
  });
  it('an encoded "#" (%23) is data, not a fragment', () => {
    expect(segs('/a%23b')).toEqual(['a#b']);
  });
  it('"/" inside the query does not add segments', () => {
    expect(segs('/a?p=/b/../../c')).toEqual(['a']);
  });
  it('the root and the empty path', () => {
    expect(segs('/')).toEqual([]);
    expect(refused('')).toBe(true);
  });
  it('a target must start with "/" (relative paths, absolute URLs and "*" are refused)', () => {
    expect(refused('data/x')).toBe(true);
    expect(refused('http://h/data/x')).toBe(true);
    expect(refused('*')).toBe(true);
  });
  it('an overly long target is refused', () => {
    expect(refused(`/${'a'.repeat(9000)}`)).toBe(true);
    expect(segs(`/${'a'.repeat(8000)}`)).toEqual(['a'.repeat(8000)]);
  });
});

describe('percent-decoding: each segment exactly once', () => {
  it('decodes unreserved characters, in either hex case', () => {
    expect(segs('/%64%61%74%61/%73tations')).toEqual(['data', 'stations']);
    expect(segs('/%4A%4a')).toEqual(['JJ']);
  });
  it('decodes valid UTF-8', () => {
    expect(segs('/caf%C3%A9')).toEqual(['café']);
    expect(segs('/%E2%82%AC')).toEqual(['€']);
  });
  it('keeps characters that are legal in a segment after decoding (space, ":", "?", "#")', () => {
    expect(segs('/a%20b/urn%3Ax/a%3Fb/a%23b')).toEqual(['a b', 'urn:x', 'a?b', 'a#b']);
  });
  it('a raw non-ASCII byte (latin1 header) is decoded as UTF-8 bytes', () => {
    expect(segs('/caf\u00c3\u00a9')).toEqual(['café']);
    expect(refused('/caf\u00e9')).toBe(true); // a lone 0xE9 byte is not UTF-8
  });
});

describe('dot segments and empty segments', () => {
  it.each([
    ['/a//b', ['a', 'b']],
    ['//a///b//', ['a', 'b']],
    ['/a/./b/.', ['a', 'b']],
    ['/a/b/../c', ['a', 'c']],
    ['/a/b/..', ['a']],
    ['/a/%2e%2e/b', ['b']],
    ['/a/%2E%2E/b', ['b']],
    ['/a/.%2e/b', ['b']],
    ['/a/%2e./b', ['b']],
    ['/a/%2e/b', ['a', 'b']],
    ['/..', []],
    ['/../../../a', ['a']],
    ['/a/../../../b', ['b']],
    ['/a/.../b', ['a', '...', 'b']],
    ['/a/..a/b', ['a', '..a', 'b']],
  ])('%s → %j', (raw, expected) => {
    expect(segs(raw)).toEqual(expected);
  });
  it('property: ".." never climbs above the root, and the result never holds "", "." or ".."', () => {
    const seg = fc.constantFrom('a', 'b', '.', '..', '', '%2e', '%2e%2e', '.%2e', '%2E.', 'x%2ey');
    fc.assert(
      fc.property(fc.array(seg, { maxLength: 12 }), (parts) => {
        const out = segs(`/${parts.join('/')}`);
        expect(out).not.toBeNull();
        for (const s of out!) expect(['', '.', '..']).not.toContain(s);
        // Reference: a stack machine over the decoded parts.
        const stack: string[] = [];
        for (const p of parts.map((x) => decodeURIComponent(x))) {
          if (p === '..') stack.pop();
          else if (p !== '.' && p !== '') stack.push(p);
        }
        expect(out).toEqual(stack);
      }),
    );
  });
});

describe('refused (docs/access-rules.md "Attack cases")', () => {
  it.each([
    ['encoded slash %2F', '/data/a%2Fb'],
    ['encoded slash %2f', '/data/a%2fb'],
    ['encoded ..%2F', '/data/..%2f..%2fsecret'],
    ['encoded backslash %5C', '/data/a%5Cb'],
    ['encoded backslash %5c', '/data/a%5cb'],
    ['raw backslash', '/data/a\\b'],
    ['raw backslash dot-dot', '/data/..\\secret'],
    ['double encoding %252e%252e', '/data/%252e%252e/secret'],
    ['double-encoded slash %252F', '/data/a%252Fb'],
    ['a "%" left after decoding', '/data/100%25'],
    ['";" path parameter', '/oapi/collections/stations;x'],
    ['"..;/"', '/data/x/..;/secret'],
    ['encoded ";"', '/data/x/..%3B/secret'],
    ['%00', '/data/a%00b'],
    ['%0a', '/data/a%0ab'],
    ['%0A', '/data/a%0Ab'],
    ['%0d', '/data/a%0db'],
    ['%7f', '/data/a%7fb'],
    ['C1 control U+0085 encoded', '/data/a%C2%85b'],
    ['raw NUL', '/data/a\0b'],
    ['raw newline', '/data/a\nb'],
    ['raw tab', '/data/a\tb'],
    ['raw DEL', '/data/a\x7fb'],
    ['invalid percent-encoding %zz', '/data/%zz'],
    ['truncated percent-encoding %4', '/data/%4'],
    ['lone %', '/data/%'],
    ['half-hex %g1', '/data/%g1'],
    ['invalid UTF-8 %c3%28', '/data/%c3%28'],
    ['overlong "/" %c0%af', '/data/%c0%af'],
    ['overlong "." %c0%ae%c0%ae', '/data/%c0%ae%c0%ae/secret'],
    ['3-byte overlong %e0%80%af', '/data/%e0%80%af'],
    ['encoded surrogate %ed%a0%80', '/data/%ed%a0%80'],
    ['truncated UTF-8 %e2%82', '/data/%e2%82'],
    ['lone continuation byte %80', '/data/%80'],
  ])('%s', (_what, raw) => {
    expect(normalizeTarget(raw).ok).toBe(false);
  });
  it('only the path is checked: odd bytes in the query do not refuse the path', () => {
    expect(normalizeTarget('/a?x=%zz;\\').ok).toBe(true);
  });
  it('property: any control character anywhere in a path segment is refused, raw or encoded', () => {
    const control = fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.constant(0x7f));
    fc.assert(
      fc.property(control, fc.boolean(), (code, encode) => {
        const c = encode ? `%${code.toString(16).padStart(2, '0')}` : String.fromCharCode(code);
        expect(normalizeTarget(`/data/a${c}b/x`).ok).toBe(false);
      }),
    );
  });
  it('property: decoding never yields a "/", "\\", "%" or ";" inside a segment', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
        const t = normalizeTarget(`/${s}`);
        const forbidden = (c: number) => c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2f || c === 0x5c || c === 0x25 || c === 0x3b;
        if (t.ok) for (const seg of t.segments) expect([...seg].some((ch) => forbidden(ch.charCodeAt(0)))).toBe(false);
      }),
    );
  });
});

describe('case is kept (the WAF object store and the API are case-sensitive)', () => {
  it('does not fold case', () => {
    expect(segs('/DATA/Collections/Stations')).toEqual(['DATA', 'Collections', 'Stations']);
  });
});

describe('raw whitespace and controls', () => {
  it.each(['/data/a b', '/data/x?token=a b', '/open /../closed', '/data/a\tb', '/data/x?\x7f'])('refuses %j', (raw) => {
    expect(normalizeTarget(raw).ok).toBe(false);
  });
});

describe('stripOrigin (absolute URLs, e.g. X-Original-URL)', () => {
  it.each([
    ['http://host/data/x?token=a', '/data/x?token=a'],
    ['https://host:8443/oapi/collections/stations', '/oapi/collections/stations'],
    ['HTTPS://HOST/Data', '/Data'],
    ['svc+ws-1.0://host/p', '/p'],
    ['http://[::1]:8080/p', '/p'],
    ['http://host/a//b', '/a//b'],
    // Anything but host[:port] then a path is refused (''), since the authority is the client's Host header.
    ['https://user:pw@host/p', ''],
    ['http://host', ''],
    ['http:///p', ''],
    ['http://host?token=a', ''],
    ['http://host?x=/data/secret', ''],
    ['http://host#/data/secret', ''],
    ['http://127.0.0.1?/data/x', ''],
    ['http://127.0.0.1#/data/x', ''],
    ['http://h%20/data/x', ''],
  ])('%s → %j', (url, path) => {
    expect(stripOrigin(url)).toBe(path);
  });
  it.each(['/data/x', '/a://b', '/?u=http://h/x', 'data/x', '1http://h/x', 'ht tp://h/x', '://h/x'])('leaves %j as it is', (s) => {
    expect(stripOrigin(s)).toBe(s);
  });
  it('the result of an absolute URL is a path or refused, never anything else', () => {
    fc.assert(
      fc.property(fc.constantFrom('http', 'https', 'h2c'), fc.string({ maxLength: 30 }), (scheme, rest) => {
        const path = stripOrigin(`${scheme}://${rest}`);
        expect(path === '' || path.startsWith('/')).toBe(true);
      }),
    );
  });
});

describe('the normalized path', () => {
  it('is "/" and the segments joined by "/", whether or not anything had to change', () => {
    const part = fc.constantFrom('a', 'data', 'b.c', '.', '..', '', '%2e', '%41', 'caf%C3%A9', 'x y'.replace(' ', '%20'), '~u');
    fc.assert(
      fc.property(fc.array(part, { maxLength: 10 }), fc.constantFrom('', '?q=1', '#f', '/'), (parts, tail) => {
        const t = normalizeTarget(`/${parts.join('/')}${tail}`);
        if (!t.ok) return;
        expect(t.path).toBe(`/${t.segments.join('/')}`);
      }),
    );
  });

  it('is the raw path, without query or fragment, when nothing changed', () => {
    const t = normalizeTarget('/data/2026/wis/x.bufr4?token=abc');
    expect(t.ok && t.path).toBe('/data/2026/wis/x.bufr4');
    const u = normalizeTarget('/data//x/./y/../z%41/');
    expect(u.ok && u.path).toBe('/data/x/zA');
  });
});
