import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from '../args.js';
import { checkDistinctIdentities, issuersFromFlags, parseAuthenticationConfiguration, type OidcFlags } from './oidc-config.js';

// Which identities an issuer's JWTs name, configured as kube-apiserver is (flags or AuthenticationConfiguration),
// and the start-up refusal of two issuers whose names could collide (finding 1 of the third attack round).

const A = 'https://a.example.org';
const B = 'https://b.example.org/dex';
const flags = (extra: Partial<OidcFlags>): OidcFlags => ({ issuers: [A], audiences: ['svc-data'], usernameClaim: 'sub', groupsClaim: 'groups', requiredClaims: [], ...extra });

describe('the --oidc-* flags mean what kube-apiserver\'s mean', () => {
  it.each([
    [{}, `${A}#`, ''],
    [{ usernameClaim: 'email' }, '', ''],
    [{ usernamePrefix: '-' }, '', ''],
    [{ usernamePrefix: 'corp:', groupsPrefix: 'corp:' }, 'corp:', 'corp:'],
  ])('%j: username prefix %j, groups prefix %j', (extra, user, group) => {
    const [issuer] = issuersFromFlags(flags(extra));
    expect(issuer).toMatchObject({ url: A, username: { prefix: user }, groups: { prefix: group } });
  });

  it.each([
    [flags({ issuers: [A, B] }), /group names of .* could collide/],
    [flags({ issuers: [A, B], usernameClaim: 'email', groupsClaim: '' }), /user names of .* could collide/],
    [flags({ issuers: [A, B], usernamePrefix: 'x:', groupsClaim: '' }), /user names .* could collide/],
    [flags({ issuers: ['http://idp.example.org'] }), /use https/],
    [flags({ audiences: [] }), /needs --oidc-audience/],
    [flags({ issuers: ['not a url'] }), /not a URL/],
    [flags({ issuers: ['https://idp.example.org/?x=1'] }), /no query/],
    [flags({ issuers: [], audiences: ['x'] }), /needs --oidc-issuer/],
    [flags({ requiredClaims: ['hd'] }), /claim=value/],
  ])('%j is refused', (f, message) => {
    expect(() => issuersFromFlags(f)).toThrow(message);
  });

  it('two issuers on flags are accepted once groups are off: each sub carries its issuer', () => {
    expect(issuersFromFlags(flags({ issuers: [A, B], groupsClaim: '' })).map((i) => i.username.prefix)).toEqual([`${A}#`, `${B}#`]);
  });

  it.each([['https://idp.example.org/dex'], ['http://127.0.0.1:5556/dex'], ['http://localhost:5556'], ['http://[::1]:5556']])('%s is accepted', (issuer) => {
    expect(() => issuersFromFlags(flags({ issuers: [issuer] }))).not.toThrow();
  });

  it('one issuer by itself never collides, whatever its prefixes', () => {
    expect(() => checkDistinctIdentities(issuersFromFlags(flags({ usernamePrefix: '-' })), '')).not.toThrow();
  });
});

const file = (jwt: string): string => `apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n${jwt}`;

describe("kube-apiserver's AuthenticationConfiguration as svc-auth's OIDC configuration", () => {
  const two = file(`
- issuer:
    url: ${A}
    audiences: [svc-data, kubernetes]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - claim: hd
    requiredValue: example.org
  claimMappings:
    username: {claim: email, prefix: "a:"}
    groups: {claim: groups, prefix: "a:"}
    uid: {claim: sub}
- issuer:
    url: ${B}
    discoveryURL: https://dex.internal/dex/.well-known/openid-configuration
    audiences: [svc-data]
    certificateAuthority: |
      -----BEGIN CERTIFICATE-----
  claimMappings:
    username: {claim: sub, prefix: "b:"}
    groups: {claim: groups, prefix: "b:"}
`);

  it('reads the jwt list: audiences, claim mappings with their prefixes, required claims, discovery URL, CA', () => {
    expect(parseAuthenticationConfiguration(two, 'auth.yaml')).toEqual([
      { url: A, audiences: ['svc-data', 'kubernetes'], username: { claim: 'email', prefix: 'a:' }, groups: { claim: 'groups', prefix: 'a:' }, requiredClaims: [{ claim: 'hd', requiredValue: 'example.org' }] },
      { url: B, audiences: ['svc-data'], discoveryUrl: 'https://dex.internal/dex/.well-known/openid-configuration', certificateAuthority: '-----BEGIN CERTIFICATE-----\n', username: { claim: 'sub', prefix: 'b:' }, groups: { claim: 'groups', prefix: 'b:' }, requiredClaims: [] },
    ]);
  });

  const one = (mappings: string, issuer = `{url: ${A}, audiences: [svc-data]}`) => file(`- issuer: ${issuer}\n  claimMappings: ${mappings}\n`);
  it.each([
    [file(`- issuer: {url: ${A}, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ""}, groups: {claim: groups, prefix: ""}}\n- issuer: {url: ${B}, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: "b:"}, groups: {claim: groups, prefix: ""}}\n`), /could collide/],
    [one('{username: {claim: sub}}'), /prefix: required/],
    [one('{username: {expression: "claims.sub"}}'), /CEL expressions are not supported/],
    [one('{username: {claim: sub, prefix: ""}}', `{url: ${A}, audiences: [a, b]}`), /MatchAny/],
    [one('{username: {claim: sub, prefix: ""}}', `{url: ${A}, audiences: []}`), /at least one/],
    [one('{username: {claim: sub, prefix: ""}, extra: [{key: k, valueExpression: x}]}'), /CEL expressions/],
    [one('{username: {claim: sub, prefix: ""}, nickname: {}}'), /unknown field/],
    ['apiVersion: v1\nkind: ConfigMap\n', /not an AuthenticationConfiguration/],
    ['{', /not YAML/],
  ])('%s is refused', (text, message) => {
    expect(() => parseAuthenticationConfiguration(text, 'auth.yaml')).toThrow(message);
  });
});

describe('svc-auth --authentication-config', () => {
  const io = () => {
    const err: string[] = [];
    return { err, io: { out: () => undefined, err: (s: string) => void err.push(s) } };
  };
  it('is read instead of the --oidc-* flags, and excludes them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-authn-'));
    const path = join(dir, 'auth.yaml');
    writeFileSync(path, file(`- issuer: {url: ${A}, audiences: [svc-data]}\n  claimMappings: {username: {claim: sub, prefix: "a:"}}\n`));
    const ok = parseArgs(['--scopes-dir', dir, '--authentication-config', path], io().io);
    expect(ok).toMatchObject({ oidc: { issuers: [{ url: A, username: { prefix: 'a:' } }] } });
    const bad = io();
    expect(parseArgs(['--scopes-dir', dir, '--authentication-config', path, '--oidc-issuer', A], bad.io)).toEqual({ exit: 2 });
    expect(bad.err.join('')).toMatch(/exclusive/);
  });
});
