// The chart's alerts and dashboard checked offline with Debian's promtool: `promtool check rules` on the rendered
// PrometheusRule, `promtool test rules` with series that make every alert fire and not fire (alerts.promtool.yaml),
// every alert's runbook in docs/runbooks.md, thresholds and extra rules reaching the rendered rules, and every metric
// the rules and the dashboard name defined by svc-auth or svc-operator. The live suite (live.test.ts) then runs them
// on a real Prometheus scraping the real programs.
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { repoRoot } from '../controlplane/controlplane.js';
import {
  alertsOf,
  ensurePrometheus,
  prometheusSkipReason,
  queryPanels,
  referencedMetrics,
  renderMonitoring,
  runTool,
  writeRulesFile,
  type Monitoring,
  type PrometheusTools,
  type RuleGroup,
} from './prometheus.js';

const TIMEOUT = 300_000;
const PROMTOOL_CASES = join(repoRoot, 'test', 'prometheus', 'alerts.promtool.yaml');
const RUNBOOKS = join(repoRoot, 'docs', 'runbooks.md');
const skip = prometheusSkipReason();

interface AlertCase {
  alertname: string;
  exp_alerts?: unknown[];
}
interface PromtoolFile {
  tests: { name?: string; alert_rule_test?: AlertCase[] }[];
}

/** The metric names defined in a source file (prom-client's `name: '...'` and the decision histogram's name). */
function definedMetrics(): Set<string> {
  const names = new Set<string>();
  for (const file of ['authz/telemetry/metrics.ts', 'operator/metrics.ts']) {
    for (const m of readFileSync(join(repoRoot, file), 'utf8').matchAll(/'(svc_(?:auth|operator)_[a-z0-9_]+)'/g)) names.add(m[1]!);
  }
  return names;
}

(skip ? describe.skip : describe)('the chart\'s alerts and dashboard, offline (promtool)', () => {
  let tools: PrometheusTools;
  let defaults: Monitoring;
  let dir: string;

  beforeAll(async () => {
    tools = ensurePrometheus();
    defaults = await renderMonitoring('svc');
    dir = mkdtempSync(join(tmpdir(), 'svc-promtool-'));
  }, TIMEOUT);

  it('promtool check rules accepts the rendered PrometheusRule (expressions and annotation templates)', () => {
    const file = writeRulesFile(dir, defaults.groups, 'full.yaml');
    const r = runTool(tools.promtool, ['check', 'rules', file]);
    expect(r.output).toContain(`SUCCESS: ${alertsOf(defaults.groups).length} rules found`);
    expect(r.status).toBe(0);
  });

  it('promtool test rules: every alert fires on its series and stays quiet on the others', () => {
    // promtool compares annotations exactly; the cases assert labels, so the annotations (checked above) are left out.
    const groups: RuleGroup[] = defaults.groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _drop, ...rule }) => rule) }));
    writeRulesFile(dir, groups, 'rules.yaml');
    copyFileSync(PROMTOOL_CASES, join(dir, 'alerts.promtool.yaml'));
    const r = runTool(tools.promtool, ['test', 'rules', 'alerts.promtool.yaml'], dir);
    expect(r.output).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });

  it('alerts.promtool.yaml has a firing and a quiet case for every alert, and none for an alert that does not exist', () => {
    const cases = (load(readFileSync(PROMTOOL_CASES, 'utf8')) as PromtoolFile).tests.flatMap((t) => t.alert_rule_test ?? []);
    const alerts = alertsOf(defaults.groups).map((a) => a.alert!);
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: mine.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({ alert, fires: true });
      expect({ alert, quiet: mine.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({ alert, quiet: true });
    }
    expect([...new Set(cases.map((c) => c.alertname))].filter((a) => !alerts.includes(a))).toEqual([]);
  });

  it('has the alerts the issue asks for, each with a severity, a summary, a description and a runbook in docs/runbooks.md', () => {
    const alerts = alertsOf(defaults.groups);
    expect(alerts.map((a) => a.alert)).toEqual(expect.arrayContaining([
      'SvcAuthUnavailable', 'SvcAuthNotReady', 'SvcAuthNoSnapshot', 'SvcAuthSnapshotBehindOperator', 'SvcAuthReloadFailures',
      'SvcOperatorDown', 'SvcOperatorNoLeader', 'SvcOperatorNotReconciling', 'SvcOperatorReconcileErrors', 'SvcAuthDecisionLatencyHigh',
      'SvcAuthRefusalSurge', 'SvcAuthMalformedSurge', 'SvcAuthJwksFetchFailures', 'SvcAuthTokensExpiring', 'SvcAuthMisdirectedRequests',
    ]));
    const headings = [...readFileSync(RUNBOOKS, 'utf8').matchAll(/^## (\S+)\s*$/gm)].map((m) => m[1]!);
    for (const a of alerts) {
      expect({ alert: a.alert, severity: a.labels?.severity }).toEqual({ alert: a.alert, severity: expect.stringMatching(/^(critical|warning|info)$/) });
      expect(a.annotations?.summary).toBeTruthy();
      expect(a.annotations?.description).toBeTruthy();
      expect(a.annotations?.runbook_url).toBe(`docs/runbooks.md#${a.alert!.toLowerCase()}`);
      expect(headings).toContain(a.alert);
    }
    // Every runbook section is an alert's (a renamed alert leaves no orphan).
    expect(headings.filter((h) => !alerts.some((a) => a.alert === h))).toEqual([]);
  });

  it('selects only the release namespace in every expression', () => {
    for (const a of alertsOf(defaults.groups)) {
      const selectors = [...a.expr.matchAll(/\b(?:svc_[a-z0-9_]+|up)\{([^}]*)\}/g)].map((m) => m[1]!);
      expect({ alert: a.alert, selectors: selectors.length > 0 }).toEqual({ alert: a.alert, selectors: true });
      for (const s of selectors) expect({ alert: a.alert, s }).toEqual({ alert: a.alert, s: expect.stringContaining('namespace="svc"') });
    }
  });

  it('carries the threshold values, labels, runbook base URL and extra rules into the rendered rules', async () => {
    const extra = { alert: 'SvcTeamCustom', expr: 'vector(1) > 2', labels: { severity: 'info' } };
    const m = await renderMonitoring('data', {
      prometheusRule: {
        labels: { release: 'kube-prometheus-stack' },
        runbookBaseUrl: 'https://runbooks.example.org/svc.html',
        extraRules: [extra],
        thresholds: {
          unavailableFor: '7m', snapshotBehindSeconds: 45, snapshotBehindSlackSeconds: 20, errorWindow: '30m', queueStuckFor: '20m',
          decisionLatencyP99Seconds: 0.02, refusalSurgeFactor: 6, refusalSurgeMinRate: 2, malformedSurgeFactor: 3, malformedSurgeMinRate: 0.25,
          tokenExpiryWindow: '24h',
        },
      },
    });
    const rule = m.manifests.find((x) => x.kind === 'PrometheusRule')!;
    expect(rule.metadata.labels?.release).toBe('kube-prometheus-stack');
    const by = Object.fromEntries(alertsOf(m.groups).map((a) => [a.alert!, a]));
    expect(by.SvcAuthUnavailable!.for).toBe('7m');
    expect(by.SvcAuthSnapshotBehindOperator!.expr).toMatch(/> bool 20\)\s*> 45$/);
    expect(by.SvcAuthReloadFailures!.expr).toContain('[30m]');
    expect(by.SvcOperatorNotReconciling!.expr).toContain('[20m]');
    expect(by.SvcAuthDecisionLatencyHigh!.expr).toMatch(/> 0\.02$/);
    expect(by.SvcAuthRefusalSurge!.expr).toMatch(/, 2\)\s*> 6$/);
    expect(by.SvcAuthMalformedSurge!.expr).toMatch(/, 0\.25\)\s*> 3$/);
    expect(by.SvcAuthTokensExpiring!.expr).toContain('within="24h"');
    expect(by.SvcAuthUnavailable!.annotations?.runbook_url).toBe('https://runbooks.example.org/svc.html#svcauthunavailable');
    expect(by.SvcTeamCustom).toEqual(extra);
    expect(by.SvcAuthUnavailable!.expr).toContain('namespace="data"');
    const r = runTool(tools.promtool, ['check', 'rules', writeRulesFile(dir, m.groups, 'custom.yaml')]);
    expect(r.status).toBe(0);
  });

  it('names only metrics that svc-auth and svc-operator define, in the rules and in every dashboard panel', () => {
    const defined = definedMetrics();
    const used = [
      ...alertsOf(defaults.groups).flatMap((a) => referencedMetrics(a.expr)),
      ...queryPanels(defaults.dashboard).flatMap((p) => p.targets!.flatMap((t) => referencedMetrics(t.expr))),
    ];
    expect([...new Set(used)].filter((n) => !defined.has(n))).toEqual([]);
  });

  it('ships the dashboard for Grafana\'s sidecar: its label, a stable uid, and only the variables it declares', () => {
    const cm = defaults.manifests.find((x) => x.kind === 'ConfigMap' && x.metadata.name === 'svc-access-control-dashboard')!;
    expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
    expect(defaults.dashboard.uid).toBe('svc-access-control');
    const declared = new Set(defaults.dashboard.templating.list.map((v) => v.name));
    for (const p of queryPanels(defaults.dashboard)) {
      for (const t of p.targets!) {
        const vars = [...t.expr.matchAll(/\$(\w+)/g)].map((v) => v[1]!).filter((v) => !v.startsWith('__'));
        expect({ panel: p.title, unknown: vars.filter((v) => !declared.has(v)) }).toEqual({ panel: p.title, unknown: [] });
      }
    }
    const titles = queryPanels(defaults.dashboard).map((p) => p.title);
    expect(titles).toEqual(expect.arrayContaining([
      'Decisions by outcome', 'Decisions by scope kind', 'Decision latency per pod (p50, p99)', 'Snapshot generation per pod', 'Snapshot age per pod',
      'Reloads by result', 'Reconciles by result', 'Work queue depth', 'Tokens and scopes in service', 'JWT verifications by outcome and failed check',
      'Refusals by reason',
    ]));
  });
});
