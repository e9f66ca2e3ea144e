// `npm start` (scripts/start.mjs) as a new user meets it, with real processes: the build in dist/ (npm ci makes it),
// its own ports and manifest directory (--scopes-dir in a temp dir, never the clone's .svc/). Its one-time token is
// never printed by this file: the output is scrubbed before it can reach a failure message, and the token is
// checked by its shape and by what svc-auth answers to it.
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../test/support/ports.js';
import { runCommand, Supervised } from '../test/support/process.js';
import { waitUntil } from '../test/support/wait.js';

const START = join(dirname(fileURLToPath(import.meta.url)), 'start.mjs');
/** A generated token: svc_, 43 base62 characters of randomness and 6 of checksum. */
const TOKEN_SHAPE = /svc_[A-Za-z0-9]{49}(?![A-Za-z0-9])/;
const tokensIn = (text: string) => [...text.matchAll(new RegExp(TOKEN_SHAPE.source, 'g'))].map((m) => m[0]);
const scrub = (text: string) => text.replace(/svc_[A-Za-z0-9]{10,}/g, 'svc_<redacted>');

const work = mkdtempSync(join(tmpdir(), 'svc-start-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let holder: Server | undefined;
let running: Supervised | undefined;
afterEach(async () => {
  await running?.stop('SIGINT');
  running = undefined;
  await new Promise((r) => (holder ? holder.close(r) : r(undefined)));
  holder = undefined;
});

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/** svc-auth's answer to a process execution, with or without a bearer token. */
function execute(port: number, token?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'X-Original-Method': 'POST', 'X-Original-URI': '/oapi/processes/svc-synop2bufr/execution' };
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    const req = request({ host: '127.0.0.1', port, path: '/authz/auth-request', headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

async function startNpm(dir: string, args: readonly string[]): Promise<Supervised> {
  running = Supervised.spawn('npm start', process.execPath, [START, '--scopes-dir', dir, ...args]);
  const p = running;
  await waitUntil(() => /Ctrl-C stops svc-auth/.test(p.output), {
    what: 'the hint of npm start', timeoutMs: 45_000, abortIf: p.exitReason, describe: () => scrub(p.tail()),
  });
  return p;
}

describe('npm start never loses its one-time token', () => {
  it('a taken port is named with its flag, and nothing is created; then free ports show the addresses used and a token that works', async () => {
    const dir = join(work, 'scopes');
    const [p, q] = await freePorts(2);
    holder = await occupy(p!);
    const taken = await runCommand(process.execPath, [START, '--scopes-dir', dir, '--listen', `127.0.0.1:${p}`, '--metrics-listen', `127.0.0.1:${q}`], { timeoutMs: 30_000 });
    const said = scrub(taken.stdout + taken.stderr);
    expect(taken.code).toBe(1);
    expect(said).toContain(`127.0.0.1:${p} is already in use (--listen`);
    expect(said).toMatch(/npm start -- --scopes-dir \S+ --listen 127\.0\.0\.1:\d+ --metrics-listen 127\.0\.0\.1:\d+/);
    expect(TOKEN_SHAPE.test(taken.stdout + taken.stderr)).toBe(false);
    expect(existsSync(dir)).toBe(false);

    // The metrics port taken is named as such.
    const [p2] = await freePorts(1);
    const metricsTaken = await runCommand(process.execPath, [START, '--scopes-dir', dir, '--listen', `127.0.0.1:${p2}`, '--metrics-listen', `127.0.0.1:${p}`], { timeoutMs: 30_000 });
    expect(metricsTaken.code).toBe(1);
    expect(scrub(metricsTaken.stderr)).toContain(`127.0.0.1:${p} is already in use (--metrics-listen`);
    expect(existsSync(dir)).toBe(false);

    const [l, m] = await freePorts(2);
    const started = await startNpm(dir, ['--listen', `127.0.0.1:${l}`, '--metrics-listen', `127.0.0.1:${m}`]);
    const hint = scrub(started.output);
    expect(hint).toContain(`svc-auth is listening on http://127.0.0.1:${l} (metrics: http://127.0.0.1:${m}/metrics)`);
    expect(hint).toContain(`http://127.0.0.1:${l}/authz/auth-request`);
    expect(hint).not.toContain(':8080');
    // TOKEN is set before the curl that uses it; a refusal's reason is in the log, and the hint says where.
    expect(hint.indexOf('TOKEN=svc_')).toBeGreaterThan(-1);
    expect(hint.indexOf('TOKEN=svc_')).toBeLessThan(hint.indexOf('$TOKEN'));
    expect(hint).toMatch(/curl sees a bare\s+401 or 403[\s\S]*"decision" line each[\s\S]*"requests refused"[\s\S]*npm start -- --log-level debug/);
    expect(hint).not.toContain('Browser sign-in is on');
    const tokens = tokensIn(started.output);
    expect(tokens.length).toBe(1); // shown once, and only this one
    expect(await execute(l!)).toBe(401);
    expect(await execute(l!, tokens[0])).toBe(200);
  }, 120_000);

  it('with the sign-in flags on, the hint says where a browser signs in, for which client, and where files open', async () => {
    const dir = join(work, 'sign-in');
    const keys = join(work, 'session-keys');
    writeFileSync(keys, `${randomBytes(32).toString('base64url')}\n`);
    const [l, m] = await freePorts(2);
    const origin = `http://127.0.0.1:${l}`;
    // A provider nobody answers for: svc-auth starts all the same (sign-in says so until it answers).
    const started = await startNpm(dir, ['--listen', `127.0.0.1:${l}`, '--metrics-listen', `127.0.0.1:${m}`, '--oidc-issuer', 'http://127.0.0.1:1/realms/demo',
      '--oidc-audience', 'svc-auth', '--sign-in-client-id', 'svc-auth', '--external-url', origin, '--session-key-file', keys]);
    const hint = scrub(started.output);
    expect(hint).toContain('Browser sign-in is on (client svc-auth of http://127.0.0.1:1/realms/demo)');
    expect(hint).toContain(`${origin}/authz/sign-in?rd=${encodeURIComponent(`${origin}/authz/v1/session`)}`);
    expect(hint).toContain(`return to ${origin}/authz/callback`);
    expect(hint).toContain('npm run demo:sign-in');
  }, 120_000);

  it('svc-auth stopping before it is ready removes the example it was given, so the next start shows a usable token', async () => {
    const dir = join(work, 'refused');
    const [l, m] = await freePorts(2);
    // A flag svc-auth refuses once it runs (exit 2): the example was created for it, and must go again.
    const refused = await runCommand(process.execPath, [START, '--scopes-dir', dir, '--listen', `127.0.0.1:${l}`, '--metrics-listen', `127.0.0.1:${m}`, '--cache-max-age', 'soon'], { timeoutMs: 30_000 });
    expect(refused.code).toBe(2);
    expect(scrub(refused.stderr)).toContain('removed again, since its token was never shown');
    expect(TOKEN_SHAPE.test(refused.stdout + refused.stderr)).toBe(false);
    expect(existsSync(dir)).toBe(false);

    const started = await startNpm(dir, ['--listen', `127.0.0.1:${l}`, '--metrics-listen', `127.0.0.1:${m}`]);
    const tokens = tokensIn(started.output);
    expect(tokens.length).toBe(1);
    expect(await execute(l!, tokens[0])).toBe(200);
    await started.stop('SIGINT');

    // The directory is there now: a second start generates nothing and says how to get a token.
    const again = await startNpm(dir, ['--listen', `127.0.0.1:${l}`, '--metrics-listen', `127.0.0.1:${m}`]);
    expect(TOKEN_SHAPE.test(again.output)).toBe(false);
    expect(scrub(again.output)).toMatch(/already existed, so no token was generated[\s\S]*add-token --path processes\/svc/);
  }, 120_000);
});
