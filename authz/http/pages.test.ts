import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import { contentSecurityPolicy, deniedPage, errorPage, escapeHtml, sessionPage } from './pages.js';

describe('the sign-in pages', () => {
  it('escape every value', () => {
    expect(escapeHtml(`<script>alert("x")</script>&'`)).toBe('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#38;&#39;');
    const p = deniedPage('<img src=x onerror=alert(1)>', '/data/"><script>', []);
    const html = p.body.toString();
    expect(html).not.toContain('<img');
    expect(html).not.toContain('"><script>');
    expect(errorPage(400, 'x', '<b>').body.toString()).toContain('&#60;b&#62;');
  });

  it('carry a CSP that allows their one inline style by hash, no script, forms to svc-auth (and the provider)', () => {
    const p = sessionPage({ issuer: 'https://idp', user: 'alice', groups: ['a'], expiresAt: 0 }, ['https://idp.example.org']);
    const headers = Object.fromEntries(p.headers.reduce<[string, string][]>((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v, all[i + 1]!]] : acc), []));
    const style = /<style>(.*?)<\/style>/.exec(p.body.toString())![1]!;
    expect(headers['Content-Security-Policy']).toBe(`default-src 'none'; style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'; form-action 'self' https://idp.example.org; frame-ancestors 'none'; base-uri 'none'`);
    expect(headers['Content-Length']).toBe(String(p.body.length));
    expect(headers['Cache-Control']).toBe('no-store');
    expect(p.body.toString()).not.toMatch(/<script|https?:\/\/(?!idp)/);
    expect(contentSecurityPolicy()).toContain("form-action 'self';");
  });

  it('the 403 page stays within what ForwardAuth reads of an answer (4096 bytes), whatever the names', () => {
    expect(deniedPage('u'.repeat(256), `/${'p'.repeat(8000)}`, ['https://idp.example.org']).body.length).toBeLessThan(4096);
  });

  it('the session page lists at most 50 groups', () => {
    const groups = Array.from({ length: 300 }, (_, i) => `g${i}`);
    const html = sessionPage({ issuer: 'i', user: 'u', groups, expiresAt: 0 }, []).body.toString();
    expect(html).toContain('g49');
    expect(html).not.toContain('g50<');
    expect(html).toContain('and 250 more');
  });
});
