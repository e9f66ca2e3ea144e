// A real OpenID provider for the browser sign-in suites: Keycloak (the provider wis2box users asked for), from
// Maven Central's `org.keycloak:keycloak-quarkus-dist` zip, run on Java >= 21 on a free loopback port.
//
// Startup is what the suites wait for, so the work is done once and cached (test/support/cache.ts, under its lock):
// - the install: the zip (its sha-512 pinned here), unzipped and built once into an optimized server
//   (`kc.sh build --db=dev-file`), so each start is `kc.sh start --optimized` with no Quarkus re-augmentation;
// - per set of realm files: a database template. The first start imports the realm files (`--import-realm`) into
//   a file-backed H2 database, renders the login page once, and stops; its database is the template, keyed by the
//   files' content, and the JVM writes a class-data archive of that run at exit (-XX:ArchiveClassesAtExit). Every
//   later start copies the database into a fresh home, skipping the schema creation and the import (most of the
//   time), and maps the archive (about a quarter off what is left).
// The JVM runs with C1 only (-XX:TieredStopAtLevel=1): measured here, half the start time of the default.
// Each start has its own home (a temp dir: `data/` with the database copy, the install's lib/, conf/, providers/ and
// themes/ linked in) and runs in its own process group, stopped whole (kc.sh runs java as its child).
//
// Java: SVC_KEYCLOAK_JAVA_HOME, else JAVA_HOME, else the newest JDK under /usr/lib/jvm, of major version >= 21
// (Debian 12 packages only 17). None is a failure naming what to do; outside CI SVC_SKIP_KEYCLOAK=1 makes it a skip
// (keycloakSkipReason, decided before any test runs).
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { aptInstall } from './apt.js';
import { cacheEntryDir, fillCacheEntry, isExecutable, withLock } from './cache.js';
import { freePort, httpStatus } from './ports.js';
import { Supervised, untilWhileRunning } from './process.js';

export const KEYCLOAK_VERSION = '26.4.7';
/** sha-512 of keycloak-quarkus-dist-26.4.7.zip as Maven Central serves it (and its .sha512 says). */
const KEYCLOAK_ZIP_SHA512 = 'f9d4e0ced49976932e173abc8d2f6ff4169c125fe3b14e69ebaa0ccc4dea822e879f7ec7353d28fa40c13de0113059c6888833725378ecef4d27587e0c87a6a2';
export const KEYCLOAK_MIN_JAVA = 21;
/** Build-time options of the cached server: a file-backed H2 database (the template), no management interface. */
const BUILD_OPTIONS = ['--db=dev-file', '--health-enabled=false', '--metrics-enabled=false'] as const;
/**
 * Appended to kc.sh's JVM options: the opening Java >= 24 wants for Quarkus's thread-local reset (without it the
 * shutdown prints stack traces), and C1 only: a server that runs for a few minutes gains nothing from C2, whose
 * compiler threads compete with everything else on a 2-core machine (a start took 13 s with C1 only, 24 s without).
 */
const JAVA_OPTS_APPEND = ['--add-opens=java.base/java.lang=ALL-UNNAMED', '-XX:TieredStopAtLevel=1'];
const START_TIMEOUT_MS = 240_000;

function log(message: string): void {
  process.stderr.write(`[keycloak] ${message}\n`);
}

// ---------------------------------------------------------------------------------------------------------------
// Java

export interface Java {
  readonly home: string;
  readonly major: number;
}

/** The major version of the JDK or JRE at `home` (from its `release` file, else `java -version`), if it is one. */
export function javaMajor(home: string): number | undefined {
  if (!isExecutable(join(home, 'bin', 'java'))) return undefined;
  let version: string | undefined;
  try {
    version = /^JAVA_VERSION="([^"]+)"/m.exec(readFileSync(join(home, 'release'), 'utf8'))?.[1];
  } catch {
    const r = spawnSync(join(home, 'bin', 'java'), ['-version'], { encoding: 'utf8', timeout: 30_000 });
    version = /version "([^"]+)"/.exec(`${r.stderr ?? ''}${r.stdout ?? ''}`)?.[1];
  }
  if (version === undefined) return undefined;
  const [first, second] = version.split(/[._+-]/).map(Number);
  const major = first === 1 ? second : first; // "1.8.0_392" is Java 8
  return major !== undefined && Number.isInteger(major) ? major : undefined;
}

/**
 * The Java Keycloak runs on: SVC_KEYCLOAK_JAVA_HOME (which must qualify: it was asked for), else JAVA_HOME when it
 * is >= 21, else the newest JDK of those under `jvmRoot`.
 */
export function findJava(env: NodeJS.ProcessEnv = process.env, jvmRoot = '/usr/lib/jvm', min = KEYCLOAK_MIN_JAVA): Java | undefined {
  if (env.SVC_KEYCLOAK_JAVA_HOME) {
    const major = javaMajor(env.SVC_KEYCLOAK_JAVA_HOME);
    if (major === undefined || major < min) {
      throw new Error(`SVC_KEYCLOAK_JAVA_HOME=${env.SVC_KEYCLOAK_JAVA_HOME} is ${major === undefined ? 'no Java installation (no bin/java)' : `Java ${major}`}; Keycloak ${KEYCLOAK_VERSION} needs Java >= ${min}`);
    }
    return { home: env.SVC_KEYCLOAK_JAVA_HOME, major };
  }
  const candidates = [...(env.JAVA_HOME ? [env.JAVA_HOME] : []), ...listDirs(jvmRoot)];
  const usable = candidates.map((home) => ({ home, major: javaMajor(home) ?? 0 })).filter((j) => j.major >= min);
  if (env.JAVA_HOME && usable[0]?.home === env.JAVA_HOME) return usable[0];
  return usable.sort((a, b) => b.major - a.major || a.home.localeCompare(b.home))[0];
}

function listDirs(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory() || d.isSymbolicLink()).map((d) => join(root, d.name));
  } catch {
    return [];
  }
}

const NO_JAVA = `Keycloak ${KEYCLOAK_VERSION} needs Java >= ${KEYCLOAK_MIN_JAVA} and none was found in SVC_KEYCLOAK_JAVA_HOME, JAVA_HOME or /usr/lib/jvm (Debian 12 packages only Java 17): install a JDK ${KEYCLOAK_MIN_JAVA} or newer (Temurin, say) under /usr/lib/jvm, or point SVC_KEYCLOAK_JAVA_HOME at one`;

/** The Java to use, or a failure saying what to install. */
export function ensureJava(env: NodeJS.ProcessEnv = process.env, jvmRoot = '/usr/lib/jvm'): Java {
  const java = findJava(env, jvmRoot);
  if (!java) throw new Error(env.CI === 'true' ? `CI=true: ${NO_JAVA}` : `${NO_JAVA} (or set SVC_SKIP_KEYCLOAK=1 to skip the Keycloak suites outside CI)`);
  return java;
}

/** Why the Keycloak suites skip: only outside CI, without a usable Java, when SVC_SKIP_KEYCLOAK=1 asks for it. */
export function keycloakSkipReason(env: NodeJS.ProcessEnv = process.env, jvmRoot = '/usr/lib/jvm'): string | undefined {
  if (env.CI === 'true' || env.SVC_SKIP_KEYCLOAK !== '1') return undefined;
  return findJava(env, jvmRoot) ? undefined : `${NO_JAVA}; SVC_SKIP_KEYCLOAK=1`;
}

// ---------------------------------------------------------------------------------------------------------------
// The install

/** Maven Central, or the repository SVC_MAVEN_REPOSITORY names (a mirror serving the same layout). */
export function mavenRepository(env: NodeJS.ProcessEnv = process.env): string {
  return (env.SVC_MAVEN_REPOSITORY || 'https://repo1.maven.org/maven2').replace(/\/+$/, '');
}

export function keycloakZipUrl(repository = mavenRepository()): string {
  return `${repository}/org/keycloak/keycloak-quarkus-dist/${KEYCLOAK_VERSION}/keycloak-quarkus-dist-${KEYCLOAK_VERSION}.zip`;
}

async function sha512Of(file: string): Promise<string> {
  const hash = createHash('sha512');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Downloads `url` to `file` (within `timeoutMs`) and checks its sha-512 against the pinned one. */
export async function downloadVerified(url: string, file: string, sha512: string, timeoutMs = 600_000): Promise<void> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: HTTP ${res.status}`);
  await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(file));
  const got = await sha512Of(file);
  if (got !== sha512) throw new Error(`${url}: sha-512 ${got.slice(0, 16)}… is not the pinned ${sha512.slice(0, 16)}…`);
}

export interface KeycloakInstall {
  /** The unzipped, built distribution (bin/kc.sh, lib/, conf/, ...). */
  readonly dir: string;
  readonly java: Java;
}

function run(cmd: string, args: readonly string[], what: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 900_000, ...options });
  if (r.status !== 0) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}`.split('\n').slice(-20).join('\n');
    throw new Error(`${what} failed (\`${cmd} ${args.join(' ')}\`, exit ${r.status ?? r.signal}):\n${out}`);
  }
}

function unzipBinary(): string {
  if (isExecutable('/usr/bin/unzip')) return '/usr/bin/unzip';
  aptInstall(['unzip']);
  return 'unzip';
}

/**
 * The cached, built Keycloak for the Java found, installed first when missing. Built in place under the cache lock
 * (the build records the install's own paths), INSTALL-INFO written last: an entry without it is redone.
 */
export async function ensureKeycloak(env: NodeJS.ProcessEnv = process.env): Promise<KeycloakInstall> {
  const java = ensureJava(env);
  const entry = cacheEntryDir('keycloak', KEYCLOAK_VERSION, [`${KEYCLOAK_ZIP_SHA512}\0${BUILD_OPTIONS.join(' ')}\0java${java.major}`]);
  const install = { dir: join(entry, `keycloak-${KEYCLOAK_VERSION}`), java };
  const done = (): boolean => existsSync(join(entry, 'INSTALL-INFO')) && isExecutable(join(install.dir, 'bin', 'kc.sh'));
  if (done()) return install;
  mkdirSync(dirname(entry), { recursive: true });
  return withLock(`${entry}.lock`, `Keycloak ${KEYCLOAK_VERSION}`, async () => {
    if (done()) return install;
    rmSync(entry, { recursive: true, force: true });
    mkdirSync(entry, { recursive: true });
    const started = Date.now();
    try {
      const zip = join(entry, basename(keycloakZipUrl()));
      log(`downloading ${keycloakZipUrl(mavenRepository(env))}`);
      await downloadVerified(keycloakZipUrl(mavenRepository(env)), zip, KEYCLOAK_ZIP_SHA512);
      run(unzipBinary(), ['-q', zip, '-d', entry], 'unzipping Keycloak');
      rmSync(zip);
      log(`building the optimized server (${BUILD_OPTIONS.join(' ')}) with Java ${java.major}`);
      run(join(install.dir, 'bin', 'kc.sh'), ['build', ...BUILD_OPTIONS], 'kc.sh build', { env: keycloakEnv(java, {}) });
      const seconds = Math.round((Date.now() - started) / 1000);
      writeFileSync(join(entry, 'INSTALL-INFO'), `keycloak-quarkus-dist ${KEYCLOAK_VERSION}, kc.sh build ${BUILD_OPTIONS.join(' ')}, Java ${java.major} at ${java.home}\ninstalled ${new Date().toISOString()} in ${seconds}s\n`);
      log(`Keycloak ${KEYCLOAK_VERSION} installed in ${seconds}s into ${entry}`);
    } catch (e) {
      rmSync(entry, { recursive: true, force: true });
      throw e;
    }
    return install;
  });
}

/** Keycloak's environment: only what it needs from ours (no KC_* or JAVA_OPTS of the caller's leaks in). */
function keycloakEnv(java: Java, extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = Object.fromEntries(['PATH', 'HOME', 'LANG', 'TZ'].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])));
  return { ...keep, JAVA_HOME: java.home, ...extra };
}

// ---------------------------------------------------------------------------------------------------------------
// Realm files

export interface RealmUser {
  readonly username: string;
  readonly password: string;
  readonly email?: string;
  /** Group names (the paths without their leading slash). */
  readonly groups: readonly string[];
}

export interface RealmClient {
  readonly clientId: string;
  /** The client secret of a confidential client; undefined for a public one. */
  readonly secret?: string;
  readonly publicClient: boolean;
}

export interface Realm {
  readonly name: string;
  readonly users: Readonly<Record<string, RealmUser>>;
  readonly clients: Readonly<Record<string, RealmClient>>;
}

interface RealmJson {
  realm: string;
  users?: { username: string; email?: string; groups?: string[]; credentials?: { type: string; value?: string }[] }[];
  clients?: { clientId: string; secret?: string; publicClient?: boolean }[];
}

/** What a test needs to know of a realm file Keycloak imports: its name, users with passwords, clients with secrets. */
export function readRealm(file: string): Realm {
  const json = JSON.parse(readFileSync(file, 'utf8')) as RealmJson;
  const users = (json.users ?? []).map((u): [string, RealmUser] => {
    const password = u.credentials?.find((c) => c.type === 'password')?.value;
    if (password === undefined) throw new Error(`${file}: user ${u.username} has no password credential`);
    return [u.username, { username: u.username, password, ...(u.email ? { email: u.email } : {}), groups: (u.groups ?? []).map((g) => g.replace(/^\//, '')) }];
  });
  const clients = (json.clients ?? []).map((c): [string, RealmClient] => [c.clientId, { clientId: c.clientId, publicClient: c.publicClient === true, ...(c.secret ? { secret: c.secret } : {}) }]);
  return { name: json.realm, users: Object.fromEntries(users), clients: Object.fromEntries(clients) };
}

// ---------------------------------------------------------------------------------------------------------------
// Homes and processes

/** A fresh home for one server: its own data/ and tmp/, the install's lib/, conf/, providers/, themes/ linked in. */
function makeHome(install: KeycloakInstall, home: string): void {
  mkdirSync(home, { recursive: true });
  for (const d of ['lib', 'conf', 'providers', 'themes']) symlinkSync(join(install.dir, d), join(home, d));
  mkdirSync(join(home, 'data'), { recursive: true });
  mkdirSync(join(home, 'tmp'), { recursive: true });
}

// Process groups still running, killed if this process exits before stopping them (kc.sh runs java as its child:
// a signal to kc.sh alone would leave java serving).
const liveGroups = new Set<number>();
let reaperInstalled = false;

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

function trackGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  const pid = child.pid;
  if (!reaperInstalled) {
    reaperInstalled = true;
    process.on('exit', () => {
      for (const p of liveGroups) signalGroup(p, 'SIGKILL');
    });
  }
  liveGroups.add(pid);
  child.once('exit', () => liveGroups.delete(pid));
}

/** SIGTERM to the whole group, then SIGKILL to whatever of it is left after `graceMs` (or at once after the exit). */
async function stopGroup(proc: Supervised, graceMs = 30_000): Promise<void> {
  const pid = proc.pid;
  if (pid === undefined) return;
  if (proc.running) {
    signalGroup(pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([proc.exited, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
  signalGroup(pid, 'SIGKILL');
  await proc.exited;
}

interface Launch {
  readonly install: KeycloakInstall;
  readonly home: string;
  readonly port: number;
  readonly importRealm: boolean;
  readonly admin?: KeycloakAdmin;
  /** The JVM's class-data archive: written at exit (the template's run), or read at start. */
  readonly classArchive?: { readonly file: string; readonly write: boolean };
}

function classArchiveOption(archive: Launch['classArchive']): string[] {
  if (!archive) return [];
  if (archive.write) return [`-XX:ArchiveClassesAtExit=${archive.file}`];
  // The JVM reports, as errors, that the JDK's base archive was dumped without kc.sh's --add-opens; it then maps
  // ours all the same (most classes come from it). Those lines only alarm whoever reads the log.
  return existsSync(archive.file) ? [`-XX:SharedArchiveFile=${archive.file}`, '-Xlog:cds=off'] : [];
}

/** `kc.sh start --optimized` for `home` on 127.0.0.1:port, in its own process group, its log in the home. */
function launch(l: Launch): Supervised {
  const args = [
    'start', '--optimized', `-Dkc.home.dir=${l.home}`,
    '--http-enabled=true', '--http-host=127.0.0.1', `--http-port=${l.port}`, `--hostname=http://127.0.0.1:${l.port}`,
    '--cache=local', ...(l.importRealm ? ['--import-realm'] : []),
  ];
  const env = keycloakEnv(l.install.java, {
    JAVA_OPTS_APPEND: [...JAVA_OPTS_APPEND, ...classArchiveOption(l.classArchive), `-Djava.io.tmpdir=${join(l.home, 'tmp')}`].join(' '),
    ...(l.admin ? { KC_BOOTSTRAP_ADMIN_USERNAME: l.admin.username, KC_BOOTSTRAP_ADMIN_PASSWORD: l.admin.password } : {}),
  });
  const proc = Supervised.spawn('keycloak', join(l.install.dir, 'bin', 'kc.sh'), args, { env, detached: true, signalOnExit: 'SIGTERM', output: { file: join(l.home, 'keycloak.log') } });
  trackGroup(proc.child);
  return proc;
}

/** Until every realm's discovery document answers 200 (fails at once when Keycloak exits, quoting its log). */
async function waitReady(proc: Supervised, port: number, realms: readonly string[], timeoutMs = START_TIMEOUT_MS): Promise<void> {
  for (const realm of realms) {
    const path = `/realms/${encodeURIComponent(realm)}/.well-known/openid-configuration`;
    await untilWhileRunning(`Keycloak's ${path} on 127.0.0.1:${port}`, timeoutMs, [proc], async () => (await httpStatus(port, path)) === 200, { intervalMs: 250 });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The realm template

export interface KeycloakAdmin {
  readonly username: string;
  readonly password: string;
}

interface RealmTemplate {
  /** The H2 database directory to copy into a home's data/h2. */
  readonly h2: string;
  /** The JVM's class-data archive of a run like the suites' (used when present: a third off each start). */
  readonly classArchive: string;
  readonly admin: KeycloakAdmin;
  readonly realms: readonly string[];
}

const CLASS_ARCHIVE = 'keycloak.jsa';

/**
 * The database with `realmFiles` imported (and the master realm's bootstrap admin), made once per install and set of
 * files: Keycloak started with --import-realm on a scratch home, its login page rendered once, stopped; its H2 files
 * are kept, and the class-data archive the JVM wrote at exit.
 */
export async function realmTemplate(install: KeycloakInstall, realmFiles: readonly string[]): Promise<RealmTemplate> {
  if (realmFiles.length === 0) throw new Error('Keycloak: no realm file to import');
  const contents = realmFiles.map((f) => readFileSync(f));
  const realms = realmFiles.map((f) => readRealm(f).name);
  const dir = cacheEntryDir('keycloak-realms', KEYCLOAK_VERSION, [basename(dirname(install.dir)), '\0cds', ...contents.flatMap((c) => ['\0', c])]);
  const done = (): boolean => existsSync(join(dir, 'admin.json')) && existsSync(join(dir, 'h2'));
  await fillCacheEntry(dir, `the Keycloak database of ${realms.join(', ')}`, done, (tmp) => makeTemplate(install, realmFiles, realms, tmp));
  const admin = JSON.parse(readFileSync(join(dir, 'admin.json'), 'utf8')) as KeycloakAdmin;
  return { h2: join(dir, 'h2'), classArchive: join(dir, CLASS_ARCHIVE), admin, realms };
}

async function makeTemplate(install: KeycloakInstall, realmFiles: readonly string[], realms: readonly string[], tmp: string): Promise<void> {
  const home = join(tmp, 'home');
  makeHome(install, home);
  mkdirSync(join(home, 'data', 'import'));
  realmFiles.forEach((f, i) => cpSync(f, join(home, 'data', 'import', `${i}-${basename(f)}`)));
  const admin = { username: 'admin', password: randomBytes(18).toString('base64url') };
  const port = await freePort();
  const started = Date.now();
  const proc = launch({ install, home, port, importRealm: true, admin, classArchive: { file: join(tmp, CLASS_ARCHIVE), write: true } });
  try {
    await waitReady(proc, port, realms);
    // The account console sends the browser to the login page: its classes (themes, FreeMarker) go into the archive.
    const login = await fetch(`http://127.0.0.1:${port}/realms/${encodeURIComponent(realms[0]!)}/account`);
    await login.text();
  } finally {
    await stopGroup(proc);
  }
  log(`imported ${realms.join(', ')} in ${Math.round((Date.now() - started) / 1000)}s${existsSync(join(tmp, CLASS_ARCHIVE)) ? ', class-data archive written' : ' (no class-data archive)'}`);
  cpSync(join(home, 'data', 'h2'), join(tmp, 'h2'), { recursive: true });
  writeFileSync(join(tmp, 'admin.json'), JSON.stringify(admin));
  rmSync(home, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------------------
// A running Keycloak

export interface KeycloakOptions {
  /** Realm files in Keycloak's export format; each one's realm is served (the first is the default). */
  readonly realmFiles: readonly string[];
  /** Listen here (default: a free port). */
  readonly port?: number;
}

/**
 * One Keycloak on http://127.0.0.1:<port> (its issuer for realm R: `<url>/realms/R`), from a fresh copy of the realm
 * template: every start sees the realm files' users, groups and clients as imported, nothing a previous run changed.
 */
export class Keycloak {
  private constructor(
    readonly install: KeycloakInstall,
    /** This server's own home (removed by stop()); its log is `keycloak.log` there. */
    readonly home: string,
    readonly port: number,
    /** The master realm's administrator (admin-cli, password grant), for tests that change the realm. */
    readonly admin: KeycloakAdmin,
    readonly realms: readonly string[],
    private readonly classArchive: Launch['classArchive'],
    private proc: Supervised,
  ) {}

  /** Installs (first time), makes the realm template (first time per set of files), starts and waits for it. */
  static async start(options: KeycloakOptions): Promise<Keycloak> {
    const install = await ensureKeycloak();
    const template = await realmTemplate(install, options.realmFiles);
    const home = mkdtempSync(join(tmpdir(), 'svc-keycloak-'));
    try {
      makeHome(install, home);
      cpSync(template.h2, join(home, 'data', 'h2'), { recursive: true });
      const port = options.port ?? (await freePort());
      const classArchive = { file: template.classArchive, write: false };
      const keycloak = new Keycloak(install, home, port, template.admin, template.realms, classArchive, launch({ install, home, port, importRealm: false, classArchive }));
      await keycloak.ready();
      return keycloak;
    } catch (e) {
      rmSync(home, { recursive: true, force: true });
      throw e;
    }
  }

  private async ready(): Promise<void> {
    const started = Date.now();
    try {
      await waitReady(this.proc, this.port, this.realms);
    } catch (e) {
      await stopGroup(this.proc);
      throw new Error(`Keycloak did not start: ${(e as Error).message}`, { cause: e });
    }
    log(`ready on 127.0.0.1:${this.port} in ${((Date.now() - started) / 1000).toFixed(1)}s (Java ${this.install.java.major})`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The issuer of `realm` (default: the first realm file's). */
  issuer(realm = this.realms[0]!): string {
    return `${this.url}/realms/${realm}`;
  }

  get running(): boolean {
    return this.proc.running;
  }

  /** `path` of the admin REST API (`/admin/realms/...`), as the master realm's administrator (a fresh token each call). */
  async adminFetch(path: string, init: RequestInit = {}): Promise<Response> {
    const form = new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: this.admin.username, password: this.admin.password });
    const res = await fetch(`${this.issuer('master')}/protocol/openid-connect/token`, { method: 'POST', body: form });
    if (res.status !== 200) throw new Error(`Keycloak's administrator got no token: HTTP ${res.status} ${await res.text()}`);
    const { access_token: token } = (await res.json()) as { access_token: string };
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
    return fetch(`${this.url}${path}`, { ...init, headers });
  }

  /** The last lines of its log, for failure messages. */
  tail(lines = 40): string {
    return this.proc.tail(lines);
  }

  /** Stops it and starts it again on the same port with the same database (a provider that went away and came back). */
  async restart(): Promise<void> {
    await stopGroup(this.proc);
    this.proc = launch({ install: this.install, home: this.home, port: this.port, importRealm: false, classArchive: this.classArchive });
    await this.ready();
  }

  /** Stops it (java under kc.sh too) and removes its home; with keepHome it is only down, until restart(). */
  async stop(options: { keepHome?: boolean } = {}): Promise<void> {
    await stopGroup(this.proc);
    if (!options.keepHome) rmSync(this.home, { recursive: true, force: true });
  }
}
