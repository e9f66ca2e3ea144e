#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { pino } from 'pino';
import { configMapListWatch, kubeConfigMapClient } from '../k8s/configmaps.js';
import { kubeEventSink } from '../k8s/events.js';
import { connect } from '../k8s/kube.js';
import { kubeLeaseClient } from '../k8s/lease.js';
import { protectedScopeListWatch, kubeScopeStatusClient } from '../k8s/watched-scopes.js';
import { DEFAULT_SHARD_MAX_BYTES, DEFAULT_SNAPSHOT_NAME, FIELD_MANAGER, snapshotSelector } from '../k8s/snapshot/objects.js';
import { parseDuration } from '../lib/duration.js';
import { LOG_LEVELS } from '../lib/log-levels.js';
import { VERSION } from '../lib/version.js';
import { parsePrefix } from '../core/index.js';
import { startHealthServer } from './health.js';
import { Operator, type OperatorBackends, type OperatorConfig } from './operator.js';

/** A duration flag in lib/duration.ts's grammar, refused the way commander refuses any bad argument. */
function durationFlag(value: string): number {
  try {
    return parseDuration(value);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

/** A request prefix as svc-auth's --waf-prefix/--api-prefix take it (`/oapi`), as case-folded segments. */
function prefixFlag(value: string): readonly string[] {
  try {
    return parsePrefix(value);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`not a positive integer: ${value}`);
  return n;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
function parseName(value: string): string {
  // The snapshot name prefixes shard names (`<name>-<16 hex>`), which must stay a valid ConfigMap name.
  if (!DNS_LABEL.test(value) || value.length > 200) throw new InvalidArgumentError(`not a valid name: ${value} (lowercase letters, digits and "-", at most 200)`);
  return value;
}

export function program(): Command {
  return new Command('svc-operator')
    .description('Compiles the ProtectedScopes of a namespace into the snapshot ConfigMaps svc-auth serves from, and reports status on each ProtectedScope.')
    .option('-n, --namespace <ns>', "namespace to watch and write in (default: the pod's, else the kube context's)")
    .addOption(new Option('--snapshot-name <name>', 'name of the snapshot index ConfigMap; shards are <name>-<digest>').default(DEFAULT_SNAPSHOT_NAME).argParser(parseName))
    .option('--leader-elect', 'elect a leader through a Lease so only one replica writes', false)
    .option('--open-paths-by-default', "as svc-auth's: path scopes without tokens are reported Open rather than Closed (default)", false)
    .addOption(new Option('--waf-prefix <prefix>', "as svc-auth's: the WAF's request prefix").default(['data'], '/data').argParser(prefixFlag))
    .addOption(new Option('--api-prefix <prefix>', "as svc-auth's: the OGC API's request prefix; a path scope below its processes/ or collections/ is flagged and never public").default(['oapi'], '/oapi').argParser(prefixFlag))
    .option('--lease-name <name>', 'Lease name (default: <snapshot-name>-operator)')
    .addOption(new Option('--lease-duration <d>', 'how long a lease holds without renewal').default(15_000, '15s').argParser(durationFlag))
    .addOption(new Option('--renew-deadline <d>', 'a leader that cannot renew for this long stops writing').default(10_000, '10s').argParser(durationFlag))
    .addOption(new Option('--retry-period <d>', 'between lease renewals / acquisition attempts').default(2_000, '2s').argParser(durationFlag))
    .option('--metrics-listen <addr>', 'address for /healthz, /readyz and /metrics', ':8080')
    .option('--kubeconfig <file>', 'kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context')
    .addOption(new Option('--shard-max-bytes <n>', 'largest shard ConfigMap payload').default(DEFAULT_SHARD_MAX_BYTES).argParser(parsePositiveInt))
    .addOption(new Option('--stale-shard-grace <d>', 'keep unreferenced shards this long for readers still loading them').default(120_000, '2m').argParser(durationFlag))
    .addOption(new Option('--debounce <d>', 'gather changes this long before a reconcile').default(50, '50ms').argParser(durationFlag))
    .addOption(new Option('--status-concurrency <n>', 'status patches in flight at once').default(16).argParser(parsePositiveInt))
    .addOption(new Option('--relist-interval <d>', 'relist the watched objects this often').default(300_000, '5m').argParser(durationFlag))
    .addOption(new Option('--resync <d>', 'reconcile at least this often').default(600_000, '10m').argParser(durationFlag))
    .addOption(new Option('--request-timeout <d>', 'timeout of one API request').default(30_000, '30s').argParser(durationFlag))
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .version(VERSION, '-V, --version')
    .showHelpAfterError('Run "svc-operator --help" for usage.')
    .allowExcessArguments(false)
    .exitOverride();
}

/**
 * Parses svc-operator's command line as svc-auth and svc do: the flags, or the exit code when there is nothing to
 * run (0 after --help or --version, 2 after a usage error, whose message says what to do).
 */
export function parseFlags(argv: readonly string[], output?: { out(s: string): void; err(s: string): void }): Flags | { exit: number } {
  const cmd = program();
  if (output) cmd.configureOutput({ writeOut: (s) => output.out(s), writeErr: (s) => output.err(s) });
  try {
    cmd.parse([...argv], { from: 'user' });
    const flags = cmd.opts<Flags>();
    if (!(flags.renewDeadline < flags.leaseDuration && flags.retryPeriod < flags.renewDeadline)) {
      cmd.error('error: need --retry-period < --renew-deadline < --lease-duration', { exitCode: 2 });
    }
    return flags;
  } catch (e) {
    if (e instanceof CommanderError) return { exit: e.exitCode === 0 ? 0 : 2 };
    throw e;
  }
}

export interface Flags {
  namespace?: string;
  snapshotName: string;
  leaderElect: boolean;
  openPathsByDefault: boolean;
  wafPrefix: readonly string[];
  apiPrefix: readonly string[];
  leaseName?: string;
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  metricsListen: string;
  kubeconfig?: string;
  context?: string;
  shardMaxBytes: number;
  staleShardGrace: number;
  debounce: number;
  statusConcurrency: number;
  relistInterval: number;
  resync: number;
  requestTimeout: number;
  logLevel: string;
}

/** svc-operator: flags, the API connection, the operator, its health and metrics server, and a clean shutdown. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const flags = parseFlags(argv);
  if ('exit' in flags) {
    process.exitCode = flags.exit;
    return;
  }
  const log = pino({ name: 'svc-operator', level: flags.logLevel, base: { pid: process.pid } });
  const kube = await connect({ ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}), ...(flags.context ? { context: flags.context } : {}), requestTimeoutMs: flags.requestTimeout });
  const namespace = flags.namespace ?? kube.contextNamespace ?? 'default';
  const identity = `${hostname()}_${randomBytes(4).toString('hex')}`;
  const operator = new Operator(backendsOf(kube, namespace, flags), configOf(flags, namespace, identity), log);
  const server = await listenOrExit(operator, flags.metricsListen, log);
  const address = server.address();
  log.info(
    { namespace, snapshotName: flags.snapshotName, leaderElect: flags.leaderElect, identity, listen: typeof address === 'object' && address ? `${address.address}:${address.port}` : flags.metricsListen },
    'svc-operator starting',
  );
  operator.start();
  onSignals(async () => {
    await operator.stop();
    server.close();
    kube.close();
  }, log);
}

function configOf(flags: Flags, namespace: string, identity: string): OperatorConfig {
  return {
    namespace,
    snapshotName: flags.snapshotName,
    identity,
    leaseDurationMs: flags.leaseDuration,
    renewDeadlineMs: flags.renewDeadline,
    retryPeriodMs: flags.retryPeriod,
    shardMaxBytes: flags.shardMaxBytes,
    staleGraceMs: flags.staleShardGrace,
    debounceMs: flags.debounce,
    statusConcurrency: flags.statusConcurrency,
    relistIntervalMs: flags.relistInterval,
    resyncMs: flags.resync,
    openPathsByDefault: flags.openPathsByDefault,
    prefixes: { wafPrefix: flags.wafPrefix, apiPrefix: flags.apiPrefix },
  };
}

/** The operator's view of the API: its namespace's objects, ConfigMaps, Events and (when electing) its Lease. */
function backendsOf(kube: Awaited<ReturnType<typeof connect>>, namespace: string, flags: Flags): OperatorBackends {
  return {
    objectsWatch: protectedScopeListWatch(kube, namespace),
    configMapsWatch: configMapListWatch(kube, namespace, { labelSelector: snapshotSelector(flags.snapshotName) }),
    configMaps: kubeConfigMapClient(kube, namespace, FIELD_MANAGER),
    status: kubeScopeStatusClient(kube, namespace, FIELD_MANAGER),
    events: kubeEventSink(kube),
    ...(flags.leaderElect ? { lease: kubeLeaseClient(kube, namespace, flags.leaseName ?? `${flags.snapshotName}-operator`) } : {}),
  };
}

/** The health and metrics server; a port that cannot be had ends the program (exit 1). */
async function listenOrExit(operator: Operator, listen: string, log: pino.Logger): Promise<Server> {
  try {
    return await startHealthServer(
      listen,
      {
        live: () => ({ ok: true, detail: { leader: operator.isLeader } }),
        ready: () => ({
          ok: operator.ready,
          detail: {
            leader: operator.isLeader,
            protectedScopes: operator.objectInformer.size,
            lastReconcile: operator.lastReconcileAt !== undefined ? new Date(operator.lastReconcileAt).toISOString() : null,
          },
        }),
      },
      operator.metrics.registry,
    );
  } catch (e) {
    log.error({ err: (e as Error).message, listen }, 'cannot listen');
    process.exit(1);
  }
}

/** SIGTERM or SIGINT: stop once, within 10 s, then exit. */
function onSignals(stop: () => Promise<void>, log: pino.Logger): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await stop();
    log.info({}, 'stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main().catch((e: unknown) => {
    console.error(`svc-operator: ${(e as Error).message ?? e}`);
    process.exit(1);
  });
}
