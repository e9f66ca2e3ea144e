// svc-auth assembled: the auth endpoints and Express on one port, metrics on another, the snapshot source, drain.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Logger } from 'pino';
import type { AccessConfig, AccessIndex } from '../core/index.js';
import { createAuthHandler } from './pipeline/auth-pipeline.js';
import { MAX_HEADERS_COUNT, type FrontHandler } from './http/head.js';
import { installFront, type Front } from './http/http-front.js';
import { answerSets } from './http/answers.js';
import { contractFor } from './endpoints/index.js';
import { OidcVerifier, type OidcOptions } from './identity/oidc.js';
import { DEFAULT_IMPORTED_TOKENS, ImportedTokens, type ImportedTokensOptions } from './imported/imported-tokens.js';
import { renderProtectedList, type ProtectedList } from './http/protected-list.js';
import { Refusals } from './telemetry/refusals.js';
import { TokenUsage } from './telemetry/token-usage.js';
import { AuthMetrics } from './telemetry/metrics.js';
import type { HostPort } from './options.js';
import { ServingState } from './pipeline/serving-state.js';
import type { LoadedSnapshot, SnapshotSink, SnapshotSource, SourceFailure } from './sources/source.js';
import { readFileSync } from 'node:fs';
import type { SignInConfig } from './sign-in/config.js';
import { RelyingParty } from './sign-in/relying-party.js';
import { signInRouter } from './sign-in/routes.js';
import { SessionCache } from './identity/session-cache.js';
import { errorPage } from './http/pages.js';

export interface ServerOptions {
  readonly listen: HostPort;
  readonly metricsListen: HostPort;
  readonly access: AccessConfig;
  /** Seconds an nginx decision cache may keep an allow; default 30. */
  readonly cacheMaxAge?: number;
  /** `--trusted-proxy-hops` (authz/endpoints/client-address.ts); default 0. */
  readonly trustedProxyHops?: number;
  readonly source: SnapshotSource;
  readonly logger: Logger;
  readonly metrics?: AuthMetrics;
  /** How long SIGTERM waits for in-flight requests before closing what is left. */
  readonly drainTimeoutMs?: number;
  /** How often grants and refusals are summarized ("tokens used", "requests refused" info lines); default a minute, 0: only at shutdown. */
  readonly usageWindowMs?: number;
  /** Individual refusal lines written at info per window (the rest are counted; default 20). */
  readonly refusalSample?: number;
  /** Single sign-on: the OpenID providers whose JWTs are verified (off without issuers). */
  readonly oidc?: OidcOptions;
  /** Bounds of imported (wis2box-auth) token verification; DEFAULT_IMPORTED_TOKENS when absent. */
  readonly importedTokens?: ImportedTokensOptions;
  /** Browser sign-in (needs `oidc` with its issuer); off when absent. */
  readonly signIn?: SignInConfig;
  /** After a failed discovery of the sign-in provider, how long sign-ins answer "unavailable"; default 5 s. */
  readonly signInRetryAfterMs?: number;
}

export interface RunningServer {
  readonly url: string;
  readonly metricsUrl: string;
  readonly address: AddressInfo;
  readonly metricsAddress: AddressInfo;
  readonly state: ServingState;
  readonly metrics: AuthMetrics;
  /** Settles once the source's first load attempt has finished (loaded or refused). */
  readonly firstLoad: Promise<void>;
  /** Stops accepting, lets in-flight requests finish (bounded), stops the source and the metrics port. */
  shutdown(): Promise<void>;
}

function urlOf(a: AddressInfo): string {
  return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
}

function listen(server: Server, at: HostPort): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(at.port, at.host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Starts svc-auth: the auth endpoints and Express on one port, Prometheus metrics on another, and the source. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { logger, source } = options;
  const metrics = options.metrics ?? new AuthMetrics();
  const state = new ServingState();
  const cacheMaxAge = options.cacheMaxAge ?? 30;
  const deciding = createDeciding(options, cacheMaxAge, state, metrics);
  const { server, front } = createAuthServer(deciding.auth, createApp(state, options.access, deciding.signIn, logger), state, cacheMaxAge);
  const metricsServer = createMetricsServer(metrics, logger);
  const [address, metricsAddress] = await listenBoth(server, options.listen, metricsServer, options.metricsListen).catch((e: unknown) => {
    stopDeciding(deciding); // a port taken: nothing else was started, and the verifier's key load must not go on
    throw e;
  });

  metrics.sourceKnown(source.kind);
  const firstLoad = source.start(snapshotSink(state, metrics, source, logger)).catch((e: unknown) => {
    logger.error({ err: e, source: source.kind }, 'the snapshot source failed to start');
  });
  const shutdown = once(() => drainAndStop({ state, metrics, logger, server, front, metricsServer, source, deciding, drainTimeoutMs: options.drainTimeoutMs ?? 10_000 }));
  return { url: urlOf(address), metricsUrl: urlOf(metricsAddress), address, metricsAddress, state, metrics, firstLoad, shutdown };
}

/** The Express side: health, readiness, the public list of closed scopes, browser sign-in when configured, 404 for the rest. */
function createApp(state: ServingState, access: AccessConfig, signIn: SignInParts | undefined, logger: Logger): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', (_req, res) => {
    res.set('Cache-Control', 'no-store').type('text/plain').send('ok\n');
  });
  app.get('/authz/v1/protected', protectedListHandler(state, access));
  app.get('/readyz', (_req, res) => {
    res.set('Cache-Control', 'no-store').type('text/plain');
    if (state.draining) res.status(503).send('draining\n');
    else if (state.index === null) res.status(503).send('not ready: no snapshot loaded yet\n');
    else res.send(`ready: generation ${state.index.generation}\n`);
  });
  if (signIn !== undefined) app.use(signInRouter({ rp: signIn.rp, sessions: signIn.sessions, index: () => state.index, logger }));
  app.use((_req, res) => {
    res.status(404).set('Cache-Control', 'no-store').type('text/plain').send('not found\n');
  });
  // Never Express's own error page (it shows a stack trace outside production): logged, and a plain 500 page.
  app.use((e: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    logger.error({ err: e }, 'internal error on an Express route');
    if (res.headersSent) return void res.destroy();
    const p = errorPage(500, 'Internal error', 'Something went wrong in svc-auth; it is logged. Try again.');
    res.status(p.status);
    for (let i = 0; i < p.headers.length; i += 2) res.setHeader(p.headers[i]!, p.headers[i + 1]!);
    res.end(p.body);
  });
  return app;
}

/** The public list of closed scopes, rendered once per index in service and revalidated by its ETag. */
function protectedListHandler(state: ServingState, access: AccessConfig): express.RequestHandler {
  let listed: { index: AccessIndex; list: ProtectedList } | null = null;
  return (req, res) => {
    const index = state.index;
    if (index === null) {
      res.status(503).set('Cache-Control', 'no-store').type('text/plain').send('not ready: no snapshot loaded yet\n');
      return;
    }
    if (listed?.index !== index) listed = { index, list: renderProtectedList(index, access) };
    const { body, etag } = listed.list;
    res.set('ETag', etag).set('Cache-Control', 'no-cache');
    if (req.get('If-None-Match')?.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  };
}

/** The auth handler and what it answers with and reports to: grants and refusals counted, JWTs and imported tokens verified. */
interface Deciding {
  readonly auth: FrontHandler;
  readonly usage: TokenUsage;
  readonly refusals: Refusals;
  readonly oidc: OidcVerifier | undefined;
  readonly signIn: SignInParts | undefined;
}

/** Browser sign-in's parts: the relying party (the Express routes) and the sessions opened (shared with the pipeline). */
interface SignInParts {
  readonly rp: RelyingParty;
  readonly sessions: SessionCache;
}

function createSignIn(options: ServerOptions, oidc: OidcVerifier | undefined): SignInParts | undefined {
  const config = options.signIn;
  if (config === undefined) return undefined;
  if (oidc === undefined) throw new Error('sign-in is configured without its OpenID issuer');
  const ca = options.oidc?.caFile !== undefined ? readFileSync(options.oidc.caFile, 'utf8') : undefined;
  const rp = new RelyingParty({
    config, logger: options.logger, verifyIdToken: (jwt, issuer, audience) => oidc.verifyIdToken(jwt, issuer, audience),
    onRecovered: () => void oidc.refresh(config.issuer.url),
    ...(ca !== undefined ? { ca } : {}), ...(options.signInRetryAfterMs !== undefined ? { retryAfterMs: options.signInRetryAfterMs } : {}),
  });
  // Discovered in the background: svc-auth serves without it, and sign-in tries again when asked.
  void rp.provider();
  return { rp, sessions: new SessionCache(config.sessionKeys, config.issuer.url, config.sessionMaxAgeMs) };
}

function createDeciding(options: ServerOptions, cacheMaxAge: number, state: ServingState, metrics: AuthMetrics): Deciding {
  const { logger } = options;
  const windowMs = options.usageWindowMs ?? 60_000;
  const usage = new TokenUsage(logger, windowMs);
  const refusals = new Refusals(logger, { windowMs, ...(options.refusalSample !== undefined ? { sample: options.refusalSample } : {}) });
  const oidc = options.oidc && options.oidc.issuers.length > 0 ? new OidcVerifier(options.oidc, { jwksFetch: (i, ok) => metrics.jwksFetch(i, ok) }, logger) : undefined;
  // Keys are fetched in the background: svc-auth is ready without them (opaque tokens work; JWTs wait for keys).
  void oidc?.start();
  const access = oidc ? { ...options.access, oidcIssuers: oidc.issuers } : options.access;
  const imported = new ImportedTokens(options.importedTokens ?? DEFAULT_IMPORTED_TOKENS);
  metrics.countImportedBusy(() => imported.busyRefusals);
  const signIn = createSignIn(options, oidc);
  const browser = signIn && {
    externalUrls: signIn.rp.config.externalUrls, secure: signIn.rp.config.secure, sessions: signIn.sessions,
    formActions: () => { const o = signIn.rp.providerOrigin(); return o === undefined ? [] : [o]; },
  };
  const auth = createAuthHandler({ access, state, metrics, logger, usage, refusals, cacheMaxAge, trustedProxyHops: options.trustedProxyHops ?? 0, ...(oidc ? { oidc } : {}), imported, ...(browser ? { browser } : {}) });
  return { auth, usage, refusals, oidc, signIn };
}

/** One port: the strict front answers auth requests; node:http (the auth handler again, then Express) the rest. */
function createAuthServer(auth: FrontHandler, app: express.Express, state: ServingState, cacheMaxAge: number): { server: Server; front: Front } {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!auth(req, res)) {
      if (state.draining) res.shouldKeepAlive = false;
      app(req, res);
    }
  });
  // Longer than the usual proxy upstream idle timeouts, so the proxy closes idle connections first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // The auth endpoints refuse a request that reaches this count (a repeat past it would go unseen).
  server.maxHeadersCount = MAX_HEADERS_COUNT;
  // nginx's auth_request turns node:http's 431 for an oversized head into a 500: its endpoints refuse with 403.
  const nginxRefusal = answerSets(cacheMaxAge).nginx.malformed;
  const front = installFront(server, auth, { tooLarge: (target) => (contractFor(target)?.answers(target) === 'nginx' ? nginxRefusal : undefined) });
  return { server, front };
}

function createMetricsServer(metrics: AuthMetrics, logger: Logger): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return plain(res, 404, 'not found: see /metrics\n');
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
      },
      (e: unknown) => {
        logger.error({ err: e }, 'metrics collection failed');
        plain(res, 500, 'metrics collection failed\n');
      },
    );
  });
}

/** The deciding side's timers and summaries: the key refresh, the "tokens used" and "requests refused" windows. */
function stopDeciding(d: Deciding): void {
  d.oidc?.stop();
  d.usage.stop();
  d.refusals.stop();
}

/** Both ports or neither: a failure to bind the second closes the first. */
async function listenBoth(server: Server, at: HostPort, metricsServer: Server, metricsAt: HostPort): Promise<[AddressInfo, AddressInfo]> {
  try {
    return [await listen(server, at), await listen(metricsServer, metricsAt)];
  } catch (e) {
    server.close();
    metricsServer.close();
    throw e;
  }
}

/** Where the source delivers: a loaded snapshot replaces the index in service whole; a refused one keeps it. */
function snapshotSink(state: ServingState, metrics: AuthMetrics, source: SnapshotSource, logger: Logger): SnapshotSink {
  return {
    loaded(s: LoadedSnapshot) {
      const previous = state.index;
      state.index = s.index;
      state.loadedAt = Date.now();
      metrics.swapped(s.index, s.loadMs, source.kind, state.loadedAt);
      metrics.setReady(state.ready);
      logger.info(
        { source: source.kind, origin: s.origin, generation: s.index.generation, previous: previous?.generation ?? null, scopes: s.index.scopeCount, tokens: s.index.tokenCount, loadMs: Math.round(s.loadMs) },
        'snapshot loaded',
      );
    },
    failed(f: SourceFailure) {
      metrics.reloadFailed(source.kind);
      const kept = state.index === null ? 'no snapshot loaded yet: not ready, nothing is allowed' : `keeping generation ${state.index.generation}`;
      for (const p of f.problems) {
        logger.error({ source: source.kind, origin: f.origin, file: p.file, field: p.field, message: p.message }, `snapshot rejected; ${kept}`);
      }
    },
  };
}

/** The first call runs `f`; every later call gets the same promise. */
function once(f: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  return () => (running ??= f());
}

interface Running {
  readonly state: ServingState;
  readonly metrics: AuthMetrics;
  readonly logger: Logger;
  readonly server: Server;
  readonly front: Front;
  readonly metricsServer: Server;
  readonly source: SnapshotSource;
  readonly deciding: Deciding;
  readonly drainTimeoutMs: number;
}

/** Not ready, stop accepting, let in-flight requests finish (bounded), then stop the rest. */
async function drainAndStop(r: Running): Promise<void> {
  r.state.draining = true;
  r.metrics.setReady(false);
  const closed = new Promise<void>((resolve) => r.server.close(() => resolve()));
  r.server.closeIdleConnections();
  r.front.closeIdle();
  const force = setTimeout(() => {
    r.logger.warn({ drainTimeoutMs: r.drainTimeoutMs }, 'drain timeout: closing the remaining connections');
    r.server.closeAllConnections();
    r.front.closeAll();
  }, r.drainTimeoutMs);
  await closed;
  clearTimeout(force);
  // After the drain: JWT requests still waiting for verification are answered, not reset.
  stopDeciding(r.deciding);
  await r.source.stop();
  await new Promise<void>((resolve) => {
    r.metricsServer.close(() => resolve());
    r.metricsServer.closeAllConnections();
  });
}
