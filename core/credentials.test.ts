import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { extractCredential } from './credentials.js';

// docs/access-rules.md "Credentials": query argument `token` (first non-empty), else Bearer (scheme
// case-insensitive, exactly one token), else the Basic password; the query wins over the header.

const basic = (userPass: string) => `Basic ${Buffer.from(userPass, 'utf8').toString('base64')}`;
const tokenOf = (c: ReturnType<typeof extractCredential>) => (c.kind === 'token' ? c.token : undefined);

describe('query argument token', () => {
  it('is read from the query', () => {
    expect(extractCredential('token=abc', undefined, 'token')).toEqual({ kind: 'token', token: 'abc', carrier: 'query' });
    expect(extractCredential('x=1&token=abc&y=2', undefined, 'token')).toEqual({ kind: 'token', token: 'abc', carrier: 'query' });
  });
  it('the first non-empty one wins', () => {
    expect(tokenOf(extractCredential('token=&token=abc&token=def', undefined, 'token'))).toBe('abc');
    expect(tokenOf(extractCredential('token=first&token=second', undefined, 'token'))).toBe('first');
    expect(tokenOf(extractCredential('token&token=abc', undefined, 'token'))).toBe('abc');
  });
  it('matches the parameter name exactly', () => {
    expect(extractCredential('tokenx=abc', undefined, 'token').kind).toBe('none');
    expect(extractCredential('xtoken=abc', undefined, 'token').kind).toBe('none');
    expect(extractCredential('Token=abc', undefined, 'token').kind).toBe('none');
    expect(extractCredential('q=token=abc', undefined, 'token').kind).toBe('none');
  });
  it('a parameter without a value, or with an empty one, is no token', () => {
    expect(extractCredential('token', undefined, 'token').kind).toBe('none');
    expect(extractCredential('token=', undefined, 'token').kind).toBe('none');
    expect(extractCredential('token=&', undefined, 'token').kind).toBe('none');
    expect(extractCredential('', undefined, 'token').kind).toBe('none');
  });
  it('the value is percent-decoded once; "+" is kept as it is', () => {
    expect(tokenOf(extractCredential('token=a%2Bb%253D', undefined, 'token'))).toBe('a+b%3D');
    expect(tokenOf(extractCredential('token=a+b', undefined, 'token'))).toBe('a+b');
  });
  it('invalid percent-encoding in the value is a malformed credential (not silently ignored)', () => {
    expect(extractCredential('token=%zz', 'Bearer valid-looking-token', 'token')).toEqual({ kind: 'malformed', carrier: 'query' });
    expect(extractCredential('token=%c3%28', undefined, 'token')).toEqual({ kind: 'malformed', carrier: 'query' });
  });
  it('the parameter name is configurable', () => {
    expect(tokenOf(extractCredential('access_token=abc&token=def', undefined, 'access_token'))).toBe('abc');
    expect(extractCredential('token=def', undefined, 'access_token').kind).toBe('none');
  });
  it('query tokens can be disabled (null): the query is ignored and the header used', () => {
    expect(extractCredential('token=abc', undefined, null).kind).toBe('none');
    expect(extractCredential('token=abc', 'Bearer hdr', null)).toEqual({ kind: 'token', token: 'hdr', carrier: 'bearer' });
  });
});

describe('query wins over header', () => {
  it('when both carry different tokens, the query token is used', () => {
    expect(extractCredential('token=fromquery', 'Bearer fromheader', 'token')).toEqual({ kind: 'token', token: 'fromquery', carrier: 'query' });
    expect(extractCredential('token=fromquery', basic('u:fromheader'), 'token')).toEqual({ kind: 'token', token: 'fromquery', carrier: 'query' });
  });
  it('an empty query token falls through to the header', () => {
    expect(extractCredential('token=', 'Bearer fromheader', 'token')).toEqual({ kind: 'token', token: 'fromheader', carrier: 'bearer' });
  });
});

describe('Authorization: Bearer', () => {
  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('the scheme %j is case-insensitive', (scheme) => {
    expect(extractCredential('', `${scheme} abc`, 'token')).toEqual({ kind: 'token', token: 'abc', carrier: 'bearer' });
  });
  it('surrounding spaces are tolerated', () => {
    expect(tokenOf(extractCredential('', '  Bearer   abc  ', 'token'))).toBe('abc');
  });
  it('exactly one token: two are malformed', () => {
    expect(extractCredential('', 'Bearer abc def', 'token')).toEqual({ kind: 'malformed', carrier: 'bearer' });
    expect(extractCredential('', 'Bearer abc\tdef', 'token')).toEqual({ kind: 'malformed', carrier: 'bearer' });
  });
  it('an empty or blank Bearer is no credential at all (not malformed): wis2box-webapp sends `Bearer ` with an empty field', () => {
    for (const header of ['Bearer', 'Bearer ', 'Bearer    ', 'bearer \t ', '  Bearer\t']) expect(extractCredential('', header, 'token')).toEqual({ kind: 'none' });
    // A query token still wins over it, and the blank header never hides one.
    expect(extractCredential('token=svc_abc', 'Bearer ', 'token')).toEqual({ kind: 'token', token: 'svc_abc', carrier: 'query' });
  });
  it('an unknown scheme is no token', () => {
    expect(extractCredential('', 'Token abc', 'token').kind).toBe('none');
    expect(extractCredential('', 'Digest username="x"', 'token').kind).toBe('none');
    expect(extractCredential('', 'abc', 'token').kind).toBe('none');
  });
});

describe('Authorization: Basic (the password is the token)', () => {
  it('uses the password', () => {
    expect(extractCredential('', basic('anyone:secret-token'), 'token')).toEqual({ kind: 'token', token: 'secret-token', carrier: 'basic' });
  });
  it('the password may contain ":"', () => {
    expect(tokenOf(extractCredential('', basic('u:a:b:c'), 'token'))).toBe('a:b:c');
  });
  it('the user name may be empty (wget --password)', () => {
    expect(tokenOf(extractCredential('', basic(':pw'), 'token'))).toBe('pw');
  });
  it('the scheme is case-insensitive', () => {
    expect(tokenOf(extractCredential('', basic('u:pw').replace('Basic', 'bAsIc'), 'token'))).toBe('pw');
  });
  it('an empty password is no token', () => {
    expect(extractCredential('', basic('user:'), 'token').kind).toBe('none');
  });
  it('credentials without a colon are malformed', () => {
    expect(extractCredential('', basic('justauser'), 'token')).toEqual({ kind: 'malformed', carrier: 'basic' });
  });
  it('Bearer comes before Basic only through the query/header order: one header carries one scheme', () => {
    expect(extractCredential('', basic('u:pw'), 'token')).toMatchObject({ carrier: 'basic' });
  });
});

describe('properties', () => {
  const value = fc.stringMatching(/^[A-Za-z0-9_-]{1,30}$/);
  it('a non-empty query token always wins over any header', () => {
    fc.assert(
      fc.property(value, fc.option(fc.string(), { nil: undefined }), (q, header) => {
        expect(extractCredential(`a=1&token=${q}`, header, 'token')).toEqual({ kind: 'token', token: q, carrier: 'query' });
      }),
    );
  });
  it('any Bearer token without whitespace round-trips', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[!-~]{1,60}$/), (t) => {
        expect(extractCredential('', `Bearer ${t}`, 'token')).toEqual({ kind: 'token', token: t, carrier: 'bearer' });
      }),
    );
  });
  it('any Basic password round-trips', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[^:]{0,10}$/), fc.stringMatching(/^[!-~]{1,60}$/), (user, pw) => {
        expect(extractCredential('', basic(`${user}:${pw}`), 'token')).toEqual({ kind: 'token', token: pw, carrier: 'basic' });
      }),
    );
  });
  it('never throws, whatever the query and header', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.option(fc.string({ unit: 'binary' }), { nil: undefined }), (q, h) => {
        const c = extractCredential(q, h, 'token');
        expect(['none', 'token', 'malformed']).toContain(c.kind);
      }),
    );
  });
});
