// A small in-memory stand-in for the Kubernetes API, for unit tests of the CLI's Kubernetes backend and
// of k8s/protected-scopes.ts when no control plane is at hand: namespaces, ProtectedScope get / list /
// create / replace (resourceVersion preconditions, AlreadyExists, dry runs, generation) / delete, and injectable
// failures (RBAC, missing CRD, server errors, hangs). What the CLI reads to tell whether an svc-operator serves a
// namespace: the snapshot index ConfigMap of a served namespace, the chart's records in kube-public, the operator's
// Lease; and a stand-in operator that writes each object's status (observedGeneration, Ready) when it is written in
// a served namespace, at once or after a delay. The real API server is exercised by
// test/integration/cli-kubernetes.test.ts and cli-served.test.ts; this one only has to be faithful where the CLI looks.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatFieldErrors, validateProtectedScope } from '../../core/index.js';

type Obj = { apiVersion: string; kind: string; metadata: Record<string, unknown> & { name: string; resourceVersion?: string }; spec?: unknown; status?: unknown };

export type Fault = { status: number; body: string | object } | 'hang' | 'reset';

export class FakeApiServer {
  readonly namespaces = new Set<string>(['default']);
  /** namespace → name → object */
  readonly objects = new Map<string, Map<string, Obj>>();
  readonly requests: { method: string; path: string; status: number }[] = [];
  crdInstalled = true;
  /** Returns a fault to answer a request with instead of serving it (RBAC, outages, ...). */
  fault: ((method: string, path: string) => Fault | undefined) | undefined;
  /** Namespaces no svc-operator serves (no snapshot ConfigMap, no status written); every other one is served. */
  readonly unserved = new Set<string>();
  /** The chart's records in kube-public: the namespace each release serves, and its auth.cacheMaxAge. */
  records: { namespace: string; cacheMaxAge?: number }[] = [];
  /** Leases by `namespace/name`. */
  readonly leases = new Map<string, { holderIdentity?: string; renewTime?: string }>();
  /**
   * The stand-in operator of served namespaces: writes each object's status when it is created or replaced, after
   * `delayMs` (0: in the same response), with Ready `ready`; `off`: writes nothing.
   */
  operator: { delayMs: number; ready: 'True' | 'False'; off?: boolean } = { delayMs: 0, ready: 'True' };
  private rv = 1000;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server!.address() as { port: number }).port;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A kubeconfig pointing at this server (plain HTTP, a bearer token nobody checks). */
  writeKubeconfig(dir: string, namespace?: string, file = 'kubeconfig'): string {
    const path = join(dir, file);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake\n  cluster:\n    server: ${this.url}\n    insecure-skip-tls-verify: true`,
        'users:',
        '- name: tester\n  user:\n    token: not-checked',
        'contexts:',
        `- name: fake\n  context:\n    cluster: fake\n    user: tester${namespace ? `\n    namespace: ${namespace}` : ''}`,
        '- name: other\n  context:\n    cluster: fake\n    user: tester\n    namespace: other',
        'current-context: fake',
        '',
      ].join('\n'),
    );
    return path;
  }

  inNamespace(ns: string): Map<string, Obj> {
    let m = this.objects.get(ns);
    if (!m) this.objects.set(ns, (m = new Map()));
    return m;
  }

  /** Puts an object as if created by someone else (a hand-written manifest, say). */
  put(ns: string, obj: Obj): Obj {
    this.namespaces.add(ns);
    const stored = { ...obj, metadata: { ...obj.metadata, namespace: ns, resourceVersion: String(++this.rv), uid: `uid-${obj.metadata.name}`, generation: 1 } };
    this.inNamespace(ns).set(obj.metadata.name, stored);
    this.compile(ns, obj.metadata.name);
    return stored;
  }

  /** The stand-in operator: the object's status says its generation was compiled (Ready as configured). */
  private compile(ns: string, name: string): void {
    if (this.unserved.has(ns) || this.operator.off) return;
    const { ready } = this.operator;
    const write = () => {
      const o = this.inNamespace(ns).get(name);
      if (!o) return;
      const generation = o.metadata.generation as number;
      o.status = {
        observedGeneration: generation,
        conditions: [{ type: 'Ready', status: ready, reason: ready === 'True' ? 'Compiled' : 'Invalid', message: ready === 'True' ? 'scope Closed' : 'left out of the snapshot', observedGeneration: generation, lastTransitionTime: '2026-11-21T10:00:00Z' }],
      };
    };
    if (this.operator.delayMs === 0) write();
    else setTimeout(write, this.operator.delayMs).unref();
  }

  /** The ConfigMaps the CLI lists: snapshot indexes of served namespaces, the chart's records in kube-public. */
  private configMaps(ns: string | undefined, selector: string): object[] {
    const out: object[] = [];
    if ((ns === undefined || ns === 'kube-public') && selector === 'auth.svc.io/served-namespace') {
      for (const r of this.records) {
        out.push({ metadata: { name: `svc-served.${r.namespace}`, namespace: 'kube-public', labels: { 'auth.svc.io/served-namespace': r.namespace } }, data: { namespace: r.namespace, snapshotName: 'svc-auth-snapshot', ...(r.cacheMaxAge !== undefined ? { cacheMaxAge: String(r.cacheMaxAge) } : {}) } });
      }
    }
    if (selector === 'auth.svc.io/snapshot-role=index') {
      for (const n of [...this.namespaces].sort()) {
        if ((ns !== undefined && n !== ns) || this.unserved.has(n) || n === 'kube-public') continue;
        out.push({ metadata: { name: 'svc-auth-snapshot', namespace: n, labels: { 'auth.svc.io/snapshot': 'svc-auth-snapshot', 'auth.svc.io/snapshot-role': 'index' } }, data: {} });
      }
    }
    return out;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const send = (status: number, body: object | string) => {
      this.requests.push({ method, path: url.pathname, status });
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const fault = this.fault?.(method, url.pathname);
    if (fault === 'hang') return;
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault) return send(fault.status, fault.body);
    const status = (code: number, reason: string, message: string, details?: object) =>
      send(code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...(details ? { details } : {}) });

    let m = /^\/api\/v1(?:\/namespaces\/([^/]+))?\/configmaps$/.exec(url.pathname);
    if (m && method === 'GET') {
      const items = this.configMaps(m[1], url.searchParams.get('labelSelector') ?? '');
      return send(200, { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: String(this.rv) }, items });
    }
    m = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases\/([^/]+)$/.exec(url.pathname);
    if (m && method === 'GET') {
      const lease = this.leases.get(`${m[1]}/${m[2]}`);
      if (!lease) return status(404, 'NotFound', `leases.coordination.k8s.io "${m[2]}" not found`, { name: m[2], group: 'coordination.k8s.io', kind: 'leases' });
      return send(200, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: m[2], namespace: m[1] }, spec: { ...lease, leaseDurationSeconds: 15 } });
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(url.pathname);
    if (m && method === 'GET') {
      const ns = m[1]!;
      return this.namespaces.has(ns)
        ? send(200, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
        : status(404, 'NotFound', `namespaces "${ns}" not found`, { name: ns, kind: 'namespaces' });
    }
    m = /^\/apis\/auth\.svc\.io\/v1alpha1\/namespaces\/([^/]+)\/protectedscopes(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m || !this.crdInstalled) return send(404, '404 page not found');
    const ns = m[1]!;
    const name = m[2];
    const dryRun = url.searchParams.get('dryRun') === 'All';
    const objs = this.inNamespace(ns);
    const notFound = () => status(404, 'NotFound', `protectedscopes.auth.svc.io "${name}" not found`, { name, group: 'auth.svc.io', kind: 'protectedscopes' });
    const body = () => JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Obj;
    const invalid = (obj: Obj) => {
      const checked = validateProtectedScope(obj);
      if (checked.ok) return false;
      status(422, 'Invalid', `ProtectedScope.auth.svc.io "${obj.metadata?.name}" is invalid: ${formatFieldErrors(checked.error)}`, {
        name: obj.metadata?.name,
        kind: 'ProtectedScope',
        causes: checked.error.map((e) => ({ reason: 'FieldValueInvalid', field: e.field, message: e.message })),
      });
      return true;
    };
    if (!name && method === 'GET') {
      // Paged like the real server: limit, and an opaque continue token (here: the offset).
      const all = [...objs.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
      const limit = Number(url.searchParams.get('limit') ?? 0) || all.length;
      const from = Number(url.searchParams.get('continue') ?? 0);
      const items = all.slice(from, from + limit);
      const more = from + limit < all.length;
      return send(200, {
        apiVersion: 'auth.svc.io/v1alpha1',
        kind: 'ProtectedScopeList',
        metadata: { resourceVersion: String(this.rv), ...(more ? { continue: String(from + limit) } : {}) },
        items,
      });
    }
    if (name && method === 'GET') return objs.has(name) ? send(200, objs.get(name)!) : notFound();
    if (!name && method === 'POST') {
      const obj = body();
      if (!this.namespaces.has(ns)) return status(404, 'NotFound', `namespaces "${ns}" not found`, { name: ns, kind: 'namespaces' });
      if (objs.has(obj.metadata.name)) {
        return status(409, 'AlreadyExists', `protectedscopes.auth.svc.io "${obj.metadata.name}" already exists`, { name: obj.metadata.name, kind: 'protectedscopes' });
      }
      if (invalid(obj)) return;
      const stored = { ...obj, metadata: { ...obj.metadata, namespace: ns, resourceVersion: String(dryRun ? this.rv + 1 : ++this.rv), uid: `uid-${obj.metadata.name}`, generation: 1 } };
      if (!dryRun) objs.set(obj.metadata.name, stored);
      const answer = JSON.parse(JSON.stringify(stored)) as Obj;
      if (!dryRun) this.compile(ns, obj.metadata.name);
      return send(201, answer);
    }
    if (name && method === 'PUT') {
      const obj = body();
      const current = objs.get(name);
      if (!current) return notFound();
      if (obj.metadata.resourceVersion !== undefined && obj.metadata.resourceVersion !== current.metadata.resourceVersion) {
        return status(409, 'Conflict', `Operation cannot be fulfilled on protectedscopes.auth.svc.io "${name}": the object has been modified; please apply your changes to the latest version and try again`, {
          name,
          kind: 'protectedscopes',
        });
      }
      if (invalid(obj)) return;
      // As the real server: metadata.generation moves with every change of the spec, never with status or metadata.
      const before = (current.metadata.generation as number | undefined) ?? 1;
      const generation = JSON.stringify(obj.spec) === JSON.stringify(current.spec) ? before : before + 1;
      const stored = { ...obj, status: current.status, metadata: { ...obj.metadata, namespace: ns, uid: current.metadata.uid, resourceVersion: String(dryRun ? this.rv + 1 : ++this.rv), generation } };
      if (!dryRun) objs.set(name, stored);
      const answer = JSON.parse(JSON.stringify(stored)) as Obj;
      if (!dryRun && generation !== before) this.compile(ns, name);
      return send(200, answer);
    }
    if (name && method === 'DELETE') {
      const current = objs.get(name);
      if (!current) return notFound();
      if (!dryRun) objs.delete(name);
      return send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
    }
    return status(405, 'MethodNotAllowed', `${method} not supported`);
  }
}
