// Helpers for the operator integration suites (test/integration/operator-*.test.ts): svc-operator and svc-auth as
// real child processes against the test control plane, a TCP proxy that can take "the API server" away from them,
// and small ProtectedScope / decision helpers.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dump, load } from 'js-yaml';
import { hashToken, tokenIdOf, type TokenRecord } from '../../core/index.js';
import { fromKubeConfig, loadKubeConfig, type Kube } from '../../k8s/kube.js';
import { httpGet } from '../support/ports.js';
import { Supervised } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const GROUP = 'auth.svc.io';
export const VERSION = 'v1alpha1';
export const PLURAL = 'protectedscopes';

/** A fresh token (plaintext stays in the test) and its record. */
export function newToken(expiresAt?: string): { secret: string; record: TokenRecord } {
  const secret = `svc-test-${randomBytes(16).toString('hex')}`;
  const hash = hashToken(secret);
  return { secret, record: { id: tokenIdOf(hash), hash, createdAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), ...(expiresAt ? { expiresAt } : {}) } };
}

export async function kubeFor(kubeconfig: string): Promise<Kube> {
  return fromKubeConfig(loadKubeConfig({ kubeconfig }), { requestTimeoutMs: 20_000 });
}

export function scopeBody(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'ProtectedScope', metadata: { name }, spec };
}

export async function createScope(kube: Kube, namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body: scopeBody(name, spec) });
}

export async function getScope(kube: Kube, namespace: string, name: string): Promise<{ metadata: { generation?: number; resourceVersion?: string }; spec: Record<string, unknown>; status?: Record<string, unknown> }> {
  return (await kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as never;
}

/** Replaces the spec (read-modify-write with the resourceVersion as precondition, retried on conflict). */
export async function updateSpec(kube: Kube, namespace: string, name: string, edit: (spec: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const current = (await kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as Record<string, unknown> & { spec: Record<string, unknown> };
    try {
      await kube.custom.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { ...current, spec: edit(current.spec) } });
      return;
    } catch (e) {
      if ((e as { code?: number }).code !== 409 || attempt > 5) throw e;
    }
  }
}

export async function deleteScope(kube: Kube, namespace: string, name: string): Promise<void> {
  await kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name });
}

export async function getConfigMap(kube: Kube, namespace: string, name: string): Promise<{ data?: Record<string, string>; metadata?: { resourceVersion?: string; labels?: Record<string, string> }; immutable?: boolean } | undefined> {
  try {
    return await kube.core.readNamespacedConfigMap({ name, namespace });
  } catch (e) {
    if ((e as { code?: number }).code === 404) return undefined;
    throw e;
  }
}

export async function listSnapshotConfigMaps(kube: Kube, namespace: string, snapshotName = 'svc-auth-snapshot') {
  const list = await kube.core.listNamespacedConfigMap({ namespace, labelSelector: `auth.svc.io/snapshot=${snapshotName}` });
  return list.items;
}

/** Prometheus text → `name{labels}` → value. */
export function parseMetrics(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}

/** A node child process running one of our programs from source, its JSON log lines collected. */
export class Program {
  readonly lines: string[] = [];
  private proc: Supervised | undefined;
  private readonly waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];

  constructor(
    readonly name: string,
    readonly entry: string,
    readonly args: string[],
  ) {}

  get running(): boolean {
    return this.proc?.running ?? false;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get output(): string {
    return this.lines.join('\n');
  }

  logs(): Record<string, unknown>[] {
    return this.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  start(): this {
    let buf = '';
    const onOutput = (text: string) => {
      buf += text;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.lines.push(line);
        let parsed: Record<string, unknown> | undefined;
        try {
          parsed = JSON.parse(line) as Record<string, unknown>;
        } catch {
          parsed = undefined;
        }
        if (parsed) {
          for (const w of [...this.waiters]) {
            if (w.pred(parsed)) {
              this.waiters.splice(this.waiters.indexOf(w), 1);
              w.resolve(parsed);
            }
          }
        }
      }
    };
    // Supervised also kills it should the test or bench exit first (a crashed bench must not leave a writer behind).
    this.proc = Supervised.spawn(this.name, process.execPath, ['--import', 'tsx', this.entry, ...this.args],
      { cwd: REPO_ROOT, env: { ...process.env, NODE_OPTIONS: '' }, onOutput });
    return this;
  }

  /** Resolves with the first log line (past or future) matching pred. */
  waitForLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const seen = this.logs().find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolvePromise, reject) => {
      const t = setTimeout(() => reject(new Error(`${this.name}: no matching log line in ${timeoutMs} ms; output:\n${this.output.slice(-4000)}`)), timeoutMs);
      this.waiters.push({
        pred,
        resolve: (l) => {
          clearTimeout(t);
          resolvePromise(l);
        },
      });
    });
  }

  /** SIGTERM (graceful) or SIGKILL (a crash); resolves when the process is gone. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    await this.proc?.stop(signal, timeoutMs);
  }
}

/** svc-operator from source, listening on a free port for /healthz, /readyz, /metrics. */
export class OperatorProcess extends Program {
  port = 0;
  identity = '';

  constructor(kubeconfig: string, namespace: string, extraArgs: string[] = []) {
    super('svc-operator', 'operator/main.ts', ['--kubeconfig', kubeconfig, '--namespace', namespace, '--metrics-listen', '127.0.0.1:0', '--debounce', '50ms', ...extraArgs]);
  }

  async started(): Promise<this> {
    const line = await this.waitForLog((l) => l.msg === 'svc-operator starting');
    this.port = Number(String(line.listen).split(':').pop());
    this.identity = String(line.identity);
    return this;
  }

  async metrics(): Promise<Map<string, number>> {
    const r = await httpGet(this.port, '/metrics');
    if (r.status !== 200) throw new Error(`metrics: HTTP ${r.status}`);
    return parseMetrics(r.body);
  }

  async ready(): Promise<boolean> {
    return (await httpGet(this.port, '/readyz')).status === 200;
  }

  /** Writes this instance made: snapshot ConfigMaps and status patches. */
  async writes(): Promise<number> {
    const m = await this.metrics();
    let n = 0;
    for (const [k, v] of m) if (k.startsWith('svc_operator_snapshot_writes_total') || k.startsWith('svc_operator_status_patches_total')) n += v;
    return n;
  }
}

/** svc-auth from source, serving from the snapshot ConfigMaps. */
export class AuthProcess extends Program {
  port = 0;
  metricsPort = 0;

  /** With fixed ports, started() does not need svc-auth's info-level start line (e.g. under --log-level warn). */
  constructor(kubeconfig: string, namespace: string, extraArgs: string[] = [], private readonly fixed?: { port: number; metricsPort: number }) {
    super('svc-auth', 'authz/main.ts', [
      '--snapshot-configmap',
      'svc-auth-snapshot',
      '--namespace',
      namespace,
      '--kubeconfig',
      kubeconfig,
      '--listen',
      `127.0.0.1:${fixed?.port ?? 0}`,
      '--metrics-listen',
      `127.0.0.1:${fixed?.metricsPort ?? 0}`,
      ...extraArgs,
    ]);
  }

  async started(): Promise<this> {
    if (this.fixed) {
      this.port = this.fixed.port;
      this.metricsPort = this.fixed.metricsPort;
      try {
        await waitUntil(async () => (await httpGet(this.port, '/healthz')).status === 200,
          { what: 'svc-auth /healthz', timeoutMs: 30_000, intervalMs: 50, abortIf: () => (this.running ? undefined : 'svc-auth exited') });
      } catch (e) {
        throw new Error(`svc-auth did not start: ${(e as Error).message}\n${this.output.slice(-4000)}`, { cause: e });
      }
      return this;
    }
    const line = await this.waitForLog((l) => l.msg === 'svc-auth listening');
    this.port = Number(new URL(String(line.listen)).port);
    this.metricsPort = Number(new URL(String(line.metrics)).port);
    return this;
  }

  async ready(): Promise<boolean> {
    return (await httpGet(this.port, '/readyz')).status === 200;
  }

  /** The answer for GET `target` (nginx auth_request shape) with an optional bearer token: 200, 401 or 403 (0: no answer). */
  async decide(target: string, token?: string): Promise<number> {
    const headers: Record<string, string> = { 'X-Original-Method': 'GET', 'X-Original-URI': target };
    if (token) headers.Authorization = `Bearer ${token}`;
    return (await httpGet(this.port, '/authz/auth-request', headers, 2000)).status;
  }
}

/** The WAF path of a file under a topic (see docs/access-rules.md). */
export function topicFile(topic: string): string {
  return `/data/2026-11-21/wis/${topic.replaceAll('.', '/')}/x.bufr4`;
}

/**
 * A TCP proxy in front of the API server. `down()` closes the listener and cuts every connection (clients see
 * connection refused and broken watches, as when kube-apiserver is stopped); `up()` listens again on the same port.
 */
export class ApiProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop);
      upstream.on('error', drop);
      client.on('close', drop);
      upstream.on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((r, j) => {
      server.once('error', j);
      server.listen(this.port, '127.0.0.1', () => r());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    this.sockets.clear();
    if (s) await new Promise((r) => s.close(r));
  }

  /** A copy of kubeconfig whose server goes through this proxy (TLS passes through untouched). */
  kubeconfig(original: string, dir: string): string {
    const doc = load(readFileSync(original, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of doc.clusters) {
      const u = new URL(c.cluster.server);
      u.hostname = '127.0.0.1';
      u.port = String(this.port);
      c.cluster.server = u.toString().replace(/\/$/, '');
    }
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, `proxied-${this.port}-${process.pid}.kubeconfig`);
    writeFileSync(file, dump(doc), { mode: 0o600 });
    return file;
  }
}

export function serverOf(kubeconfig: string): { host: string; port: number } {
  const doc = load(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  const u = new URL(doc.clusters[0]!.cluster.server);
  return { host: u.hostname, port: Number(u.port || 443) };
}
