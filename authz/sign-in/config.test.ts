import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type AuthConfig } from '../args.js';
import { externalOrigin } from './config.js';

// Browser sign-in's flags: everything missing or wrong stops svc-auth at start (exit 2) with the flag named.

let dir: string;
let keys: string;
let secret: string;
const ISSUER = 'https://login.example.org/realms/wis2';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-sign-in-config-'));
  keys = join(dir, 'keys');
  writeFileSync(keys, `${randomBytes(32).toString('base64url')}\n${randomBytes(32).toString('base64url')}\n`);
  secret = join(dir, 'secret');
  writeFileSync(secret, 's3cr3t-value\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function parse(args: string[]): { config?: AuthConfig; exit?: number; err: string } {
  let err = '';
  const r = parseArgs(['--scopes-dir', '.', ...args], { out: () => undefined, err: (s) => (err += s) });
  return 'exit' in r ? { exit: r.exit, err } : { config: r, err };
}

const oidc = ['--oidc-issuer', ISSUER, '--oidc-audience', 'svc-data'];
const base = () => [...oidc, '--sign-in-client-id', 'svc-browser', '--external-url', 'https://data.example.org', '--session-key-file', keys];

describe('sign-in flags', () => {
  it('off without --sign-in-client-id', () => {
    expect(parse(oidc).config?.signIn).toBeUndefined();
  });

  it('on: the external origins, the issuer, the keys, 8h sessions, Secure cookies, a public client without a secret file', () => {
    const s = parse([...base(), '--external-url', 'https://wis2.example.org:8443/', '--external-url', 'https://data.example.org']).config!.signIn!;
    expect(s.externalUrls).toEqual(['https://data.example.org', 'https://wis2.example.org:8443']);
    expect(s.secure).toBe(true);
    expect(s.clientId).toBe('svc-browser');
    expect(s.clientSecret).toBeUndefined();
    expect(s.issuer.url).toBe(ISSUER);
    expect(s.scopes).toEqual(['openid', 'email', 'profile']);
    expect(s.sessionKeys.keys).toHaveLength(2);
    expect(s.sessionMaxAgeMs).toBe(8 * 3600_000);
  });

  it('a confidential client, scopes, max age; http on loopback turns Secure off', () => {
    const s = parse([...oidc, '--sign-in-client-id', 'c', '--external-url', 'http://127.0.0.1:8081', '--session-key-file', keys, '--sign-in-client-secret-file', secret,
      '--sign-in-scope', 'groups', '--sign-in-scope', 'openid', '--session-max-age', '90m']).config!.signIn!;
    expect(s.clientSecret).toBe('s3cr3t-value');
    expect(s.scopes).toEqual(['openid', 'groups']);
    expect(s.sessionMaxAgeMs).toBe(90 * 60_000);
    expect(s.secure).toBe(false);
  });

  it('picks the issuer --sign-in-issuer names among several', () => {
    const two = ['--authentication-config', join(dir, 'authn.yaml')];
    writeFileSync(join(dir, 'authn.yaml'), `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: ${ISSUER}, audiences: [svc-data]}
  claimMappings: {username: {claim: email, prefix: "a:"}, groups: {claim: groups, prefix: "a:"}}
- issuer: {url: https://other.example.org, audiences: [svc-data]}
  claimMappings: {username: {claim: sub, prefix: "b:"}}
`);
    const args = ['--sign-in-client-id', 'c', '--external-url', 'https://data.example.org', '--session-key-file', keys];
    expect(parse([...two, ...args, '--sign-in-issuer', 'https://other.example.org']).config!.signIn!.issuer.username.prefix).toBe('b:');
    const r = parse([...two, ...args]);
    expect(r.exit).toBe(2);
    expect(r.err).toContain(`--sign-in-issuer ${ISSUER} or https://other.example.org`);
  });

  it.each([
    [['--external-url', 'https://data.example.org'], '--external-url goes with --sign-in-client-id'],
    [['--session-key-file', 'k', '--session-max-age', '1h'], '--session-key-file, --session-max-age go with --sign-in-client-id'],
    [['--sign-in-client-id', 'c', '--session-key-file', 'KEYS'], '--sign-in-client-id needs --external-url'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org'], '--sign-in-client-id needs --session-key-file FILE'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', '/nonexistent/keys'], '--session-key-file /nonexistent/keys: cannot read the file (ENOENT)'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'SECRET'], ': line 1 is not a key: give base64url of 32 random bytes'],
    [['--sign-in-client-id', 'c', '--external-url', 'http://data.example.org', '--session-key-file', 'KEYS'], '--external-url http://data.example.org: use https'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://data.example.org/wis2', '--session-key-file', 'KEYS'], 'give the origin only'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--external-url', 'http://127.0.0.1:1', '--session-key-file', 'KEYS'], 'all https, or all http on loopback'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'KEYS', '--sign-in-issuer', 'https://x.example.org'], '--sign-in-issuer https://x.example.org: not a configured issuer'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'KEYS', '--sign-in-client-secret-file', '/nonexistent/s'], '--sign-in-client-secret-file /nonexistent/s: cannot read the file'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'KEYS', '--session-max-age', '90'], '--session-max-age "90" is not a duration'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'KEYS', '--session-max-age', '31d'], '--session-max-age "31d" is longer than 30d'],
    [['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', 'KEYS', '--sign-in-scope', 'a b'], '--sign-in-scope "a b"'],
  ])('%j exits 2 naming the flag', (args, message) => {
    const r = parse([...oidc, ...args.map((a) => (a === 'KEYS' ? keys : a === 'SECRET' ? secret : a))]);
    expect(r.exit).toBe(2);
    expect(r.err).toContain(message);
    expect(r.err).not.toContain('s3cr3t-value');
  });

  it('needs a configured issuer', () => {
    const r = parse(['--sign-in-client-id', 'c', '--external-url', 'https://d.example.org', '--session-key-file', keys]);
    expect(r.exit).toBe(2);
    expect(r.err).toContain('--sign-in-client-id needs the provider configured as for bearer JWTs');
  });
});

describe('externalOrigin', () => {
  it.each([
    ['https://data.example.org', 'https://data.example.org'],
    ['https://data.example.org/', 'https://data.example.org'],
    ['https://DATA.example.org:443', 'https://data.example.org'],
    ['http://localhost:8080', 'http://localhost:8080'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
  ])('%s → %s', (given, origin) => expect(externalOrigin(given)).toBe(origin));

  it.each(['data.example.org', 'ftp://data.example.org', 'https://data.example.org?x=1', 'https://data.example.org/#x', 'https://u:p@data.example.org', 'http://10.0.0.1'])('refuses %s', (v) => {
    expect(() => externalOrigin(v)).toThrow(/^--external-url /);
  });
});
