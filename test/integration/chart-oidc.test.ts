// The chart's single sign-on values (auth.oidc.*) as svc-auth reads them: kube-apiserver's prefix flags, required
// claims, and the AuthenticationConfiguration rendered into a ConfigMap, mounted and passed as --authentication-config.
// Each rendering is parsed by svc-auth's own argument parser, so the chart cannot hand it something it refuses.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { parseArgs } from '../../authz/args.js';
import { parseAuthenticationConfiguration } from '../../authz/identity/oidc-config.js';
import { helmBinary, helmTemplate, ofKind, type Manifest } from '../stack/helm.js';

interface Pod {
  containers: { args?: string[]; volumeMounts?: { name: string; mountPath: string }[] }[];
  volumes?: { name: string; configMap?: { name: string } }[];
}
const podOf = (m: Manifest[]): Pod => (ofKind(m, 'Deployment', 'svc-auth')[0]!.spec as { template: { spec: Pod } }).template.spec;
const annotationsOf = (m: Manifest[]): Record<string, string> | undefined => (ofKind(m, 'Deployment', 'svc-auth')[0]!.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations;

/** svc-auth's parse of the rendered args, with the mounted files written where the pod would have them. */
function svcAuthReads(args: string[], files: Record<string, string> = {}): ReturnType<typeof parseArgs> {
  const dir = mkdtempSync(join(tmpdir(), 'chart-oidc-'));
  const local = args.map((a) => (a in files ? join(dir, a.replaceAll('/', '_')) : a));
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path.replaceAll('/', '_')), text);
  const i = local.indexOf('--snapshot-configmap');
  // A snapshot source that needs no cluster, in place of the ConfigMap source.
  const argv = [...local.slice(0, i), '--scopes-dir', dir, ...local.slice(i + 2).filter((a, k, all) => a !== '--namespace' && all[k - 1] !== '--namespace')];
  return parseArgs(argv, { out: () => undefined, err: (s) => void process.stderr.write(s) });
}

describe('chart auth.oidc.* as svc-auth reads them', () => {
  let helm: string;
  beforeAll(async () => {
    helm = await helmBinary();
  }, 15 * 60_000);
  const render = (oidc: Record<string, unknown>) => {
    const r = helmTemplate(helm, { namespace: 'svc', values: { auth: { oidc } } });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.manifests;
  };

  it("usernamePrefix, groupsPrefix and requiredClaims become kube-apiserver's flags; \"\" keeps its defaults", () => {
    const plain = podOf(render({ issuers: ['https://idp.example.org/dex'], audiences: ['svc-data'] })).containers[0]!.args!;
    expect(plain.join(' ')).not.toMatch(/--oidc-username-prefix|--oidc-groups-prefix|--oidc-required-claim|--authentication-config/);
    expect(svcAuthReads(plain)).toMatchObject({ oidc: { issuers: [{ username: { prefix: 'https://idp.example.org/dex#' }, groups: { prefix: '' } }] } });
    const args = podOf(render({ issuers: ['https://idp.example.org/dex'], audiences: ['svc-data'], usernamePrefix: '-', groupsPrefix: 'corp:', requiredClaims: { hd: 'example.org' } })).containers[0]!.args!;
    expect(args.join(' ')).toContain('--oidc-username-prefix - --oidc-groups-prefix corp: --oidc-required-claim hd=example.org');
    expect(svcAuthReads(args)).toMatchObject({ oidc: { issuers: [{ username: { prefix: '' }, groups: { prefix: 'corp:' }, requiredClaims: [{ claim: 'hd', requiredValue: 'example.org' }] }] } });
  });

  it('authenticationConfig: a ConfigMap mounted and passed as --authentication-config, rolled on change; two issuers apart', () => {
    const config = {
      apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration',
      jwt: ['a', 'b'].map((p) => ({ issuer: { url: `https://${p}.example.org`, audiences: ['svc-data'] }, claimMappings: { username: { claim: 'sub', prefix: `${p}:` }, groups: { claim: 'groups', prefix: `${p}:` } } })),
    };
    const m = render({ authenticationConfig: config, caConfigMap: 'idp-ca' });
    const pod = podOf(m);
    const args = pod.containers[0]!.args!;
    expect(args.join(' ')).toContain('--authentication-config /etc/svc-auth/authn/authentication-config.yaml --oidc-ca-file /etc/svc-auth/oidc-ca/ca.crt');
    expect(args.join(' ')).not.toContain('--oidc-issuer');
    const cm = ofKind(m, 'ConfigMap', 'svc-auth-authentication-config')[0]! as Manifest & { data: Record<string, string> };
    const text = cm.data['authentication-config.yaml']!;
    expect(load(text)).toEqual(config);
    expect(parseAuthenticationConfiguration(text, 'authentication-config.yaml').map((i) => i.username.prefix)).toEqual(['a:', 'b:']);
    expect(pod.volumes).toContainEqual({ name: 'authentication-config', configMap: { name: 'svc-auth-authentication-config' } });
    expect(pod.containers[0]!.volumeMounts).toContainEqual({ name: 'authentication-config', mountPath: '/etc/svc-auth/authn', readOnly: true });
    expect(annotationsOf(m)?.['checksum/authentication-config']).toMatch(/^[0-9a-f]{64}$/);
    const reads = svcAuthReads(args, { '/etc/svc-auth/authn/authentication-config.yaml': text, '/etc/svc-auth/oidc-ca/ca.crt': '-----BEGIN CERTIFICATE-----\n' });
    expect(reads).toMatchObject({ oidc: { issuers: [{ url: 'https://a.example.org' }, { url: 'https://b.example.org' }] } });
  });

  it('two issuers on the flags with unprefixed emails render, and svc-auth refuses them at start: they could collide', () => {
    const args = podOf(render({ issuers: ['https://idp.example.org/dex', 'https://login.example.org'], audiences: ['svc-data'], usernameClaim: 'email' })).containers[0]!.args!;
    expect(svcAuthReads(args)).toEqual({ exit: 2 });
  });
});
