/**
 * A wis2box moved to svc, end to end (docs/wis2box.md): nginx configured as wis2box configures it
 * (support/wis2box-nginx.ts: `auth_request /auth` to svc-auth's drop-in `GET /authorize`, X-Original-URI,
 * X-Api-Http-Method only where wis2box sets it), deploy/wis2box/scopes as the starting manifests, a wis2box-auth
 * store made as wis2box-auth makes it (Python's sqlite3 and hashlib.pbkdf2_hmac) imported with the real CLI, and
 * every imported token checked through nginx. Tests compare statuses and booleans; no token is ever printed.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { dirState, svcProcess, type Result } from '../cli/harness.js';
import { freePorts } from '../support/ports.js';
import { makeWis2boxAuthStore } from '../support/wis2box-auth-store.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { rawRequest, type RawResponse } from './support/net.js';
import { OAPI_MARKER, startOapiStandin, stopServer } from './support/oapi-standin.js';
import { newToken } from './support/scopes.js';
import { REPO_ROOT, SvcAuth } from './support/svc-auth.js';
import { wis2boxNginxConf, type Wis2boxPorts } from './support/wis2box-nginx.js';

jest.setTimeout(60_000);

const plan = nginxPlan();
if (plan.action === 'skip') console.warn(`e2e wis2box suite skipped (SVC_E2E_SKIP_NGINX=1): ${plan.message}`);
const suite = plan.action === 'skip' ? describe.skip : describe;

/**
 * The store's tokens: `mytoken` as wis2box's docs write it, the others fresh per run; and the values wis2box-auth took
 * (through ?token=, UTF-8 decoded) that no svc token can be: spaces, other than ASCII, `svc_` without our checksum,
 * over 512 characters, 4,096 bytes.
 */
const TOKENS = {
  downloader: 'mytoken',
  downloader2: newToken(),
  dataset: newToken(),
  topic: newToken(),
  processes: newToken(),
  stations: newToken(),
  noKind: newToken(),
  word: `a partner token with spaces ${newToken().slice(-8)}`,
  nonAscii: `jeton-météo-€-パートナー-${newToken().slice(-8)}`,
  svcPrefix: `svc_${newToken().slice(-20)}`,
  long: `${newToken()}-`.repeat(12).slice(0, 600),
  max: `${newToken()}-`.repeat(80).slice(0, 4096),
} as const;
type Name = keyof typeof TOKENS;
const WRONG = 'mytoken2';

const ROWS: readonly { name: Name; topic: string }[] = [
  { name: 'downloader', topic: 'wis2downloader' },
  { name: 'downloader2', topic: 'wis2downloader' },
  { name: 'dataset', topic: 'urn:wmo:md:mw-met:surface-weather-observations' },
  { name: 'topic', topic: 'mw-met.data.core.weather' },
  { name: 'processes', topic: 'processes/wis2box' },
  { name: 'stations', topic: 'collections/stations' },
  { name: 'noKind', topic: 'mw met.data' },
  // A bare word: wis2box-auth closed every URL containing it.
  { name: 'word', topic: 'mw-word' },
  { name: 'nonAscii', topic: 'urn:wmo:md:mw-met:surface-weather-observations' },
  { name: 'svcPrefix', topic: 'processes/wis2box' },
  { name: 'long', topic: 'collections/stations' },
  { name: 'max', topic: 'wis2downloader' },
];

const DAY = '/data/2026-11-25/wis';
interface Governed {
  readonly name: string;
  readonly method: string;
  readonly target: string;
  readonly own: Name;
  readonly other: Name;
}
/** One request per scope kind, its own token, and a token of another scope (verified first on its own). */
const GOVERNED: readonly Governed[] = [
  { name: 'wis2downloader (GET, short token)', method: 'GET', target: '/wis2downloader/subscriptions', own: 'downloader', other: 'dataset' },
  { name: 'wis2downloader (POST)', method: 'POST', target: '/wis2downloader/subscriptions', own: 'downloader2', other: 'processes' },
  { name: 'wis2downloader itself', method: 'GET', target: '/wis2downloader', own: 'downloader', other: 'topic' },
  { name: 'a metadata id (WAF)', method: 'GET', target: `${DAY}/urn:wmo:md:mw-met:surface-weather-observations/x.bufr4`, own: 'dataset', other: 'topic' },
  { name: 'a metadata id (API items)', method: 'GET', target: '/oapi/collections/urn:wmo:md:mw-met:surface-weather-observations/items', own: 'dataset', other: 'downloader' },
  { name: 'a dotted topic (WAF)', method: 'GET', target: `${DAY}/mw-met/data/core/weather/x.bufr4`, own: 'topic', other: 'dataset' },
  { name: 'processes/wis2box (execution)', method: 'POST', target: '/oapi/processes/wis2box-synop2bufr/execution', own: 'processes', other: 'stations' },
  { name: 'collections/stations (write)', method: 'POST', target: '/oapi/collections/stations/items', own: 'stations', other: 'processes' },
];

let base = '';
let scopesDir = '';
let ports: Wis2boxPorts;
let backend: Server | undefined;
let svcAuth: SvcAuth | undefined;
let nginx: Nginx | undefined;
let refusedImport: Result;
let firstImport: Result;
let secondImport: Result;
let dryRun: Result;
let before: Record<string, string>;
let afterRefused: Record<string, string>;
let afterDryRun: Record<string, string>;
let afterSecond: Record<string, string>;

function send(port: number, method: string, target: string, token?: { value: string; via: 'query' | 'bearer' }): Promise<RawResponse> {
  const headers: [string, string][] = [];
  let t = target;
  // The head goes out as latin1: a UTF-8 token's bytes are sent as they are.
  if (token?.via === 'bearer') headers.push(['Authorization', `Bearer ${Buffer.from(token.value, 'utf8').toString('latin1')}`]);
  else if (token) t = `${target}${target.includes('?') ? '&' : '?'}token=${encodeURIComponent(token.value)}`;
  return rawRequest(port, { method, target: t, headers, ...(method === 'POST' ? { body: '{}' } : {}) });
}

/** The status, and whether the backend's content came through (a 200 from nginx alone would not carry it). */
async function answer(port: number, method: string, target: string, token?: { value: string; via: 'query' | 'bearer' }): Promise<[number, boolean]> {
  const res = await send(port, method, target, token);
  return [res.status, res.body.includes(OAPI_MARKER)];
}

const bearer = (name: Name | 'wrong') => ({ value: name === 'wrong' ? WRONG : TOKENS[name], via: 'bearer' as const });
const query = (name: Name) => ({ value: TOKENS[name], via: 'query' as const });

suite('wis2box through its own nginx configuration, tokens imported from wis2box-auth', () => {
  beforeAll(async () => {
    const binary = ensureNginx(plan);
    base = mkdtempSync(join(tmpdir(), 'svc-e2e-wis2box-'));
    chmodSync(base, 0o755);
    scopesDir = join(base, 'scopes');
    const prefix = join(base, 'nginx');
    for (const d of [join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    cpSync(join(REPO_ROOT, 'deploy', 'wis2box', 'scopes'), scopesDir, { recursive: true });
    const store = join(base, 'auth.db');
    makeWis2boxAuthStore(store, ROWS.map((r) => ({ token: TOKENS[r.name], topic: r.topic })));
    before = dirState(scopesDir);
    refusedImport = await svcProcess(['--dir', scopesDir, 'auth', 'import', store]);
    afterRefused = dirState(scopesDir);
    dryRun = await svcProcess(['--dir', scopesDir, 'auth', 'import', store, '--dry-run', '--accept-narrower']);
    afterDryRun = dirState(scopesDir);
    firstImport = await svcProcess(['--dir', scopesDir, 'auth', 'import', store, '--accept-narrower']);
    const afterFirst = dirState(scopesDir);
    secondImport = await svcProcess(['--dir', scopesDir, 'auth', 'import', store, '--accept-narrower']);
    afterSecond = dirState(scopesDir);
    expect(afterSecond).toEqual(afterFirst);
    const [current, older, auth, metrics, backendPort] = (await freePorts(5)) as [number, number, number, number, number];
    ports = { current, older, auth, backend: backendPort };
    backend = await startOapiStandin(backendPort);
    svcAuth = new SvcAuth({ scopesDir, port: auth, metricsPort: metrics, secrets: [...Object.values(TOKENS), WRONG] });
    await svcAuth.start();
    nginx = await Nginx.start(binary, prefix, wis2boxNginxConf(prefix, ports), [current, older]);
  }, 600_000);

  afterAll(async () => {
    await nginx?.stop();
    await svcAuth?.stop();
    await stopServer(backend);
    if (base !== '' && process.env.SVC_E2E_KEEP !== '1') rmSync(base, { recursive: true, force: true });
  }, 60_000);

  describe('svc auth import with the real CLI', () => {
    it('without --accept-narrower: the row of no kind and the bare word are named (with what stays open), exit 2, nothing written', () => {
      expect(refusedImport.code).toBe(2);
      expect(refusedImport.stdout).toBe('');
      expect(refusedImport.stderr).toMatch(/^row 7 \(topic "mw met\.data"\): fits no scope kind/m);
      expect(refusedImport.stderr).toMatch(/^row 8 \(topic "mw-word"\): wis2box-auth closed every URL containing it; path mw-word closes it at the root, topic mw-word as a whole segment under \/data and a "\."-level of a collection id; no scope closes it:$/m);
      expect(refusedImport.stderr).toMatch(/^ {4}as a ":"-part of a metadata id/m);
      expect(refusedImport.stderr).toMatch(/^error: 2 rows of \S+ cannot be imported as they protected \(above\): pass --accept-narrower [^\n]*; nothing was written$/m);
      expect(afterRefused).toEqual(before);
    });

    it('--accept-narrower: --dry-run writes nothing; the import writes one scope per kind (two for the bare word); the topic of no kind is skipped', () => {
      expect([dryRun.code, firstImport.code, secondImport.code]).toEqual([0, 0, 0]);
      expect(afterDryRun).toEqual(before);
      expect(afterSecond).not.toEqual(before);
      expect(firstImport.stderr).toMatch(/^row 7 \(topic "mw met\.data"\): fits no scope kind [^\n]* - skipped$/m);
      for (const line of [/^path wis2downloader \(topic wis2downloader\): 3 tokens imported/m, /^dataset urn:wmo:md:mw-met:surface-weather-observations .*: 2 tokens imported/m,
        /^topic mw-met\.data\.core\.weather .*: 1 token imported/m, /^path processes\/wis2box .*: 2 tokens imported/m, /^path collections\/stations .*: 2 tokens imported/m,
        /^path mw-word \(topic mw-word\): 1 token imported/m, /^topic mw-word \(topic mw-word\): 1 token imported/m]) {
        expect(firstImport.stdout).toMatch(line);
      }
    });

    it('a second run changes nothing and says so', () => {
      expect(secondImport.stdout).toMatch(/^path wis2downloader \(topic wis2downloader\): nothing to import, 3 already there/m);
      expect(secondImport.stdout).not.toMatch(/tokens? imported/);
    });

    it('no token in the manifests or in what the CLI printed', () => {
      const text = Object.values(afterSecond).join('\n') + refusedImport.stderr + dryRun.stdout + dryRun.stderr + firstImport.stdout + firstImport.stderr + secondImport.stdout + secondImport.stderr;
      expect(Object.values(TOKENS).map((t) => text.includes(t))).toEqual(Object.values(TOKENS).map(() => false));
    });
  });

  describe('every imported token through nginx (wis2box 1.0 configuration)', () => {
    it.each(GOVERNED.map((g) => [g.name, g] as const))('%s: 200 with its own token (Bearer and ?token=), 401 without or wrong', async (_n, g) => {
      expect(await answer(ports.current, g.method, g.target, bearer(g.own))).toEqual([200, true]);
      expect(await answer(ports.current, g.method, g.target, query(g.own))).toEqual([200, true]);
      expect(await answer(ports.current, g.method, g.target)).toEqual([401, false]);
      expect(await answer(ports.current, g.method, g.target, bearer('wrong'))).toEqual([401, false]);
      expect(await answer(ports.current, g.method, g.target, bearer('noKind'))).toEqual([401, false]);
    });

    it.each(GOVERNED.map((g) => [g.name, g] as const))('%s: 403 with another scope\'s imported token', async (_n, g) => {
      // Verified once on its own scope (svc-auth remembers it), another scope's token is told apart from a wrong one.
      const own = GOVERNED.find((x) => x.own === g.other)!;
      expect((await answer(ports.current, own.method, own.target, bearer(g.other)))[0]).toBe(200);
      expect(await answer(ports.current, g.method, g.target, bearer(g.other))).toEqual([403, false]);
    });

    it.each<[Name, string, string]>([
      ['word', 'GET', `${DAY}/mw-word/x.bufr4`],
      ['word', 'GET', '/oapi/collections/mw-met.mw-word.obs/items'],
      ['nonAscii', 'GET', `${DAY}/urn:wmo:md:mw-met:surface-weather-observations/x.bufr4`],
      ['svcPrefix', 'POST', '/oapi/processes/wis2box-synop2bufr/execution'],
      ['long', 'POST', '/oapi/collections/stations/items'],
      ['max', 'GET', '/wis2downloader/subscriptions'],
    ])('a token no svc token can be (%s), as wis2box-auth took it: 200 through ?token= and Bearer on %s %s; 401 without', async (name, method, target) => {
      expect(await answer(ports.current, method, target, query(name))).toEqual([200, true]);
      expect(await answer(ports.current, method, target, bearer(name))).toEqual([200, true]);
      expect(await answer(ports.current, method, target)).toEqual([401, false]);
      expect(await answer(ports.current, method, target, { value: `${TOKENS[name]}x`, via: 'query' })).toEqual([401, false]);
    });

    it('the bare word stays closed as a whole segment under /data and a level of a collection id; its ":"-part form is the narrower protection accepted', async () => {
      for (const target of [`${DAY}/mw-word/x.bufr4`, `${DAY}/origin/a/wis2/mw-word/data/x.bufr4`, '/oapi/collections/mw-word/items', '/oapi/collections/x.mw-word/items/1']) {
        expect([target, ...(await answer(ports.current, 'GET', target))]).toEqual([target, 401, false]);
      }
      // The form wis2box-auth closed that no scope can: listed by the import, accepted with --accept-narrower.
      expect(await answer(ports.current, 'GET', '/oapi/collections/urn:wmo:md:mw-word:obs/items')).toEqual([200, true]);
    });

    it('/wis2downloaderx is not covered by wis2downloader (nginx matches its location, svc-auth does not)', async () => {
      expect(await answer(ports.current, 'GET', '/wis2downloaderx/y')).toEqual([200, true]);
      expect(await answer(ports.current, 'GET', '/wis2downloader/../wis2downloader/subscriptions')).toEqual([401, false]);
    });

    it('public processes are open without a token, for every method; another process stays closed', async () => {
      for (const target of ['/oapi/processes/station-info/execution', '/oapi/processes/bufr2UpperAirChart/execution', '/oapi/processes/station-info']) {
        expect(await answer(ports.current, 'POST', target)).toEqual([200, true]);
        expect(await answer(ports.current, 'GET', target)).toEqual([200, true]);
      }
      expect(await answer(ports.current, 'POST', '/oapi/processes/other-process/execution')).toEqual([401, false]);
      expect((await answer(ports.current, 'POST', '/oapi/processes/other-process/execution', bearer('processes')))[0]).not.toBe(200);
      expect(await answer(ports.current, 'POST', '/oapi/processes/station-infox/execution')).toEqual([401, false]);
    });

    it('stations reads stay open (wis2box states the method on /oapi)', async () => {
      expect(await answer(ports.current, 'GET', '/oapi/collections/stations/items')).toEqual([200, true]);
    });
  });

  describe('an older wis2box configuration (no X-Api-Http-Method, no /wis2downloader location)', () => {
    it('imported tokens grant their scopes; the public process is open; another process and stations reads need a token', async () => {
      expect(await answer(ports.older, 'GET', `${DAY}/mw-met/data/core/weather/x.bufr4`, bearer('topic'))).toEqual([200, true]);
      expect(await answer(ports.older, 'GET', `${DAY}/mw-met/data/core/weather/x.bufr4`)).toEqual([401, false]);
      expect(await answer(ports.older, 'POST', '/oapi/processes/wis2box-synop2bufr/execution', query('processes'))).toEqual([200, true]);
      expect(await answer(ports.older, 'POST', '/oapi/processes/station-info/execution')).toEqual([200, true]);
      expect(await answer(ports.older, 'POST', '/oapi/processes/other-process/execution')).toEqual([401, false]);
      expect(await answer(ports.older, 'GET', '/oapi/collections/stations/items')).toEqual([401, false]);
      expect(await answer(ports.older, 'GET', '/wis2downloader/subscriptions', bearer('downloader'))).toEqual([404, false]);
    });
  });

  // Last (describe blocks run in order): after every request above.
  describe('svc-auth output', () => {
    it('never holds a token', () => {
      const out = svcAuth!.output;
      expect(out.length).toBeGreaterThan(0);
      expect([...Object.values(TOKENS), WRONG].map((t) => out.includes(t))).toEqual([...Object.values(TOKENS), WRONG].map(() => false));
    });
  });
});
