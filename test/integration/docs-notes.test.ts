// The chart's NOTES.txt, as helm renders it, agrees with what it describes: every `svc` command in it parses with the
// CLI's commander tree (nothing runs), every ingress annotation and proxy setting it shows is what the manifests in
// deploy/ set (rendered as release svc in namespace svc, the manifests' own assumption), it leaves out none of the
// ingress-nginx annotations deploy/ sets, and the annotations the documentation quotes from the chart's objects are
// the ones helm renders. helm renders NOTES.txt only at install time: here a copy of the chart renders it into a
// ConfigMap through `include`, with the chart's own template engine.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { annotationMentions, annotationMismatch, deployAnnotations, manifestSettings, refusal, settingMismatches, textExamples } from '../docs/examples.js';
import { read, trackedFiles } from '../docs/markdown.js';
import { CHART_DIR, helmBinary, helmTemplate, parseManifests, runHelm, type Manifest } from '../stack/helm.js';

const files = trackedFiles();
const DEPLOY_MANIFESTS = files.filter((f) => f.startsWith('deploy/') && /\.ya?ml$/.test(f));
const PROXY_MANIFESTS = DEPLOY_MANIFESTS.filter((f) => /^deploy\/(ingress-nginx|traefik|gateway-api)\//.test(f));
const DOCS = files.filter((f) => f === 'README.md' || f === 'deploy/README.md' || (f.startsWith('docs/') && f.endsWith('.md')));

const VALUE_SETS: Record<string, Record<string, unknown>> = {
  defaults: {},
  'without svc-management': { management: { enabled: false } },
  'moving off ingress-nginx': { networkPolicy: { proxyNamespaces: ['ingress-nginx', 'traefik'] } },
  'no NetworkPolicy': { networkPolicy: { enabled: false } },
  'browser sign-in': {
    auth: {
      oidc: { issuers: ['https://login.example.org/realms/wis2'], audiences: ['svc-data'] },
      signIn: { enabled: true, externalURLs: ['https://data.example.org'], clientId: 'svc-browser', sessionKeys: { existingSecret: 'svc-session-keys', key: 'session-keys' } },
    },
  },
};

// Wired into another namespace than the release's: the prerequisites NOTES.txt says, as `svc auth wiring` does.
const DATA_HOSTS = [{ host: 'data.example.org', paths: [{ path: '/data', service: 'waf', port: 80 }] }];
VALUE_SETS['wired into namespace data, TLS'] = { protect: { controller: 'traefik', namespace: 'data', tlsSecretName: 'data-tls', hosts: DATA_HOSTS } };
VALUE_SETS['wired into namespace data, a Gateway'] = { protect: { controller: 'gateway-api', namespace: 'data', hosts: DATA_HOSTS, gatewayApi: { parentRefs: [{ name: 'gw', namespace: 'gateway-system' }] } } };

// The chart wired into each controller (protect.*), with deploy/'s example values.
for (const file of ['ingress-nginx', 'traefik-ingress-nginx', 'traefik', 'envoy-gateway', 'gateway-api']) {
  VALUE_SETS[`wired (deploy/values/${file}.yaml)`] = load(readFileSync(join(CHART_DIR, '..', '..', 'deploy', 'values', `${file}.yaml`), 'utf8')) as Record<string, unknown>;
}

const work = mkdtempSync(join(tmpdir(), 'svc-notes-'));

/** The YAML indented below the first line that reads `header`, as data. */
function block(text: string, header: string): unknown {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.trim() === header);
  expect(at).toBeGreaterThanOrEqual(0);
  const indent = (l: string): number => l.length - l.trimStart().length;
  const body: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (l.trim() !== '' && indent(l) <= indent(lines[at]!)) break;
    body.push(l);
  }
  return load(body.join('\n'));
}
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** NOTES.txt of the chart rendered with `values`, as release svc in namespace svc. */
function renderNotes(helm: string, values: Record<string, unknown>): string {
  const chart = join(work, 'chart');
  const valuesFile = join(work, 'values.json');
  writeFileSync(valuesFile, JSON.stringify(values));
  const r = runHelm(helm, ['template', 'svc', chart, '--namespace', 'svc', '-f', valuesFile, '--show-only', 'templates/zz-rendered-notes.yaml']);
  if (r.status !== 0) throw new Error(`helm template failed:\n${r.stderr}`);
  const [cm] = parseManifests(r.stdout) as (Manifest & { data: Record<string, string> })[];
  return cm!.data['NOTES.txt']!;
}

describe('the chart NOTES.txt, rendered', () => {
  let helm = '';
  const notes = new Map<string, string>();

  beforeAll(async () => {
    helm = await helmBinary();
    cpSync(CHART_DIR, join(work, 'chart'), { recursive: true });
    writeFileSync(
      join(work, 'chart', 'templates', 'zz-rendered-notes.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rendered-notes\ndata:\n  NOTES.txt: |\n{{ include "svc/templates/NOTES.txt" . | indent 4 }}\n',
    );
    for (const [name, values] of Object.entries(VALUE_SETS)) notes.set(name, renderNotes(helm, values));
  }, 15 * 60_000);

  const sets = Object.keys(VALUE_SETS);
  /** The sets without protect.*: NOTES then shows every controller's settings, as deploy/ has them. */
  const unwired = sets.filter((n) => !n.startsWith('wired'));
  const wired = sets.filter((n) => n.startsWith('wired'));

  it.each(sets)('with the %s values: every svc command parses with the CLI', async (name) => {
    const examples = textExamples(notes.get(name)!, `NOTES.txt (${name})`);
    expect(examples.length).toBeGreaterThan(0);
    const refused: string[] = [];
    for (const e of examples) {
      const why = await refusal(e.words);
      if (why !== undefined) refused.push(`${e.where}: svc ${e.words.join(' ')}: ${why}`);
    }
    expect(refused).toEqual([]);
  });

  it.each(unwired)('with the %s values: the ingress annotations are those of deploy/, all of them', (name) => {
    const text = notes.get(name)!;
    const manifests = deployAnnotations(DEPLOY_MANIFESTS);
    const mentions = annotationMentions(text, `NOTES.txt (${name})`, false);
    expect(mentions.map((m) => annotationMismatch(m, manifests)).filter((x) => x !== undefined)).toEqual([]);
    const ingress = (load(read('deploy/ingress-nginx/ingress.yaml')) as Manifest).metadata.annotations!;
    const shown = new Set(mentions.map((m) => m.key));
    expect(Object.keys(ingress).filter((k) => !shown.has(k))).toEqual([]);
  });

  it.each(unwired)('with the %s values: the proxy settings it shows are those of deploy/', (name) => {
    // Indented `key: value` lines (the Traefik middleware's), read like the documentation's code spans.
    const lines = notes.get(name)!.split('\n').map((l) => (/^\s+[A-Za-z_][\w.]*:\s+\S/.test(l) && !l.includes('ingress.kubernetes.io/') ? `\`${l.trim()}\`` : ''));
    const settings = manifestSettings(PROXY_MANIFESTS);
    expect(lines.filter((l) => l !== '').length).toBeGreaterThan(2);
    expect(settingMismatches(lines.join('\n'), `NOTES.txt (${name})`, settings)).toEqual([]);
  });

  it.each(wired)('with the %s values: it shows exactly the settings of the objects the chart rendered', (name) => {
    const text = notes.get(name)!;
    const m = helmTemplate(helm, { namespace: 'svc', values: VALUE_SETS[name]! }).manifests;
    const ingress = m.find((o) => o.kind === 'Ingress' && o.metadata.name === 'svc-data');
    const middleware = m.find((o) => o.kind === 'Middleware') as (Manifest & { spec: { forwardAuth: unknown } }) | undefined;
    const policy = m.find((o) => o.kind === 'SecurityPolicy') as (Manifest & { spec: { extAuth: unknown } }) | undefined;
    if (ingress) {
      const shown = Object.fromEntries(annotationMentions(text, `NOTES.txt (${name})`, false).map((a) => [a.key, a.value]));
      expect(shown).toEqual(ingress.metadata.annotations);
    }
    if (middleware) expect(block(text, 'forwardAuth:')).toEqual(middleware.spec.forwardAuth);
    if (policy) expect(block(text, 'extAuth:')).toEqual(policy.spec.extAuth);
    for (const route of m.filter((o) => o.kind === 'HTTPRoute' && o.metadata.name !== 'svc-auth-pages')) expect(text).toContain(`HTTPRoute ${route.metadata.name}`);
    expect(ingress ?? middleware ?? m.find((o) => o.kind === 'HTTPRoute')).toBeDefined();
    // svc-auth's pages, as the pages route carries them.
    const pages = m.find((o) => o.metadata.name === 'svc-auth-pages')!;
    const paths = JSON.stringify(pages.spec).match(/\/authz\/[a-z0-9/-]+/g)!;
    expect(text).toContain([...new Set(paths)].join(', '));
  });

  it('says what the wiring assumes across namespaces: the TLS Secret in both, the Gateway admitting both', () => {
    const flat = (name: string) => notes.get(name)!.replace(/\s+/g, ' ');
    expect(flat('wired into namespace data, TLS')).toContain('The TLS Secret data-tls (protect.tlsSecretName) must exist in both namespaces: data (the data routes) and svc (svc-auth-pages).');
    expect(flat('wired into namespace data, a Gateway')).toContain('The Gateway gateway-system/gw must let HTTPRoutes of namespaces data and svc attach');
    expect(flat('wired (deploy/values/traefik.yaml)')).not.toContain('must exist in both namespaces');
    expect(flat('wired (deploy/values/traefik.yaml)')).toContain('(kube-system on k3s) fail closed until networkPolicy.controllerPods.traefik.namespace names it');
    expect(flat('defaults')).toContain('every request through it fails closed (Traefik in traefik, or kube-system on k3s;');
    expect(flat('defaults')).toContain('auth wiring --controller ingress-nginx');
  });

  it('says which namespaces reach svc-auth as the values set them, and warns when nothing restricts it', () => {
    expect(notes.get('defaults')).toContain('namespaces labelled {"kubernetes.io/metadata.name":"ingress-nginx"}');
    expect(notes.get('moving off ingress-nginx')).toContain('only the namespaces ingress-nginx, traefik');
    expect(notes.get('no NetworkPolicy')).toContain('WARNING: networkPolicy.enabled=false');
    expect(notes.get('browser sign-in')).toContain('https://data.example.org/authz/callback');
    expect(notes.get('defaults')).not.toContain('Browser sign-in');
  });
});

describe('annotations the documentation quotes from the chart', () => {
  it('are rendered by the chart with those values', async () => {
    const helm = await helmBinary();
    const r = helmTemplate(helm, { namespace: 'svc' });
    expect(r.status).toBe(0);
    const rendered = new Map<string, Set<string>>();
    for (const m of r.manifests) for (const [k, v] of Object.entries(m.metadata.annotations ?? {})) (rendered.get(k) ?? rendered.set(k, new Set()).get(k)!).add(v);
    expect(rendered.get('helm.sh/resource-policy')).toEqual(new Set(['keep']));
    const wrong: string[] = [];
    for (const f of DOCS) {
      readFileSync(join(CHART_DIR, '..', '..', f), 'utf8').split('\n').forEach((line, i) => {
        for (const m of line.matchAll(/`([a-z0-9.-]+\.[a-z]+\/[A-Za-z0-9._-]+):\s*"?([^`"]+)"?`/g)) {
          const values = rendered.get(m[1]!);
          if (values && !values.has(m[2]!.trim())) wrong.push(`${f}:${i + 1}: ${m[1]}: ${m[2]}, but the chart renders ${[...values].join(' or ')}`);
        }
      });
    }
    expect(wrong).toEqual([]);
  }, 15 * 60_000);
});
