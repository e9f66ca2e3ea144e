// oauth2-proxy, the peer bench:auth measures svc-auth's browser sessions against (issue 29): built from its Go module
// into the tool cache (so CI builds it once, here), signed in to for real against the suites' OpenID provider with
// plain HTTP, and its /oauth2/auth answering for the session cookie that sign-in left, as the bench measures it.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { OAUTH2_PROXY } from '../controlplane/assets.js';
import { freePorts } from '../support/ports.js';
import { Oauth2Proxy, oauth2ProxyCallback } from './support/oauth2-proxy.js';
import { OidcProvider } from './support/oidc-provider.js';
import { runCommand } from '../support/process.js';

const GROUP = 'bench-readers';
const USERS = {
  reader: { password: 'reader-pw-1', email: 'reader@example.org', groups: ['staff', GROUP] },
  outsider: { password: 'outsider-pw-2', email: 'outsider@example.org', groups: ['staff'] },
};
const CLIENT = 'oauth2-proxy';

describe('oauth2-proxy (the peer of bench:auth\'s session case): built from its module, signed in to with plain HTTP', () => {
  let dir: string;
  let idp: OidcProvider;
  let proxy: Oauth2Proxy;
  let cookie: string;
  const auth = (headers: Record<string, string>) => fetch(`${proxy.base}/oauth2/auth`, { headers });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-oauth2-proxy-'));
    const [port] = (await freePorts(1)) as [number];
    idp = new OidcProvider({ users: USERS, clients: { [CLIENT]: 'oauth2-proxy-secret' }, redirectUris: [oauth2ProxyCallback(port)], idTokenTtl: 3600 });
    await idp.start();
    // A cold build (module download + compile) takes minutes: see ensureOauth2Proxy.
    proxy = await Oauth2Proxy.start({ issuer: idp.issuer, clientId: CLIENT, clientSecret: 'oauth2-proxy-secret', port, dir, allowedGroup: GROUP });
    cookie = await proxy.signIn({ user: 'reader', password: USERS.reader.password });
  }, 1_200_000);

  afterAll(async () => {
    await proxy?.stop();
    await idp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`is ${OAUTH2_PROXY.version}, built from ${OAUTH2_PROXY.module}`, async () => {
    const r = await runCommand(proxy.binary, ['--version']);
    expect(r.stdout + r.stderr).toContain(OAUTH2_PROXY.version);
    expect(readFileSync(join(dirname(proxy.binary), 'BUILD-INFO'), 'utf8')).toContain(`oauth2-proxy ${OAUTH2_PROXY.version}`);
  });

  it('the session cookie the sign-in left answers 202 at /oauth2/auth, naming the user', async () => {
    const res = await auth({ cookie });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-auth-request-email')).toBe(USERS.reader.email);
    expect(res.headers.get('x-auth-request-groups')).toContain(GROUP);
  });

  it('without the cookie, or with it tampered, /oauth2/auth answers 401', async () => {
    expect((await auth({})).status).toBe(401);
    const [name, value] = cookie.split('; ')[0]!.split(/=(.*)/s) as [string, string];
    const flipped = `${value.slice(0, 10)}${value[10] === 'A' ? 'B' : 'A'}${value.slice(11)}`;
    expect((await auth({ cookie: `${name}=${flipped}` })).status).toBe(401);
  });

  it('a user outside the allowed group is refused at the callback: no session', async () => {
    await expect(proxy.signIn({ user: 'outsider', password: USERS.outsider.password })).rejects.toThrow(/oauth2\/callback: 403/);
  });
});
