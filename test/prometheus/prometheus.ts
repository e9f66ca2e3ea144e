// The Prometheus the alerting and dashboard suites run: Debian's `prometheus` package (the server and promtool), found
// on PATH or installed with apt when root, and under CI=true never skipped. The server runs as our own child with its
// own TSDB in a temp dir on a free loopback port (the package's systemd unit is irrelevant: there is no systemd here).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { helmBinary, helmTemplate, ofKind, type Manifest } from '../stack/helm.js';
import { freePort, httpGet } from '../support/ports.js';
import { Supervised, untilWhileRunning } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

export const PROMETHEUS_PACKAGE = 'prometheus';
export const PROMETHEUS_INSTALL_COMMAND = `apt-get update && apt-get install -y ${PROMETHEUS_PACKAGE}`;

function onPath(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(':').filter((d) => d.length > 0);
  for (const path of [...dirs.map((d) => join(d, name)), join('/usr/bin', name), join('/usr/local/bin', name)]) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface PrometheusTools {
  readonly prometheus: string;
  readonly promtool: string;
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * The server and promtool, installing Debian's package when they are missing and we are root. Throws with the
 * install command otherwise: the suites fail rather than skip (SVC_SKIP_PROMETHEUS=1 outside CI turns that into a
 * skip, decided by prometheusSkipReason before any test runs).
 */
export function ensurePrometheus(): PrometheusTools {
  const found = (): PrometheusTools | undefined => {
    const prometheus = onPath('prometheus');
    const promtool = onPath('promtool');
    return prometheus && promtool ? { prometheus, promtool } : undefined;
  };
  const have = found();
  if (have) return have;
  if (!isRoot()) throw new Error(`prometheus and promtool are not installed and this user cannot install them: run \`sudo sh -c '${PROMETHEUS_INSTALL_COMMAND}'\``);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', PROMETHEUS_PACKAGE]]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', timeout: 540_000 });
    if (r.status !== 0) {
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-15).join('\n');
      throw new Error(`installing prometheus failed at \`apt-get ${args.join(' ')}\` (exit ${r.status ?? r.signal}); install it by hand: ${PROMETHEUS_INSTALL_COMMAND}\n${out}`);
    }
  }
  const installed = found();
  if (!installed) throw new Error(`${PROMETHEUS_PACKAGE} installed but prometheus/promtool not found; install by hand: ${PROMETHEUS_INSTALL_COMMAND}`);
  return installed;
}

/** Why the suites skip (only outside CI, when the tools are missing and SVC_SKIP_PROMETHEUS=1 asks for it). */
export function prometheusSkipReason(): string | undefined {
  if (process.env.CI === 'true' || process.env.SVC_SKIP_PROMETHEUS !== '1') return undefined;
  return onPath('prometheus') && onPath('promtool') ? undefined : 'prometheus is not installed and SVC_SKIP_PROMETHEUS=1';
}

export function runTool(binary: string, args: readonly string[], cwd?: string): { status: number; output: string } {
  const r = spawnSync(binary, args, { encoding: 'utf8', timeout: 120_000, ...(cwd ? { cwd } : {}) });
  return { status: r.status ?? -1, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

/** One rule of a PrometheusRule group, as the chart renders it. */
export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** The alerts values on: the chart rendered for `namespace` with the PrometheusRule and the dashboard. */
export interface Monitoring {
  readonly groups: RuleGroup[];
  readonly dashboard: Dashboard;
  readonly manifests: Manifest[];
}

export async function renderMonitoring(namespace: string, values: Record<string, unknown> = {}): Promise<Monitoring> {
  const helm = await helmBinary();
  const r = helmTemplate(helm, {
    namespace,
    values: { ...values, serviceMonitor: { enabled: true }, prometheusRule: { enabled: true, ...(values.prometheusRule as object | undefined) }, grafanaDashboard: { enabled: true } },
  });
  if (r.status !== 0) throw new Error(`helm template failed:\n${r.stderr}`);
  const rule = ofKind(r.manifests, 'PrometheusRule')[0];
  if (!rule) throw new Error('the chart rendered no PrometheusRule with prometheusRule.enabled=true');
  const cm = r.manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'svc-access-control-dashboard');
  if (!cm) throw new Error('the chart rendered no dashboard ConfigMap with grafanaDashboard.enabled=true');
  const json = Object.values((cm as unknown as { data: Record<string, string> }).data)[0]!;
  return { groups: (rule.spec as { groups: RuleGroup[] }).groups, dashboard: JSON.parse(json) as Dashboard, manifests: r.manifests };
}

/**
 * The job label the Prometheus Operator gives each component's targets: the name of the Service its ServiceMonitor
 * selects. The rules' up{job=...} selectors must name these, so the suite scrapes under the same job names.
 */
export function scrapeJobs(manifests: readonly Manifest[]): { auth: string; operator: string } {
  const jobs: Record<string, string> = {};
  for (const sm of ofKind(manifests, 'ServiceMonitor')) {
    const match = (sm.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    const services = ofKind(manifests, 'Service').filter((svc) => Object.entries(match).every(([k, v]) => svc.metadata.labels?.[k] === v));
    if (services.length !== 1) throw new Error(`ServiceMonitor ${sm.metadata.name} selects ${services.length} Services`);
    jobs[match['app.kubernetes.io/component']!] = services[0]!.metadata.name;
  }
  if (!jobs.auth || !jobs.operator) throw new Error(`no ServiceMonitor for auth or operator: ${JSON.stringify(jobs)}`);
  return { auth: jobs.auth, operator: jobs.operator };
}

/** A rules file as Prometheus and promtool read it (the PrometheusRule's spec.groups). */
export function writeRulesFile(dir: string, groups: readonly RuleGroup[], name = 'rules.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, dump({ groups }, { lineWidth: -1 }));
  return file;
}

/** The expression without its final threshold comparison: what the alert compares, which must have series. */
export function alertSignal(expr: string): string | undefined {
  const m = /^([\s\S]*?)\s*(?:==|!=|>=|<=|>|<)\s*(?:bool\s+)?-?[0-9.]+(?:e[+-]?[0-9]+)?\s*$/.exec(expr);
  return m?.[1];
}

export const alertsOf = (groups: readonly RuleGroup[]): Rule[] => groups.flatMap((g) => g.rules.filter((r) => r.alert !== undefined));

export interface DashboardTarget {
  expr: string;
  refId: string;
  legendFormat?: string;
}
export interface DashboardPanel {
  type: string;
  title: string;
  targets?: DashboardTarget[];
  panels?: DashboardPanel[];
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query?: unknown; allValue?: string; includeAll?: boolean }[] };
}

/** Every panel with queries, rows' nested panels included. */
export function queryPanels(d: Dashboard): DashboardPanel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => (p.targets ?? []).length > 0);
}

/**
 * A panel query as Grafana sends it to Prometheus. Grafana replaces $namespace with the selected namespace and a
 * multi-value $pod with "All" selected with the variable's allValue (.*); $__rate_interval is
 * max($__interval + scrape interval, 4 × scrape interval), and $__interval is at least the data source's scrape
 * interval, so with the suite's 1 s scrapes and $__interval at that minimum it is max(1 s + 1 s, 4 s) = 4 s.
 */
export function grafanaQuery(expr: string, vars: { namespace: string; scrapeSeconds: number; podAll?: string }): string {
  const interval = vars.scrapeSeconds;
  const rateInterval = Math.max(interval + vars.scrapeSeconds, 4 * vars.scrapeSeconds);
  return expr
    .replaceAll('$__rate_interval', `${rateInterval}s`)
    .replaceAll('$__interval', `${interval}s`)
    .replaceAll('$namespace', vars.namespace)
    .replaceAll('$pod', vars.podAll ?? '.*');
}

/** test/support's waitUntil with this suite's positional arguments and its fixed poll interval. */
export function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 250): Promise<T> {
  return waitUntil(check, { what, timeoutMs, intervalMs: everyMs });
}

export { freePort };

export interface ScrapeTarget {
  readonly job: string;
  readonly port: number;
  readonly labels: Record<string, string>;
}

export interface QueryResult {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value?: [number, string] }[] };
}

/** A Prometheus server of our own: 1 s scrapes and rule evaluations, TSDB in a temp dir, stopped by stop(). */
export class PrometheusServer {
  private child: Supervised | undefined;
  port = 0;
  readonly dir = mkdtempSync(join(tmpdir(), 'svc-prometheus-'));

  constructor(
    private readonly binary: string,
    private readonly targets: readonly ScrapeTarget[],
    private readonly ruleFiles: readonly string[],
  ) {}

  async start(): Promise<this> {
    this.port = await freePort();
    const config = {
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: this.ruleFiles,
      // One job per Service name: the Prometheus Operator's ServiceMonitor makes the job label the Service's name,
      // which is what the rules' up{job=...} selectors expect; namespace and pod are the labels it adds too.
      scrape_configs: [...new Set(this.targets.map((t) => t.job))].map((job) => ({
        job_name: job,
        metrics_path: '/metrics',
        static_configs: this.targets.filter((t) => t.job === job).map((t) => ({ targets: [`127.0.0.1:${t.port}`], labels: t.labels })),
      })),
    };
    const configFile = join(this.dir, 'prometheus.yml');
    writeFileSync(configFile, dump(config));
    const data = join(this.dir, 'data');
    mkdirSync(data);
    this.child = Supervised.spawn('prometheus', this.binary, [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${data}`,
      `--web.listen-address=127.0.0.1:${this.port}`,
      '--web.enable-lifecycle',
      '--log.level=warn',
    ]);
    await untilWhileRunning('prometheus /-/ready', 60_000, [this.child], async () => (await this.get('/-/ready')).status === 200, { intervalMs: 200 });
    return this;
  }

  get log(): string {
    return this.child?.output ?? '';
  }

  private get(path: string): Promise<{ status: number; body: string }> {
    return httpGet(this.port, path, {}, 10_000);
  }

  /** An instant query through the HTTP API (/api/v1/query), at the server's now. */
  async query(expr: string): Promise<QueryResult> {
    const r = await this.get(`/api/v1/query?query=${encodeURIComponent(expr)}`);
    try {
      return JSON.parse(r.body) as QueryResult;
    } catch {
      return { status: 'error', error: `HTTP ${r.status}: ${r.body.slice(0, 500)}` };
    }
  }

  /** The rule groups the server loaded, with each rule's health and last error. */
  async rules(): Promise<{ name: string; rules: { name: string; health: string; lastError?: string; type: string }[] }[]> {
    const r = await this.get('/api/v1/rules');
    return (JSON.parse(r.body) as { data: { groups: { name: string; rules: { name: string; health: string; lastError?: string; type: string }[] }[] } }).data.groups;
  }

  async targetsHealth(): Promise<{ job: string; health: string; lastError: string }[]> {
    const r = await this.get('/api/v1/targets');
    const active = (JSON.parse(r.body) as { data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] } }).data.activeTargets;
    return active.map((t) => ({ job: t.labels.job, health: t.health, lastError: t.lastError }));
  }

  async stop(): Promise<void> {
    await this.child?.stop('SIGTERM', 10_000);
  }
}

/** The svc_ metric names a PromQL expression selects, histogram suffixes folded into their metric. */
export function referencedMetrics(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\b(svc_(?:auth|operator)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, '')))];
}
