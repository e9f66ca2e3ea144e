import { readFileSync } from 'node:fs';
import https from 'node:https';
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

/**
 * The connection to the API server: a KubeConfig and the typed clients built on it. Every API client shares
 * one keep-alive HTTPS agent (client-node 1.x makes a new agent, and so a new TLS handshake, per request)
 * and gets a per-request timeout (it has none, so a hung server would hang a reconcile for ever).
 */
export interface KubeConnectOptions {
  /** A kubeconfig file; default: in-cluster config inside a pod, else $KUBECONFIG / ~/.kube/config. */
  readonly kubeconfig?: string;
  readonly context?: string;
  /** Timeout of one API request (not of watches), ms. */
  readonly requestTimeoutMs?: number;
}

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

export function loadKubeConfig(opts: Pick<KubeConnectOptions, 'kubeconfig' | 'context'> = {}): KubeConfig {
  const kc = new KubeConfig();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else kc.loadFromDefault();
  if (opts.context) kc.setCurrentContext(opts.context);
  if (!kc.getCurrentCluster()) throw new Error('no Kubernetes cluster configured (kubeconfig has no current cluster)');
  return kc;
}

/** The pod's namespace (downward API env or the service account file), else the kube context's. */
export function defaultNamespace(kc?: KubeConfig): string | undefined {
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
  const timeoutMs = opts.requestTimeoutMs ?? 30_000;
  let agent: https.Agent | undefined;
  if (cluster.server.startsWith('https:') && !cluster.proxyUrl) {
    const tls: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    agent = new https.Agent({
      keepAlive: true,
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
  const middleware = {
    pre: async (ctx: RequestContext): Promise<RequestContext> => {
      if (agent) ctx.setAgent(agent);
      if (!ctx.getSignal()) ctx.setSignal(AbortSignal.timeout(timeoutMs));
      return ctx;
    },
    post: async (r: ResponseContext): Promise<ResponseContext> => r,
  };
  const config = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [middleware],
  });
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
