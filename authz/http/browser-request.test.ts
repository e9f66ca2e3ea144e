import { describe, it, expect } from '@jest/globals';
import { readBrowserRequest } from './browser-request.js';

describe('readBrowserRequest', () => {
  it('reads the browser headers in any case, joins cookies, and counts a repeated header as absent', () => {
    const b = readBrowserRequest([
      'Host', 'svc-auth:8080', 'Cookie', 'a=1', 'ACCEPT', 'text/html', 'Sec-Fetch-Mode', 'navigate', 'sec-fetch-site', 'same-origin',
      'Origin', 'https://data.example.org', 'Origin', 'https://evil.example', 'X-Forwarded-Host', 'data.example.org', 'x-forwarded-proto', 'https',
      'cookie', 'svc-session=v', 'X-Original-URL', '',
    ]);
    expect(b).toEqual({
      cookie: 'a=1; svc-session=v', accept: 'text/html', secFetchMode: 'navigate', secFetchSite: 'same-origin', origin: undefined,
      host: 'svc-auth:8080', forwardedHost: 'data.example.org', forwardedProto: 'https', originalUrl: undefined,
    });
  });
});
