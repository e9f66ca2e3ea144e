// `npm run demo:sign-in`: browser sign-in on this machine, to try by hand with your own browser.
//
//   Keycloak   the one the tests run (test/support/keycloak.ts: Maven Central's zip, built once into the tool cache;
//              Java >= 21), serving the realm the tests import (test/e2e/fixtures/keycloak-realm-svc.json): alice in
//              group partners, bob in observers, carol in none, each with the password the realm file gives
//   svc-auth   over a demo directory of ProtectedScopes whose subjects grant those users and groups, with the sign-in
//              flags on (the realm's client svc-auth, its ID tokens' audience), session keys generated for this run
//   nginx      in front, configured for sign-in as deploy/nginx is (test/e2e/support/sign-in-nginx.ts): the demo's
//              files under /data, a stand-in OGC API under /oapi, svc-auth's pages; nothing else of svc-auth
//
// Then it prints the URL, the users, their passwords and what each may open, and stops everything on Ctrl-C.
//
//   tsx scripts/demo-sign-in.ts [--listen [127.0.0.1:]PORT] [--metrics-listen [127.0.0.1:]PORT]
//
// The flags are npm start's: --listen is where the browser goes (127.0.0.1:8080 by default; here nginx, the data host),
// --metrics-listen svc-auth's metrics (127.0.0.1:9090). Loopback only: the realm lets Keycloak send browsers back to
// 127.0.0.1 and localhost alone, and the cookies are plain-http loopback cookies.
//
// startSignInDemo is the whole demo without the printing; test/e2e/demo-sign-in.test.ts signs a user in through it.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dumpManifests, newProtectedScope, scopeObjectName, type Scope } from '../core/index.js';
import { Keycloak, readRealm, type Realm } from '../test/support/keycloak.js';
import { freePorts } from '../test/support/ports.js';
import { ensureNginx, Nginx, nginxPlan } from '../test/e2e/support/nginx.js';
import { startOapiStandin, stopServer } from '../test/e2e/support/oapi-standin.js';
import { signInNginxConf } from '../test/e2e/support/sign-in-nginx.js';
import { SvcAuth } from '../test/e2e/support/svc-auth.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const REALM_FILE = join(root, 'test', 'e2e', 'fixtures', 'keycloak-realm-svc.json');
/** The realm's client svc-auth signs browsers in as; the ID token's audience, so also --oidc-audience. */
export const CLIENT_ID = 'svc-auth';

const DAY = '/data/2026-11-21/wis';

/** One file of the demo and who may open it: nobody named means open to anyone. */
export interface DemoFile {
  readonly path: string;
  readonly what: string;
  readonly scope?: Scope;
  readonly subjects: readonly { readonly kind: 'User' | 'Group'; readonly name: string }[];
}

/** What the demo serves: one open file, and two closed ones granted to a group and to a user of the realm. */
export const DEMO_FILES: readonly DemoFile[] = [
  { path: `${DAY}/origin/a/wis2/mw-met/data/recommended/weather/latest.json`, what: 'open to anyone', subjects: [] },
  {
    path: `${DAY}/origin/a/wis2/mw-met/data/core/weather/latest.json`,
    what: 'closed, group partners',
    scope: { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' },
    subjects: [{ kind: 'Group', name: 'partners' }],
  },
  {
    path: `${DAY}/urn:wmo:md:mw-met:obs/latest.json`,
    what: 'closed, user bob@example.org',
    scope: { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' },
    subjects: [{ kind: 'User', name: 'bob@example.org' }],
  },
];

export interface DemoUser {
  readonly username: string;
  readonly password: string;
  /** The name svc-auth gives the user (--oidc-username-claim email), which a User subject spells. */
  readonly email: string;
  readonly groups: readonly string[];
  /** The closed files this user's identity or groups are granted. */
  readonly mayOpen: readonly DemoFile[];
}

/** The realm's users and the closed files each may open, from the subjects above (never a second list by hand). */
export function demoUsers(realm: Realm, files: readonly DemoFile[] = DEMO_FILES): DemoUser[] {
  return Object.values(realm.users).map((u) => ({
    username: u.username,
    password: u.password,
    email: u.email ?? u.username,
    groups: u.groups,
    mayOpen: files.filter((f) => f.scope !== undefined && f.subjects.some((s) => (s.kind === 'Group' ? u.groups.includes(s.name) : s.name === u.email))),
  }));
}

/** `PORT`, `:PORT` or `127.0.0.1:PORT`: the port; anything else is refused with what to write. */
export function loopbackPort(flag: string, value: string): number {
  const m = /^(?:(127\.0\.0\.1)?:)?(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535) {
    throw new Error(`${flag} ${value}: write a port on 127.0.0.1, e.g. ${flag} 127.0.0.1:8081 (the demo realm sends browsers back to this machine only)`);
  }
  return port;
}

export interface DemoArgs {
  readonly port: number;
  readonly metricsPort: number;
}

/** npm start's port flags, `--flag V` or `--flag=V`, with its defaults. */
export function parseDemoArgs(argv: readonly string[]): DemoArgs {
  const values: Record<string, string> = { '--listen': '127.0.0.1:8080', '--metrics-listen': '127.0.0.1:9090' };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!(flag in values)) throw new Error(`${argv[i]}: unknown; the demo takes --listen [127.0.0.1:]PORT and --metrics-listen [127.0.0.1:]PORT`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value, e.g. ${flag} 127.0.0.1:8081`);
    values[flag] = value;
  }
  return { port: loopbackPort('--listen', values['--listen']!), metricsPort: loopbackPort('--metrics-listen', values['--metrics-listen']!) };
}

/** Whether 127.0.0.1:port can be bound right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = createNetServer();
    s.once('error', () => ok(false));
    s.listen(port, '127.0.0.1', () => s.close(() => ok(true)));
  });
}

export interface SignInDemo {
  /** Where the browser goes: nginx, the data host. */
  readonly url: string;
  readonly keycloak: Keycloak;
  readonly realm: Realm;
  readonly users: readonly DemoUser[];
  readonly files: readonly DemoFile[];
  /** The manifest directory svc-auth serves (the svc CLI's --dir). */
  readonly scopesDir: string;
  /** What each file holds, to tell it from an error page. */
  readonly contents: ReadonlyMap<string, string>;
  readonly auth: { readonly url: string; readonly metricsUrl: string; readonly args: readonly string[] };
  /** Stops nginx, svc-auth, the stand-in API and Keycloak, and removes the demo's directory. */
  stop(): Promise<void>;
}

export interface SignInDemoOptions extends DemoArgs {
  readonly log?: (message: string) => void;
}

/** The demo's directory: the files, the ProtectedScopes, the session key and the client secret. */
function writeDemoDir(base: string, realm: Realm, run: string): { scopesDir: string; wafRoot: string; contents: Map<string, string>; keyFile: string; secretFile: string } {
  const scopesDir = join(base, 'scopes');
  const wafRoot = join(base, 'waf');
  const contents = new Map<string, string>();
  for (const d of [scopesDir, wafRoot, join(base, 'nginx', 'logs'), join(base, 'nginx', 'temp')]) mkdirSync(d, { recursive: true });
  for (const f of DEMO_FILES) {
    const file = join(wafRoot, f.path);
    const text = JSON.stringify({ file: f.path, what: f.what, run }, null, 2);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${text}\n`, { mode: 0o644 });
    contents.set(f.path, text);
  }
  const scopes = DEMO_FILES.filter((f) => f.scope !== undefined).map((f) => {
    const ps = newProtectedScope(f.scope!, scopeObjectName(f.scope!), undefined, []);
    return { ...ps, spec: { ...ps.spec, subjects: f.subjects.map((s) => ({ ...s })) } };
  });
  writeFileSync(join(scopesDir, 'demo.yaml'), dumpManifests(scopes));
  const keyFile = join(base, 'session-keys');
  const secretFile = join(base, 'client-secret');
  writeFileSync(keyFile, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  writeFileSync(secretFile, `${realm.clients[CLIENT_ID]!.secret!}\n`, { mode: 0o600 });
  // nginx's workers run unprivileged when its master is root: every directory down to the files must be traversable.
  for (const d of [base, wafRoot]) chmodSync(d, 0o755);
  return { scopesDir, wafRoot, contents, keyFile, secretFile };
}

/** Starts Keycloak, svc-auth, a stand-in API and nginx; on any failure stops what started, and throws. */
export async function startSignInDemo(o: SignInDemoOptions): Promise<SignInDemo> {
  const log = o.log ?? (() => undefined);
  for (const [flag, port] of [['--listen', o.port], ['--metrics-listen', o.metricsPort]] as const) {
    if (!(await bindable(port))) throw new Error(`127.0.0.1:${port} is already in use (${flag}); choose another, e.g. npm run demo:sign-in -- ${flag} 127.0.0.1:${port + 1}`);
  }
  const nginxBinary = ensureNginx(nginxPlan());
  const realm = readRealm(REALM_FILE);
  const base = mkdtempSync(join(tmpdir(), 'svc-sign-in-demo-'));
  // Interrupted while starting, the process exits with its children killed (test/support/process.ts): the directory
  // goes with them.
  const removeBase = () => rmSync(base, { recursive: true, force: true });
  process.once('exit', removeBase);
  const stops: (() => Promise<void>)[] = [async () => {
    removeBase();
    process.off('exit', removeBase);
  }];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const dir = writeDemoDir(base, realm, randomBytes(4).toString('hex'));
    log('starting Keycloak (the first run installs it from Maven Central and imports the realm: minutes; later about 10 s)');
    const keycloak = await Keycloak.start({ realmFiles: [REALM_FILE] });
    stops.push(() => keycloak.stop());
    const [authPort, cachePort, oapiPort] = (await freePorts(3)) as [number, number, number];
    const url = `http://127.0.0.1:${o.port}`;
    const args = [
      '--oidc-issuer', keycloak.issuer(), '--oidc-audience', CLIENT_ID, '--oidc-username-claim', 'email',
      '--sign-in-client-id', CLIENT_ID, '--sign-in-client-secret-file', dir.secretFile, '--external-url', url, '--session-key-file', dir.keyFile,
    ];
    const auth = new SvcAuth({ scopesDir: dir.scopesDir, port: authPort, metricsPort: o.metricsPort, extraArgs: args, secrets: [realm.clients[CLIENT_ID]!.secret!] });
    log('starting svc-auth with the sign-in flags');
    stops.push(() => auth.stop());
    await auth.start();
    const oapi: Server = await startOapiStandin(oapiPort);
    stops.push(() => stopServer(oapi));
    const prefix = join(base, 'nginx');
    const nginx = await Nginx.start(nginxBinary, prefix, signInNginxConf({ prefix, wafRoot: dir.wafRoot, port: o.port, cachePort, replicas: [authPort], oapi: oapiPort }), [o.port, cachePort]);
    stops.push(() => nginx.stop());
    return {
      url, keycloak, realm, users: demoUsers(realm), files: DEMO_FILES, scopesDir: dir.scopesDir, contents: dir.contents,
      auth: { url: `http://127.0.0.1:${authPort}`, metricsUrl: `http://127.0.0.1:${o.metricsPort}/metrics`, args },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** svc-auth's sign-in flags as the hint shows them: the file flags, which name this run's temporary files, left out. */
function signInFlags(args: readonly string[]): string {
  const shown: string[] = [];
  for (let i = 0; i < args.length; i += 2) if (!args[i]!.endsWith('-file')) shown.push(args[i]!, args[i + 1]!);
  return shown.join(' ');
}

/** What the demo prints once everything answers: where to go, as whom, and what each may open. */
export function demoHint(d: SignInDemo): string {
  const width = Math.max(...d.files.map((f) => f.what.length));
  const shown = relative(process.cwd(), d.scopesDir).startsWith('..') ? d.scopesDir : relative(process.cwd(), d.scopesDir);
  const svc = `npx svc --dir ${shown} auth`;
  return [
    '',
    `Browser sign-in is running. Open a closed file in your browser: ${d.url}${d.files.find((f) => f.scope)!.path}`,
    '',
    ...d.files.map((f) => `  ${f.what.padEnd(width)}  ${d.url}${f.path}`),
    `  ${'who you are signed in as'.padEnd(width)}  ${d.url}/authz/v1/session`,
    `  ${'sign out'.padEnd(width)}  ${d.url}/authz/sign-out`,
    '',
    `Sign in at Keycloak (realm ${d.realm.name}, ${d.keycloak.url}) as:`,
    '',
    ...d.users.map((u) => `  ${u.username.padEnd(6)} password ${u.password.padEnd(20)} ${(u.groups.length ? `groups ${u.groups.join(', ')}` : 'no group').padEnd(17)} may open: ${
      u.mayOpen.length ? u.mayOpen.map((f) => f.scope!.value).join(', ') : 'nothing closed (the "no access" page)'}`),
    '',
    'Without a browser, curl sees what programs see: a 401 (no redirect) for the closed files.',
    `  curl -i ${d.url}${d.files.find((f) => f.scope)!.path}`,
    '',
    `svc-auth: ${d.auth.url} (metrics ${d.auth.metricsUrl}), signing browsers in with`,
    `  ${signInFlags(d.auth.args)} (and the client secret and a session key, from files)`,
    `Grants are the ProtectedScopes' subjects, changed with the svc CLI (svc-auth reloads by itself):`,
    `  ${svc} show`,
    `  ${svc} add-subject --metadata-id urn:wmo:md:mw-met:obs --group partners      # alice may open the dataset too`,
    `  ${svc} remove-subject --topic-hierarchy origin.a.wis2.mw-met.data.core --group partners`,
    '',
    'Ctrl-C stops nginx, svc-auth and Keycloak and removes the demo directory.',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const say = (m: string) => process.stderr.write(`[demo:sign-in] ${m}\n`);
  let args: DemoArgs;
  try {
    args = parseDemoArgs(process.argv.slice(2));
  } catch (e) {
    say((e as Error).message);
    process.exit(2);
  }
  let demo: SignInDemo | undefined;
  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${why})`);
    await demo?.stop();
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => void stop(sig));
  try {
    demo = await startSignInDemo({ ...args, log: say });
  } catch (e) {
    say(`could not start: ${(e as Error).message}`);
    process.exit(1);
  }
  if (stopping) return;
  process.stdout.write(demoHint(demo));
  setInterval(() => {
    if (!stopping && !demo!.keycloak.running) void stop('Keycloak exited', 1);
  }, 1000);
}

// Run as a program (tsx scripts/demo-sign-in.ts), not when a test imports it.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) void main();
