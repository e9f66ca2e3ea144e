#!/usr/bin/env node
// `npm start`: svc-auth on 127.0.0.1:8080 (metrics on 127.0.0.1:9090) over the manifest directory
// .svc/scopes, which is created with an example the first time: processes/svc closed by a token generated
// here and shown once in the hint (the only place its plaintext ever appears), and a closed example topic
// whose token nobody knows. Extra arguments go to svc-auth (`npm start -- --log-level debug`).
// Runs the build in dist/ (made by `npm ci` through the prepare script).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist', 'authz', 'main.js');
const coreIndex = join(root, 'dist', 'core', 'index.js');
const dir = join(root, '.svc', 'scopes');
const shown = relative(process.cwd(), dir) || '.';
const LISTEN = '127.0.0.1:8080';
const METRICS = '127.0.0.1:9090';

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

const token = existsSync(dir) ? null : createExample();

function hint() {
  const url = `http://${LISTEN}/authz/auth-request`;
  const process_ = "-H 'X-Original-Method: POST' -H 'X-Original-URI: /oapi/processes/svc-synop2bufr/execution'";
  const lines = [
    '',
    `svc-auth is listening on http://${LISTEN} (metrics: http://${METRICS}/metrics), over the manifests in ${shown}.`,
    '',
    'Try:',
    `  curl -i -H 'X-Original-URI: /data/2026-11-21/wis/origin/a/wis2/other/data/x.bufr4' ${url}    # open: 200`,
    `  curl -i ${process_} ${url}    # processes/svc, no token: 401`,
    `  curl -i ${process_} -H "Authorization: Bearer $TOKEN" ${url}    # with the token: 200`,
    `  curl -i -H 'X-Original-URI: /data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4' ${url}    # the example topic is closed too: 401`,
    '',
  ];
  if (token) {
    lines.push(`The example token for processes/svc, shown this once (only its hash is stored in ${shown}):`, '', `  TOKEN=${token}`, '');
  } else {
    lines.push(`${shown} already existed, so no token was generated (its example token was shown only when it was created).`, '');
  }
  lines.push(
    'Manage tokens with the svc CLI of this clone (npx svc ..., or npm link once to get svc on your PATH); svc-auth reloads by itself:',
    '',
    `  npx svc --dir ${shown} auth add-token --path processes/svc       # prints a new token once`,
    `  npx svc --dir ${shown} auth show`,
    `  npx svc --dir ${shown} auth close --metadata-id urn:wmo:md:mw-met:embargoed    # closed before any token exists`,
    '',
  );
  lines.push(`Edit ${shown} with the svc CLI or by hand; delete it to start over. Ctrl-C stops svc-auth.`, '');
  process.stderr.write(lines.join('\n'));
}

const child = spawn(process.execPath, [main, '--scopes-dir', dir, '--listen', LISTEN, '--metrics-listen', METRICS, ...process.argv.slice(2)], {
  stdio: ['ignore', 'inherit', 'inherit'],
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 1));

function ready() {
  return new Promise((resolveReady) => {
    const req = get(`http://${LISTEN}/readyz`, (res) => {
      res.resume();
      resolveReady(res.statusCode === 200);
    });
    req.on('error', () => resolveReady(false));
    req.setTimeout(1000, () => req.destroy());
  });
}

const deadline = Date.now() + 30_000;
while (child.exitCode === null && Date.now() < deadline) {
  if (await ready()) {
    hint();
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
