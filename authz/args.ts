// svc-auth's command line: its flags as commander declares them, parsed and checked into the configuration main.ts runs.
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { AccessConfig } from '../core/index.js';
import { VERSION } from '../lib/version.js';
import { LOG_LEVELS, type LogLevel } from './telemetry/log.js';
import { issuersFromFlags, parseAuthenticationConfiguration, type IssuerConfig } from './identity/oidc-config.js';
import type { OidcOptions } from './identity/oidc.js';
import { DEFAULT_SESSION_MAX_AGE, signInConfig, type SignInConfig } from './sign-in/config.js';
import { accessConfig, parseHostPort, UsageError, type HostPort } from './options.js';

export type SourceConfig =
  | { readonly kind: 'scopes-dir'; readonly dir: string }
  | { readonly kind: 'snapshot-file'; readonly file: string }
  | { readonly kind: 'configmap'; readonly name: string; readonly namespace?: string; readonly kubeconfig?: string; readonly context?: string };

export interface AuthConfig {
  readonly listen: HostPort;
  readonly metricsListen: HostPort;
  readonly access: AccessConfig;
  readonly source: SourceConfig;
  readonly logLevel: LogLevel;
  /** Seconds an nginx decision cache may keep an allow (X-Accel-Expires); 0 disables caching. */
  readonly cacheMaxAge: number;
  /** Individual refusal lines written at info per minute; the rest are summed in "requests refused" lines. */
  readonly refusalSample: number;
  /** Load balancers in front of the proxy whose X-Forwarded-For entries are skipped to find the client address. */
  readonly trustedProxyHops: number;
  /** OpenID providers whose JWTs are verified as identities (no issuers: single sign-on is off). */
  readonly oidc: OidcOptions;
  /** Browser sign-in (an OpenID relying party and session cookies); undefined when off. */
  readonly signIn?: SignInConfig;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

const HINT = 'Run "svc-auth --help" for usage.';

function isReadableFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** svc-auth's flags, as commander declares them (help, version and errors go to `io`). */
function authCommand(io: Output): Command {
  return new Command('svc-auth')
    .description('Forward-auth server: answers the reverse proxy\'s "may this request proceed?" from an in-memory snapshot of the protected scopes.')
    .addOption(new Option('--scopes-dir <dir>', 'compile the ProtectedScope manifests of DIR in-process, watch it, reload on change'))
    .addOption(new Option('--snapshot-file <file>', 'load a compiled snapshot file (e.g. a mounted ConfigMap key), watch it, reload on change'))
    .addOption(new Option('--snapshot-configmap <name>', "serve svc-operator's snapshot ConfigMaps: watch the snapshot index ConfigMap NAME, load and verify its shards, reload on change"))
    .addOption(new Option('-n, --namespace <ns>', "namespace of --snapshot-configmap (default: the pod's, else the kube context's)"))
    .addOption(new Option('--kubeconfig <file>', 'kubeconfig for --snapshot-configmap (default: in-cluster, else $KUBECONFIG or ~/.kube/config)'))
    .addOption(new Option('--context <name>', 'kubeconfig context for --snapshot-configmap'))
    .option('--listen <host:port>', 'address of the auth endpoints, /healthz and /readyz', '0.0.0.0:8080')
    .option('--metrics-listen <host:port>', 'address of the Prometheus /metrics endpoint', '0.0.0.0:9090')
    .option('--waf-prefix <path>', 'path prefix of the web-accessible folder', '/data')
    .option('--api-prefix <path>', 'path prefix of the OGC API', '/oapi')
    .option('--token-query-param <name>', 'query argument that carries a token; "" disables query tokens', 'token')
    .option('--cache-max-age <seconds>', 'longest an nginx/ingress-nginx auth cache may keep an allow (X-Accel-Expires; refusals are never cached); 0 disables', '30')
    .option('--trusted-proxy-hops <n>', 'load balancers in front of the proxy whose address entries are trusted and skipped to find the client address network grants match; must match the proxy\'s own setting (ingress-nginx use-forwarded-headers + proxy-real-ip-cidr, Envoy xff_num_trusted_hops; Traefik takes the address from the PROXY protocol and keeps 0)', '0')
    .option('--open-paths-by-default', 'process execution and stations writes are open until a path scope has a token (default: closed until one grants them)')
    .option('--oidc-issuer <url>', 'an OpenID provider whose JWTs grant as identities (spec.subjects); repeatable; https, or http on loopback', collect, [])
    .option('--oidc-audience <aud>', 'the audience (client id) a JWT must carry; required with --oidc-issuer; repeatable', collect, [])
    .option('--oidc-username-claim <claim>', 'the claim that, with its prefix, spec.subjects User names match', 'sub')
    .option('--oidc-username-prefix <prefix>', 'prefix of usernames, as kube-apiserver\'s flag: default the issuer URL and "#" unless the claim is email; "-" for none')
    .option('--oidc-groups-claim <claim>', 'the claim whose entries, with their prefix, spec.subjects Group names match; "" for none', 'groups')
    .option('--oidc-groups-prefix <prefix>', 'prefix of group names (default none, as kube-apiserver)')
    .option('--oidc-required-claim <claim=value>', 'a claim every JWT must carry with this value; repeatable', collect, [])
    .option('--authentication-config <file>', "kube-apiserver's AuthenticationConfiguration (its jwt issuers), instead of the --oidc-* flags")
    .option('--oidc-ca-file <file>', "a PEM CA bundle for the providers' TLS (besides the system's)")
    .option('--external-url <url>', 'browser sign-in: an origin browsers open the data service at (https://data.example.org); the callback is <url>/authz/callback; repeatable, the first is the default', collect, [])
    .option('--sign-in-client-id <id>', 'browser sign-in: the client id registered at the provider (turns sign-in on)')
    .option('--sign-in-client-secret-file <file>', 'browser sign-in: a file holding the client secret (absent: a public client with PKCE)')
    .option('--sign-in-issuer <url>', 'browser sign-in: the configured issuer browsers sign in with (needed when several are configured)')
    .option('--sign-in-scope <scope>', 'browser sign-in: a scope to ask for besides openid; repeatable (default: email profile)', collect, [])
    .option('--session-key-file <file>', 'browser sign-in: session keys, one per line (base64url of 32 random bytes); the first seals, every one opens')
    .option('--session-max-age <duration>', 'browser sign-in: how long a session lasts', DEFAULT_SESSION_MAX_AGE)
    .option('--refusal-log-sample <lines>', 'refusals logged one line each per minute at info; every refusal is counted in "requests refused" lines', '20')
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .version(VERSION, '-V, --version')
    .helpOption('-h, --help')
    .showHelpAfterError(HINT)
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
}

/** The flags as commander returns them (strings as given, before any check). */
interface GivenFlags {
  scopesDir?: string;
  snapshotFile?: string;
  snapshotConfigmap?: string;
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  listen: string;
  metricsListen: string;
  wafPrefix: string;
  apiPrefix: string;
  tokenQueryParam: string;
  cacheMaxAge: string;
  trustedProxyHops: string;
  refusalLogSample: string;
  openPathsByDefault?: boolean;
  logLevel: LogLevel;
  oidcIssuer: string[];
  oidcAudience: string[];
  oidcUsernameClaim: string;
  oidcUsernamePrefix?: string;
  oidcGroupsClaim: string;
  oidcGroupsPrefix?: string;
  oidcRequiredClaim: string[];
  oidcCaFile?: string;
  authenticationConfig?: string;
  externalUrl: string[];
  signInClientId?: string;
  signInClientSecretFile?: string;
  signInIssuer?: string;
  signInScope: string[];
  sessionKeyFile?: string;
  sessionMaxAge: string;
}

/**
 * Parses svc-auth's command line. Returns the configuration, or the exit code when there is nothing to
 * run: 0 after --help or --version, 2 after a usage error (the message says what to do).
 */
export function parseArgs(argv: readonly string[], io: Output): AuthConfig | { exit: number } {
  const program = authCommand(io);
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return { exit: e.exitCode === 0 ? 0 : 2 };
    throw e;
  }
  const o = program.opts<GivenFlags>();
  try {
    return configOf(o, (name) => program.getOptionValueSource(name) === 'cli');
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`svc-auth: ${e.message}\n${HINT}\n`);
    return { exit: 2 };
  }
}

/** The checked configuration; a UsageError says what to change. */
function configOf(o: GivenFlags, given: (name: string) => boolean): AuthConfig {
  const source = sourceOf(o);
  const { listen, metricsListen } = listenAddresses(o);
  const access = { ...accessConfig({ wafPrefix: o.wafPrefix, apiPrefix: o.apiPrefix, tokenQueryParam: o.tokenQueryParam }), openPathsByDefault: o.openPathsByDefault === true };
  if (!/^\d{1,5}$/.test(o.cacheMaxAge) || Number(o.cacheMaxAge) > 86400) {
    throw new UsageError(`--cache-max-age ${JSON.stringify(o.cacheMaxAge)}: give whole seconds from 0 (no caching) to 86400, e.g. 30`);
  }
  if (!/^\d$/.test(o.trustedProxyHops)) {
    throw new UsageError(`--trusted-proxy-hops ${JSON.stringify(o.trustedProxyHops)}: give the number of load balancers in front of the proxy, 0 to 9 (0: none, the proxy's peer is the client)`);
  }
  if (!/^\d{1,7}$/.test(o.refusalLogSample)) {
    throw new UsageError(`--refusal-log-sample ${JSON.stringify(o.refusalLogSample)}: give a whole number of lines per minute, e.g. 20 (0: only the per-minute sums)`);
  }
  const oidc = oidcOptions(o, given);
  const signIn = signInConfig(o, oidc.issuers, given);
  return { listen, metricsListen, access, source, logLevel: o.logLevel, cacheMaxAge: Number(o.cacheMaxAge), refusalSample: Number(o.refusalLogSample), trustedProxyHops: Number(o.trustedProxyHops), oidc, ...(signIn ? { signIn } : {}) };
}

/** Exactly one snapshot source, and the flags that go with it. */
function sourceOf(o: GivenFlags): SourceConfig {
  if ([o.scopesDir, o.snapshotFile, o.snapshotConfigmap].filter((v) => v !== undefined).length !== 1) {
    throw new UsageError('give exactly one snapshot source: --scopes-dir DIR (a directory of ProtectedScope manifests), --snapshot-file FILE (a compiled snapshot) or --snapshot-configmap NAME (the ConfigMaps svc-operator writes)');
  }
  if (o.snapshotConfigmap === undefined && (o.namespace ?? o.kubeconfig ?? o.context) !== undefined) {
    throw new UsageError('--namespace, --kubeconfig and --context go with --snapshot-configmap');
  }
  if (o.snapshotConfigmap !== undefined) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(o.snapshotConfigmap)) throw new UsageError(`--snapshot-configmap ${o.snapshotConfigmap}: not a ConfigMap name`);
    return {
      kind: 'configmap',
      name: o.snapshotConfigmap,
      ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
      ...(o.kubeconfig !== undefined ? { kubeconfig: resolve(o.kubeconfig) } : {}),
      ...(o.context !== undefined ? { context: o.context } : {}),
    };
  }
  if (o.scopesDir !== undefined) {
    const dir = resolve(o.scopesDir);
    if (!isDirectory(dir)) throw new UsageError(`--scopes-dir ${o.scopesDir}: no such directory (create it, e.g. with "svc --dir ${o.scopesDir} auth add-token ...", or run "npm start" for an example)`);
    return { kind: 'scopes-dir', dir };
  }
  const file = resolve(o.snapshotFile!);
  if (!isDirectory(dirname(file))) throw new UsageError(`--snapshot-file ${o.snapshotFile}: the directory ${dirname(file)} does not exist (the file itself may appear later)`);
  return { kind: 'snapshot-file', file };
}

function listenAddresses(o: GivenFlags): { listen: HostPort; metricsListen: HostPort } {
  const listen = parseHostPort('--listen', o.listen);
  const metricsListen = parseHostPort('--metrics-listen', o.metricsListen);
  if (listen.port !== 0 && listen.port === metricsListen.port && (listen.host === metricsListen.host || listen.host === '0.0.0.0' || metricsListen.host === '0.0.0.0')) {
    throw new UsageError('--listen and --metrics-listen must differ: metrics have their own port');
  }
  return { listen, metricsListen };
}

function oidcOptions(o: GivenFlags, given: (name: string) => boolean): OidcOptions {
  const oidc: OidcOptions = { issuers: oidcIssuers(o, given), ...(o.oidcCaFile !== undefined ? { caFile: resolve(o.oidcCaFile) } : {}) };
  if (oidc.caFile !== undefined && oidc.issuers.length === 0) throw new UsageError('--oidc-ca-file needs --oidc-issuer or --authentication-config');
  if (oidc.caFile !== undefined && !isReadableFile(oidc.caFile)) throw new UsageError(`--oidc-ca-file ${o.oidcCaFile}: no such file`);
  return oidc;
}

const OIDC_FLAGS = ['oidcIssuer', 'oidcAudience', 'oidcUsernameClaim', 'oidcUsernamePrefix', 'oidcGroupsClaim', 'oidcGroupsPrefix', 'oidcRequiredClaim'];

/** The trusted issuers: from kube-apiserver's AuthenticationConfiguration file, or from the --oidc-* flags (as kube-apiserver, not both). */
function oidcIssuers(
  o: { oidcIssuer: string[]; oidcAudience: string[]; oidcUsernameClaim: string; oidcUsernamePrefix?: string; oidcGroupsClaim: string; oidcGroupsPrefix?: string; oidcRequiredClaim: string[]; authenticationConfig?: string },
  given: (name: string) => boolean,
): IssuerConfig[] {
  if (o.authenticationConfig === undefined) {
    return issuersFromFlags({
      issuers: o.oidcIssuer, audiences: o.oidcAudience, usernameClaim: o.oidcUsernameClaim, groupsClaim: o.oidcGroupsClaim, requiredClaims: o.oidcRequiredClaim,
      ...(o.oidcUsernamePrefix !== undefined ? { usernamePrefix: o.oidcUsernamePrefix } : {}),
      ...(o.oidcGroupsPrefix !== undefined ? { groupsPrefix: o.oidcGroupsPrefix } : {}),
    });
  }
  if (OIDC_FLAGS.some(given)) throw new UsageError('--authentication-config and the --oidc-* flags (but --oidc-ca-file) are exclusive, as in kube-apiserver');
  let text: string;
  try {
    text = readFileSync(resolve(o.authenticationConfig), 'utf8');
  } catch {
    throw new UsageError(`--authentication-config ${o.authenticationConfig}: cannot read the file`);
  }
  return parseAuthenticationConfiguration(text, o.authenticationConfig);
}
