/**
 * What the objects `svc auth wiring` prints assume of the cluster, said before them as YAML comments so the output can
 * be pasted as it is: the namespaces (svc-auth's, the routes', the pages route's), the TLS Secret and every namespace
 * it must exist in, and who the chart's NetworkPolicy lets reach svc-auth, each with the flag or value that changes it.
 * The NetworkPolicy is the chart's (templates/networkpolicy.yaml, svc.controllerPeer in _wiring.tpl); read here from
 * the same values, because a hand-wired controller in a namespace it does not admit fails closed on every request.
 * Pure: no I/O.
 */
import { routesNamespace, authUrl, type Controller, type WiringValues } from './wiring-objects.js';

type Wired = Exclude<Controller, 'none'>;

/** Where each controller's proxies usually run, when that is not where the chart's defaults look. */
const ELSEWHERE: Partial<Record<Wired, string>> = { traefik: 'kube-system on k3s' };

/** svc.proxyController: the controller whose pods ask svc-auth (Traefik's, for its ingress-nginx provider). */
export function proxyController(v: WiringValues): Wired {
  const c = v.protect.controller as Wired;
  return c === 'ingress-nginx' && v.protect.ingressNginx.readBy === 'traefik' ? 'traefik' : c;
}

/** One peer the NetworkPolicy admits: a namespace by name or by labels, and the pods' labels (none: any pod). */
export interface Peer {
  readonly namespaces: { readonly names: readonly string[] } | { readonly labels: Readonly<Record<string, string>> };
  readonly podLabels: Readonly<Record<string, string>>;
}

/** svc.controllerPeer: the controller's proxy pods as the chart admits them with protect.controller set. */
function controllerPeer(v: WiringValues, releaseNamespace: string): Peer {
  const c = proxyController(v);
  const pods = v.networkPolicy.controllerPods[c];
  if (c !== 'gateway-api') return { namespaces: { names: [pods.namespace] }, podLabels: pods.podLabels };
  const gateway = v.protect.gatewayApi.parentRefs[0] ?? {};
  const namespace = pods.namespace || String(gateway.namespace ?? '') || routesNamespace(v, releaseNamespace);
  const labels = Object.keys(pods.podLabels).length > 0 ? pods.podLabels : { 'gateway.networking.k8s.io/gateway-name': String(gateway.name ?? '') };
  return { namespaces: { names: [namespace] }, podLabels: labels };
}

/**
 * Who may reach svc-auth's auth port, as templates/networkpolicy.yaml renders it: with `chartWired` (the chart
 * installed with these protect values) the controller's pods, else the proxy namespaces or the namespace selector;
 * proxyNamespaces is added to either. Undefined when the NetworkPolicy is off (anyone may).
 */
export function admittedPeers(v: WiringValues, releaseNamespace: string, chartWired: boolean): Peer[] | undefined {
  const np = v.networkPolicy;
  if (!np.enabled) return undefined;
  const byName: Peer[] = np.proxyNamespaces.length > 0 ? [{ namespaces: { names: [...np.proxyNamespaces] }, podLabels: {} }] : [];
  if (chartWired) return [controllerPeer(v, releaseNamespace), ...byName];
  if (byName.length > 0) return [{ ...byName[0]!, podLabels: np.ingressPodSelector }];
  return [{ namespaces: { labels: np.ingressNamespaceSelector }, podLabels: np.ingressPodSelector }];
}

const labelsText = (labels: Readonly<Record<string, string>>): string => Object.entries(labels).map(([k, x]) => `${k}=${x}`).join(',');

function peerText(p: Peer): string {
  const where = 'names' in p.namespaces ? `namespace ${p.namespaces.names.join(', ')}` : `namespaces labelled ${labelsText(p.namespaces.labels)}`;
  return Object.keys(p.podLabels).length > 0 ? `the pods labelled ${labelsText(p.podLabels)} in ${where}` : `the pods of ${where}`;
}

/**
 * Whether `peers` admit the controller's proxy pods (`home`): their namespace named, or selected by its name label
 * (the one label every namespace is known to carry), and the pods' labels among theirs.
 */
function admits(peers: readonly Peer[], home: Peer): boolean {
  const namespace = (home.namespaces as { names: readonly string[] }).names[0]!;
  const inNamespace = (p: Peer) => ('names' in p.namespaces
    ? p.namespaces.names.includes(namespace)
    : Object.entries(p.namespaces.labels).every(([k, x]) => k === 'kubernetes.io/metadata.name' && x === namespace));
  return peers.some((p) => inNamespace(p) && Object.entries(p.podLabels).every(([k, x]) => home.podLabels[k] === x));
}

/** The NetworkPolicy lines: who it admits, and what to set when the controller's proxies are not among them. */
function networkPolicyLines(v: WiringValues, releaseNamespace: string, chartWired: boolean): string[] {
  const peers = admittedPeers(v, releaseNamespace, chartWired);
  if (peers === undefined) return ['- NetworkPolicy: off (networkPolicy.enabled=false): any pod in the cluster may ask svc-auth about any token.'];
  const c = proxyController(v);
  const install = chartWired ? 'installed with these values' : 'installed without protect.controller (you apply these objects yourself)';
  const lines = [`- NetworkPolicy: the chart ${install} lets only ${peers.map(peerText).join(', or ')} reach svc-auth's port.`];
  const home = controllerPeer(v, releaseNamespace);
  const where = (home.namespaces as { names: readonly string[] }).names[0]!;
  const elsewhere = ELSEWHERE[c] ? ` (${ELSEWHERE[c]})` : '';
  if (chartWired) {
    lines.push(`  ${c}'s proxies in another namespace${elsewhere}: --set networkPolicy.controllerPods.${c}.namespace=NAMESPACE (and .podLabels) when you install the chart.`);
  } else if (!admits(peers, home)) {
    lines.push(
      `  ${c}'s proxies run in namespace ${where} by default${elsewhere}: not admitted, every request through them would fail closed.`,
      `  Admit their namespace when you install or upgrade the chart: --set 'networkPolicy.proxyNamespaces={${where}}'`,
      `  (or install it with protect.controller: ${v.protect.controller} and these hosts: it renders these objects and admits exactly ${c}'s pods).`,
    );
  } else {
    lines.push(`  ${c}'s proxies in another namespace${elsewhere}: --set 'networkPolicy.proxyNamespaces={NAMESPACE}' when you install or upgrade the chart.`);
  }
  return lines;
}

/** Where the objects go, and the TLS Secret with every namespace it must exist in. */
function namespaceLines(v: WiringValues, releaseNamespace: string): string[] {
  const p = v.protect;
  const ns = routesNamespace(v, releaseNamespace);
  const services = [...new Set(p.hosts.flatMap((h) => h.paths.map((x) => x.service)))].join(', ');
  const gateway = p.controller === 'envoy-gateway' || p.controller === 'gateway-api';
  const lines = [
    `- svc-auth: the Service svc-auth of namespace ${releaseNamespace} (-n, the release's), asked at ${authUrl(v, releaseNamespace)} (protect.authURL to change).`,
    `- The data routes go in namespace ${ns}, beside the Services they send to (${services}); protect.namespace in a values file (-f) moves them.`,
    `- svc-auth-pages (svc-auth's pages on the same hosts) goes in namespace ${releaseNamespace}, beside svc-auth.`,
  ];
  if (gateway) {
    const gw = (p.controller === 'envoy-gateway' ? p.envoyGateway : p.gatewayApi).parentRefs.map((r) => `${r.namespace ?? ns}/${r.name}`).join(', ');
    const namespaces = [...new Set([ns, releaseNamespace])];
    const from = `${namespaces.length > 1 ? 'namespaces' : 'namespace'} ${namespaces.join(' and ')}`;
    lines.push(`- The Gateway ${gw} must let HTTPRoutes of ${from} attach (its listeners' allowedRoutes); TLS is its listeners' certificateRefs.`);
  } else if (p.tlsSecretName) {
    const both = ns === releaseNamespace ? `namespace ${ns}` : `both namespaces, ${ns} (the data routes) and ${releaseNamespace} (svc-auth-pages): create it in ${releaseNamespace} too (cert-manager: a Certificate there for the same hosts)`;
    lines.push(`- TLS: the Secret ${p.tlsSecretName} (protect.tlsSecretName) must exist in ${both}.`);
  } else {
    lines.push('- TLS: none in these objects (protect.tlsSecretName names the hosts\' Secret).');
  }
  return lines;
}

/**
 * The prerequisites as comment lines (each starting `# `). `chartWired`: the controller came from a values file, so
 * the chart installed with those values renders these objects and its NetworkPolicy admits that controller's pods;
 * from --controller, the chart is taken to be installed without protect.controller.
 */
export function wiringPrerequisites(v: WiringValues, releaseNamespace: string, chartWired: boolean): string[] {
  const lines = [
    `svc auth wiring for ${v.protect.controller}${v.protect.controller === 'ingress-nginx' ? ` (read by ${v.protect.ingressNginx.readBy})` : ''}: what these objects assume, and what changes it.`,
    ...namespaceLines(v, releaseNamespace),
    ...networkPolicyLines(v, releaseNamespace, chartWired),
  ];
  return lines.map((l) => `# ${l}`);
}
