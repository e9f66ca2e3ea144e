// What `svc auth wiring` says its objects assume before printing them: the namespaces, the TLS Secret and where it
// must exist, and who the chart's NetworkPolicy admits, with the flag that changes each. That the NetworkPolicy read
// here is the one helm renders is checked in test/integration/chart-wiring.test.ts.
import { describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { removeDir, svc, tempDir } from '../../test/cli/harness.js';
import { wiringObjects, type KubeObject } from './wiring-objects.js';
import { admittedPeers, wiringPrerequisites } from './wiring-prerequisites.js';
import { wiringValues } from './wiring-values.js';

const HOSTS = [{ host: 'data.example.org', paths: [{ path: '/data', service: 'waf', port: 80 }, { path: '/oapi', service: 'oapi', port: 80 }] }];
const of = (over: Record<string, unknown>) => wiringValues([over], (m) => new Error(m));
const said = (over: Record<string, unknown>, chartWired = false, ns = 'svc'): string => wiringPrerequisites(of(over), ns, chartWired).join('\n');

describe('the prerequisites', () => {
  it('are YAML comments, one line each, opening with the controller', () => {
    const lines = wiringPrerequisites(of({ protect: { controller: 'traefik', hosts: HOSTS } }), 'svc', false);
    expect(lines.every((l) => l.startsWith('# '))).toBe(true);
    expect(lines[0]).toBe('# svc auth wiring for traefik: what these objects assume, and what changes it.');
  });

  it('name svc-auth\'s namespace and address, where the routes and the pages route go, and what moves them', () => {
    const text = said({ protect: { controller: 'ingress-nginx', namespace: 'data', hosts: HOSTS } });
    expect(text).toContain('the Service svc-auth of namespace svc (-n, the release\'s), asked at http://svc-auth.svc.svc.cluster.local:8080');
    expect(text).toContain('The data routes go in namespace data, beside the Services they send to (waf, oapi); protect.namespace');
    expect(text).toContain('svc-auth-pages (svc-auth\'s pages on the same hosts) goes in namespace svc');
  });

  it('the TLS Secret: in both namespaces when the routes are elsewhere, in the one otherwise, none when unnamed', () => {
    expect(said({ protect: { controller: 'traefik', namespace: 'data', tlsSecretName: 'data-tls', hosts: HOSTS } }))
      .toContain('the Secret data-tls (protect.tlsSecretName) must exist in both namespaces, data (the data routes) and svc (svc-auth-pages): create it in svc too');
    expect(said({ protect: { controller: 'traefik', tlsSecretName: 'data-tls', hosts: HOSTS } })).toContain('must exist in namespace svc.');
    expect(said({ protect: { controller: 'ingress-nginx', hosts: HOSTS } })).toContain('TLS: none in these objects (protect.tlsSecretName');
  });

  it('a Gateway: it must admit routes of both namespaces; TLS is its own', () => {
    const text = said({ protect: { controller: 'envoy-gateway', namespace: 'data', hosts: HOSTS, envoyGateway: { parentRefs: [{ name: 'eg', namespace: 'envoy-gateway-system' }] } } });
    expect(text).toContain('The Gateway envoy-gateway-system/eg must let HTTPRoutes of namespaces data and svc attach (its listeners\' allowedRoutes); TLS is its listeners\' certificateRefs.');
  });

  it('hand-wired Traefik with the chart\'s defaults: only ingress-nginx is admitted, so it fails closed; the --set that admits it', () => {
    const text = said({ protect: { controller: 'traefik', hosts: HOSTS } });
    expect(text).toContain('the chart installed without protect.controller (you apply these objects yourself) lets only the pods of namespaces labelled kubernetes.io/metadata.name=ingress-nginx reach svc-auth\'s port');
    expect(text).toContain('traefik\'s proxies run in namespace traefik by default (kube-system on k3s): not admitted, every request through them would fail closed.');
    expect(text).toContain("--set 'networkPolicy.proxyNamespaces={traefik}'");
  });

  it('hand-wired and admitted (ingress-nginx; Traefik named in proxyNamespaces): no failure foretold, the flag for another namespace', () => {
    for (const over of [{ protect: { controller: 'ingress-nginx', hosts: HOSTS } }, { protect: { controller: 'traefik', hosts: HOSTS }, networkPolicy: { proxyNamespaces: ['traefik'] } }]) {
      const text = said(over);
      expect(text).not.toContain('fail closed');
      expect(text).toContain("--set 'networkPolicy.proxyNamespaces={NAMESPACE}'");
    }
    expect(said({ protect: { controller: 'traefik', hosts: HOSTS }, networkPolicy: { proxyNamespaces: ['kube-system'] } })).toContain('fail closed');
  });

  it('an ingressPodSelector the controller\'s pods do not carry admits nothing of them', () => {
    expect(said({ protect: { controller: 'ingress-nginx', hosts: HOSTS }, networkPolicy: { ingressPodSelector: { app: 'edge' } } })).toContain('fail closed');
  });

  it('chart-wired: the controller\'s pods (controllerPods, the Gateway\'s for gateway-api) and proxyNamespaces, and the value that moves them', () => {
    expect(said({ protect: { controller: 'traefik', hosts: HOSTS } }, true)).toContain('the chart installed with these values lets only the pods labelled app.kubernetes.io/name=traefik in namespace traefik reach');
    expect(said({ protect: { controller: 'traefik', hosts: HOSTS } }, true)).toContain('--set networkPolicy.controllerPods.traefik.namespace=NAMESPACE');
    const gw = of({ protect: { controller: 'gateway-api', hosts: HOSTS, gatewayApi: { parentRefs: [{ name: 'gw', namespace: 'edge' }] } }, networkPolicy: { proxyNamespaces: ['old'] } });
    expect(admittedPeers(gw, 'svc', true)).toEqual([
      { namespaces: { names: ['edge'] }, podLabels: { 'gateway.networking.k8s.io/gateway-name': 'gw' } },
      { namespaces: { names: ['old'] }, podLabels: {} },
    ]);
  });

  it('the NetworkPolicy off: says anyone may ask', () => {
    expect(said({ protect: { controller: 'traefik', hosts: HOSTS }, networkPolicy: { enabled: false } })).toContain('NetworkPolicy: off (networkPolicy.enabled=false): any pod in the cluster may ask svc-auth about any token.');
  });
});

describe('svc auth wiring prints them', () => {
  it('before the YAML documents, which still parse to exactly the objects; with -o json on stderr, stdout one List', async () => {
    const dir = tempDir('svc-wiring-prereq-');
    try {
      const file = join(dir, 'values.yaml');
      writeFileSync(file, JSON.stringify({ protect: { controller: 'traefik', namespace: 'data', tlsSecretName: 'data-tls', hosts: HOSTS } }));
      const yaml = await svc(['-n', 'svc', 'auth', 'wiring', '-f', file]);
      expect({ code: yaml.code, stderr: yaml.stderr }).toEqual({ code: 0, stderr: '' });
      expect(yaml.stdout.startsWith('# svc auth wiring for traefik')).toBe(true);
      expect(yaml.stdout).toContain('must exist in both namespaces, data (the data routes) and svc (svc-auth-pages)');
      expect(yaml.stdout).toContain('the chart installed with these values lets only');
      expect((loadAll(yaml.stdout) as KubeObject[]).filter(Boolean)).toEqual(wiringObjects(of({ protect: { controller: 'traefik', namespace: 'data', tlsSecretName: 'data-tls', hosts: HOSTS } }), 'svc'));
      const flags = await svc(['-n', 'svc', 'auth', 'wiring', '--controller', 'traefik', '--route', 'data.example.org/data=waf:80', '-o', 'json']);
      expect(flags.code).toBe(0);
      expect(flags.stderr).toContain('you apply these objects yourself');
      expect(flags.stderr).toContain("--set 'networkPolicy.proxyNamespaces={traefik}'");
      expect((JSON.parse(flags.stdout) as { kind: string }).kind).toBe('List');
    } finally {
      removeDir(dir);
    }
  });
});
