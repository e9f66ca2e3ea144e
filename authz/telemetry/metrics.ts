// svc-auth's Prometheus metrics: every answer, grant, reload and refusal counted, some brought in only at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { AccessIndex, IndexedScope, TokenTableBuilder } from '../../core/index.js';
import { ADDRESS_PROBLEMS, ENDPOINTS, LIKELY_PROXIES, type AddressProblem, type EndpointName, type LikelyProxy } from '../endpoints/index.js';

/** Every answer the auth endpoints give, as a metric label and a log field. */
export const OUTCOMES = ['open', 'granted', 'no-token', 'invalid-token', 'insufficient-scope', 'malformed', 'unavailable', 'error'] as const;
export type AnswerOutcome = (typeof OUTCOMES)[number];

/** The credential a grant was made on: svc_auth_grants_total's `credential` label. */
export const GRANT_CREDENTIALS = ['token', 'imported', 'jwt', 'session', 'network'] as const;
export type GrantCredential = (typeof GRANT_CREDENTIALS)[number];
const GRANT_INDEX = Object.fromEntries(GRANT_CREDENTIALS.map((c, i) => [c, i])) as Record<GrantCredential, number>;

/** The kind of the governing scope(s): `none` when nothing governs, `mixed` when two kinds govern at once. */
export const SCOPE_KIND_LABELS = ['none', 'topic', 'dataset', 'path', 'mixed'] as const;
export type ScopeKindLabel = (typeof SCOPE_KIND_LABELS)[number];

const ENDPOINT_INDEX = Object.fromEntries(ENDPOINTS.map((e, i) => [e, i])) as Record<EndpointName, number>;
const OUTCOME_INDEX = Object.fromEntries(OUTCOMES.map((o, i) => [o, i])) as Record<AnswerOutcome, number>;
const KIND_INDEX = Object.fromEntries(SCOPE_KIND_LABELS.map((k, i) => [k, i])) as Record<ScopeKindLabel, number>;
const CELLS = ENDPOINTS.length * OUTCOMES.length * SCOPE_KIND_LABELS.length;

/**
 * The fixed look-ahead windows of svc_auth_tokens_expiring, in seconds. Fixed so the label stays bounded
 * (never a token id), and wide enough apart that an alert can pick "within a day" or "within a week".
 */
export const EXPIRY_WINDOWS = [['1h', 3600], ['24h', 86_400], ['7d', 7 * 86_400], ['30d', 30 * 86_400]] as const;

/** The finite expiries (ms since the epoch) of an index's token records, sorted ascending. */
export function sortedExpiries(index: AccessIndex): Float64Array {
  const out: number[] = [];
  // copyInto hands each record's expiry to addDigest without building anything per record; records() would
  // hex-encode every digest, which for a large snapshot is a noticeable pause of the one thread serving requests.
  const collector = {
    addDigest(_bytes: Uint8Array, _offset: number, _owner: IndexedScope, expiresAt: number): void {
      if (Number.isFinite(expiresAt)) out.push(expiresAt);
    },
  };
  index.tokens.copyInto(collector as unknown as TokenTableBuilder<IndexedScope>, () => true);
  return Float64Array.from(out).sort();
}

/** How many of the sorted expiries fall at or before `t` (binary search). */
function countUpTo(sorted: Float64Array, t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export const DURATION_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.05] as const;

/**
 * A Prometheus histogram per endpoint whose observation is a few array writes. prom-client's own
 * Histogram hashes the label values on every observation (about as long as a whole open decision), so
 * this one keeps plain arrays and gives prom-client's registry the same exposition at scrape time.
 */
interface Sample {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

class EndpointHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly buckets: Float64Array[] = ENDPOINTS.map(() => new Float64Array(DURATION_BUCKETS.length));
  private readonly sums = new Float64Array(ENDPOINTS.length);
  private readonly counts = new Float64Array(ENDPOINTS.length);

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  observe(endpoint: number, seconds: number): void {
    const b = this.buckets[endpoint]!;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    if (i < DURATION_BUCKETS.length) b[i]! += 1;
    this.sums[endpoint]! += seconds;
    this.counts[endpoint]! += 1;
  }

  /** What prom-client's registry asks every metric for (its Histogram returns the same shape). */
  get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] }> {
    const values: Sample[] = [];
    ENDPOINTS.forEach((endpoint, e) => {
      const count = this.counts[e]!;
      if (count === 0) return;
      let cumulative = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        cumulative += this.buckets[e]![i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, endpoint }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', endpoint }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: { endpoint }, value: this.sums[e]! });
      values.push({ metricName: `${this.name}_count`, labels: { endpoint }, value: count });
    });
    return Promise.resolve({ name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values });
  }

  reset(): void {
    for (const b of this.buckets) b.fill(0);
    this.sums.fill(0);
    this.counts.fill(0);
  }
}

/**
 * svc_auth_grants_total, counted per request in a plain array (`counts`, by GRANT_CREDENTIALS' order) and brought
 * into prom-client at scrape time: a labelled child's inc() hashes its labels and stamps a time on every call, which
 * on the grant path cost as much as a decision's other bookkeeping together. Every credential starts at 0.
 */
function grantCounter(registers: Registry[], counts: Float64Array): void {
  const pushed = new Float64Array(counts.length);
  const grants: Counter<'credential'> = new Counter({
    name: 'svc_auth_grants_total',
    help: 'Grants by the credential that made them: token, imported (wis2box-auth) token, jwt, session, or network (the client address, docs/access-rules.md "Networks").',
    labelNames: ['credential'] as const,
    registers,
    collect: () => {
      GRANT_CREDENTIALS.forEach((credential, i) => {
        grants.labels(credential).inc(counts[i]! - pushed[i]!);
        pushed[i] = counts[i]!;
      });
    },
  });
  for (const c of GRANT_CREDENTIALS) grants.labels(c).inc(0);
}

/** svc_auth_client_address_untrusted_total, every series at 0. */
function untrustedCounter(registers: Registry[]): Counter<'endpoint' | 'reason'> {
  const untrusted = new Counter({
    name: 'svc_auth_client_address_untrusted_total',
    help: 'Refused requests whose endpoint read no client address it can trust (missing, repeated, disagreeing headers, too short a chain for --trusted-proxy-hops, or an endpoint that reads none) while a governing scope grants networks: network grants were off for them.',
    labelNames: ['endpoint', 'reason'] as const,
    registers,
  });
  for (const endpoint of ENDPOINTS) for (const reason of ADDRESS_PROBLEMS) untrusted.labels(endpoint, reason).inc(0);
  return untrusted;
}

/**
 * svc-auth's metrics, in their own registry, served on their own port. The per-request work is a few
 * increments of plain arrays; they reach prom-client's metrics at scrape time. Everything about the
 * snapshot is set on swap or computed at scrape time.
 */
export class AuthMetrics {
  readonly registry = new Registry();
  private readonly decisionCounts = new Float64Array(CELLS);
  private readonly decisionPushed = new Float64Array(CELLS);
  private readonly durations: EndpointHistogram;
  private readonly reloadFailures: Counter<'source'>;
  private readonly reloads: Counter<'source' | 'result'>;
  private readonly snapshotInfo: Gauge<'generation'>;
  private readonly scopes: Gauge;
  private readonly tokens: Gauge;
  private readonly loadSeconds: Gauge;
  private readonly ready: Gauge;
  private readonly jwtDecisions: Counter<'outcome' | 'failure'>;
  /** Children of jwtDecisions by label pair (failures are a fixed set of verification checks). */
  private readonly jwtChildren = new Map<string, { inc(): void }>();
  private readonly jwksFetches: Counter<'issuer' | 'result'>;
  private readonly misdirectedRequests: Counter<'endpoint' | 'likely_proxy'>;
  /** Grants by credential, in GRANT_CREDENTIALS' order (svc_auth_grants_total at scrape time). */
  private readonly grants = new Float64Array(GRANT_CREDENTIALS.length);
  private readonly untrustedAddresses: Counter<'endpoint' | 'reason'>;
  private loadedAt: number | null = null;
  private expiryIndex: AccessIndex | null = null;
  private expiries: Float64Array | null = null;
  private logDrops: () => number = () => 0;
  private importedBusy: () => number = () => 0;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.decisionsCounter(registers);
    this.jwtDecisions = new Counter({
      name: 'svc_auth_jwt_decisions_total',
      help: 'Decisions on JWT credentials (single sign-on), by outcome and, for a JWT that failed verification, the check that failed; svc_auth_decisions_total counts these too.',
      labelNames: ['outcome', 'failure'] as const,
      registers,
    });
    this.jwksFetches = new Counter({
      name: 'svc_auth_oidc_jwks_fetches_total',
      help: 'JWKS fetches of the OpenID issuers (at start, on an unknown key id at most once per cooldown, and periodically), by result.',
      labelNames: ['issuer', 'result'] as const,
      registers,
    });
    this.misdirectedRequests = new Counter({
      name: 'svc_auth_misdirected_requests_total',
      help: 'Requests refused because they carry none of their endpoint\'s target headers, by endpoint and the proxy that most likely sent them (a proxy pointed at the wrong endpoint).',
      labelNames: ['endpoint', 'likely_proxy'] as const,
      registers,
    });
    // At 0 from the first scrape, so an alert on its increase works at once.
    for (const endpoint of ENDPOINTS) for (const likely of LIKELY_PROXIES) this.misdirectedRequests.labels(endpoint, likely).inc(0);
    grantCounter(registers, this.grants);
    this.untrustedAddresses = untrustedCounter(registers);
    this.durations = new EndpointHistogram('svc_auth_decision_duration_seconds', 'Time from receiving an auth request to having written its answer.');
    this.registry.registerMetric(this.durations as unknown as Metric);
    this.reloadFailures = new Counter({
      name: 'svc_auth_reload_failures_total',
      help: 'Reloads refused because a manifest or snapshot was invalid or unreadable; the previous snapshot stays in service.',
      labelNames: ['source'] as const,
      registers,
    });
    this.reloads = new Counter({
      name: 'svc_auth_reloads_total',
      help: 'Reload attempts that changed something, by source and result (loaded or failed).',
      labelNames: ['source', 'result'] as const,
      registers,
    });
    this.snapshotInfo = new Gauge({
      name: 'svc_auth_snapshot_info',
      help: 'The generation (content hash) of the snapshot in service; 1 for the current one.',
      labelNames: ['generation'] as const,
      registers,
    });
    this.snapshotAgeGauge(registers);
    this.tokensExpiringGauge(registers);
    this.scopes = new Gauge({ name: 'svc_auth_snapshot_scopes', help: 'Closed scopes in the snapshot in service.', registers });
    this.tokens = new Gauge({ name: 'svc_auth_snapshot_tokens', help: 'Token records in the snapshot in service.', registers });
    this.loadSeconds = new Gauge({ name: 'svc_auth_snapshot_load_seconds', help: 'Wall time the last successful reload took (read, verify, build).', registers });
    this.logDropsCounter(registers);
    this.importedBusyCounter(registers);
    this.ready = new Gauge({ name: 'svc_auth_ready', help: '1 once a snapshot is loaded (and not draining), else 0.', registers });
    this.ready.set(0);
  }

  /** svc_auth_decisions_total, pushed from the per-request arrays at scrape time. */
  private decisionsCounter(registers: Registry[]): void {
    const decisions: Counter<'endpoint' | 'outcome' | 'scope_kind'> = new Counter({
      name: 'svc_auth_decisions_total',
      help: 'Answers of the auth endpoints, by endpoint, outcome and kind of the governing scope.',
      labelNames: ['endpoint', 'outcome', 'scope_kind'] as const,
      registers,
      collect: () => {
        for (let i = 0; i < CELLS; i++) {
          const delta = this.decisionCounts[i]! - this.decisionPushed[i]!;
          if (delta === 0) continue;
          this.decisionPushed[i] = this.decisionCounts[i]!;
          const kind = i % SCOPE_KIND_LABELS.length;
          const outcome = Math.floor(i / SCOPE_KIND_LABELS.length) % OUTCOMES.length;
          const endpoint = Math.floor(i / (SCOPE_KIND_LABELS.length * OUTCOMES.length));
          decisions.labels(ENDPOINTS[endpoint]!, OUTCOMES[outcome]!, SCOPE_KIND_LABELS[kind]!).inc(delta);
        }
      },
    });
  }

  /** svc_auth_snapshot_age_seconds, computed at scrape time. */
  private snapshotAgeGauge(registers: Registry[]): void {
    const age: Gauge = new Gauge({
      name: 'svc_auth_snapshot_age_seconds',
      help: 'Seconds since the snapshot in service was loaded (swapped in).',
      registers,
      collect: () => {
        if (this.loadedAt === null) age.reset();
        else age.set((Date.now() - this.loadedAt) / 1000);
      },
    });
  }

  /** svc_auth_tokens_expiring{within}: from the expiries of the snapshot in service, sorted once per snapshot. */
  private tokensExpiringGauge(registers: Registry[]): void {
    const expiring: Gauge<'within'> = new Gauge({
      name: 'svc_auth_tokens_expiring',
      help: 'Token records in the snapshot in service that are still valid and expire within the window (1h, 24h, 7d, 30d).',
      labelNames: ['within'] as const,
      registers,
      collect: () => {
        if (this.expiryIndex === null) {
          expiring.reset();
          return;
        }
        // Sorted once per snapshot, at the first scrape after the swap, so a reload does not pay for it. A failure
        // here must not fail the whole scrape (every other metric with it): this gauge alone goes without series.
        try {
          this.expiries ??= sortedExpiries(this.expiryIndex);
        } catch {
          expiring.reset();
          return;
        }
        const now = Date.now();
        const expired = countUpTo(this.expiries, now);
        for (const [label, seconds] of EXPIRY_WINDOWS) expiring.labels(label).set(countUpTo(this.expiries, now + seconds * 1000) - expired);
      },
    });
  }

  /** svc_auth_log_lines_dropped_total, from the logger's sink at scrape time. */
  private logDropsCounter(registers: Registry[]): void {
    let dropsPushed = 0;
    const drops: Counter = new Counter({
      name: 'svc_auth_log_lines_dropped_total',
      help: 'Log lines dropped because stdout could not keep up or failed.',
      registers,
      collect: () => {
        const now = this.logDrops();
        if (now > dropsPushed) drops.inc(now - dropsPushed);
        dropsPushed = Math.max(dropsPushed, now);
      },
    });
  }

  /**
   * svc_auth_imported_token_busy_refusals_total, from the imported-token verifier at scrape time: requests refused
   * because every PBKDF2 slot and queue place was taken (answered as unavailable, counted there too).
   */
  private importedBusyCounter(registers: Registry[]): void {
    let pushed = 0;
    const busy: Counter = new Counter({
      name: 'svc_auth_imported_token_busy_refusals_total',
      help: 'Requests presenting a token to check against imported (wis2box-auth PBKDF2) hashes, refused because every verification slot and queue place was taken.',
      registers,
      collect: () => {
        const now = this.importedBusy();
        if (now > pushed) busy.inc(now - pushed);
        pushed = Math.max(pushed, now);
      },
    });
  }

  /** The per-request part: two array increments and a bucket search. */
  /** A decision on a JWT credential (svc_auth_jwt_decisions_total), with why verification failed if it did. */
  jwtDecision(outcome: AnswerOutcome, failure?: string): void {
    // The labelled child once per label pair: prom-client's labels() hashes its values on every call, which on the
    // JWT path (decided at token speed) cost more than the decision's own bookkeeping.
    const key = failure === undefined ? outcome : `${outcome}\0${failure}`;
    let child = this.jwtChildren.get(key);
    if (child === undefined) this.jwtChildren.set(key, (child = this.jwtDecisions.labels(outcome, failure ?? '')));
    child.inc();
  }

  /** A JWKS fetch of an OpenID issuer (svc_auth_oidc_jwks_fetches_total), ok or failed. */
  jwksFetch(issuer: string, ok: boolean): void {
    this.jwksFetches.labels(issuer, ok ? 'ok' : 'failed').inc();
  }

  /** A grant, by the credential that made it (svc_auth_grants_total). */
  grant(credential: GrantCredential): void {
    this.grants[GRANT_INDEX[credential]]! += 1;
  }

  /** A refused request without a client address its endpoint can trust (svc_auth_client_address_untrusted_total). */
  addressUntrusted(endpoint: EndpointName, reason: AddressProblem): void {
    this.untrustedAddresses.labels(endpoint, reason).inc();
  }

  /** A request without its endpoint's target headers (svc_auth_misdirected_requests_total). */
  misdirected(endpoint: EndpointName, likely: LikelyProxy): void {
    this.misdirectedRequests.labels(endpoint, likely).inc();
  }

  decision(endpoint: EndpointName, outcome: AnswerOutcome, kind: ScopeKindLabel, seconds: number): void {
    const e = ENDPOINT_INDEX[endpoint];
    this.decisionCounts[(e * OUTCOMES.length + OUTCOME_INDEX[outcome]) * SCOPE_KIND_LABELS.length + KIND_INDEX[kind]]! += 1;
    this.durations.observe(e, seconds);
  }

  swapped(index: AccessIndex, loadMs: number, source: string, now = Date.now()): void {
    this.snapshotInfo.reset();
    this.snapshotInfo.labels(index.generation).set(1);
    this.scopes.set(index.scopeCount);
    this.tokens.set(index.tokenCount);
    this.expiryIndex = index;
    this.expiries = null;
    this.loadSeconds.set(loadMs / 1000);
    this.loadedAt = now;
    this.reloads.labels(source, 'loaded').inc();
  }

  /** Makes the source's counters exist at 0, so alerts on their increase work from the first scrape. */
  sourceKnown(source: string): void {
    this.reloadFailures.labels(source).inc(0);
  }

  reloadFailed(source: string): void {
    this.reloadFailures.labels(source).inc();
    this.reloads.labels(source, 'failed').inc();
  }

  /** Where the log line drop count comes from (the logger's sink). */
  countLogDrops(source: () => number): void {
    this.logDrops = source;
  }

  /** Where the count of busy-slot refusals of imported-token verification comes from. */
  countImportedBusy(source: () => number): void {
    this.importedBusy = source;
  }

  setReady(ready: boolean): void {
    this.ready.set(ready ? 1 : 0);
  }
}
