// The chart's alerts and dashboard on a real Prometheus (Debian's package) scraping real svc-operator and svc-auth
// processes on the suite's kube-apiserver: every rule loads and evaluates without error; every alert's expression
// evaluates, its signal (the expression without its threshold comparison) returns series and every metric it names
// has series; every dashboard panel's query, with Grafana's variables substituted as Grafana would, returns series, so
// a renamed metric cannot leave an alert blind or a panel silently empty. The traffic the suite sends (granted,
// refused, malformed, misdirected, a JWT of an issuer whose keys cannot be fetched) fills the counters that only
// move on such requests, and the alerts that have no `for` and are provoked fire.
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Kube } from '../../k8s/kube.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { AuthProcess, OperatorProcess, createScope, kubeFor, newToken, topicFile, updateSpec } from '../integration/operator-support.js';
import {
  alertSignal,
  alertsOf,
  ensurePrometheus,
  freePort,
  grafanaQuery,
  prometheusSkipReason,
  PrometheusServer,
  queryPanels,
  referencedMetrics,
  renderMonitoring,
  scrapeJobs,
  until,
  writeRulesFile,
  type Monitoring,
  type QueryResult,
} from './prometheus.js';

const SETUP_TIMEOUT = 300_000;
const TIMEOUT = 120_000;
const SCRAPE_SECONDS = 1;
const TOPIC = 'origin.a.wis2.mw-met.data.core';
const skip = prometheusSkipReason();

/** GET an auth endpoint of svc-auth with exactly these headers (no defaults): the status, 0 for no answer. */
function authRequest(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers, timeout: 3000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** A compact JWS naming `issuer`: routed to JWT verification, which fails for want of the issuer's keys. */
function jwtOf(issuer: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256', kid: 'k1', typ: 'JWT' })}.${part({ iss: issuer, aud: 'svc', sub: 'someone', exp: Math.floor(Date.now() / 1000) + 600 })}.${Buffer.from('not a signature').toString('base64url')}`;
}

const series = (r: QueryResult): number => r.data?.result.length ?? 0;

(skip ? describeCluster.skip : describeCluster)('the chart\'s alerts and dashboard on a real Prometheus scraping svc-auth and svc-operator', () => {
  let kube: Kube;
  let ns: string;
  let monitoring: Monitoring;
  let prom: PrometheusServer;
  const started: { stop(): Promise<void> }[] = [];

  async function traffic(auth: AuthProcess, tokens: { secret: string }[], issuer: string): Promise<void> {
    const target = { 'X-Original-Method': 'GET', 'X-Original-URI': topicFile(TOPIC) };
    for (const t of tokens) expect(await authRequest(auth.port, '/authz/auth-request', { ...target, Authorization: `Bearer ${t.secret}` })).toBe(200);
    expect(await authRequest(auth.port, '/authz/auth-request', target)).toBe(401);
    expect(await authRequest(auth.port, '/authz/auth-request', { ...target, Authorization: 'Bearer svc-test-not-a-token-at-all' })).toBe(401);
    // A method that is no HTTP token: malformed.
    expect(await authRequest(auth.port, '/authz/auth-request', { ...target, 'X-Original-Method': 'G E T' })).toBeGreaterThanOrEqual(400);
    // Traefik's headers at the nginx endpoint: misdirected (and malformed).
    expect(await authRequest(auth.port, '/authz/auth-request', { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': topicFile(TOPIC) })).toBeGreaterThanOrEqual(400);
    expect(await authRequest(auth.port, '/authz/auth-request', { ...target, Authorization: `Bearer ${jwtOf(issuer)}` })).toBeGreaterThanOrEqual(400);
  }

  beforeAll(async () => {
    const tools = ensurePrometheus();
    kube = await kubeFor(kubeconfigPath());
    ns = await newNamespace('prom');
    monitoring = await renderMonitoring(ns);
    const rulesFile = writeRulesFile(mkdtempSync(join(tmpdir(), 'svc-prom-rules-')), monitoring.groups);

    const op = await new OperatorProcess(kubeconfigPath(), ns).start().started();
    started.push(op);
    // Nothing listens on this port: every JWKS fetch of this issuer fails, as with an unreachable provider.
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const auths = await Promise.all([
      new AuthProcess(kubeconfigPath(), ns).start().started(),
      new AuthProcess(kubeconfigPath(), ns, ['--oidc-issuer', issuer, '--oidc-audience', 'svc']).start().started(),
    ]);
    started.push(...auths);

    const jobs = scrapeJobs(monitoring.manifests);
    prom = await new PrometheusServer(tools.prometheus, [
      ...auths.map((a, i) => ({ job: jobs.auth, port: a.metricsPort, labels: { namespace: ns, pod: `svc-auth-${i}` } })),
      { job: jobs.operator, port: op.port, labels: { namespace: ns, pod: 'svc-operator-0' } },
    ], [rulesFile]).start();
    started.push(prom);
    await until('every target scraped', async () => {
      const t = await prom.targetsHealth();
      return t.length === 3 && t.every((x) => x.health === 'up');
    }, 60_000, 250);

    // One token expires within the hour: svc_auth_tokens_expiring counts it, SvcAuthTokensExpiring goes pending.
    const soon = newToken(new Date(Date.now() + 30 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z'));
    const lasting = newToken();
    await createScope(kube, ns, 'scope-a', { topicHierarchy: TOPIC, tokens: [soon.record, lasting.record] });
    await until('svc-auth granting the new tokens', async () => (await Promise.all(auths.map((a) => a.decide(topicFile(TOPIC), lasting.secret)))).every((s) => s === 200), 60_000);

    // The snapshot-behind alert sees a write only against a sample from 15 s before it: write again once Prometheus has
    // that much history (a revocation: svc-auth must refuse the removed token).
    await until('15 s of history in Prometheus', async () => series(await prom.query(`svc_operator_snapshot_writes_total{namespace="${ns}",kind="index"} offset 16s`)) > 0, 60_000, 500);
    const added = newToken();
    await updateSpec(kube, ns, 'scope-a', (spec) => ({ ...spec, tokens: [soon.record, added.record] }));
    await until('svc-auth refusing the revoked token', async () => (await Promise.all(auths.map((a) => a.decide(topicFile(TOPIC), lasting.secret)))).every((s) => s === 401), 60_000);
    for (const a of auths) await traffic(a, [soon, added], issuer);
    await until('the operator\'s last index write known to Prometheus', async () => series(await prom.query(`max_over_time(timestamp(svc_operator_snapshot_writes_total{kind="index",namespace="${ns}"} > svc_operator_snapshot_writes_total{kind="index",namespace="${ns}"} offset 15s)[1h:15s])`)) > 0, 60_000, 500);
    // Every rule evaluated at least once since the traffic (1 s evaluations).
    await until('every rule evaluated', async () => (await prom.rules()).flatMap((g) => g.rules).every((r) => r.health !== 'unknown'), 30_000, 500);
    for (const a of auths) await traffic(a, [soon, added], issuer);
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    kube?.close();
  });

  it('loads every rule of the rendered PrometheusRule and evaluates each without error', async () => {
    const rules = (await prom.rules()).flatMap((g) => g.rules);
    expect(rules.map((r) => r.name).sort()).toEqual(alertsOf(monitoring.groups).map((a) => a.alert!).sort());
    expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([]);
  }, TIMEOUT);

  it('evaluates every alert expression; its signal and every metric it names return series', async () => {
    const problems: string[] = [];
    for (const a of alertsOf(monitoring.groups)) {
      const whole = await prom.query(a.expr);
      if (whole.status !== 'success') problems.push(`${a.alert}: ${whole.error}`);
      const signal = alertSignal(a.expr);
      if (signal === undefined) problems.push(`${a.alert}: no threshold comparison at the end of its expression`);
      else if (series(await until(`${a.alert}'s signal`, async () => {
        const r = await prom.query(signal);
        return series(r) > 0 ? r : undefined;
      }, 20_000, 500).catch((): QueryResult => ({ status: 'success', data: { resultType: 'vector', result: [] } }))) === 0) problems.push(`${a.alert}: its signal returns no series: ${signal}`);
      for (const metric of referencedMetrics(a.expr)) {
        const r = await prom.query(`count({__name__=~"${metric}(_bucket)?",namespace="${ns}"})`);
        if (series(r) === 0) problems.push(`${a.alert}: no series of ${metric}`);
      }
    }
    expect(problems).toEqual([]);
  }, TIMEOUT);

  it('returns series for every query of every dashboard panel, Grafana variables substituted', async () => {
    const problems: string[] = [];
    for (const p of queryPanels(monitoring.dashboard)) {
      for (const t of p.targets!) {
        const q = grafanaQuery(t.expr, { namespace: ns, scrapeSeconds: SCRAPE_SECONDS });
        const r = await until(`panel "${p.title}" ${t.refId}`, async () => {
          const x = await prom.query(q);
          return x.status !== 'success' || series(x) > 0 ? x : undefined;
        }, 20_000, 500).catch((): QueryResult => ({ status: 'success', data: { resultType: 'vector', result: [] } }));
        if (r.status !== 'success') problems.push(`"${p.title}" ${t.refId}: ${r.status} ${r.error ?? ''}: ${q}`);
        else if (series(r) === 0) problems.push(`"${p.title}" ${t.refId}: no series: ${q}`);
      }
    }
    expect(problems).toEqual([]);
  }, TIMEOUT);

  it('fires the provoked alerts (misdirected requests, JWKS failures), holds the expiring token pending, and nothing else', async () => {
    const firing = async () => {
      const r = await prom.query(`ALERTS{namespace="${ns}"}`);
      return (r.data?.result ?? []).map((s) => `${s.metric.alertname} ${s.metric.alertstate}`).sort();
    };
    await until('the provoked alerts', async () => {
      const now = await firing();
      return ['SvcAuthJwksFetchFailures firing', 'SvcAuthMisdirectedRequests firing', 'SvcAuthTokensExpiring pending'].every((a) => now.includes(a));
    }, 30_000, 500);
    // Two refusal kinds grew from nothing within the minute: the surge alerts may be pending (their `for` is 2m). The
    // provoked JWKS failures make their requests wait out the key load's deadline, so on a loaded machine the latency
    // alert may be pending too (CI saw it with other suites running); its `for` keeps it from firing, which stays refused.
    // Likewise the snapshots-diverge alert: the scraped svc-auth processes take up the test's snapshot changes moments
    // apart, and a scrape on a loaded machine can fall between them (CI saw it pending); firing stays refused.
    const quiet = (await firing()).filter((a) => !/^SvcAuth(JwksFetchFailures|MisdirectedRequests) firing$|^SvcAuthTokensExpiring pending$|^SvcAuth(RefusalSurge|MalformedSurge|DecisionLatencyHigh|SnapshotsDiverge) pending$/.test(a));
    expect(quiet).toEqual([]);
  }, TIMEOUT);
});
