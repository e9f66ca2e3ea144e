// A real Kubernetes control plane for tests, envtest-style: etcd + kube-apiserver on free loopback ports, a generated
// PKI, RBAC authorization, an admin kubeconfig (client certificate, O=system:masters) and the CRDs of crds/ installed
// and Established. No controller-manager: namespaces never finish deleting and owner references never cascade.
// USE_EXISTING_CLUSTER=true uses KUBECONFIG instead (a kind cluster, say) and only installs the CRDs.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { ensureAssets, type Assets } from './assets.js';
import { clientCert, createPki, readPem, type CertFiles } from './pki.js';
import { freePorts } from '../support/ports.js';
import { Supervised, untilWhileRunning } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const defaultCrdDir = join(repoRoot, 'crds');

export interface ControlPlaneOptions {
  /** Binaries to run; found or built by ensureAssets() when absent. */
  assets?: Assets;
  /** Working directory (certs, etcd data, logs); a fresh temp dir when absent. Removed by stop() unless
   *  SVC_CONTROLPLANE_KEEP=true. */
  dir?: string;
  /** Directory of CRD manifests to install (every *.yaml / *.yml); default crds/. */
  crdDir?: string;
  /** Progress messages; default stderr. */
  log?: (message: string) => void;
  /** How long etcd + kube-apiserver may take to become ready; default 120 s. */
  startTimeoutMs?: number;
  /** Extra kube-apiserver flags (`--name=value`), appended last so they override the defaults. */
  apiserverFlags?: string[];
  /** For a cluster with a node (test/node): the Node authorizer and the ServiceAccount admission plugin (pods get
   *  their service-account token mounted; kube-controller-manager creates the default ServiceAccounts). */
  withNode?: boolean;
}

export interface ControlPlane {
  /** https://127.0.0.1:<port>, or the existing cluster's server. */
  server: string;
  /** Admin kubeconfig (mode 0600). */
  kubeconfigPath: string;
  /** Working directory, removed by stop() (absent for an existing cluster). */
  dir?: string;
  /** The CA that signed the serving and client certificates (absent for an existing cluster). */
  ca?: CertFiles;
  existing: boolean;
  pids: { etcd?: number; kubeApiserver?: number };
  /** Names of the CRDs installed and Established. */
  crds: string[];
  /** A kubeconfig for `user` in `groups`, authenticated by a client certificate signed by the test CA. */
  kubeconfigFor(user: string, groups?: string[]): string;
  stop(): Promise<void>;
}

const defaultLog = (m: string) => process.stderr.write(`[controlplane] ${m}\n`);

/** SVC_CONTROLPLANE_KEEP=true keeps the working dir (etcd/kube-apiserver logs, certs) after stop(), for debugging. */
function keepDir(): boolean {
  return (process.env.SVC_CONTROLPLANE_KEEP ?? '').toLowerCase() === 'true';
}

export function isUseExistingCluster(): boolean {
  return (process.env.USE_EXISTING_CLUSTER ?? '').toLowerCase() === 'true';
}

// ---------------------------------------------------------------- kubeconfig

export interface KubeconfigUser {
  clientCertificate?: string;
  clientKey?: string;
  token?: string;
}

export function writeKubeconfig(path: string, server: string, caPem: string, user: KubeconfigUser, userName = 'admin',
  namespace?: string): string {
  const authUser: Record<string, string> = {};
  if (user.clientCertificate) authUser['client-certificate-data'] = Buffer.from(user.clientCertificate).toString('base64');
  if (user.clientKey) authUser['client-key-data'] = Buffer.from(user.clientKey).toString('base64');
  if (user.token) authUser.token = user.token;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'svc-test', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: userName, user: authUser }],
    contexts: [{ name: 'svc-test', context: { cluster: 'svc-test', user: userName, ...(namespace ? { namespace } : {}) } }],
    'current-context': 'svc-test',
    preferences: {},
  };
  writeFileSync(path, dump(config), { mode: 0o600 });
  chmodSync(path, 0o600); // writeFileSync's mode only applies when it creates the file
  return path;
}

/** Writes a kubeconfig for `user` in `groups` (a client certificate signed by `ca`) into outDir; returns its path. */
export function issueKubeconfig(server: string, ca: CertFiles, outDir: string, user: string, groups: string[] = []): string {
  mkdirSync(outDir, { recursive: true, mode: 0o700 });
  const safe = user.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 60);
  const name = `${safe}-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const files = clientCert(outDir, ca, name, user, groups);
  return writeKubeconfig(join(outDir, `${name}.kubeconfig`), server, readPem(ca.cert),
    { clientCertificate: readPem(files.cert), clientKey: readPem(files.key) }, user);
}

// ---------------------------------------------------------------- HTTP probes

interface TlsMaterial {
  ca: string;
  cert?: string;
  key?: string;
  token?: string;
}

function get(url: string, tls?: TlsMaterial, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((ok, fail) => {
    const u = new URL(url);
    const headers: Record<string, string> = tls?.token ? { Authorization: `Bearer ${tls.token}` } : {};
    const opts = { method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname + u.search, timeout: timeoutMs, headers };
    const req = u.protocol === 'https:'
      ? httpsRequest({ ...opts, ca: tls?.ca, cert: tls?.cert, key: tls?.key })
      : httpRequest(opts);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => ok({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end();
  });
}

// ---------------------------------------------------------------- processes

// etcd and kube-apiserver log into files of the working dir (kept with SVC_CONTROLPLANE_KEEP=true), each in its own
// process group, so a Ctrl-C meant for the test runner does not kill it before stop() runs.
function startProcess(name: string, binary: string, args: string[], dir: string): Supervised {
  return Supervised.spawn(name, binary, args, { cwd: dir, output: { file: join(dir, `${name}.log`) }, detached: true });
}

/** Polls `probe` (backing off to 1 s); fails early, with the logs, when one of `watch` exits. */
function waitFor(what: string, timeoutMs: number, watch: Supervised[], probe: () => Promise<boolean>): Promise<boolean> {
  return untilWhileRunning(what, timeoutMs, watch, probe, { intervalMs: 100, maxIntervalMs: 1000 });
}

// ---------------------------------------------------------------- start

async function startOnce(assets: Assets, dir: string, opts: ControlPlaneOptions, log: (m: string) => void): Promise<ControlPlane> {
  const pki = createPki(join(dir, 'pki'));
  const [etcdClient, etcdPeer, apiPort] = await freePorts(3) as [number, number, number];
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const peerUrl = `http://127.0.0.1:${etcdPeer}`;
  const server = `https://127.0.0.1:${apiPort}`;
  const timeout = opts.startTimeoutMs ?? 120_000;
  const started = Date.now();

  const etcd = startProcess('etcd', assets.etcd, [
    `--name=svc-test`,
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=svc-test=${peerUrl}`,
    '--unsafe-no-fsync=true', // test data: durability buys nothing, fsync costs seconds
    '--log-level=warn',
  ], dir);
  const procs: Supervised[] = [etcd];
  try {
    await waitFor('etcd /health', timeout, [etcd], async () => {
      const r = await get(`${etcdUrl}/health`);
      return r.status === 200 && /"health":\s*"true"/.test(r.body);
    });
    log(`etcd ready on ${etcdUrl} (${Date.now() - started} ms)`);

    const apiserver = startProcess('kube-apiserver', assets.kubeApiserver, [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // Recent apiservers refuse a loopback advertise address for the kubernetes Service endpoints; nothing here
      // routes to that Service anyway.
      '--endpoint-reconciler-type=none',
      `--secure-port=${apiPort}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.serving.cert}`,
      `--tls-private-key-file=${pki.serving.key}`,
      `--client-ca-file=${pki.ca.cert}`,
      opts.withNode ? '--authorization-mode=Node,RBAC' : '--authorization-mode=RBAC',
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${pki.serviceAccount.publicKey}`,
      `--service-account-signing-key-file=${pki.serviceAccount.privateKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      // No controller-manager: nothing would create the default ServiceAccount the admission plugin waits for.
      opts.withNode ? '--enable-admission-plugins=NodeRestriction' : '--disable-admission-plugins=ServiceAccount',
      // exec, logs and port-forward go from the apiserver to the kubelet, which authorizes the admin identity.
      ...(opts.withNode ? [`--kubelet-client-certificate=${pki.admin.cert}`, `--kubelet-client-key=${pki.admin.key}`,
        '--kubelet-preferred-address-types=InternalIP'] : []),
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--v=1',
      ...(opts.apiserverFlags ?? []),
    ], dir);
    procs.push(apiserver);
    const admin = { ca: readPem(pki.ca.cert), cert: readPem(pki.admin.cert), key: readPem(pki.admin.key) };
    await waitFor('kube-apiserver /readyz', timeout, [etcd, apiserver], async () => (await get(`${server}/readyz`, admin)).status === 200);
    log(`kube-apiserver ready on ${server} (${Date.now() - started} ms)`);

    const kubeconfigPath = writeKubeconfig(join(dir, 'kubeconfig'), server, admin.ca, { clientCertificate: admin.cert, clientKey: admin.key });
    let stopped = false;
    for (const p of [etcd, apiserver]) {
      void p.exited.then((how) => {
        if (!stopped) log(`${p.name} exited unexpectedly (${how}); last lines of its log:\n${p.tail(25)}`);
      });
    }
    const cp: ControlPlane = {
      server,
      kubeconfigPath,
      dir,
      ca: pki.ca,
      existing: false,
      pids: { etcd: etcd.pid, kubeApiserver: apiserver.pid },
      crds: [],
      kubeconfigFor(user: string, groups: string[] = []): string {
        return issueKubeconfig(server, pki.ca, join(dir, 'users'), user, groups);
      },
      async stop(): Promise<void> {
        if (stopped) return;
        stopped = true;
        await apiserver.stop();
        await etcd.stop();
        if (keepDir()) log(`kept ${dir} (logs, certificates, etcd data): SVC_CONTROLPLANE_KEEP=true`);
        else if (!opts.dir) rmSync(dir, { recursive: true, force: true });
      },
    };
    return cp;
  } catch (e) {
    for (const p of procs.reverse()) await p.stop('SIGTERM', 3000);
    throw e;
  }
}

/** Starts etcd + kube-apiserver and installs the CRDs; stop() undoes all of it. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? defaultLog;
  const assets = opts.assets ?? await ensureAssets();
  for (let attempt = 1; ; attempt++) {
    const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'svc-controlplane-'));
    try {
      const cp = await startOnce(assets, dir, opts, log);
      try {
        cp.crds = await installCrds(cp.kubeconfigPath, opts.crdDir ?? defaultCrdDir, log);
      } catch (e) {
        await cp.stop();
        throw e;
      }
      return cp;
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
      // A port taken between freePorts() and the bind is the one failure worth another try.
      if (attempt < 3 && /address already in use/i.test(msg)) {
        log(`port clash, retrying (${attempt})`);
        continue;
      }
      throw e;
    }
  }
}

/** USE_EXISTING_CLUSTER=true: the cluster of KUBECONFIG (or ~/.kube/config), CRDs installed, nothing started. */
export async function useExistingCluster(opts: Pick<ControlPlaneOptions, 'crdDir' | 'log'> = {}): Promise<ControlPlane> {
  const log = opts.log ?? defaultLog;
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('USE_EXISTING_CLUSTER=true but KUBECONFIG names no current cluster');
  const kubeconfigPath = (process.env.KUBECONFIG ?? join(process.env.HOME ?? '', '.kube', 'config')).split(':')[0] ?? '';
  log(`using existing cluster ${cluster.server} (${kubeconfigPath})`);
  const crds = await installCrds(kubeconfigPath, opts.crdDir ?? defaultCrdDir, log);
  // The cluster's CA when the caller holds it (test/kind/run.sh reads kind's from its control-plane node): then
  // kubeconfigFor issues client certificates there too.
  const caCert = process.env.USE_EXISTING_CLUSTER_CA_CERT;
  const caKey = process.env.USE_EXISTING_CLUSTER_CA_KEY;
  const ca = caCert && caKey ? { cert: caCert, key: caKey } : undefined;
  return {
    server: cluster.server,
    kubeconfigPath,
    existing: true,
    ...(ca ? { ca } : {}),
    pids: {},
    crds,
    kubeconfigFor(user: string, groups: string[] = []): string {
      if (!ca) throw new Error('kubeconfigFor needs the cluster CA: set USE_EXISTING_CLUSTER_CA_CERT and _KEY, or use serviceAccountKubeconfig() from testenv');
      return issueKubeconfig(cluster.server, ca, join(dirname(kubeconfigPath), 'users'), user, groups);
    },
    async stop(): Promise<void> {},
  };
}

// ---------------------------------------------------------------- CRDs

type Crd = import('@kubernetes/client-node').V1CustomResourceDefinition;

/**
 * The CRDs of crdDir as client-node models. They must go through client-node's deserializer: the typed API
 * serializes by model attribute, so a plain js-yaml object would silently lose every `x-kubernetes-*` key
 * (CEL rules, list types) on the way out.
 */
export async function readCrdManifests(crdDir: string): Promise<Crd[]> {
  if (!existsSync(crdDir)) return [];
  const k8s = await import('@kubernetes/client-node');
  const docs: Crd[] = [];
  for (const f of readdirSync(crdDir).filter((n) => /\.ya?ml$/.test(n)).sort()) {
    for (const doc of k8s.loadAllYaml(readFileSync(join(crdDir, f), 'utf8')) as (Crd | null)[]) {
      if (doc?.kind === 'CustomResourceDefinition') docs.push(doc);
    }
  }
  return docs;
}

function apiCode(e: unknown): number | undefined {
  return (e as { code?: number }).code;
}

/** Creates or updates every CRD of crdDir and waits until each is Established and its resource is served. */
export async function installCrds(kubeconfigPath: string, crdDir: string = defaultCrdDir, log: (m: string) => void = defaultLog,
  timeoutMs = 60_000): Promise<string[]> {
  const manifests = await readCrdManifests(crdDir);
  if (manifests.length === 0) return [];
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const objects = kc.makeApiClient(k8s.CustomObjectsApi);
  const names: string[] = [];
  for (const m of manifests) {
    const name = m.metadata?.name;
    if (!name) throw new Error(`a CRD in ${crdDir} has no metadata.name`);
    const body = m;
    try {
      await ext.createCustomResourceDefinition({ body });
    } catch (e) {
      if (apiCode(e) !== 409) throw new Error(`installing CRD ${name}: ${(e as { body?: string }).body ?? String(e)}`, { cause: e });
      // Already there (an existing cluster, or a re-run): replace it with ours.
      for (let i = 0; ; i++) {
        const current = await ext.readCustomResourceDefinition({ name });
        body.metadata = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
        try {
          await ext.replaceCustomResourceDefinition({ name, body });
          break;
        } catch (err) {
          if (apiCode(err) !== 409 || i >= 5) throw new Error(`updating CRD ${name}: ${(err as { body?: string }).body ?? String(err)}`, { cause: err });
        }
      }
    }
    names.push(name);
  }
  const deadline = Date.now() + timeoutMs;
  for (const m of manifests) {
    const name = m.metadata?.name ?? '';
    // A refusal (names not accepted, or an API error other than "not served yet") ends the wait at once.
    let fatal: string | undefined;
    let conds: unknown[] = [];
    const abortIf = () => fatal;
    await waitUntil(async () => {
      const crd = await ext.readCustomResourceDefinition({ name });
      conds = crd.status?.conditions ?? [];
      const refused = crd.status?.conditions?.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
      if (refused) fatal = `CRD ${name}: names not accepted: ${refused.message}`;
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    }, { what: `CRD ${name} to be Established`, timeoutMs: Math.max(0, deadline - Date.now()), abortIf, describe: () => JSON.stringify(conds) });
    // Established is set a moment before the REST endpoint serves: list until it answers.
    const group = m.spec?.group ?? '';
    const plural = m.spec?.names?.plural ?? '';
    const version = m.spec?.versions?.find((v) => v.served !== false)?.name ?? '';
    await waitUntil(async () => {
      try {
        await objects.listClusterCustomObject({ group, version, plural, limit: 1 });
        return true;
      } catch (e) {
        if (apiCode(e) !== 404) fatal = `listing ${plural}.${group}: ${e instanceof Error ? e.message : String(e)}`;
        throw e;
      }
    }, { what: `${plural}.${group} to be served`, timeoutMs: Math.max(0, deadline - Date.now()), abortIf });
  }
  log(`CRDs installed and Established: ${names.join(', ')}`);
  return names;
}
