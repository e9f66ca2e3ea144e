/**
 * Every proxy configuration the product prescribes, and where each is written: the files of deploy/, the fenced
 * blocks of the documents (named by file and heading), what the chart and `svc auth wiring` render (the same objects
 * as deploy/'s, test/integration/chart-wiring.test.ts), and the load-balancer setups docs/access-rules.md describes in
 * prose. test/e2e/prescribed.test.ts runs each with the real proxy against a hostile client;
 * test/docs/prescribed.test.ts fails when a document or deploy/ holds a configuration this list does not name.
 * Pure data: the docs test reads it without starting anything.
 */
export interface Prescribed {
  /** The configuration's name in the suite and in its printed summary. */
  readonly name: string;
  /** Where it is written: `path` for a file, `path § heading` for a document's fenced block under that heading. */
  readonly sources: readonly string[];
}

const WIRING = 'charts/svc/templates/_wiring.tpl';

export const PRESCRIBED = [
  { name: 'nginx', sources: ['deploy/nginx/svc-auth.conf'] },
  {
    name: 'wis2box nginx',
    sources: [
      'docs/wis2box.md § 1. nginx: the upstream and one line for the client address',
      'docs/wis2box.md § Keycloak in front of a wis2box with svc',
    ],
  },
  { name: 'ingress-nginx behind an HTTP load balancer', sources: ['docs/access-rules.md § Where the address comes from'] },
  { name: 'Traefik (file provider)', sources: ['deploy/traefik/traefik.yaml', 'deploy/traefik/dynamic.yaml'] },
  { name: 'Traefik behind a PROXY-protocol load balancer', sources: ['docs/access-rules.md § Where the address comes from', 'deploy/traefik/traefik.yaml'] },
  { name: 'Traefik CRD provider', sources: ['deploy/traefik/middleware.yaml', 'deploy/values/traefik.yaml', WIRING] },
  {
    name: 'Traefik ingress-nginx provider',
    sources: ['deploy/ingress-nginx/ingress.yaml', 'deploy/ingress-nginx/auth-request-headers.yaml', 'deploy/ingress-nginx/pages-route.yaml', 'deploy/values/ingress-nginx.yaml', 'deploy/values/traefik-ingress-nginx.yaml', WIRING],
  },
  { name: 'Envoy', sources: ['deploy/gateway-api/envoy.yaml'] },
  { name: 'Envoy behind an HTTP load balancer', sources: ['docs/access-rules.md § Where the address comes from', 'deploy/gateway-api/envoy.yaml'] },
  { name: 'Envoy Gateway', sources: ['deploy/gateway-api/envoy-gateway-securitypolicy.yaml', 'deploy/values/envoy-gateway.yaml', WIRING] },
  { name: 'NGINX Gateway Fabric', sources: ['deploy/gateway-api/httproute-externalauth.yaml', 'deploy/values/gateway-api.yaml', WIRING] },
] as const satisfies readonly Prescribed[];

export type PrescribedName = (typeof PRESCRIBED)[number]['name'];

/** deploy/'s folders of proxy configurations: every file in them must be a source above. */
export const CONFIGURATION_DIRS = ['deploy/nginx', 'deploy/traefik', 'deploy/gateway-api', 'deploy/ingress-nginx', 'deploy/values'] as const;

/**
 * A fenced block of a document that configures a proxy in front of svc-auth: nginx's language, or YAML naming a proxy's
 * objects or settings. Such a block must be a source above.
 */
export function isProxyConfiguration(info: string, body: string): boolean {
  const lang = info.split(/\s+/)[0]!.toLowerCase();
  if (lang === 'nginx') return true;
  if (lang !== 'yaml' && lang !== 'yml') return false;
  return /\b(kind:\s*(Ingress|IngressRoute|Middleware|HTTPRoute|SecurityPolicy|Gateway|ClientTrafficPolicy)\b|forwardAuth:|ext_authz|extAuth:|ExternalAuth|auth-url|proxyProtocol:|forwardedHeaders:)/.test(body);
}
