// Imported (wis2box-auth) tokens through the real server on 127.0.0.1:0: every value wis2box-auth took is granted
// by its imported record, through ?token= and Bearer, under the bound on concurrent derivations; values no svc token
// can be are derived only where a governing scope holds imported records; busy-slot refusals have their own counter.
// Tokens are referred to by name; no assertion message prints one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { DEFAULT_CONFIG } from '../../core/index.js';
import { createLogger } from '../telemetry/log.js';
import { startServer, type RunningServer, type ServerOptions } from '../server.js';
import { WIS2BOX_TOKENS, oddTokensIndex } from '../../test/support/odd-tokens.js';
import { StaticSource } from '../../test/support/static-source.js';

class Discard extends Writable {
  override _write(_chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    done();
  }
}

async function serve(extra: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = await startServer({
    listen: { host: '127.0.0.1', port: 0 }, metricsListen: { host: '127.0.0.1', port: 0 }, access: DEFAULT_CONFIG,
    source: new StaticSource(oddTokensIndex()), logger: createLogger('info', new Discard()).logger, ...extra,
  });
  await server.firstLoad;
  return server;
}

/** GET with headers as given; a header value is written as latin1, so a UTF-8 token goes out as its bytes. */
function get(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method: 'GET', path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The nginx endpoint (X-Original-URI) and the Traefik one, with the token in the query or as Bearer (its UTF-8 bytes). */
function ask(base: string, target: string, token: string, via: 'query' | 'bearer', endpoint: 'auth-request' | 'forward-auth' = 'auth-request') {
  const uri = via === 'query' ? `${target}?token=${encodeURIComponent(token)}` : target;
  const auth: Record<string, string> = via === 'bearer' ? { Authorization: `Bearer ${Buffer.from(token, 'utf8').toString('latin1')}` } : {};
  return endpoint === 'auth-request'
    ? get(base, '/authz/auth-request', { 'X-Original-Method': 'GET', 'X-Original-URI': uri, ...auth })
    : get(base, '/authz/forward-auth', { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': uri, ...auth });
}

describe('imported tokens through svc-auth', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await serve();
  });
  afterAll(() => server.shutdown());

  it.each(Object.keys(WIS2BOX_TOKENS) as (keyof typeof WIS2BOX_TOKENS)[])('%s: granted through ?token= and Bearer, on both endpoint families', async (name) => {
    for (const endpoint of ['auth-request', 'forward-auth'] as const) {
      expect([endpoint, 'query', (await ask(server.url, '/wis2downloader/x', WIS2BOX_TOKENS[name], 'query', endpoint)).status]).toEqual([endpoint, 'query', 200]);
      expect([endpoint, 'bearer', (await ask(server.url, '/wis2downloader/x', WIS2BOX_TOKENS[name], 'bearer', endpoint)).status]).toEqual([endpoint, 'bearer', 200]);
    }
    expect((await ask(server.url, '/wis2downloader/x', `${WIS2BOX_TOKENS[name]}x`, 'bearer')).status).toBe(401);
  });

  it('"+" in the query is a space, as wis2box-auth decoded it', async () => {
    const uri = `/wis2downloader/x?token=${WIS2BOX_TOKENS.spaces.replaceAll(' ', '+')}`;
    expect((await get(server.url, '/authz/auth-request', { 'X-Original-Method': 'GET', 'X-Original-URI': uri })).status).toBe(200);
  });

  it('over 4,096 bytes: refused without a derivation (malformed)', async () => {
    expect((await ask(server.url, '/wis2downloader/x', 'M'.repeat(4097), 'bearer')).status).toBe(401);
  });
});

describe('the bound on concurrent derivations', () => {
  let server: RunningServer;
  beforeAll(async () => {
    // No slot and no queue: every derivation is refused as busy, so a request that answers otherwise derived nothing.
    server = await serve({ importedTokens: { concurrency: 0, queue: 0, cacheSize: 10 } });
  });
  afterAll(() => server.shutdown());

  it('covers such values too: refused as unavailable (never granted), counted by svc_auth_imported_token_busy_refusals_total', async () => {
    const metrics = async () => (await get(server.metricsUrl, '/metrics', {})).body;
    expect(await metrics()).toMatch(/^svc_auth_imported_token_busy_refusals_total 0$/m);
    expect((await ask(server.url, '/wis2downloader/x', WIS2BOX_TOKENS.spaces, 'query')).status).toBe(403);
    expect((await ask(server.url, '/wis2downloader/x', WIS2BOX_TOKENS.long, 'bearer', 'forward-auth')).status).toBe(503);
    expect((await ask(server.url, '/wis2downloader/x', 'a-plausible-svc-like-token', 'bearer')).status).toBe(403);
    expect(await metrics()).toMatch(/^svc_auth_imported_token_busy_refusals_total 3$/m);
  });

  it('where no governing scope holds imported records, such values are malformed at once (401), never derived', async () => {
    for (const token of Object.values(WIS2BOX_TOKENS)) {
      expect((await ask(server.url, '/other/x', token, 'query')).status).toBe(401);
      expect((await ask(server.url, '/other/x', token, 'bearer')).status).toBe(401);
    }
    expect((await get(server.metricsUrl, '/metrics', {})).body).toMatch(/^svc_auth_imported_token_busy_refusals_total 3$/m);
  });
});
