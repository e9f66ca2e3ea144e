import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { cookieValue, crossSiteEvidence, externalOriginFor, isNavigation, isSafeMethod, originOf, prefersHtml, safeRedirect, sameOriginEvidence } from './browser.js';

const CHROME_NAVIGATION = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
const FIREFOX_NAVIGATION = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('prefersHtml', () => {
  it.each([
    [CHROME_NAVIGATION, true],
    [FIREFOX_NAVIGATION, true],
    ['text/html', true],
    ['TEXT/HTML; charset=utf-8', true],
    ['application/xhtml+xml, text/html', false],
    ['text/html;q=0.9, application/json;q=0.5', true],
    ['application/json, text/html', false],
    ['application/json;q=0.5, text/html', true],
    ['text/html;q=0.5, application/json', false],
    ['text/html;q=0', false],
    ['text/html;q=nonsense', false],
    ['*/*', false],
    ['text/*', false],
    ['application/json', false],
    ['', false],
    [undefined, false],
    [`${'a/b;q=0.1,'.repeat(200)}text/html`, false],
  ])('%j → %s', (accept, expected) => expect(prefersHtml(accept)).toBe(expected));
});

describe('isNavigation', () => {
  it('Sec-Fetch-Mode decides where the browser sends it', () => {
    expect(isNavigation({ secFetchMode: 'navigate', accept: '*/*' })).toBe(true);
    expect(isNavigation({ secFetchMode: 'cors', accept: CHROME_NAVIGATION })).toBe(false);
    expect(isNavigation({ secFetchMode: 'no-cors' })).toBe(false);
    expect(isNavigation({ secFetchMode: 'same-origin', accept: 'text/html' })).toBe(false);
  });

  it('without it, an Accept that prefers HTML', () => {
    expect(isNavigation({ accept: FIREFOX_NAVIGATION })).toBe(true);
    expect(isNavigation({ accept: '*/*' })).toBe(false);
    expect(isNavigation({})).toBe(false);
  });
});

describe('sameOriginEvidence (CSRF)', () => {
  const origins = ['https://data.example.org', 'http://127.0.0.1:8080'];
  it.each([
    [{ secFetchSite: 'same-origin' }, true],
    [{ secFetchSite: 'Same-Origin' }, true],
    [{ secFetchSite: 'same-site' }, false],
    [{ secFetchSite: 'cross-site' }, false],
    [{ secFetchSite: 'none' }, false],
    [{ origin: 'https://data.example.org' }, true],
    [{ origin: 'https://DATA.example.org:443' }, true],
    [{ origin: 'http://127.0.0.1:8080' }, true],
    [{ origin: 'https://evil.example' }, false],
    [{ origin: 'http://data.example.org' }, false],
    [{ origin: 'null' }, false],
    [{ secFetchSite: 'cross-site', origin: 'https://evil.example' }, false],
    [{}, false],
  ])('%j → %s', (h, expected) => expect(sameOriginEvidence(h, origins)).toBe(expected));
});

describe('cookieValue', () => {
  it('the first non-empty value of the name, exactly', () => {
    expect(cookieValue('a=1; svc-session=abc.def; b=2', 'svc-session')).toBe('abc.def');
    expect(cookieValue('svc-session=; svc-session=x', 'svc-session')).toBe('x');
    expect(cookieValue('svc-session=first;svc-session=second', 'svc-session')).toBe('first');
    expect(cookieValue('xsvc-session=1; svc-session-old=2', 'svc-session')).toBeUndefined();
    expect(cookieValue('svc-session', 'svc-session')).toBeUndefined();
    expect(cookieValue(undefined, 'svc-session')).toBeUndefined();
    expect(cookieValue(' svc-session = v ;', 'svc-session')).toBe('v');
    expect(cookieValue('a=b=c; svc-session=x=y', 'svc-session')).toBe('x=y');
  });

  it('reads every Cookie header as splitting it on semicolons would (the pairs are walked in place)', () => {
    // The plain reading the walk replaces: every pair, split at its first `=`, both sides trimmed.
    const bySplit = (header: string, name: string): string | undefined => {
      for (const pair of header.split(';')) {
        const eq = pair.indexOf('=');
        if (eq < 0 || pair.slice(0, eq).trim() !== name) continue;
        const value = pair.slice(eq + 1).trim();
        if (value.length > 0) return value;
      }
      return undefined;
    };
    const piece = fc.constantFrom('svc-session', 'a', '=', ';', ' ', '\t', 'x', '', '\u00a0', 'v=1');
    fc.assert(fc.property(fc.array(piece, { maxLength: 12 }).map((p) => p.join('')), (header) => {
      expect(cookieValue(header, 'svc-session')).toBe(bySplit(header, 'svc-session'));
    }), { numRuns: 5000 });
  });
});

describe('safeRedirect (no open redirect)', () => {
  const origins = ['https://data.example.org', 'https://wis2.example.org:8443'];
  const base = 'https://data.example.org';
  it.each([
    ['https://data.example.org/data/x.bufr4?token=no#frag', 'https://data.example.org/data/x.bufr4?token=no'],
    ['https://wis2.example.org:8443/oapi/', 'https://wis2.example.org:8443/oapi/'],
    ['/data/2026/x.bufr4', 'https://data.example.org/data/2026/x.bufr4'],
    ['/', 'https://data.example.org/'],
    [undefined, 'https://data.example.org/'],
    ['', 'https://data.example.org/'],
    ['https://evil.example/', 'https://data.example.org/'],
    ['http://data.example.org/x', 'https://data.example.org/'],
    ['//evil.example/x', 'https://data.example.org/'],
    ['/\\evil.example/x', 'https://data.example.org/'],
    ['\\\\evil.example', 'https://data.example.org/'],
    ['javascript:alert(1)', 'https://data.example.org/'],
    ['data.example.org/x', 'https://data.example.org/'],
    ['https://data.example.org.evil.example/', 'https://data.example.org/'],
    ['https://data.example.org@evil.example/', 'https://data.example.org/'],
    ['/x\r\nSet-Cookie: a=b', 'https://data.example.org/'],
    ['/authz/sign-in?rd=/', 'https://data.example.org/'],
    ['https://data.example.org/authz/callback?code=x', 'https://data.example.org/'],
    ['/authz/v1/session', 'https://data.example.org/authz/v1/session'],
  ])('%j → %s', (rd, expected) => expect(safeRedirect(rd, origins, base)).toBe(expected));

  // Express routes its paths whatever their case (and with a trailing slash); proxies decode percent-encoded
  // characters and merge slashes before routing: every spelling that can reach a step is one.
  it.each([
    '/AUTHZ/SIGN-IN?rd=/',
    '/Authz/Callback',
    'https://data.example.org/Authz/Callback?code=x',
    'https://wis2.example.org:8443/AUTHZ/SIGN-OUT',
    '/authz/sign-in/',
    '/authz/CALLBACK/',
    '/authz/sign%2Din?rd=/',
    '/authz/sign%2din',
    '/%61uthz/callback',
    '/%41UTHZ/%43ALLBACK',
    '/authz%2Fcallback',
    '/authz/sign%252Din',
    'https://data.example.org//authz/callback',
    '/.//authz/callback',
    '/authz//callback',
    '/authz///sign-out/',
    '/x/..//Authz/Sign-In',
    '/authz/%2e/callback',
  ])('svc-auth\'s own step %j, in another spelling → home', (rd) => expect(safeRedirect(rd, origins, base)).toBe('https://data.example.org/'));

  it.each([
    ['/authz/v1/session', 'https://data.example.org/authz/v1/session'],
    ['/authz/callbacks', 'https://data.example.org/authz/callbacks'],
    ['/data/authz/callback', 'https://data.example.org/data/authz/callback'],
    ['/authz/sign-in-help', 'https://data.example.org/authz/sign-in-help'],
    ['/authz/callback%3Fx', 'https://data.example.org/authz/callback%3Fx'],
    ['/data/%C5%BFign-in', 'https://data.example.org/data/%C5%BFign-in'],
  ])('a path that only looks like a step is kept: %j → %s', (rd, expected) => expect(safeRedirect(rd, origins, base)).toBe(expected));
});

describe('originOf and externalOriginFor', () => {
  const origins = ['https://data.example.org', 'http://127.0.0.1:8080'];
  it('reads the origin of http(s) URLs only', () => {
    expect(originOf('https://Data.Example.org:443/x?y')).toBe('https://data.example.org');
    expect(originOf('ftp://x/')).toBeUndefined();
    expect(originOf('not a url')).toBeUndefined();
  });

  it('finds the external origin a proxy reports (host, and scheme when known)', () => {
    expect(externalOriginFor('data.example.org', 'https', origins)).toBe('https://data.example.org');
    expect(externalOriginFor('DATA.example.org:443', undefined, origins)).toBe('https://data.example.org');
    expect(externalOriginFor('data.example.org', 'http', origins)).toBeUndefined();
    expect(externalOriginFor('127.0.0.1:8080', 'http', origins)).toBe('http://127.0.0.1:8080');
    expect(externalOriginFor('127.0.0.1:8081', undefined, origins)).toBeUndefined();
    expect(externalOriginFor('svc-auth:8080', undefined, origins)).toBeUndefined();
    expect(externalOriginFor(undefined, 'https', origins)).toBeUndefined();
  });

  it('safe methods', () => {
    expect(['GET', 'HEAD', 'OPTIONS'].every(isSafeMethod)).toBe(true);
    expect([null, 'POST', 'PUT', 'DELETE', 'PATCH', 'get'].some(isSafeMethod)).toBe(false);
  });
});

describe('crossSiteEvidence', () => {
  const ORIGINS = ['https://data.example.org'];
  it('Fetch Metadata decides where a browser sends it', () => {
    expect(crossSiteEvidence({ secFetchSite: 'cross-site' }, ORIGINS)).toBe(true);
    expect(crossSiteEvidence({ secFetchSite: 'Same-Site' }, ORIGINS)).toBe(true);
    expect(crossSiteEvidence({ secFetchSite: 'same-origin', origin: 'https://evil.example' }, ORIGINS)).toBe(false);
    expect(crossSiteEvidence({ secFetchSite: 'none' }, ORIGINS)).toBe(false);
  });
  it('without it, an Origin that is no external URL\'s, null or unreadable is evidence; no header at all is none', () => {
    expect(crossSiteEvidence({ origin: 'https://evil.example' }, ORIGINS)).toBe(true);
    expect(crossSiteEvidence({ origin: 'null' }, ORIGINS)).toBe(true);
    expect(crossSiteEvidence({ origin: 'https://data.example.org' }, ORIGINS)).toBe(false);
    expect(crossSiteEvidence({ origin: 'https://data.example.org' }, [])).toBe(true);
    expect(crossSiteEvidence({}, ORIGINS)).toBe(false);
    expect(crossSiteEvidence({ accept: 'text/html' }, [])).toBe(false);
  });
});

