/**
 * The one connection set-up to the API server, for every program: the kube configuration loaded as kubectl
 * loads it (failures are KubeErrors that say what to check), and the typed clients built on it, each request
 * with a timeout (client-node has none, so a hung server would hang a reconcile for ever). Long-running
 * programs (`connect`) also share one keep-alive HTTPS agent (client-node 1.x makes a new agent, and so a new
 * TLS handshake, per request); a CLI invocation, a handful of requests long, does without.
 */
import { existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  ServerConfiguration,
  Watch,
  createConfiguration,
  type ApiType,
  type Configuration,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { KubeError, orElse } from './errors.js';

export interface KubeConfigOptions {
  /** A kubeconfig file; default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig?: string;
  readonly context?: string;
  /** $KUBECONFIG as the caller's environment has it (present but undefined: unset); default process.env.KUBECONFIG. */
  readonly kubeconfigEnv?: string;
  /** The home directory whose .kube/config is the default; default os.homedir(). */
  readonly homeDir?: string;
  /** What a person can do instead of a cluster, appended to "no cluster" messages (the CLI's --dir). */
  readonly otherwise?: string;
}

interface KubeConnectOptions extends KubeConfigOptions {
  /** Timeout of one API request (not of watches), ms. */
  readonly requestTimeoutMs?: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface Kube {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
  readonly events: EventsV1Api;
  readonly watch: Watch;
  /** The namespace of the current context (or of the pod), if any. */
  readonly contextNamespace: string | undefined;
  makeClient<T extends ApiType>(apiClass: new (config: Configuration) => T): T;
  /** Closes idle keep-alive sockets (at shutdown, so the process can exit). */
  close(): void;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Loads the kube configuration as kubectl would; throws KubeError ('Config', 'NoConfig') when there is none usable. */
export function loadKubeConfig(opts: KubeConfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  try {
    loadConfigFiles(kc, opts);
  } catch (e) {
    if (e instanceof KubeError) throw e;
    throw new KubeError('Config', `cannot load the kubeconfig: ${firstLine((e as Error).message)} (check --kubeconfig or KUBECONFIG)`);
  }
  if (opts.context !== undefined) useContext(kc, opts.context);
  if (!kc.getCurrentCluster()) {
    throw new KubeError('Config', `no Kubernetes cluster configured: set --kubeconfig, KUBECONFIG or ~/.kube/config (or run inside a pod)${orElse(opts.otherwise)}`);
  }
  return kc;
}

function loadConfigFiles(kc: KubeConfig, opts: KubeConfigOptions): void {
  const kubeconfigEnv = 'kubeconfigEnv' in opts ? opts.kubeconfigEnv : process.env.KUBECONFIG;
  if (opts.kubeconfig !== undefined) {
    if (!existsSync(opts.kubeconfig)) throw new KubeError('Config', `kubeconfig ${opts.kubeconfig} does not exist: check --kubeconfig`);
    kc.loadFromFile(opts.kubeconfig);
  } else if (kubeconfigEnv) {
    // $KUBECONFIG as kubectl reads it: a list of files, the first one's current context wins.
    const files = kubeconfigEnv.split(delimiter).filter((f) => f.length > 0 && existsSync(f));
    if (files.length === 0) throw new KubeError('Config', `none of the files in KUBECONFIG (${kubeconfigEnv}) exists: check KUBECONFIG or use --kubeconfig`);
    kc.loadFromFile(files[0]!);
    for (const file of files.slice(1)) {
      const more = new KubeConfig();
      more.loadFromFile(file);
      kc.mergeConfig(more, true);
    }
  } else {
    // client-node falls back to http://localhost:8080 when it finds nothing, whose error ("HTTP protocol is not
    // allowed when skipTLSVerify is not set") says nothing useful: say what is missing instead.
    if (!inPod() && !existsSync(join(opts.homeDir ?? homedir(), '.kube', 'config'))) {
      throw new KubeError('NoConfig', `no Kubernetes configuration found: set KUBECONFIG or pass --kubeconfig FILE (and --context NAME)${orElse(opts.otherwise)}`);
    }
    kc.loadFromDefault();
  }
}

function useContext(kc: KubeConfig, context: string): void {
  if (!kc.getContextObject(context)) {
    const known = kc.getContexts().map((c) => c.name);
    throw new KubeError('Config', `context "${context}" is not in the kubeconfig${known.length ? ` (contexts: ${known.join(', ')})` : ''}: check --context`);
  }
  kc.setCurrentContext(context);
}

const inPod = (): boolean => existsSync(SERVICE_ACCOUNT_TOKEN) && process.env.KUBERNETES_SERVICE_HOST !== undefined;

/** The API server and context a loaded configuration points at, as messages name them. */
export function targetOf(kc: KubeConfig): { server: string; context: string; contextNamespace: string | undefined } {
  const contextName = kc.getCurrentContext();
  const inCluster = contextName === 'inClusterContext' && existsSync(SERVICE_ACCOUNT_TOKEN);
  return {
    server: kc.getCurrentCluster()?.server ?? '',
    context: inCluster ? 'in-cluster' : contextName,
    contextNamespace: kc.getContextObject(contextName)?.namespace?.trim() || undefined,
  };
}

/** The pod's namespace (downward API env or the service account file), else the kube context's. */
function defaultNamespace(kc?: KubeConfig): string | undefined {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    const ns = readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
    if (ns) return ns;
  } catch {
    // not in a pod
  }
  const ctx = kc?.getContextObject(kc.getCurrentContext());
  return ctx?.namespace || undefined;
}

export async function connect(opts: KubeConnectOptions = {}): Promise<Kube> {
  const kc = loadKubeConfig(opts);
  return fromKubeConfig(kc, opts);
}

export async function fromKubeConfig(kc: KubeConfig, opts: Pick<KubeConnectOptions, 'requestTimeoutMs'> = {}): Promise<Kube> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no Kubernetes cluster configured');
  const agent = await keepAliveAgent(kc);
  const config = apiConfiguration(kc, { timeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, ...(agent ? { agent } : {}) });
  const makeClient = <T extends ApiType>(apiClass: new (config: Configuration) => T): T => new apiClass(config);
  return {
    kc,
    core: makeClient(CoreV1Api),
    custom: makeClient(CustomObjectsApi),
    coordination: makeClient(CoordinationV1Api),
    events: makeClient(EventsV1Api),
    watch: new Watch(kc),
    contextNamespace: defaultNamespace(kc),
    makeClient,
    close: () => agent?.destroy(),
  };
}

/**
 * One agent for every request to an https server (a proxy makes its own connections). Connections are not kept alive:
 * on the Node 20 of the image (Debian's 20.19.2, with the 2026 http.Agent fix that guards idle pooled sockets),
 * node-fetch 2 (client-node 1.4's) reads every chunked answer on a reused socket as cut off (ERR_STREAM_PREMATURE_CLOSE,
 * nodejs/node#63989), so svc-auth rejected every shard ConfigMap large enough to come chunked and kept serving a stale
 * snapshot (a revoked token kept working) until it restarted. Found by the kind faults under load; a TLS handshake per
 * request is the price.
 */
async function keepAliveAgent(kc: KubeConfig): Promise<https.Agent | undefined> {
  const cluster = kc.getCurrentCluster();
  if (!cluster || !cluster.server.startsWith('https:') || cluster.proxyUrl) return undefined;
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  return new https.Agent({
    keepAlive: false,
    maxSockets: 64,
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    pfx: tls.pfx,
    passphrase: tls.passphrase,
    servername: tls.servername ?? cluster.tlsServerName,
    ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
    ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
  });
}

/** The configuration every API client is built on: the kubeconfig's server and credentials, a timeout per request. */
export function apiConfiguration(kc: KubeConfig, opts: { readonly timeoutMs: number; readonly agent?: https.Agent }): Configuration {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no Kubernetes cluster configured');
  const middleware = {
    pre: async (ctx: RequestContext): Promise<RequestContext> => {
      if (opts.agent) ctx.setAgent(opts.agent);
      if (!ctx.getSignal()) ctx.setSignal(AbortSignal.timeout(opts.timeoutMs));
      return ctx;
    },
    post: async (r: ResponseContext): Promise<ResponseContext> => r,
  };
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [middleware],
  });
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
