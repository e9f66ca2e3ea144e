// The chart as deployed (./stack.ts): `helm install --wait` on a real node brought svc-operator, both svc-auth
// replicas and svc-management to Ready through their own probes, in-cluster, with the chart's security contexts.
// Then what a user does: the CLI inside svc-management closes a topic, the operator compiles it, both svc-auth pods
// load it, and an nginx pod configured as ingress-nginx configures `auth-url` enforces it. Then faults, with a
// client looping through that nginx: never a 200 for the closed scope without its token.
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWafTree, TOPIC, WAF } from '../e2e/support/fixtures.js';
import { ensureHostPackages, hostPlan, NODE_PACKAGES } from './host-packages.js';
import { NGINX_POD, NGINX_PORT, nginxPodManifests } from './nginx-pod.js';
import { BRIDGE } from './node.js';
import { NAMESPACE, startNodeStack, type NodeStack } from './stack.js';
import { sleep, waitUntil } from '../support/wait.js';

const plan = hostPlan(NODE_PACKAGES);
const suite = plan.action === 'skip' ? describe.skip : describe;
/** jest's testTimeout is global (the unit project's); these tests wait on pods. */
const TEST_TIMEOUT = 300_000;

interface PodInfo {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  status: { podIP?: string; phase?: string; conditions?: { type: string; status: string }[] };
  spec: { containers: { securityContext?: Record<string, unknown> }[]; securityContext?: Record<string, unknown> };
}

/** Counts of what the looping client saw. */
interface LoopCounts {
  /** Requests without a token that got the protected file: must stay 0. */
  openedWithoutToken: number;
  withoutToken: number;
  withToken: number;
  /** Requests with the token that did not get the file, by status (0: connection failed). */
  failedWithToken: Record<string, number>;
}

suite('the chart on a real node', () => {
  let stack: NodeStack;
  let dir: string;
  let ingress: string;
  let token = '';
  let tokenId = '';
  let marker = '';
  const secrets: string[] = [];

  const k = (args: readonly string[], input?: string) => {
    const r = stack.kubectl(args, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.slice(-1500)}`);
    return r.stdout;
  };
  const pods = (component: string) => (JSON.parse(k(['get', 'pods', '-n', NAMESPACE, '-l', `app.kubernetes.io/component=${component}`, '-o', 'json'])) as { items: PodInfo[] }).items;
  const ready = (p: PodInfo) => !p.metadata.deletionTimestamp && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  /** `svc auth …` run as a user would: kubectl exec into svc-management, whose ServiceAccount may edit scopes. */
  const svc = (args: readonly string[]) => k(['exec', '-n', NAMESPACE, 'deploy/svc-management', '--', 'svc', 'auth', ...args]);

  const get = async (path: string, auth?: string): Promise<{ status: number; body: string }> => {
    try {
      const res = await fetch(`${ingress}${path}`, { headers: auth ? { Authorization: auth } : {}, signal: AbortSignal.timeout(10_000) });
      return { status: res.status, body: await res.text() };
    } catch {
      return { status: 0, body: '' };
    }
  };
  const until = (what: string, timeoutMs: number, check: () => Promise<boolean> | boolean) => waitUntil(check, { what, timeoutMs, intervalMs: 250 });
  const authPodsServing = async (tokens: number) => {
    const ips = pods('auth').filter(ready).map((p) => p.status.podIP);
    if (ips.length !== 2) return false;
    const counts = await Promise.all(ips.map(async (ip) => {
      const text = await fetch(`http://${ip}:9090/metrics`).then((r) => r.text(), () => '');
      return Number(/^svc_auth_snapshot_tokens (\d+)/m.exec(text)?.[1] ?? -1);
    }));
    return counts.every((c) => c === tokens);
  };

  /** Loops through nginx until `during` resolves: without the token (never 200) and with it, alternately. */
  const whileLooping = async (during: () => Promise<void>): Promise<LoopCounts> => {
    const counts: LoopCounts = { openedWithoutToken: 0, withoutToken: 0, withToken: 0, failedWithToken: {} };
    let done = false;
    stopLoop = async () => {
      done = true;
      await client;
    };
    const client = (async () => {
      while (!done) {
        const anonymous = await get(WAF.topicFile);
        counts.withoutToken++;
        if (anonymous.status === 200 || anonymous.body.includes(marker)) counts.openedWithoutToken++;
        const authed = await get(WAF.topicFile, `Bearer ${token}`);
        counts.withToken++;
        if (authed.status !== 200 || !authed.body.includes(marker)) counts.failedWithToken[authed.status] = (counts.failedWithToken[authed.status] ?? 0) + 1;
        await sleep(20);
      }
    })();
    try {
      await during();
    } finally {
      done = true;
      await client;
    }
    process.stderr.write(`[node] loop: ${JSON.stringify(counts)}\n`);
    return counts;
  };

  /** A test that timed out must not leave its client looping into the next test's changes. */
  let stopLoop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stopLoop?.();
    stopLoop = undefined;
  });

  beforeAll(async () => {
    ensureHostPackages(plan);
    dir = mkdtempSync(join(tmpdir(), 'svc-node-test-'));
    stack = await startNodeStack({ dir: join(dir, 'stack') });
    process.stderr.write(`[node] phases (s): ${JSON.stringify(stack.timings)}; image ${(stack.image.bytes / 1e6).toFixed(1)} MB\n`);
    const markers = buildWafTree(join(dir, 'waf')).markers;
    marker = markers.topicFile;
    const authService = JSON.parse(k(['get', 'service', '-n', NAMESPACE, 'svc-auth', '-o', 'json'])) as { spec: { clusterIP: string; ports: { name: string; port: number }[] } };
    const authPort = authService.spec.ports.find((p) => p.name === 'http')?.port ?? 8080;
    k(['apply', '-f', '-'], nginxPodManifests({ namespace: NAMESPACE, image: stack.nginxImage, authHost: authService.spec.clusterIP, authPort, markers }));
    k(['wait', '-n', NAMESPACE, `pod/${NGINX_POD}`, '--for=condition=Ready', '--timeout=120s']);
    const ip = (JSON.parse(k(['get', 'pod', '-n', NAMESPACE, NGINX_POD, '-o', 'json'])) as PodInfo).status.podIP;
    ingress = `http://${ip}:${NGINX_PORT}`;
  }, 3_000_000);

  afterAll(async () => {
    if (!stack) return;
    await stack.stop();
    // Nothing of the node is left on the host: no bridge, no KUBE-* chains, no mount under its directory.
    const leftovers = {
      bridge: spawnSync('ip', ['link', 'show', BRIDGE]).status === 0,
      chains: spawnSync('iptables-save', [], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith(':KUBE-')),
      mounts: readFileSync('/proc/self/mounts', 'utf8').split('\n').filter((l) => l.includes(`${dir}/`)),
    };
    rmSync(dir, { recursive: true, force: true });
    expect(leftovers).toEqual({ bridge: false, chains: [], mounts: [] });
  }, 300_000);

  it('helm install --wait brought every Deployment to Ready, with the chart\'s security contexts', () => {
    const deployments = (JSON.parse(k(['get', 'deployments', '-n', NAMESPACE, '-o', 'json'])) as { items: { metadata: { name: string }; status: { readyReplicas?: number }; spec: { replicas: number } }[] }).items;
    expect(Object.fromEntries(deployments.map((d) => [d.metadata.name, `${d.status.readyReplicas ?? 0}/${d.spec.replicas}`])))
      .toEqual({ 'svc-auth': '2/2', 'svc-operator': '1/1', 'svc-management': '1/1' });
    for (const p of [...pods('auth'), ...pods('operator')]) {
      expect(p.spec.securityContext).toMatchObject({ runAsNonRoot: true });
      expect(p.spec.containers[0]?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    }
  }, TEST_TIMEOUT);

  it('svc-auth and svc-operator run in-cluster, as their ServiceAccounts, from the kubelet-mounted token', () => {
    // The pods carry no kubeconfig: the API reached them only through the projected token and KUBERNETES_SERVICE_HOST.
    const env = k(['exec', '-n', NAMESPACE, 'deploy/svc-operator', '--', 'node', '-e',
      'const fs=require("fs");process.stdout.write(JSON.stringify({host:process.env.KUBERNETES_SERVICE_HOST,token:fs.existsSync("/var/run/secrets/kubernetes.io/serviceaccount/token"),kubeconfig:!!process.env.KUBECONFIG}))']);
    expect(JSON.parse(env)).toEqual({ host: '10.0.0.1', token: true, kubeconfig: false });
    // The Lease the operator holds names its pod.
    const lease = JSON.parse(k(['get', 'lease', '-n', NAMESPACE, '-o', 'json'])) as { items: { spec: { holderIdentity?: string } }[] };
    const operatorPod = pods('operator')[0]!.metadata.name;
    expect(lease.items.some((l) => l.spec.holderIdentity?.startsWith(operatorPod))).toBe(true);
  }, TEST_TIMEOUT);

  it('an open topic is served through the nginx pod without a token', async () => {
    const r = await get(WAF.topicFile);
    expect(r.status).toBe(200);
    expect(r.body).toContain(marker);
  }, TEST_TIMEOUT);

  it('svc auth add-token in svc-management closes the topic; both svc-auth pods load it; nginx enforces it', async () => {
    const out = JSON.parse(svc(['add-token', '--topic-hierarchy', TOPIC.value, '--description', 'node suite', '-o', 'json'])) as { token: string; id: string };
    ({ token, id: tokenId } = out);
    secrets.push(token);
    expect(token.length).toBeGreaterThan(20);
    await until('both svc-auth pods to serve the one token', 60_000, () => authPodsServing(1));
    const refused = await get(WAF.topicFile);
    expect(refused.status).toBe(401);
    expect(refused.body).not.toContain(marker);
    const bearer = await get(WAF.topicFile, `Bearer ${token}`);
    expect(bearer.status).toBe(200);
    expect(bearer.body).toContain(marker);
    const query = await get(`${WAF.topicFile}?token=${encodeURIComponent(token)}`);
    expect(query.status).toBe(200);
    expect(query.body).toContain(marker);
    expect((await get(WAF.openTopicFile)).status).toBe(200);
    expect((await get(WAF.topicFile, 'Bearer svc_wrong-token')).status).toBe(401);
  }, TEST_TIMEOUT);

  it('fault: one svc-auth pod deleted — the other serves, the Deployment replaces it, never a 200 without the token', async () => {
    const victim = pods('auth')[0]!.metadata.name;
    const counts = await whileLooping(async () => {
      await sleep(1000);
      k(['delete', 'pod', '-n', NAMESPACE, victim, '--wait=false']);
      await until('a replacement svc-auth pod Ready', 120_000, () => {
        const now = pods('auth').filter(ready);
        return now.length === 2 && now.every((p) => p.metadata.name !== victim);
      });
      await sleep(1000);
    });
    expect(counts.openedWithoutToken).toBe(0);
    expect(counts.withoutToken).toBeGreaterThan(10);
    // Sanity: the with-token side worked most of the time, so the loop really went through svc-auth.
    const failed = Object.values(counts.failedWithToken).reduce((a, b) => a + b, 0);
    expect(failed).toBeLessThan(counts.withToken / 2);
  }, TEST_TIMEOUT);

  it('fault: svc-operator pod deleted — a change made meanwhile reaches svc-auth once the new pod holds the Lease', async () => {
    const victim = pods('operator')[0]!.metadata.name;
    let second = '';
    const counts = await whileLooping(async () => {
      k(['delete', 'pod', '-n', NAMESPACE, victim, '--wait=false']);
      // The change, made while no operator (or a new one not yet leading) runs.
      second = (JSON.parse(svc(['add-token', '--topic-hierarchy', TOPIC.value, '--description', 'during operator restart', '-o', 'json'])) as { token: string }).token;
      secrets.push(second);
      await until('the new svc-operator to hold the Lease', 120_000, () => {
        const now = pods('operator').filter(ready);
        if (now.length !== 1 || now[0]!.metadata.name === victim) return false;
        const leases = JSON.parse(k(['get', 'lease', '-n', NAMESPACE, '-o', 'json'])) as { items: { spec: { holderIdentity?: string } }[] };
        return leases.items.some((l) => l.spec.holderIdentity?.startsWith(now[0]!.metadata.name));
      });
      await until('both svc-auth pods to serve both tokens', 90_000, () => authPodsServing(2));
    });
    expect(counts.openedWithoutToken).toBe(0);
    const r = await get(WAF.topicFile, `Bearer ${second}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain(marker);
  }, TEST_TIMEOUT);

  it('fault: kubectl rollout restart of svc-auth — never a 200 without the token', async () => {
    const before = new Set(pods('auth').map((p) => p.metadata.name));
    const counts = await whileLooping(async () => {
      k(['rollout', 'restart', '-n', NAMESPACE, 'deployment/svc-auth']);
      k(['rollout', 'status', '-n', NAMESPACE, 'deployment/svc-auth', '--timeout=180s']);
      await until('the old svc-auth pods gone', 120_000, () => pods('auth').every((p) => !before.has(p.metadata.name)));
    });
    expect(counts.openedWithoutToken).toBe(0);
    const failed = Object.values(counts.failedWithToken).reduce((a, b) => a + b, 0);
    expect(failed).toBeLessThan(counts.withToken / 2);
    expect(await authPodsServing(2)).toBe(true);
  }, TEST_TIMEOUT);

  it('svc auth remove-token refuses that token again; remove-tokens opens the topic', async () => {
    svc(['remove-token', '--topic-hierarchy', TOPIC.value, '--id', tokenId]);
    await until('both svc-auth pods to serve one token', 60_000, () => authPodsServing(1));
    const removed = await get(WAF.topicFile, `Bearer ${token}`);
    expect(removed.status).toBe(401);
    expect(removed.body).not.toContain(marker);
    expect((await get(WAF.topicFile)).status).toBe(401);

    svc(['remove-tokens', '--topic-hierarchy', TOPIC.value]);
    await until('both svc-auth pods to serve no token', 60_000, () => authPodsServing(0));
    const open = await get(WAF.topicFile);
    expect(open.status).toBe(200);
    expect(open.body).toContain(marker);
  }, TEST_TIMEOUT);

  it('no token reached any pod\'s log', () => {
    const targets = ['deploy/svc-operator', 'deploy/svc-management', `pod/${NGINX_POD}`, ...pods('auth').map((p) => `pod/${p.metadata.name}`)];
    const logs = targets.map((t) => k(['logs', '-n', NAMESPACE, t, '--all-containers'])).join('\n');
    expect(logs.length).toBeGreaterThan(0);
    expect(secrets.length).toBe(2);
    expect(secrets.filter((s) => logs.includes(s))).toEqual([]);
  });
});
