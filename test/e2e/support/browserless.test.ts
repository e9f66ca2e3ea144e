// The plain-HTTP browser's cookie jar keeps what a browser keeps for these suites: per host whatever the port,
// deletions, no cookie over 4,096 bytes, and (for the session cookie a sign-in leaves) the origin that set each.
import { describe, it, expect } from '@jest/globals';
import { CookieJar } from './browserless.js';

const answer = (...cookies: string[]) => {
  const headers = new Headers();
  for (const c of cookies) headers.append('set-cookie', c);
  return new Response(null, { status: 302, headers });
};

describe('CookieJar', () => {
  it('forgets a cookie its setter expires (Max-Age=0, or Expires in the past) and replaces one set again', () => {
    const jar = new CookieJar();
    const rp = 'http://127.0.0.1:3/oauth2/start';
    jar.take(rp, answer('csrf=a; Path=/', 'gone=b; Path=/', 'kept=c; Path=/'));
    jar.take(rp, answer('csrf=; Path=/; Max-Age=0', 'gone=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'kept=d; Path=/; Max-Age=60'));
    expect(jar.setBy('http://127.0.0.1:3')).toBe('kept=d');
  });

  it('ignores a cookie whose name and value exceed 4,096 bytes, as browsers do (attributes do not count)', () => {
    const jar = new CookieJar();
    const rp = 'http://127.0.0.1:3/authz/sign-in';
    jar.take(rp, answer(`fits=${'a'.repeat(4092)}; Path=/; Max-Age=600; HttpOnly; SameSite=Lax`, `over=${'b'.repeat(4093)}; Path=/`));
    expect(jar.namesSetBy('http://127.0.0.1:3')).toEqual(['fits']);
  });

  it('says which origin set what: cookies ignore ports, the jar remembers them', () => {
    const jar = new CookieJar();
    jar.take('http://127.0.0.1:4/x', answer('idp=1; Path=/'));
    jar.take('http://127.0.0.1:5/oauth2/callback', answer('_oauth2_proxy=2; Path=/; HttpOnly; SameSite=Lax'));
    expect(jar.setBy('http://127.0.0.1:5')).toBe('_oauth2_proxy=2');
    expect(jar.namesSetBy('http://127.0.0.1:4')).toEqual(['idp']);
    expect(jar.header('http://127.0.0.1:5/')).toBe('idp=1; _oauth2_proxy=2');
    expect(jar.header('http://localhost:5/')).toBeUndefined();
  });
});
