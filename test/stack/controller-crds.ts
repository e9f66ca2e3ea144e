// The CRDs of the controllers the chart's wiring renders for, from the very modules the suites build the controllers
// from (never a copy in this repository): Traefik's (traefik.io Middleware, IngressRoute, ...), and Envoy Gateway's
// chart of CRDs, which carries Gateway API's experimental channel (HTTPRoute with the ExternalAuth filter,
// ReferenceGrant) and its own (SecurityPolicy, EnvoyProxy, Backend, ...).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envoyGatewayModuleDir } from '../controlplane/assets.js';
import { traefikModuleDir } from '../e2e/support/traefik-kube.js';
import { runHelm } from './helm.js';
import { kubectl } from './kubectl.js';

/** Traefik's CRD definitions, as its module ships them. */
export function traefikCrdsYaml(): string {
  const file = join(traefikModuleDir(), 'docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml');
  if (!existsSync(file)) throw new Error(`${file} is missing: update the path to where this Traefik version keeps its CRDs`);
  return readFileSync(file, 'utf8');
}

/** Gateway API (experimental channel) and Envoy Gateway's CRDs: Envoy Gateway's own CRD chart, rendered by helm. */
export function gatewayCrdsYaml(helm: string): string {
  const chart = join(envoyGatewayModuleDir(), 'charts', 'gateway-crds-helm');
  const r = runHelm(helm, ['template', 'crds', chart, '--set', 'crds.gatewayAPI.enabled=true', '--set', 'crds.gatewayAPI.channel=experimental', '--set', 'crds.envoyGateway.enabled=true']);
  if (r.status !== 0) throw new Error(`helm template of ${chart} failed:\n${r.stderr}`);
  return r.stdout;
}

/** Server-side apply of CRDs (too large for a client-side apply's annotation), then waits until they are served. */
export function installCrdsYaml(kubeconfig: string, yaml: string, waitFor: readonly string[]): void {
  const applied = kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '--field-manager=svc-test-crds', '-f', '-'], yaml);
  if (applied.status !== 0) throw new Error(`installing CRDs failed:\n${applied.stderr}`);
  // A CRD just created may have no conditions yet, which kubectl wait reports as an error rather than waiting on.
  let waited = kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', ...waitFor.map((c) => `crd/${c}`)]);
  for (let attempt = 0; waited.status !== 0 && /accessor error/.test(waited.stderr) && attempt < 20; attempt++) {
    waited = kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', ...waitFor.map((c) => `crd/${c}`)]);
  }
  if (waited.status !== 0) throw new Error(`CRDs not established:\n${waited.stderr}`);
}
