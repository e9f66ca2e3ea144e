/**
 * `svc auth wiring`: the objects the chart renders from its `protect` values (an Ingress with auth-url, Traefik's
 * Middleware and IngressRoute, Envoy Gateway's HTTPRoutes and SecurityPolicy, Gateway API's ExternalAuth routes, and
 * svc-auth's pages route), printed for people who write their own manifests or GitOps overlays. The same values files
 * as `helm install -f`, or flags for the common case; the output is what `helm template` renders for them
 * (test/integration/chart-wiring.test.ts diffs the two).
 */
import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { usageError } from '../errors.js';
import { structured } from '../output.js';
import type { CommandContext } from './common.js';
import { CONTROLLERS, wiringObjects, type ProtectedHost } from './wiring-objects.js';
import { wiringPrerequisites } from './wiring-prerequisites.js';
import { wiringValues } from './wiring-values.js';

export interface WiringOptions {
  readonly controller?: string;
  readonly values?: readonly string[];
  readonly route?: readonly string[];
  readonly gateway?: readonly string[];
  readonly output: 'yaml' | 'json';
}

/** What a route flag must look like, in words. */
const ROUTE_FORM = 'HOST/PATH=SERVICE:PORT, e.g. data.example.org/data=waf:80: the host name alone (no scheme, no port), the path prefix it protects (none: the whole host), then the Service in the routes\' namespace and its port number';

/** `HOST[/PATH]=SERVICE:PORT` flags as protect.hosts, grouped by host in the order given. */
export function routesOf(flags: readonly string[], commandPath: string): ProtectedHost[] {
  const hosts = new Map<string, { path: string; service: string; port: number }[]>();
  for (const flag of flags) {
    // A URL is what people have at hand; the route is the host and path of one, without the scheme.
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(flag)) throw usageError(`--route ${flag}: leave out ${flag.split('//')[0]}//: write ${ROUTE_FORM} (see ${commandPath} --help)`);
    const m = /^([^/=]+)(\/[^=]*)?=([^:=]+):([0-9]+)$/.exec(flag);
    if (!m) throw usageError(`--route ${flag}: write ${ROUTE_FORM} (see ${commandPath} --help)`);
    const [, host, path, service, port] = m as unknown as [string, string, string | undefined, string, string];
    const list = hosts.get(host) ?? hosts.set(host, []).get(host)!;
    list.push({ path: path ?? '/', service, port: Number(port) });
  }
  return [...hosts].map(([host, paths]) => ({ host, paths }));
}

function readValuesFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw usageError(`-f ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
  try {
    // A values file is one YAML document; helm reads the first of several.
    const [doc] = loadAll(text);
    if (doc !== undefined && doc !== null && (typeof doc !== 'object' || Array.isArray(doc))) throw new Error('not a map of values');
    return doc ?? {};
  } catch (e) {
    throw usageError(`-f ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
}

export async function wiring(ctx: CommandContext, releaseNamespace: string | undefined, opts: WiringOptions): Promise<number> {
  const files: unknown[] = (opts.values ?? []).map(readValuesFile);
  const protect: Record<string, unknown> = {};
  if (opts.controller !== undefined) protect.controller = opts.controller;
  if (opts.route !== undefined && opts.route.length > 0) protect.hosts = routesOf(opts.route, ctx.commandPath);
  if (opts.gateway !== undefined && opts.gateway.length > 0) {
    const parentRefs = opts.gateway.map((g) => {
      const m = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)$/.exec(g);
      if (!m) throw usageError(`--gateway ${g}: write NAMESPACE/NAME of the Gateway, e.g. envoy-gateway-system/eg (see ${ctx.commandPath} --help)`);
      return { name: m[2]!, namespace: m[1]! };
    });
    protect.envoyGateway = { parentRefs };
    protect.gatewayApi = { parentRefs };
  }
  files.push({ protect });
  const values = wiringValues(files, (message) => usageError(`${message} (see ${ctx.commandPath} --help)`));
  if (values.protect.controller === 'none') {
    throw usageError(`choose the controller: --controller ${CONTROLLERS.filter((c) => c !== 'none').join('|')} (or protect.controller in a values file)`);
  }
  const namespace = releaseNamespace ?? 'default';
  if (releaseNamespace === undefined) ctx.io.err('svc-auth\'s namespace: default (give -n NAMESPACE, the release\'s namespace, as to helm)\n');
  const objects = wiringObjects(values, namespace);
  // From a values file the chart is installed with the same protect values; from --controller, the objects are
  // applied by hand beside a chart installed without them. The two admit different proxies (wiring-prerequisites.ts).
  const prerequisites = `${wiringPrerequisites(values, namespace, opts.controller === undefined).join('\n')}\n`;
  if (opts.output === 'json') {
    // JSON has no comments: the prerequisites go to stderr, stdout stays one List.
    ctx.io.err(prerequisites);
    ctx.io.out(structured('json', { apiVersion: 'v1', kind: 'List', items: objects }));
  } else {
    ctx.io.out(prerequisites + objects.map((o) => structured('yaml', o)).join('---\n'));
  }
  return 0;
}
