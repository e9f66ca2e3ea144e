// The Helm chart (charts/svc) with helm built from its Go module and the real API server: `helm lint --strict` and
// `helm template` with default and non-default values, every rendered object through a server-side dry-run with strict
// field validation, and the properties the chart promises (hardened containers, Roles only, the CRD kept on
// uninstall and equal to crds/, a NetworkPolicy that admits only the proxy's namespace, a values schema that
// rejects unknown and malformed values).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { installCrds, repoRoot } from '../controlplane/controlplane.js';
import { describeCluster, kubeConfig, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { CHART_DIR, helmBinary, helmLint, helmTemplate, ofKind, parseManifests, runHelm, type Manifest } from '../stack/helm.js';
import { applyManifests } from '../stack/kubectl.js';
import { ROLE_LABEL, SNAPSHOT_LABEL, shardConfigMapName } from '../../k8s/snapshot/objects.js';

const CRD_SOURCE = join(repoRoot, 'crds', 'protectedscope.yaml');
const CRD_CHART_COPY = join(CHART_DIR, 'files', 'protectedscope.yaml');
const SERVICEMONITOR_STANDIN = join(repoRoot, 'test', 'stack', 'fixtures', 'servicemonitor-crd');
const PROMETHEUSRULE_STANDIN = join(repoRoot, 'test', 'prometheus', 'fixtures', 'prometheusrule-crd');

/** Value sets the chart is rendered, linted and dry-run with. */
const VALUE_SETS: Record<string, Record<string, unknown>> = {
  defaults: {},
  'everything on': {
    image: { repository: 'registry.example.org/svc/svc-access-control', tag: '9.9.9', digest: `sha256:${'ab'.repeat(32)}`, pullPolicy: 'Always' },
    imagePullSecrets: [{ name: 'regcred' }],
    snapshotName: 'svc-snap',
    auth: {
      wafPrefix: '/waf/data', apiPrefix: '/api', tokenQueryParam: 'access_token', logLevel: 'debug', port: 8081, metricsPort: 9191,
      hpa: { enabled: true, minReplicas: 3, maxReplicas: 9, targetCPUUtilizationPercentage: 60 },
      pdb: { enabled: true, minAvailable: '50%' },
      topologySpread: { enabled: true, maxSkew: 2, whenUnsatisfiable: 'DoNotSchedule' },
      priorityClassName: 'svc-critical',
      podAnnotations: { 'example.org/team': 'data' },
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'svc', effect: 'NoSchedule' }],
      extraArgs: ['--log-level=debug'],
      oidc: { issuers: ['https://login.example.org/realms/wis2'], audiences: ['svc-data'] },
      signIn: {
        enabled: true, externalURLs: ['https://data.example.org'], clientId: 'svc-browser', clientSecret: { existingSecret: 'idp-client', key: 'client-secret' },
        sessionMaxAge: '12h', sessionKeys: { existingSecret: 'svc-session-keys', key: 'session-keys' },
        route: { controller: 'traefik', ingressClassName: '', parentRefs: [], tlsSecretName: 'data-tls', annotations: { 'traefik.ingress.kubernetes.io/router.entrypoints': 'websecure' } },
      },
    },
    operator: {
      replicas: 2, leaderElect: true, metricsPort: 9292, priorityClassName: 'svc-critical',
      podAnnotations: { 'example.org/team': 'data' }, nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
      extraArgs: ['--debounce=200ms'],
    },
    management: { podAnnotations: { 'example.org/team': 'data' }, tolerations: [{ operator: 'Exists' }] },
    networkPolicy: {
      ingressNamespaceSelector: { 'kubernetes.io/metadata.name': 'traefik' },
      ingressPodSelector: { 'app.kubernetes.io/name': 'traefik' },
      metricsNamespaceSelector: { 'kubernetes.io/metadata.name': 'monitoring' },
    },
    serviceMonitor: { enabled: true, interval: '15s', scrapeTimeout: '5s', labels: { release: 'prometheus' } },
    prometheusRule: {
      enabled: true, labels: { release: 'prometheus' }, runbookBaseUrl: 'https://docs.example.org/svc/runbooks.html',
      extraRules: [{ alert: 'SvcDataTeamPaging', expr: 'vector(1) > 2', for: '1m', labels: { severity: 'info' }, annotations: { summary: 'ours' } }],
      thresholds: { unavailableFor: '3m', snapshotBehindSeconds: 60, snapshotBehindSlackSeconds: 30, errorWindow: '15m', queueStuckFor: '10m', decisionLatencyP99Seconds: 0.005,
        refusalSurgeFactor: 3, refusalSurgeMinRate: 1, malformedSurgeFactor: 3, malformedSurgeMinRate: 0.2, tokenExpiryWindow: '24h' },
    },
    grafanaDashboard: { enabled: true, labels: { grafana_dashboard: '1' }, annotations: { grafana_folder: 'svc' } },
    dataOwnerRole: { enabled: true, subjects: [{ kind: 'Group', name: 'data-owners' }, { kind: 'User', name: 'alice@example.org' }, { kind: 'ServiceAccount', name: 'gitops', namespace: 'argocd' }] },
  },
  'moving off ingress-nginx': { networkPolicy: { proxyNamespaces: ['ingress-nginx', 'traefik'] } },
  minimal: {
    crds: { enabled: false },
    auth: { replicas: 1, pdb: { enabled: false }, topologySpread: { enabled: false } },
    operator: { leaderElect: false },
    management: { enabled: false },
    networkPolicy: { enabled: false },
    snapshotAdmissionPolicy: { enabled: false },
    dataOwnerRole: { enabled: false },
    servedNamespaceRecord: { enabled: false },
  },
};

/** Values the schema must reject, with a fragment of helm's message. */
const REJECTED: [string, Record<string, unknown> | undefined, string[] | undefined, RegExp][] = [
  ['an unknown top-level key', undefined, ['foo=bar'], /additional properties 'foo' not allowed/],
  ['an unknown nested key', undefined, ['auth.bogus=1'], /additional properties 'bogus' not allowed/],
  ['a misspelt key', { operator: { leaderElection: false } }, undefined, /additional properties 'leaderElection' not allowed/],
  ['an unknown key in an image', { image: { registry: 'x' } }, undefined, /additional properties 'registry' not allowed/],
  ['zero replicas', { auth: { replicas: 0 } }, undefined, /replicas/],
  ['replicas as a string', { auth: { replicas: 'two' } }, undefined, /replicas/],
  ['a malformed digest', { image: { digest: 'sha256:xyz' } }, undefined, /digest/],
  ['an invalid snapshot name', { snapshotName: 'Bad_Name' }, undefined, /snapshotName/],
  ['a relative WAF prefix', { auth: { wafPrefix: 'data' } }, undefined, /wafPrefix/],
  ['an unknown log level', { auth: { logLevel: 'verbose' } }, undefined, /logLevel/],
  ['an out-of-range port', { auth: { port: 70000 } }, undefined, /port/],
  ['an empty ingress namespace selector', { networkPolicy: { ingressNamespaceSelector: null } }, undefined, /ingressNamespaceSelector/],
  ['a proxy namespace that is no namespace name', { networkPolicy: { proxyNamespaces: ['Traefik_NS'] } }, undefined, /proxyNamespaces/],
  ['an unknown pull policy', { image: { pullPolicy: 'Sometimes' } }, undefined, /pullPolicy/],
  ['a token expiry window svc-auth does not export', { prometheusRule: { thresholds: { tokenExpiryWindow: '2d' } } }, undefined, /tokenExpiryWindow/],
  ['a latency bound past the largest bucket', { prometheusRule: { thresholds: { decisionLatencyP99Seconds: 0.1 } } }, undefined, /decisionLatencyP99Seconds/],
  ['a misspelt threshold', { prometheusRule: { thresholds: { errorWindows: '5m' } } }, undefined, /additional properties 'errorWindows' not allowed/],
  ['an extra rule without an expression', { prometheusRule: { extraRules: [{ alert: 'X' }] } }, undefined, /extraRules/],
  ['a dashboard namespace that is no namespace name', { grafanaDashboard: { namespace: 'Monitoring_NS' } }, undefined, /namespace/],
  ['an unknown key of the snapshot admission policy', { snapshotAdmissionPolicy: { enabled: true, failurePolicy: 'Ignore' } }, undefined, /additional properties 'failurePolicy' not allowed/],
  ['a data owner subject of an unknown kind', { dataOwnerRole: { subjects: [{ kind: 'Team', name: 'x' }] } }, undefined, /kind/],
];

interface Container {
  name: string;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  securityContext?: Record<string, unknown> & { capabilities?: { drop?: string[]; add?: string[] }; seccompProfile?: { type?: string } };
  args?: string[];
  command?: string[];
}
interface PodSpec {
  securityContext?: Record<string, unknown> & { seccompProfile?: { type?: string } };
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  volumes?: Record<string, unknown>[];
}

const podSpec = (m: Manifest): PodSpec => (m.spec as { template: { spec: PodSpec } }).template.spec;

/** What is wrong with a workload's hardening (empty: nothing). */
function hardeningProblems(m: Manifest): string[] {
  const spec = podSpec(m);
  const where = `${m.kind}/${m.metadata.name}`;
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  if (pod.runAsNonRoot !== true) problems.push(`${where}: pod runAsNonRoot is not true`);
  if (pod.seccompProfile?.type !== 'RuntimeDefault') problems.push(`${where}: pod seccompProfile is not RuntimeDefault`);
  for (const flag of ['hostNetwork', 'hostPID', 'hostIPC'] as const) if (spec[flag]) problems.push(`${where}: ${flag}`);
  if ((spec.volumes ?? []).some((v) => 'hostPath' in v)) problems.push(`${where}: a hostPath volume`);
  for (const c of [...spec.containers, ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])]) {
    const at = `${where} container ${c.name}`;
    const sc = c.securityContext ?? {};
    if (sc.runAsNonRoot !== true) problems.push(`${at}: runAsNonRoot is not true`);
    if (typeof sc.runAsUser === 'number' && sc.runAsUser === 0) problems.push(`${at}: runAsUser 0`);
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem is not true`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
    if (sc.privileged === true) problems.push(`${at}: privileged`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${at}: capabilities do not drop ALL`);
    if ((sc.capabilities?.add ?? []).length > 0) problems.push(`${at}: adds capabilities ${sc.capabilities?.add?.join(',')}`);
    if (sc.seccompProfile?.type !== 'RuntimeDefault') problems.push(`${at}: seccompProfile is not RuntimeDefault`);
    for (const kind of ['requests', 'limits'] as const) {
      for (const res of ['cpu', 'memory']) if (c.resources?.[kind]?.[res] === undefined) problems.push(`${at}: no ${kind}.${res}`);
    }
  }
  return problems;
}

/** The chart's cluster-scoped objects: the CRD, and the admission policy and its binding (named after the namespace). */
const CLUSTER_KINDS = new Set(['CustomResourceDefinition', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'ReplicaSet', 'Pod']);

describeCluster('Helm chart charts/svc', () => {
  let helm: string;
  const rendered = new Map<string, Manifest[]>();
  let namespace: string;

  beforeAll(async () => {
    helm = await helmBinary();
    namespace = await newNamespace('chart');
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      const r = helmTemplate(helm, { namespace, values });
      if (r.status !== 0) throw new Error(`helm template (${name}) failed:\n${r.stderr}`);
      rendered.set(name, r.manifests);
    }
  }, 15 * 60_000);

  const sets = Object.keys(VALUE_SETS);
  const all = (name: string): Manifest[] => rendered.get(name)!;

  describe('helm lint --strict', () => {
    it.each(sets)('passes with the %s values, without warnings', (name) => {
      const r = helmLint(helm, { namespace: 'svc', values: VALUE_SETS[name]! });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    });
  });

  describe('helm template', () => {
    it('renders the expected objects with the defaults', () => {
      const kinds = all('defaults').map((m) => `${m.kind}/${m.metadata.name}`).sort();
      expect(kinds).toEqual([
        `ConfigMap/svc-served.${namespace}`,
        'CustomResourceDefinition/protectedscopes.auth.svc.io',
        'Deployment/svc-auth', 'Deployment/svc-management', 'Deployment/svc-operator',
        'NetworkPolicy/svc-auth', 'NetworkPolicy/svc-management', 'NetworkPolicy/svc-operator',
        'PodDisruptionBudget/svc-auth',
        'Role/svc-auth', 'Role/svc-data-owner', 'Role/svc-management', 'Role/svc-operator', `Role/svc-served.${namespace}`,
        'RoleBinding/svc-auth', 'RoleBinding/svc-management', 'RoleBinding/svc-operator', `RoleBinding/svc-served.${namespace}`,
        'Service/svc-auth', 'Service/svc-operator-metrics',
        'ServiceAccount/svc-auth', 'ServiceAccount/svc-management', 'ServiceAccount/svc-operator',
        `ValidatingAdmissionPolicy/svc-snapshot-writer.${namespace}`, `ValidatingAdmissionPolicyBinding/svc-snapshot-writer.${namespace}`,
      ]);
    });

    it('renders the optional objects when asked, and leaves them out when not', () => {
      const on = all('everything on').map((m) => `${m.kind}/${m.metadata.name}`);
      expect(on).toEqual(expect.arrayContaining(['HorizontalPodAutoscaler/svc-auth', 'ServiceMonitor/svc-auth', 'ServiceMonitor/svc-operator',
        'PrometheusRule/svc-access-control', 'ConfigMap/svc-access-control-dashboard', 'RoleBinding/svc-data-owner', 'Ingress/svc-auth-sign-in']));
      const minimal = all('minimal').map((m) => m.kind);
      for (const kind of ['CustomResourceDefinition', 'NetworkPolicy', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap',
        'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'Ingress', 'HTTPRoute', 'Secret']) expect(minimal).not.toContain(kind);
      expect(ofKind(all('minimal'), 'Role', 'svc-data-owner')).toHaveLength(0);
      expect(ofKind(all('minimal'), 'Deployment', 'svc-management')).toHaveLength(0);
      expect(ofKind(all('minimal'), 'ServiceAccount', 'svc-management')).toHaveLength(0);
      expect(ofKind(all('minimal'), 'Role', 'svc-management')).toHaveLength(0);
    });

    it.each(sets)('puts every namespaced object of the %s values in the release namespace', (name) => {
      for (const m of all(name)) {
        if (CLUSTER_KINDS.has(m.kind)) expect(m.metadata.namespace).toBeUndefined();
        // The served-namespace record and what lets everyone read it live in kube-public (docs/cli-safety.md).
        else if (m.metadata.name === `svc-served.${namespace}`) expect(m.metadata.namespace).toBe('kube-public');
        else expect(`${m.kind}/${m.metadata.name} in ${m.metadata.namespace}`).toBe(`${m.kind}/${m.metadata.name} in ${namespace}`);
      }
    });

    it('wires the values into the programs\' arguments', () => {
      const m = all('everything on');
      const args = (name: string) => podSpec(ofKind(m, 'Deployment', name)[0]!).containers[0]!.args!.join(' ');
      expect(args('svc-auth')).toContain('--snapshot-configmap svc-snap --namespace $(POD_NAMESPACE)');
      expect(args('svc-auth')).toContain('--listen 0.0.0.0:8081 --metrics-listen 0.0.0.0:9191 --waf-prefix /waf/data --api-prefix /api --token-query-param access_token');
      expect(args('svc-auth')).toMatch(/--log-level=debug$/);
      expect(args('svc-auth')).toContain('--external-url https://data.example.org --sign-in-client-id svc-browser --sign-in-client-secret-file /etc/svc-auth/sign-in/client-secret --session-key-file /etc/svc-auth/session/session-keys --session-max-age 12h');
      expect(args('svc-operator')).toContain('--namespace $(POD_NAMESPACE) --snapshot-name svc-snap');
      expect(args('svc-operator')).toContain('--leader-elect --lease-name svc-snap-operator');
      expect(args('svc-operator')).toMatch(/--debounce=200ms$/);
      expect(podSpec(ofKind(m, 'Deployment', 'svc-auth')[0]!).containers[0]).toMatchObject({ image: `registry.example.org/svc/svc-access-control@sha256:${'ab'.repeat(32)}`, imagePullPolicy: 'Always' });
      expect((ofKind(m, 'Deployment', 'svc-auth')[0]!.spec as { replicas?: number }).replicas).toBeUndefined(); // the HPA owns it
      expect(args('svc-operator')).toContain('--metrics-listen 0.0.0.0:9292');
      const minimal = all('minimal');
      const opArgs = podSpec(ofKind(minimal, 'Deployment', 'svc-operator')[0]!).containers[0]!.args!;
      expect(opArgs).not.toContain('--leader-elect');
      expect((ofKind(minimal, 'Deployment', 'svc-operator')[0]!.spec as { strategy: { type: string } }).strategy.type).toBe('Recreate');
    });

    it('auth.openPathsByDefault (default false) reaches svc-auth, the operator and the CLI in svc-management alike', () => {
      const argsOf = (m: Manifest[], name: string) => podSpec(ofKind(m, 'Deployment', name)[0]!).containers[0]!.args ?? [];
      const envOf = (m: Manifest[]) => (podSpec(ofKind(m, 'Deployment', 'svc-management')[0]!).containers[0] as unknown as { env: { name: string; value?: string }[] }).env;
      const byDefault = helmTemplate(helm, { namespace }).manifests;
      expect(argsOf(byDefault, 'svc-auth')).not.toContain('--open-paths-by-default');
      expect(argsOf(byDefault, 'svc-operator')).not.toContain('--open-paths-by-default');
      expect(envOf(byDefault)).toContainEqual({ name: 'SVC_OPEN_PATHS_BY_DEFAULT', value: 'false' });
      const opened = helmTemplate(helm, { namespace, values: { auth: { openPathsByDefault: true } } }).manifests;
      expect(argsOf(opened, 'svc-auth')).toContain('--open-paths-by-default');
      expect(argsOf(opened, 'svc-operator')).toContain('--open-paths-by-default');
      expect(envOf(opened)).toContainEqual({ name: 'SVC_OPEN_PATHS_BY_DEFAULT', value: 'true' });
    });

    it('auth.wafPrefix and auth.apiPrefix reach svc-auth, the operator and the CLI in svc-management alike (path scopes are read against them)', () => {
      const argsOf = (m: Manifest[], name: string) => (podSpec(ofKind(m, 'Deployment', name)[0]!).containers[0]!.args ?? []).join(' ');
      const envOf = (m: Manifest[]) => (podSpec(ofKind(m, 'Deployment', 'svc-management')[0]!).containers[0] as unknown as { env: { name: string; value?: string }[] }).env;
      const byDefault = helmTemplate(helm, { namespace }).manifests;
      for (const name of ['svc-auth', 'svc-operator']) expect(argsOf(byDefault, name)).toContain('--waf-prefix /data --api-prefix /oapi');
      expect(envOf(byDefault)).toEqual(expect.arrayContaining([{ name: 'SVC_WAF_PREFIX', value: '/data' }, { name: 'SVC_API_PREFIX', value: '/oapi' }]));
      const moved = helmTemplate(helm, { namespace, values: { auth: { wafPrefix: '/files', apiPrefix: '/api/v1' } } }).manifests;
      for (const name of ['svc-auth', 'svc-operator']) expect(argsOf(moved, name)).toContain('--waf-prefix /files --api-prefix /api/v1');
      expect(envOf(moved)).toEqual(expect.arrayContaining([{ name: 'SVC_WAF_PREFIX', value: '/files' }, { name: 'SVC_API_PREFIX', value: '/api/v1' }]));
    });

    it('auth.oidc.* become svc-auth\'s --oidc-* flags, with the private CA mounted from its ConfigMap; nothing without issuers', () => {
      const argsOf = (m: Manifest[]) => podSpec(ofKind(m, 'Deployment', 'svc-auth')[0]!).containers[0]!.args ?? [];
      expect(argsOf(helmTemplate(helm, { namespace }).manifests).join(' ')).not.toContain('--oidc');
      const m = helmTemplate(helm, { namespace, values: { auth: { oidc: { issuers: ['https://idp.example.org/dex', 'https://login.example.org'], audiences: ['svc-data'], usernameClaim: 'email', caConfigMap: 'idp-ca' } } } }).manifests;
      expect(argsOf(m).join(' ')).toContain('--oidc-issuer https://idp.example.org/dex --oidc-issuer https://login.example.org --oidc-audience svc-data --oidc-username-claim email --oidc-groups-claim groups --oidc-ca-file /etc/svc-auth/oidc-ca/ca.crt');
      const pod = podSpec(ofKind(m, 'Deployment', 'svc-auth')[0]!) as unknown as { volumes: { name: string; configMap?: { name: string } }[]; containers: { volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[] };
      expect(pod.volumes).toContainEqual({ name: 'oidc-ca', configMap: { name: 'idp-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } });
      expect(pod.containers[0]!.volumeMounts).toContainEqual({ name: 'oidc-ca', mountPath: '/etc/svc-auth/oidc-ca', readOnly: true });
      const noAudience = helmTemplate(helm, { namespace, values: { auth: { oidc: { issuers: ['https://idp.example.org'] } } } });
      expect(noAudience.status).not.toBe(0);
      expect(noAudience.stderr).toMatch(/oidc\/audiences/);
    });

    it('renders the snapshot admission policy for the release namespace, the snapshot\'s names and labels and the operator\'s ServiceAccount', () => {
      type Policy = Manifest & { spec: { failurePolicy: string; matchConstraints: { namespaceSelector: unknown; resourceRules: unknown[] }; matchConditions: { expression: string }[]; validations: { expression: string }[] } };
      type Binding = Manifest & { spec: { policyName: string; validationActions: string[]; matchResources: { namespaceSelector: unknown } } };
      for (const [set, snapshot] of [['defaults', 'svc-auth-snapshot'], ['everything on', 'svc-snap']] as const) {
        const name = `svc-snapshot-writer.${namespace}`;
        const policy = ofKind(all(set), 'ValidatingAdmissionPolicy', name)[0] as Policy;
        const binding = ofKind(all(set), 'ValidatingAdmissionPolicyBinding', name)[0] as Binding;
        const inNamespace = { matchLabels: { 'kubernetes.io/metadata.name': namespace } };
        expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
        expect(policy.spec.failurePolicy).toBe('Fail');
        expect(policy.spec.matchConstraints).toEqual({ namespaceSelector: inNamespace,
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['configmaps'] }] });
        expect(binding.spec).toEqual({ policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: inNamespace } });
        const condition = policy.spec.matchConditions.map((c) => c.expression).join(' ');
        for (const text of ['[object, oldObject]', `'${snapshot}'`, `'^${snapshot}-[0-9a-f]{16}$'`, `'${SNAPSHOT_LABEL}'`, `'${ROLE_LABEL}'`]) expect(condition).toContain(text);
        expect(shardConfigMapName(snapshot, 'ab'.repeat(32))).toMatch(new RegExp(`^${snapshot}-[0-9a-f]{16}$`));
        expect(policy.spec.validations[0]!.expression).toContain(`request.userInfo.username == 'system:serviceaccount:${namespace}:svc-operator'`);
      }
    });

    it('refuses contradictory values with a message', () => {
      const unbound = helmTemplate(helm, { namespace, values: { dataOwnerRole: { enabled: false, subjects: [{ kind: 'Group', name: 'data-owners' }] } } });
      expect(unbound.status).not.toBe(0);
      expect(unbound.stderr).toContain('dataOwnerRole.subjects needs dataOwnerRole.enabled=true');
      // The admission policy needs its API (GA in 1.30): an older cluster is told to turn it off, and may.
      const old = runHelm(helm, ['template', 'svc', CHART_DIR, '--namespace', namespace, '--kube-version', '1.29.0']);
      expect(old.status).not.toBe(0);
      expect(old.stderr).toContain('snapshotAdmissionPolicy.enabled=true needs Kubernetes >= 1.30');
      expect(runHelm(helm, ['template', 'svc', CHART_DIR, '--namespace', namespace, '--kube-version', '1.29.0', '--set', 'snapshotAdmissionPolicy.enabled=false']).status).toBe(0);
      const twoWriters = helmTemplate(helm, { namespace, values: { operator: { replicas: 2, leaderElect: false } } });
      expect(twoWriters.status).not.toBe(0);
      expect(twoWriters.stderr).toContain('operator.replicas > 1 needs operator.leaderElect=true');
      const hpa = helmTemplate(helm, { namespace, values: { auth: { hpa: { enabled: true, minReplicas: 5, maxReplicas: 2 } } } });
      expect(hpa.status).not.toBe(0);
      expect(hpa.stderr).toContain('auth.hpa.minReplicas must not exceed auth.hpa.maxReplicas');
    });
  });

  describe('values.schema.json', () => {
    it.each(REJECTED)('rejects %s', (_label, values, set, message) => {
      const r = helmTemplate(helm, { namespace, ...(values ? { values } : {}), ...(set ? { set } : {}) });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(message);
      const lint = helmLint(helm, { ...(values ? { values } : {}), ...(set ? { set } : {}) });
      expect(lint.status).not.toBe(0);
    });
  });

  describe('the CRD', () => {
    it('files/protectedscope.yaml is byte for byte crds/protectedscope.yaml', () => {
      expect(readFileSync(CRD_CHART_COPY).equals(readFileSync(CRD_SOURCE))).toBe(true);
    });

    it('renders crds/protectedscope.yaml unchanged but for Helm labels and helm.sh/resource-policy: keep', () => {
      const [crd, ...more] = ofKind(all('defaults'), 'CustomResourceDefinition');
      expect(more).toHaveLength(0);
      const source = load(readFileSync(CRD_SOURCE, 'utf8')) as Manifest;
      expect(crd!.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
      expect(crd!.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/part-of': 'svc-access-control' });
      expect(crd!.metadata.name).toBe(source.metadata.name);
      expect(crd!.spec).toEqual(source.spec);
      expect({ ...crd!, metadata: undefined, spec: undefined }).toEqual({ ...source, metadata: undefined, spec: undefined, status: undefined });
    });
  });

  describe('the served-namespace record in kube-public (docs/cli-safety.md)', () => {
    it('names the release namespace, the snapshot and the cache age, and lets every authenticated user get and list the ConfigMaps there, nothing else', () => {
      const m = all('defaults').filter((o) => o.metadata.namespace === 'kube-public');
      const name = `svc-served.${namespace}`;
      expect(m.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([`ConfigMap/${name}`, `Role/${name}`, `RoleBinding/${name}`]);
      const [cm, role, binding] = m as [Manifest & { data: unknown }, Manifest & { rules: unknown }, Manifest & { roleRef: unknown; subjects: unknown }];
      expect(cm.metadata.labels?.['auth.svc.io/served-namespace']).toBe(namespace);
      expect(cm.data).toEqual({ namespace, snapshotName: 'svc-auth-snapshot', cacheMaxAge: '30' });
      expect(role.rules).toEqual([{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }]);
      expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name });
      expect(binding.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }]);
      expect(all('minimal').filter((o) => o.metadata.namespace === 'kube-public')).toEqual([]);
    });
  });

  describe('RBAC objects', () => {
    it.each(sets)('are namespaced Roles and RoleBindings only, each bound to its own ServiceAccount (%s)', (name) => {
      const m = all(name);
      expect(m.filter((o) => /^Cluster(Role|RoleBinding)$/.test(o.kind))).toEqual([]);
      for (const rb of ofKind(m, 'RoleBinding').filter((b) => b.metadata.name !== 'svc-data-owner' && b.metadata.namespace !== 'kube-public')) {
        const b = rb as Manifest & { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] };
        expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: rb.metadata.name });
        expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: rb.metadata.name, namespace }]);
      }
      for (const role of ofKind(m, 'Role')) {
        const rules = (role as Manifest & { rules: { verbs: string[]; resources: string[]; apiGroups: string[] }[] }).rules;
        for (const r of rules) {
          expect([...r.verbs, ...r.resources, ...r.apiGroups]).not.toContain('*');
          expect(r.resources).not.toContain('secrets');
        }
      }
      for (const sa of ofKind(m, 'ServiceAccount')) expect(sa.automountServiceAccountToken).toBe(false);
    });

    it('gives data owners ProtectedScopes and nothing else, bound to the subjects of the values (or to none)', () => {
      const role = ofKind(all('defaults'), 'Role', 'svc-data-owner')[0] as Manifest & { rules: unknown[] };
      expect(role.rules).toEqual([{ apiGroups: ['auth.svc.io'], resources: ['protectedscopes'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }]);
      expect(ofKind(all('defaults'), 'RoleBinding', 'svc-data-owner')).toHaveLength(0);
      const binding = ofKind(all('everything on'), 'RoleBinding', 'svc-data-owner')[0] as Manifest & { roleRef: unknown; subjects: unknown[] };
      expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-data-owner' });
      expect(binding.subjects).toEqual([
        { kind: 'Group', name: 'data-owners', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'User', name: 'alice@example.org', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'ServiceAccount', name: 'gitops', namespace: 'argocd' },
      ]);
    });

    it('restricts the operator\'s Lease rule to its own Lease by name', () => {
      for (const [set, lease] of [['defaults', 'svc-auth-snapshot-operator'], ['everything on', 'svc-snap-operator']] as const) {
        const role = ofKind(all(set), 'Role', 'svc-operator')[0] as Manifest & { rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[] };
        const leaseRules = role.rules.filter((r) => r.resources.includes('leases'));
        expect(leaseRules).toEqual([
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [lease], verbs: ['get', 'update'] },
        ]);
      }
      // Without leader election, no Lease at all.
      const minimal = ofKind(all('minimal'), 'Role', 'svc-operator')[0] as Manifest & { rules: { resources: string[] }[] };
      expect(minimal.rules.filter((r) => r.resources.includes('leases'))).toEqual([]);
    });
  });

  describe('workloads', () => {
    it.each(sets)('harden every container (%s)', (name) => {
      const workloads = all(name).filter((m) => WORKLOAD_KINDS.has(m.kind));
      expect(workloads.length).toBeGreaterThan(0);
      expect(workloads.flatMap(hardeningProblems)).toEqual([]);
    });

    it.each(sets)('run each component under its own ServiceAccount (%s)', (name) => {
      for (const d of ofKind(all(name), 'Deployment')) expect(podSpec(d).serviceAccountName).toBe(d.metadata.name);
    });
  });

  describe('NetworkPolicy', () => {
    type Peer = { namespaceSelector?: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values: string[] }[] }; podSelector?: { matchLabels?: Record<string, string> }; ipBlock?: unknown };
    type Policy = Manifest & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress?: { from?: Peer[]; ports?: { port: string | number }[] }[] } };
    const policy = (set: string, name: string) => ofKind(all(set), 'NetworkPolicy', name)[0] as Policy;

    it('admits only the ingress namespace to svc-auth, on its auth port (defaults)', () => {
      const p = policy('defaults', 'svc-auth');
      expect(p.spec.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/instance': 'svc', 'app.kubernetes.io/component': 'auth' });
      expect(p.spec.policyTypes).toEqual(['Ingress']);
      expect(p.spec.ingress).toEqual([
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }], ports: [{ port: 'http', protocol: 'TCP' }] },
      ]);
    });

    it('admits nothing to the operator and the management pod (defaults)', () => {
      for (const name of ['svc-operator', 'svc-management']) {
        const p = policy('defaults', name);
        expect(p.spec.policyTypes).toEqual(['Ingress']);
        expect(p.spec.ingress).toEqual([]);
      }
    });

    it('follows the selectors of the values: the proxy namespace (and pods) to the auth port, Prometheus to the metrics ports only', () => {
      const auth = policy('everything on', 'svc-auth');
      expect(auth.spec.ingress).toEqual([
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'traefik' } } }],
          ports: [{ port: 'http', protocol: 'TCP' }],
        },
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ port: 'metrics', protocol: 'TCP' }] },
      ]);
      expect(policy('everything on', 'svc-operator').spec.ingress).toEqual([
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ port: 'metrics', protocol: 'TCP' }] },
      ]);
      expect(policy('everything on', 'svc-management').spec.ingress).toEqual([]);
    });

    it('names the proxies\' namespaces in one value while moving off ingress-nginx (proxyNamespaces replaces the selector)', () => {
      expect(policy('moving off ingress-nginx', 'svc-auth').spec.ingress).toEqual([
        { from: [{ namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['ingress-nginx', 'traefik'] }] } }], ports: [{ port: 'http', protocol: 'TCP' }] },
      ]);
    });

    it.each(sets)('has no peer without a namespace selector, and no ipBlock (%s)', (name) => {
      for (const p of ofKind(all(name), 'NetworkPolicy') as Policy[]) {
        for (const rule of p.spec.ingress ?? []) {
          expect(rule.from?.length).toBeGreaterThan(0);
          for (const peer of rule.from ?? []) {
            expect(peer.ipBlock).toBeUndefined();
            const selector = peer.namespaceSelector ?? {};
            expect(Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions ?? []).reduce((n, e) => n + e.values.length, 0)).toBeGreaterThan(0);
          }
        }
      }
    });
  });

  describe('server-side dry-run (strict field validation) on the real API server', () => {
    beforeAll(async () => {
      // The ServiceMonitor and PrometheusRule CRDs, when the cluster lacks them: our strict stand-ins (see the fixtures' headers).
      const ext = kubeConfig().makeApiClient(k8s.ApiextensionsV1Api);
      for (const [name, standin] of [['servicemonitors.monitoring.coreos.com', SERVICEMONITOR_STANDIN], ['prometheusrules.monitoring.coreos.com', PROMETHEUSRULE_STANDIN]] as const) {
        try {
          await ext.readCustomResourceDefinition({ name });
        } catch (e) {
          if ((e as { code?: number }).code !== 404) throw e;
          await installCrds(kubeconfigPath(), standin, () => undefined);
        }
      }
    });

    it.each(sets)('accepts every object rendered with the %s values', async (name) => {
      const ns = await newNamespace(`chart-dry-${name}`);
      const r = helmTemplate(helm, { namespace: ns, values: VALUE_SETS[name]! });
      expect(r.status).toBe(0);
      const applied = applyManifests(kubeconfigPath(), r.manifests, { dryRun: true });
      expect({ status: applied.status, stderr: applied.stderr.replace(/^Warning: .*\n?/gm, '') }).toEqual({ status: 0, stderr: '' });
      // One line per object, all dry-run, none stored.
      expect(applied.stdout.trim().split('\n').filter((l) => l.includes('(server dry run)'))).toHaveLength(r.manifests.length);
      const stored = await kubeConfig().makeApiClient(k8s.AppsV1Api).listNamespacedDeployment({ namespace: ns });
      expect(stored.items).toHaveLength(0);
    });

    it('accepts deploy/ingress-nginx/ingress.yaml, whose auth-url names the chart\'s svc-auth Service, port and endpoint', async () => {
      const [ingress, ...more] = parseManifests(readFileSync(join(repoRoot, 'deploy', 'ingress-nginx', 'ingress.yaml'), 'utf8'));
      expect(more).toHaveLength(0);
      const [headers, ...others] = parseManifests(readFileSync(join(repoRoot, 'deploy', 'ingress-nginx', 'auth-request-headers.yaml'), 'utf8'));
      expect(others).toHaveLength(0);
      // The auth subrequest's X-Original-URI is set to the request URI (it must agree with X-Original-URL).
      expect(ingress!.metadata.annotations?.['nginx.ingress.kubernetes.io/auth-proxy-set-headers']).toBe(`${headers!.metadata.namespace}/${headers!.metadata.name}`);
      const data = (headers as Manifest & { data: Record<string, string> }).data;
      expect(data['X-Original-URI']).toBe('$request_uri');
      // Never cleared: svc-auth must see an override the backend may honour.
      expect(Object.keys(data).some((k) => /method-override|^x-http-method$/i.test(k))).toBe(false);
      const chartNs = ingress!.metadata.namespace!;
      const svcAuth = ofKind(helmTemplate(helm, { namespace: chartNs }).manifests, 'Service', 'svc-auth')[0] as Manifest & { spec: { ports: { name: string; port: number }[] } };
      const port = svcAuth.spec.ports.find((p) => p.name === 'http')!.port;
      const url = ingress!.metadata.annotations?.['nginx.ingress.kubernetes.io/auth-url'];
      expect(url).toBe(`http://svc-auth.${chartNs}.svc.cluster.local:${port}/authz/auth-request`);
      expect(url).not.toMatch(/[%#;+]/); // ingress-nginx refuses these in auth-url
      const ns = await newNamespace('deploy-dry');
      const applied = applyManifests(kubeconfigPath(), [ingress!, headers!].map((m) => ({ ...m, metadata: { ...m.metadata, namespace: ns } })), { dryRun: true });
      expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
    });

    it('fails on a schema error (a misspelt field, a mistyped value)', async () => {
      const ns = await newNamespace('chart-dry-bad');
      const r = helmTemplate(helm, { namespace: ns });
      const misspelt = structuredClone(r.manifests);
      const deployment = ofKind(misspelt, 'Deployment', 'svc-auth')[0]!;
      (podSpec(deployment).containers[0]!.securityContext as Record<string, unknown>).readOnlyRootFilesytem = true;
      const a = applyManifests(kubeconfigPath(), misspelt, { dryRun: true });
      expect(a.status).not.toBe(0);
      expect(a.stderr).toContain('readOnlyRootFilesytem: field not declared in schema');
      const mistyped = structuredClone(r.manifests);
      (ofKind(mistyped, 'Service', 'svc-auth')[0]!.spec as { ports: { port: unknown }[] }).ports[0]!.port = 'eighty';
      const b = applyManifests(kubeconfigPath(), mistyped, { dryRun: true });
      expect(b.status).not.toBe(0);
      expect(b.stderr).toMatch(/port/);
    });
  });
});
