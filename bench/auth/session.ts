// bench:auth's session-cookie cases (issue 29, "Speed, against the peer users would pick instead"): a browser
// session cookie deciding a request to a closed scope that grants the session's group, measured in one run beside
// the raw node:http baseline and beside oauth2-proxy's /oauth2/auth answering for its own valid session cookie.
//
// Both cookies are real: each relying party signs a user in through the authorization code flow of panva's
// oidc-provider (test/e2e/support/oidc-provider.ts, in this process), driven with plain HTTP and a cookie jar
// (test/e2e/support/browserless.ts), and the cookie its callback set is the one measured. Every server is pinned
// to CPU 0 (oauth2-proxy also with GOMAXPROCS=1) and the load generator to CPU 1, with the same connections; rounds
// interleave the cases, each between two baseline runs (a ratio to the baseline is against their mean: this
// machine's speed drifts within seconds), and svc-auth ÷ oauth2-proxy is taken within a round. A fresh sign-in precedes each round, so neither
// session outlives its ID token.
//
// Cases: (f) svc-auth, its session cookie, closed scope granting the cookie's group: target ≥ 0.8× the baseline's
// requests/s, as the token case (b); (g) oauth2-proxy v7.15.6 /oauth2/auth for its session cookie (202; its
// --allowed-group is the same group, so both check the group on every request): target svc-auth ÷ oauth2-proxy
// ≥ 1.0, p99 of each printed beside it.
//
// The svc-auth half (svcAuthSessionSide) needs svc-auth's browser sign-in (--session-key-file and the sign-in
// flags); on a build without them it is reported as not run, and the session targets fail: no figure is made up.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OAUTH2_PROXY } from '../../test/controlplane/assets.js';
import { signInOverHttp } from '../../test/e2e/support/browserless.js';
import { Oauth2Proxy, oauth2ProxyCallback } from '../../test/e2e/support/oauth2-proxy.js';
import { OidcProvider } from '../../test/e2e/support/oidc-provider.js';
import { freePorts } from '../../test/support/ports.js';
import { runCommand, type Supervised } from '../../test/support/process.js';
import { bracketedRatio, bracketedRound, median, type Bracketed, type Measured } from '../support/figures.js';

export type { Measured } from '../support/figures.js';

/** What run.ts lends this section: its load generator, its baseline, its svc-auth command line and pinning. */
export interface SessionBenchContext {
  readonly rounds: number;
  readonly duration: number;
  readonly warmup: number;
  readonly connections: number;
  readonly pinned: boolean;
  /** A load run against `url` measured (server CPU from `pid`). */
  readonly run: (url: string, headers: Record<string, string>, seconds: number, pid?: number) => Promise<Measured>;
  readonly baseline: { readonly url: string; readonly headers: Record<string, string>; readonly pid: number | undefined };
  /** Node's arguments before svc-auth's own (node flags and the program: dist/authz/main.js, or tsx and the source). */
  readonly authProgram: readonly string[];
  /** Spawns node with these arguments on CPU 0 (stdout dropped, stderr through), stopped when the bench ends. */
  readonly spawnPinned: (name: string, args: string[]) => Supervised;
  readonly waitReady: (url: string) => Promise<unknown>;
  readonly snapshotFile: string;
  /** A path in the closed scope that grants `group`, and nothing else does. */
  readonly protectedPath: string;
  readonly group: string;
  readonly dir: string;
  readonly logLevel: string;
}

const USER = 'bench-browser-user';
const PASSWORD = randomBytes(12).toString('hex');
const CLIENTS = { 'oauth2-proxy': randomBytes(16).toString('hex'), 'svc-auth': randomBytes(16).toString('hex') };
const LANDING = '/signed-in';

/** One side of the comparison: where its decisions are asked, and a fresh session cookie on demand. */
interface Side {
  readonly url: string;
  readonly headers: (cookie: string) => Record<string, string>;
  readonly expect: number;
  readonly pid: number | undefined;
  readonly signIn: () => Promise<string>;
}

type Outcome = Side | { readonly notRun: string };

/** The auth subrequest of a browser's GET, as nginx sends it to either (oauth2-proxy reads only the cookie). */
function subrequest(ctx: SessionBenchContext, cookie: string): Record<string, string> {
  return { 'X-Original-URI': ctx.protectedPath, 'X-Original-Method': 'GET', Cookie: cookie };
}

/** svc-auth's help: it names the sign-in flags only once its browser sessions exist. */
async function authHelp(ctx: SessionBenchContext): Promise<string> {
  return (await runCommand(process.execPath, [...ctx.authProgram, '--help'], { timeoutMs: 60_000 })).stdout;
}

/**
 * The svc-auth half: its own svc-auth over the bench's snapshot with browser sign-in against `idp` (sign-in client
 * `svc-auth`, one session key), and its session cookie obtained through /authz/sign-in → the provider's login form →
 * /authz/callback. Not run when svc-auth has no such flags.
 */
async function svcAuthSessionSide(ctx: SessionBenchContext, idp: OidcProvider, port: number, metricsPort: number): Promise<Outcome> {
  const help = await authHelp(ctx);
  const needed = ['--oidc-issuer', '--oidc-audience', '--external-url', '--sign-in-client-id', '--sign-in-client-secret-file', '--session-key-file'];
  const missing = needed.filter((flag) => !help.includes(flag));
  if (missing.length > 0) return { notRun: `svc-auth has no ${missing.join(', ')} (its browser sessions are not in this build)` };
  // The provider puts groups in the ID token only when its scope `groups` is asked for (oauth2-proxy asks the same).
  const scopes = help.includes('--sign-in-scope') ? ['--sign-in-scope', 'email', '--sign-in-scope', 'groups'] : [];
  const base = `http://127.0.0.1:${port}`;
  const secretFile = join(ctx.dir, 'sign-in-client-secret');
  const keyFile = join(ctx.dir, 'session-keys');
  writeFileSync(secretFile, CLIENTS['svc-auth'], { mode: 0o600 });
  writeFileSync(keyFile, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  const auth = ctx.spawnPinned('svc-auth-sessions', [...ctx.authProgram,
    '--snapshot-file', ctx.snapshotFile, '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${metricsPort}`, '--log-level', ctx.logLevel,
    '--oidc-issuer', idp.issuer, '--oidc-audience', 'svc-auth', '--external-url', base,
    '--sign-in-client-id', 'svc-auth', '--sign-in-client-secret-file', secretFile, '--session-key-file', keyFile, ...scopes]);
  await ctx.waitReady(`${base}/readyz`);
  return {
    url: `${base}/authz/auth-request`,
    headers: (cookie) => subrequest(ctx, cookie),
    expect: 200,
    pid: auth.pid,
    signIn: async () => {
      const start = `${base}/authz/sign-in?${new URLSearchParams({ rd: `${base}${LANDING}` })}`;
      const { jar } = await signInOverHttp(start, { user: USER, password: PASSWORD }, (u) => u.origin === base && u.pathname === LANDING);
      const cookie = jar.setBy(base);
      if (!cookie) throw new Error('svc-auth\'s sign-in set no session cookie');
      return cookie;
    },
  };
}

/** The oauth2-proxy half: v7.15.6 from the tool cache, on CPU 0 with GOMAXPROCS=1, its cookie from /oauth2/start → /oauth2/callback. */
async function oauth2ProxySide(ctx: SessionBenchContext, idp: OidcProvider, port: number): Promise<Side> {
  const proxy = await Oauth2Proxy.start({
    issuer: idp.issuer, clientId: 'oauth2-proxy', clientSecret: CLIENTS['oauth2-proxy'], port, dir: ctx.dir,
    allowedGroup: ctx.group, ...(ctx.pinned ? { cpu: '0' } : {}), output: 'stderr',
  });
  return {
    url: `${proxy.base}/oauth2/auth`,
    headers: (cookie) => subrequest(ctx, cookie),
    expect: 202,
    pid: proxy.pid,
    signIn: () => proxy.signIn({ user: USER, password: PASSWORD }),
  };
}

type CaseName = 'baseline' | 'svcAuth' | 'oauth2Proxy';
type SideName = Exclude<CaseName, 'baseline'>;
/** Every run by case (the baseline's several per round), and each side's with the baseline runs around it. */
type Runs = Record<CaseName, Measured[]> & { readonly brackets: Record<SideName, Bracketed[]> };
const LABELS: Record<CaseName, string> = {
  baseline: 'baseline: raw node:http, 200',
  svcAuth: '(f) svc-auth session cookie, group grant',
  oauth2Proxy: `(g) oauth2-proxy ${OAUTH2_PROXY.version} /oauth2/auth`,
};

/**
 * Interleaved rounds of the cases that ran, each side signed in afresh before its round; within a round each side runs
 * between two baseline runs (bracketedRound: B svc-auth B oauth2-proxy B).
 */
async function measureRounds(ctx: SessionBenchContext, sides: Partial<Record<SideName, Side>>, cookieBytes: Map<CaseName, number>): Promise<Runs> {
  const runs: Runs = { baseline: [], svcAuth: [], oauth2Proxy: [], brackets: { svcAuth: [], oauth2Proxy: [] } };
  const names = (['svcAuth', 'oauth2Proxy'] as const).filter((n) => sides[n] !== undefined);
  const signedIn = async (): Promise<Map<SideName, string>> => {
    const cookies = new Map<SideName, string>();
    for (const name of names) {
      const cookie = await sides[name]!.signIn();
      cookieBytes.set(name, cookie.length);
      cookies.set(name, cookie);
    }
    return cookies;
  };
  const warm = await signedIn();
  await ctx.run(ctx.baseline.url, ctx.baseline.headers, ctx.warmup);
  for (const name of names) await ctx.run(sides[name]!.url, sides[name]!.headers(warm.get(name)!), ctx.warmup);
  for (let round = 0; round < ctx.rounds; round++) {
    const cookies = await signedIn();
    const measure = async (name: CaseName): Promise<Measured> => {
      process.stdout.write(`  session round ${round + 1}/${ctx.rounds}: ${name}…          \r`);
      const m = name === 'baseline'
        ? await ctx.run(ctx.baseline.url, ctx.baseline.headers, ctx.duration, ctx.baseline.pid)
        : await ctx.run(sides[name]!.url, sides[name]!.headers(cookies.get(name)!), ctx.duration, sides[name]!.pid);
      runs[name].push(m);
      return m;
    };
    for (const [name, b] of await bracketedRound(names, measure)) runs.brackets[name].push(b);
  }
  return runs;
}

function statusLine(all: readonly Measured[]): string {
  const statuses = new Map<number, number>();
  for (const m of all) for (const [st, c] of m.statuses) statuses.set(st, (statuses.get(st) ?? 0) + c);
  const errors = all.reduce((n, m) => n + m.errors, 0);
  return [...statuses].map(([k, c]) => `${k}:${c}`).join(' ') + (errors ? ` errors:${errors}` : '');
}

/**
 * The ratio of `f` between two cases, median over rounds: against the baseline, against the mean of the baseline runs
 * around the case (bracketedRatio); between the two sides, within each round. NaN when either did not run.
 */
function ratioOf(runs: Runs, name: CaseName, against: CaseName, f: (m: Measured) => number): number {
  if (runs[name].length === 0 || runs[against].length === 0) return NaN;
  if (against === 'baseline') return name === 'baseline' ? 1 : bracketedRatio(runs.brackets[name], f);
  return median(runs[name].map((m, i) => f(m) / f(runs[against][i]!)));
}

function printTable(runs: Runs, notRun: string | undefined): void {
  const fmt = (x: number, d = 2) => x.toFixed(d);
  console.log(`\n${'case'.padEnd(40)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}   ${'req/s ×base'.padStart(11)} ${'p99 ×base'.padStart(10)} ${'CPU µs/req'.padStart(11)}   statuses`);
  for (const name of Object.keys(LABELS) as CaseName[]) {
    const all = runs[name];
    if (all.length === 0) {
      console.log(`${LABELS[name].padEnd(40)} not run${name === 'svcAuth' && notRun ? `: ${notRun}` : ''}`);
      continue;
    }
    const med = (f: (m: Measured) => number) => median(all.map(f));
    console.log(`${LABELS[name].padEnd(40)} ${fmt(med((m) => m.rps), 0).padStart(8)} ${fmt(med((m) => m.p50)).padStart(8)} ${fmt(med((m) => m.p99)).padStart(8)}   `
      + `${fmt(ratioOf(runs, name, 'baseline', (m) => m.rps)).padStart(11)} ${fmt(ratioOf(runs, name, 'baseline', (m) => m.p99)).padStart(10)} ${fmt(med((m) => m.cpu), 1).padStart(11)}   ${statusLine(all)}`);
  }
}

/** Prints the targets; true when every one passed (a case that did not run fails its targets). */
function printTargets(ctx: SessionBenchContext, runs: Runs, sides: Partial<Record<'svcAuth' | 'oauth2Proxy', Side>>): boolean {
  const fmt = (x: number) => x.toFixed(2);
  const vsBase = ratioOf(runs, 'svcAuth', 'baseline', (m) => m.rps);
  const vsPeer = ratioOf(runs, 'svcAuth', 'oauth2Proxy', (m) => m.rps);
  const p99 = (name: CaseName) => fmt(median(runs[name].map((m) => m.p99)));
  const expected = (name: CaseName, want: number) => runs[name].every((m) => m.errors === 0 && [...m.statuses.keys()].every((st) => st === want));
  const statusesOk = expected('baseline', 200) && (sides.svcAuth ? expected('svcAuth', sides.svcAuth.expect) : true) && expected('oauth2Proxy', 202) && runs.oauth2Proxy.length > 0;
  const targets: [string, boolean][] = [
    [`(f) session requests/s ≥ 0.8× baseline: ${fmt(vsBase)}×`, vsBase >= 0.8],
    [`(f) svc-auth ÷ (g) oauth2-proxy requests/s ≥ 1.0: ${fmt(vsPeer)}× (p99 svc-auth ${runs.svcAuth.length ? p99('svcAuth') : '?'} ms, oauth2-proxy ${p99('oauth2Proxy')} ms; ${ctx.connections} connections each)`, vsPeer >= 1],
    ['every session answer had the expected status, no errors', statusesOk],
  ];
  // Server CPU per answer does not depend on how busy the machine is the way requests/s does: reported beside them.
  const cpu = ratioOf(runs, 'oauth2Proxy', 'svcAuth', (m) => m.cpu);
  if (!Number.isNaN(cpu)) console.log(`  server CPU per answer: oauth2-proxy ÷ svc-auth ${fmt(cpu)}× (no target; for a machine whose other load skews requests/s)`);
  console.log('');
  for (const [label, pass] of targets) console.log(`${Number.isNaN(vsBase) && label.startsWith('(f)') ? 'NOT RUN' : pass ? 'PASS' : 'FAIL'}  ${label}`);
  return targets.every(([, pass]) => pass);
}

/** The session section of bench:auth; true when its targets passed. */
export async function sessionBench(ctx: SessionBenchContext): Promise<boolean> {
  const [idpPort, proxyPort, authPort, authMetrics] = (await freePorts(4)) as [number, number, number, number];
  const idp = new OidcProvider({
    port: idpPort,
    users: { [USER]: { password: PASSWORD, email: `${USER}@example.org`, groups: ['staff', ctx.group] } },
    clients: CLIENTS,
    redirectUris: [oauth2ProxyCallback(proxyPort), `http://127.0.0.1:${authPort}/authz/callback`],
    idTokenTtl: 3600,
  });
  await idp.start();
  try {
    console.log(`\nsession cookie (browser sign-in through oidc-provider's code flow, plain HTTP): svc-auth vs oauth2-proxy ${OAUTH2_PROXY.version} (cookie sessions, GOMAXPROCS=1), `
      + `${ctx.pinned ? 'servers on CPU 0, load on CPU 1' : 'not pinned'}, ${ctx.connections} connections each`);
    const svcAuth = await svcAuthSessionSide(ctx, idp, authPort, authMetrics);
    const oauth2Proxy = await oauth2ProxySide(ctx, idp, proxyPort);
    const sides = { ...('notRun' in svcAuth ? {} : { svcAuth }), oauth2Proxy };
    const cookieBytes = new Map<CaseName, number>();
    const runs = await measureRounds(ctx, sides, cookieBytes);
    printTable(runs, 'notRun' in svcAuth ? svcAuth.notRun : undefined);
    const bytes = (name: CaseName) => (cookieBytes.has(name) ? `${cookieBytes.get(name)} bytes` : '-');
    console.log(`(medians over rounds; a ratio to the baseline against the mean of the baseline runs just before and after the case, svc-auth ÷ oauth2-proxy within each round; each round after a fresh sign-in of each side; Cookie header: svc-auth ${bytes('svcAuth')}, oauth2-proxy ${bytes('oauth2Proxy')})`);
    return printTargets(ctx, runs, sides);
  } finally {
    await idp.stop();
  }
}
