// A real OpenID provider for the single sign-on suite: panva's oidc-provider (OpenID Certified, from npm), on
// 127.0.0.1 with its own discovery document, JWKS and token endpoint. Users log in non-interactively: the
// interaction the provider asks for (login, then consent) is completed by this module for the user named in
// the request's login_hint after checking its password, as a login page would, and the ID token comes from the
// provider's own code flow and token endpoint. Restarting it with new keys is a key rotation.
//
// Dex was the first choice: its Go module builds only with its nested api/v2 module at the same commit, and the
// Go module proxy serves no such version (see the closing note of issue 13).
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type ClientMetadata } from 'oidc-provider';

export interface User {
  readonly password: string;
  readonly email: string;
  readonly groups: readonly string[];
}

/** A client that signs browsers in (svc-auth's --sign-in-client-id): its callbacks, and a secret unless it is public. */
export interface SignInClient {
  readonly secret?: string;
  readonly redirectUris: readonly string[];
  readonly postLogoutRedirectUris?: readonly string[];
}

export interface ProviderOptions {
  readonly users: Readonly<Record<string, User>>;
  /** Clients (id → secret) allowed to ask for ID tokens. */
  readonly clients: Readonly<Record<string, string>>;
  /** Clients for browser sign-in (code flow with PKCE, redirects to svc-auth's callback). */
  readonly signInClients?: Readonly<Record<string, SignInClient>>;
  /** ID token lifetime in seconds, or per client (default 300). */
  readonly idTokenTtl?: number | ((clientId: string) => number);
  /** Listen on this port (a restart keeps the issuer). */
  readonly port?: number;
  /** Redirect URIs every client may use besides this module's own (a relying party's callback: oauth2-proxy's, svc-auth's). */
  readonly redirectUris?: readonly string[];
}

const REDIRECT = 'http://127.0.0.1/callback';

export class OidcProvider {
  private server: Server | undefined;
  issuer = '';
  port = 0;

  constructor(private readonly o: ProviderOptions) {}

  /** Starts it, with a fresh signing key (so a restart rotates the keys). */
  async start(): Promise<void> {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: randomBytes(6).toString('hex'), alg: 'RS256', use: 'sig' };
    const port = this.port || this.o.port || 0;
    this.server = createServer();
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    this.issuer = `http://127.0.0.1:${this.port}`;
    const users = this.o.users;
    const ttl = this.o.idTokenTtl ?? 300;
    const provider = new Provider(this.issuer, {
      clients: [
        ...Object.entries(this.o.clients).map(([client_id, client_secret]) => ({ client_id, client_secret, redirect_uris: [REDIRECT, ...(this.o.redirectUris ?? [])], grant_types: ['authorization_code'], response_types: ['code'] })),
        ...Object.entries(this.o.signInClients ?? {}).map(([client_id, c]) => ({
          client_id, ...(c.secret !== undefined ? { client_secret: c.secret } : { token_endpoint_auth_method: 'none' as const }),
          redirect_uris: [...c.redirectUris], post_logout_redirect_uris: [...(c.postLogoutRedirectUris ?? [])], grant_types: ['authorization_code'], response_types: ['code'],
        })),
      ] as ClientMetadata[],
      jwks: { keys: [jwk] },
      claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
      scopes: ['openid', 'email', 'groups'],
      findAccount: (_ctx, id) => (users[id] ? { accountId: id, claims: () => ({ sub: id, email: users[id]!.email, groups: [...users[id]!.groups] }) } : undefined),
      features: { devInteractions: { enabled: false } },
      // PKCE is not required (this module's own flow goes without), and checked when sent (svc-auth's sign-in); no refresh tokens.
      pkce: { required: () => false },
      ttl: { IdToken: (_ctx, _token, client) => (typeof ttl === 'function' ? ttl(client?.clientId ?? '') : ttl), AccessToken: 300, AuthorizationCode: 60, Interaction: 60, Session: 600, Grant: 600 },
      cookies: { keys: [randomBytes(16).toString('hex')] },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      conformIdTokenClaims: false,
    });
    provider.on('server_error', () => undefined);
    const callback = provider.callback();
    this.server.on('request', (req, res) => {
      if (req.url?.startsWith('/interaction/')) void this.interact(provider, req, res);
      else void callback(req, res);
    });
  }

  /**
   * The login page and the consent screen. GET of the login interaction shows the "form" (a 200); its POST
   * (`user`, `password`) logs the user in when the password matches. Consent is given for what was asked.
   */
  private async interact(provider: Provider, req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        if (req.method !== 'POST') {
          res.writeHead(200, { 'content-type': 'text/html' }).end('<form method="post" action="login"><input name="user"><input name="password" type="password"></form>');
          return;
        }
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const user = form.get('user') ?? '';
        const known = this.o.users[user];
        const result = known && known.password === form.get('password') ? { login: { accountId: user } } : { error: 'access_denied', error_description: 'wrong user or password' };
        await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
        return;
      }
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    } catch {
      res.writeHead(400).end();
    }
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); });
  }

  /**
   * A user's ID token for a client, through the provider's code flow: /auth, the interactions, the redirect
   * with the code, /token. Non-interactive: the redirects are followed here with the provider's cookies.
   */
  async idToken(user: string, password: string, clientId: string): Promise<string> {
    const cookies = new Map<string, string>();
    const remember = (res: Response) => {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const eq = pair!.indexOf('=');
        cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
    };
    const state = randomBytes(8).toString('hex');
    let url = `${this.issuer}/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid email groups', redirect_uri: REDIRECT, state, nonce: createHash('sha256').update(state).digest('hex'), prompt: 'login consent' })}`;
    const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    for (let hop = 0; hop < 12; hop++) {
      let res = await fetch(url, { redirect: 'manual', headers: { cookie: cookie() } });
      remember(res);
      if (res.status === 200 && new URL(url).pathname.startsWith('/interaction/')) {
        // The login page: submit the user's credentials, as a browser would.
        await res.arrayBuffer();
        res = await fetch(`${url}/login`, { method: 'POST', redirect: 'manual', headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ user, password }) });
        remember(res);
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`the provider answered ${res.status} without a redirect at ${new URL(url).pathname}`);
      const next = new URL(location, url);
      if (next.href.startsWith(REDIRECT)) {
        const code = next.searchParams.get('code');
        if (!code) throw new Error(`no code: ${next.searchParams.get('error')} ${next.searchParams.get('error_description') ?? ''}`);
        const token = await fetch(`${this.issuer}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${this.o.clients[clientId]}`).toString('base64')}` },
          body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT }),
        });
        const body = (await token.json()) as { id_token?: string; error?: string };
        if (!body.id_token) throw new Error(`the token endpoint gave no id_token: ${body.error ?? token.status}`);
        return body.id_token;
      }
      url = next.href;
    }
    throw new Error('too many redirects');
  }
}
