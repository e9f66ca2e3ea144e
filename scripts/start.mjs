#!/usr/bin/env node
// `npm start`: svc-auth on 127.0.0.1:8080 (metrics on 127.0.0.1:9090) over the manifest directory
// .svc/scopes, which is created with an example when it does not exist: processes/svc closed by a token
// generated here and shown once in the hint (the only place its plaintext ever appears), and a closed example
// topic whose token nobody knows. Extra arguments go to svc-auth (`npm start -- --log-level debug`); the hint
// follows `--listen`, `--metrics-listen`, `--waf-prefix`, `--api-prefix` and `--scopes-dir` (another
// directory, created with the example when it does not exist), and, with the sign-in flags, says where a browser
// signs in. svc-auth binds 127.0.0.1 unless --listen says otherwise: its own default, a bare port, is every interface.
//
// The token is never lost: when svc-auth stops before it is ready (a port taken, Ctrl-C), the example created by
// this run is removed again, so the next `npm start` creates a new one and shows its token. A port already taken
// is named with the flag that changes it.
// Runs the build in dist/ (made by `npm ci` through the prepare script).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist', 'authz', 'main.js');
const coreIndex = join(root, 'dist', 'core', 'index.js');
const DEFAULTS = { '--listen': '127.0.0.1:8080', '--metrics-listen': '127.0.0.1:9090', '--waf-prefix': '/data', '--api-prefix': '/oapi' };
const userArgs = process.argv.slice(2);

/** The value svc-auth will use for `flag`: the last `--flag V` or `--flag=V` given, else `fallback`. */
function flagValue(flag, fallback) {
  let value = fallback;
  for (let i = 0; i < userArgs.length; i++) {
    if (userArgs[i] === flag && i + 1 < userArgs.length) value = userArgs[++i];
    else if (userArgs[i].startsWith(`${flag}=`)) value = userArgs[i].slice(flag.length + 1);
  }
  return value;
}

const ownDir = flagValue('--scopes-dir', undefined) === undefined;
const dir = resolve(flagValue('--scopes-dir', join(root, '.svc', 'scopes')));
const shown = relative(process.cwd(), dir) || '.';
const given = Object.fromEntries(Object.entries(DEFAULTS).map(([flag, fallback]) => [flag, flagValue(flag, fallback)]));

if (!existsSync(main) || !existsSync(coreIndex)) {
  console.error('npm start: dist/ is missing; build it first with "npm ci" (or "npm run build").');
  process.exit(1);
}
const core = await import(pathToFileURL(coreIndex).href);

/** Creates the example directory atomically (a temporary directory renamed into place); returns the token. */
function createExample() {
  const token = core.formatGeneratedToken(randomBytes(32));
  const unknown = core.formatGeneratedToken(randomBytes(32));
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const record = (t, description) => {
    const hash = core.hashToken(t);
    return { id: core.tokenIdOf(hash), hash, description, createdAt: now };
  };
  const examples = [
    [{ kind: 'path', value: 'processes/svc' }, record(token, 'example token created by npm start')],
    [{ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' }, record(unknown, 'example: closed; this token was never shown')],
  ];
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const [scope, rec] of examples) {
    const name = core.scopeObjectName(scope);
    writeFileSync(join(tmp, `${name}.yaml`), core.dumpManifests([core.newProtectedScope(scope, name, undefined, [rec])]));
  }
  renameSync(tmp, dir);
  return token;
}

/** `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (lib/listen-address.ts's grammar) as a URL a client on this machine can use. */
function clientUrl(listen) {
  const m = /^(?:(?:\[([^\]]*)\]|([^:[\]]*)):)?(\d+)$/.exec(listen.trim());
  if (!m) return `http://${listen}`;
  const [, ipv6, host, port] = m;
  if (ipv6 !== undefined) return `http://[${ipv6 === '::' ? '::1' : ipv6}]:${port}`;
  return `http://${!host || host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
}

/**
 * Where svc-auth is, as far as known: its flags, then (better) its own start line, which names the bound ports and,
 * with the sign-in flags, the issuer, client and external URLs.
 */
const actual = { listen: clientUrl(given['--listen']), metrics: `${clientUrl(given['--metrics-listen'])}/metrics`, wafPrefix: given['--waf-prefix'], apiPrefix: given['--api-prefix'], signIn: undefined };

/** svc-auth's start line ("svc-auth listening", JSON): the addresses it bound (port 0 resolved) and its prefixes. */
function learnFrom(line) {
  if (!line.includes('"svc-auth listening"')) return false;
  try {
    const l = JSON.parse(line);
    const local = (url) => url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
    if (typeof l.listen === 'string') actual.listen = local(l.listen);
    if (typeof l.metrics === 'string') actual.metrics = local(l.metrics);
    if (typeof l.wafPrefix === 'string') actual.wafPrefix = l.wafPrefix;
    if (typeof l.apiPrefix === 'string') actual.apiPrefix = l.apiPrefix;
    if (l.signIn && typeof l.signIn === 'object') actual.signIn = l.signIn;
    return true;
  } catch {
    return false; // not JSON after all: the flags' values stay
  }
}

/** With the sign-in flags on: where a browser signs in, and what svc-auth alone (no proxy in front) can show it. */
function signInLines() {
  const s = actual.signIn;
  if (!s) return [];
  const origin = Array.isArray(s.externalUrls) && typeof s.externalUrls[0] === 'string' ? s.externalUrls[0].replace(/\/+$/, '') : actual.listen;
  return [
    `Browser sign-in is on (client ${s.clientId} of ${s.issuer}). To sign in and see who you are, open:`,
    '',
    `  ${origin}/authz/sign-in?rd=${encodeURIComponent(`${origin}/authz/v1/session`)}`,
    '',
    ...(origin === actual.listen ? [] : [`(${origin} is the first --external-url: it must reach svc-auth, which listens on ${actual.listen}.)`]),
    `The provider must let client ${s.clientId} return to ${origin}/authz/callback. Files open through a proxy that asks`,
    'svc-auth (deploy/ has one per proxy): npm run demo:sign-in runs Keycloak, svc-auth and nginx, with users to sign in as.',
    '',
  ];
}

function hint() {
  const url = `${actual.listen}/authz/auth-request`;
  const api = actual.apiPrefix.replace(/\/+$/, '');
  const waf = actual.wafPrefix.replace(/\/+$/, '');
  const process_ = `-H 'X-Original-Method: POST' -H 'X-Original-URI: ${api}/processes/svc-synop2bufr/execution'`;
  const svc = `npx svc --dir ${shown} auth`;
  const lines = [
    '',
    `svc-auth is listening on ${actual.listen} (metrics: ${actual.metrics}), over the manifests in ${shown}.`,
    '',
    // The token first: the curl line below uses it.
    ...(token
      ? [`The example token for processes/svc, shown this once (only its hash is stored in ${shown}); set it in the shell you try from:`, '', `  TOKEN=${token}`, '']
      : [`${shown} already existed, so no token was generated (its example token was shown when it was created).`,
        `Add one now and set TOKEN to what it prints (${svc} add-token --path processes/svc), or delete ${shown}`,
        'and run npm start again for a new example.', '']),
    'Try (these ask svc-auth as a proxy\'s auth subrequest would):',
    `  curl -i -H 'X-Original-URI: ${waf}/2026-11-21/wis/origin/a/wis2/other/data/x.bufr4' ${url}    # open: 200`,
    `  curl -i ${process_} ${url}    # processes/svc, no token: 401`,
    `  curl -i ${process_} -H "Authorization: Bearer $TOKEN" ${url}    # with the token: 200`,
    `  curl -i -H 'X-Original-URI: ${waf}/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4' ${url}    # the example topic is closed too: 401`,
    '',
    'A refusal says why only in svc-auth\'s log (the JSON lines in this terminal), never to the client: curl sees a bare',
    '401 or 403. The first 20 refusals of each minute are a "decision" line each (outcome, such as no-token or',
    'invalid-token, and the scope that decided), and a "requests refused" line sums each minute up;',
    'npm start -- --log-level debug writes a line for every refusal and grant.',
    '',
    ...signInLines(),
    'Manage tokens with the svc CLI of this clone (npx svc ..., or npm link once to get svc on your PATH); svc-auth reloads by itself:',
    '',
    `  ${svc} add-token --path processes/svc       # prints a new token once`,
    `  ${svc} show`,
    `  ${svc} close --metadata-id urn:wmo:md:mw-met:embargoed    # closed before any token exists`,
    '',
    `Edit ${shown} with the svc CLI or by hand; delete it to start over. Ctrl-C stops svc-auth.`,
    '',
  ];
  process.stderr.write(lines.join('\n'));
}

/** `HOST:PORT` as svc-auth's --listen reads it: the host to bind (undefined: every interface) and the port. */
function bindAddress(listen) {
  const m = /^(?:(?:\[([^\]]*)\]|([^:[\]]*)):)?(\d+)$/.exec(listen.trim());
  return m ? { host: m[1] ?? (m[2] || undefined), port: Number(m[3]) } : undefined;
}

/** Whether this address can be bound right now (false only for EADDRINUSE: svc-auth reports anything else itself). */
function bindable(listen) {
  const at = bindAddress(listen);
  if (!at || at.port === 0) return Promise.resolve(true);
  return new Promise((resolveFree) => {
    const s = createServer();
    s.once('error', (e) => resolveFree(e.code !== 'EADDRINUSE'));
    s.listen(at.port, at.host, () => s.close(() => resolveFree(true)));
  });
}

/** A free port on 127.0.0.1 right now, for the suggestion. */
function freePort() {
  return new Promise((resolveFree) => {
    const s = createServer();
    s.once('error', () => resolveFree(0));
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolveFree(port));
    });
  });
}

/** Says which port is taken, by its flag, and a command line with free ones (the user's other arguments kept). */
async function portTaken(flag, listen) {
  const rest = userArgs.filter((a, i) => !/^--(metrics-)?listen(=|$)/.test(a) && !/^--(metrics-)?listen$/.test(userArgs[i - 1] ?? ''));
  const p = await freePort();
  let q = await freePort();
  if (q === p) q = p + 1;
  return [
    `npm start: ${listen} is already in use (${flag}${flag === '--listen' ? ', where svc-auth answers' : ', where svc-auth serves its metrics'}).`,
    'Choose free ports with --listen (svc-auth) and --metrics-listen (its metrics), e.g.:',
    '',
    `  npm start -- ${[...rest, '--listen', `127.0.0.1:${p}`, '--metrics-listen', `127.0.0.1:${q}`].join(' ')}`,
    '',
  ].join('\n');
}

// A port already taken (another npm start, say) is found before anything is created: no example, no token.
for (const flag of ['--listen', '--metrics-listen']) {
  if (!(await bindable(given[flag]))) {
    process.stderr.write(await portTaken(flag, given[flag]));
    process.exit(1);
  }
}

const token = existsSync(dir) ? null : createExample();
// At info (the default) and below, svc-auth's start line says where it bound: the readiness probe waits for it, so
// it never asks whatever else may answer on that port.
const announces = ['trace', 'debug', 'info'].includes(flagValue('--log-level', 'info'));
const ownArgs = ['--listen', DEFAULTS['--listen'], '--metrics-listen', DEFAULTS['--metrics-listen'], ...(ownDir ? ['--scopes-dir', dir] : [])];
const child = spawn(process.execPath, [main, ...ownArgs, ...userArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
let ready = false;
let started = false;
let stderrText = '';
let pending = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const lines = (pending + chunk.toString('utf8')).split('\n');
  pending = lines.pop();
  for (const line of lines) started = learnFrom(line) || started;
});
child.stderr.on('data', (chunk) => {
  process.stderr.write(chunk);
  if (stderrText.length < 65536) stderrText += chunk.toString('utf8');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (!ready) void notStarted(code, signal).finally(() => process.exit(code || 1));
  else process.exit(code ?? 1);
});

/** svc-auth stopped before it was ready: nothing of this run's example may stay behind unseen; say what to change. */
async function notStarted(code, signal) {
  const lines = ['', `npm start: svc-auth stopped before it was ready (${signal ?? `exit ${code}`}; its own message is above).`];
  if (token) {
    rmSync(dir, { recursive: true, force: true });
    lines.push(`The example created in ${shown} was removed again, since its token was never shown: the next npm start creates a new one and shows its token.`);
  }
  process.stderr.write(`${lines.join('\n')}\n`);
  // Taken between the check above and svc-auth's start: svc-auth's message names the flag.
  const taken = /\((--(?:metrics-)?listen)\): the address is already in use/.exec(stderrText);
  if (taken) process.stderr.write(await portTaken(taken[1], given[taken[1]]));
}

function isReady() {
  return new Promise((resolveReady) => {
    const req = get(`${actual.listen}/readyz`, (res) => {
      res.resume();
      resolveReady(res.statusCode === 200);
    });
    req.on('error', () => resolveReady(false));
    req.setTimeout(1000, () => req.destroy());
  });
}

const running = () => child.exitCode === null && child.signalCode === null;
// Until svc-auth is ready (then the hint, the token's one showing) or gone (then notStarted, from the exit handler).
while (running()) {
  if ((started || !announces) && !/:0$/.test(actual.listen) && (await isReady()) && running()) {
    ready = true;
    hint();
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
