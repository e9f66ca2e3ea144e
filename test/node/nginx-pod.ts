// The ingress of the node suite: Debian's nginx in a pod, configured as ingress-nginx configures an Ingress with
// the `auth-url` annotation (the same server block the e2e suite runs, from ../e2e/support/nginx-conf.ts), its
// auth location pointing at the svc-auth Service's ClusterIP (this node has no cluster DNS; ingress-nginx resolves
// the Service name to the same address). Behind it: the WAF tree of the e2e fixtures, from a ConfigMap, and a
// stand-in OGC API (a second server block answering 200) so /oapi is checked too.
import { WAF, type WafFile } from '../e2e/support/fixtures.js';
import { ingressServer } from '../e2e/support/nginx-conf.js';

export const NGINX_POD = 'svc-ingress';
export const NGINX_PORT = 8080;
const OAPI_PORT = 8081;
const WAF_ROOT = '/srv/waf';

export interface NginxPodOptions {
  namespace: string;
  image: string;
  /** ClusterIP and port of the svc-auth Service. */
  authHost: string;
  authPort: number;
  /** Body of each WAF file (a marker a test recognises). */
  markers: Readonly<Record<WafFile, string>>;
}

export function nginxPodConf(o: Pick<NginxPodOptions, 'authHost' | 'authPort'>): string {
  // Everything nginx writes goes to /tmp (an emptyDir): the pod runs unprivileged on a read-only root filesystem.
  return `worker_processes 1;
pid /tmp/nginx.pid;
error_log stderr notice;
events {
    worker_connections 256;
}
http {
    default_type application/octet-stream;
    server_tokens off;
    log_format node '$status $request_method "$uri" auth=$upstream_status';
    access_log /dev/stdout node;
    client_body_temp_path /tmp/client_body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;
${ingressServer({
  prefix: '/tmp', wafRoot: WAF_ROOT,
  ports: { ingress: NGINX_PORT, customErrors: 0, original: 0, auth: o.authPort, oapi: OAPI_PORT },
  hosts: { listen: '0.0.0.0', auth: o.authHost, oapi: '127.0.0.1' },
})}
    # the stand-in OGC API
    server {
        listen 127.0.0.1:${OAPI_PORT};
        location / {
            default_type application/json;
            return 200 '{"api":"stand-in"}\\n';
        }
    }
}
`;
}

/** The ConfigMaps and the Pod, as one kubectl-applicable List. */
export function nginxPodManifests(o: NginxPodOptions): string {
  const files = (Object.entries(WAF) as [WafFile, string][]).filter(([name]) => !name.endsWith('Dir'));
  const labels = { 'app.kubernetes.io/name': NGINX_POD };
  const items = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${NGINX_POD}-conf`, namespace: o.namespace }, data: { 'nginx.conf': nginxPodConf(o) } },
    {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${NGINX_POD}-waf`, namespace: o.namespace },
      // ConfigMap keys cannot hold '/': one key per file, mapped to its path by the volume's items.
      data: Object.fromEntries(files.map(([name]) => [name, `${o.markers[name]}\n`])),
    },
    {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: NGINX_POD, namespace: o.namespace, labels },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{
          name: 'nginx', image: o.image, imagePullPolicy: 'Never',
          command: ['nginx', '-c', '/etc/svc-ingress/nginx.conf', '-g', 'daemon off;'],
          ports: [{ name: 'http', containerPort: NGINX_PORT }],
          readinessProbe: { tcpSocket: { port: NGINX_PORT }, periodSeconds: 1 },
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          volumeMounts: [
            { name: 'conf', mountPath: '/etc/svc-ingress', readOnly: true },
            { name: 'waf', mountPath: WAF_ROOT, readOnly: true },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        }],
        volumes: [
          { name: 'conf', configMap: { name: `${NGINX_POD}-conf` } },
          { name: 'waf', configMap: { name: `${NGINX_POD}-waf`, items: files.map(([name, url]) => ({ key: name, path: url.replace(/^\//, '') })) } },
          { name: 'tmp', emptyDir: {} },
        ],
      },
    },
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}
