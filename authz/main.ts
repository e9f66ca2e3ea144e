#!/usr/bin/env -S node --max-semi-space-size=4 --single-threaded-gc
// svc-auth: the forward-auth server (docs/architecture.md). `svc-auth --help` for the flags.
// The V8 flags are on purpose, and in the shebang because V8 reads them only at start-up:
// - 4 MiB semi-spaces: an auth request leaves a few KiB of garbage, and each scavenge costs a fixed ~0.2 ms, so
//   the young generation's size sets the GC cost per answer. Under load (nodejs_gc_duration_seconds): 1.1 µs of scavenging per session
//   answer with 1 MiB semi-spaces and 0.5 µs with 4, and the p99 during back-to-back reloads no worse (2.0× steady
//   state against 2.5–3.0× with 1 MiB, which was chosen before reloads were built in slices).
// - Single-threaded GC: svc-auth serves from one thread and is deployed with about one core, where V8's
//   helper threads for parallel scavenges and concurrent marking only take turns with the main thread on
//   that core (the wake-ups and switches showed in profiles). bench:auth measured ~9% less CPU per granted
//   answer with it, and a lower p99 during reloads.
import type { Logger } from 'pino';
import type { PathPrefixes } from '../core/index.js';
import { parseArgs, type AuthConfig, type SourceConfig } from './args.js';
import { createLogger } from './telemetry/log.js';
import { startServer, type RunningServer } from './server.js';
import { ConfigMapSource } from './sources/configmap.js';
import { ScopesDirSource } from './sources/scopes-dir.js';
import { SnapshotFileSource } from './sources/snapshot-file.js';
import type { SnapshotSource } from './sources/source.js';

function sourceFor(config: SourceConfig, prefixes: PathPrefixes): SnapshotSource {
  switch (config.kind) {
    case 'scopes-dir':
      // Compiled against svc-auth's own prefixes: a path spelt below the API prefix is never public.
      return new ScopesDirSource(config.dir, { prefixes });
    case 'snapshot-file':
      return new SnapshotFileSource(config.file);
    case 'configmap':
      return new ConfigMapSource({
        snapshotName: config.name,
        ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
        ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
        ...(config.context !== undefined ? { context: config.context } : {}),
      });
  }
}

async function main(): Promise<void> {
  const parsed = parseArgs(process.argv.slice(2), { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) });
  if ('exit' in parsed) {
    process.exitCode = parsed.exit;
    return;
  }
  const { logger, close, flushSync, dropped } = createLogger(parsed.logLevel);
  exitOnUncaught(logger, flushSync);
  const source = sourceFor(parsed.source, parsed.access);
  let server: RunningServer;
  try {
    server = await startServer({ listen: parsed.listen, metricsListen: parsed.metricsListen, access: parsed.access, cacheMaxAge: parsed.cacheMaxAge, refusalSample: parsed.refusalSample, trustedProxyHops: parsed.trustedProxyHops, oidc: parsed.oidc, ...(parsed.signIn ? { signIn: parsed.signIn } : {}), source, logger });
  } catch (e) {
    logger.fatal({ err: e }, 'cannot start');
    await close();
    process.stderr.write(`svc-auth: ${cannotListen(e as NodeJS.ErrnoException & { port?: number }, parsed)}\n`);
    process.exit(1);
  }
  server.metrics.countLogDrops(dropped);
  announce(logger, parsed, server, source);
  stopOnSignals(logger, server, close);
}

/** Why a port could not be had, naming the flag that chooses it: --listen or --metrics-listen. */
function cannotListen(e: NodeJS.ErrnoException & { port?: number }, parsed: AuthConfig): string {
  const flag = e.port !== undefined && e.port === parsed.metricsListen.port && e.port !== parsed.listen.port ? '--metrics-listen' : '--listen';
  const at = flag === '--listen' ? parsed.listen : parsed.metricsListen;
  const what = e.code === 'EADDRINUSE' ? 'the address is already in use' : e.message;
  return `cannot listen on ${at.host}:${at.port} (${flag}): ${what}; choose another with ${flag} HOST:PORT`;
}

/** A fault nothing caught ends the process (the pod restarts): the line about it is written before exiting. */
function exitOnUncaught(logger: Logger, flushSync: () => void): void {
  process.on('uncaughtException', (e) => {
    logger.fatal({ err: e }, 'uncaught exception; exiting');
    flushSync();
    process.exit(1);
  });
  process.on('unhandledRejection', (e) => {
    logger.fatal({ err: e }, 'unhandled rejection; exiting');
    flushSync();
    process.exit(1);
  });
}

/** The start line: where svc-auth listens, what it serves from, and what its settings make of paths and identities. */
function announce(logger: Logger, parsed: AuthConfig, server: RunningServer, source: SnapshotSource): void {
  logger.info(
    {
      listen: server.url,
      metrics: `${server.metricsUrl}/metrics`,
      source: source.kind,
      origin: source.origin,
      wafPrefix: `/${parsed.access.wafPrefix.join('/')}`,
      apiPrefix: `/${parsed.access.apiPrefix.join('/')}`,
      tokenQueryParam: parsed.access.tokenParam,
      openPathsByDefault: parsed.access.openPathsByDefault === true,
      // Each issuer with the prefixes its names get: what spec.subjects must spell.
      ...(parsed.oidc.issuers.length > 0 ? { oidcIssuers: parsed.oidc.issuers.map((i) => ({ issuer: i.url, audiences: i.audiences, username: i.username, groups: i.groups ?? null })) } : {}),
      // Never the client secret or a session key: which client, where, how long.
      ...(parsed.signIn ? { signIn: { issuer: parsed.signIn.issuer.url, clientId: parsed.signIn.clientId, publicClient: parsed.signIn.clientSecret === undefined, externalUrls: parsed.signIn.externalUrls, sessionKeys: parsed.signIn.sessionKeys.keys.length, sessionMaxAgeSeconds: parsed.signIn.sessionMaxAgeMs / 1000, secureCookies: parsed.signIn.secure } } : {}),
    },
    'svc-auth listening',
  );
  if (parsed.access.openPathsByDefault) {
    logger.warn('--open-paths-by-default: process execution and stations writes are open to anyone until a path scope has a token; protect them another way');
  }
}

/** SIGTERM and SIGINT drain once: no new connections, in-flight requests finish, then exit 0. */
function stopOnSignals(logger: Logger, server: RunningServer, close: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining: no new connections, finishing in-flight requests');
    await server.shutdown();
    logger.info('stopped');
    await close();
    process.exit(0);
  };
  process.on('SIGTERM', (s) => void stop(s));
  process.on('SIGINT', (s) => void stop(s));
}

void main();
