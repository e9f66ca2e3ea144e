/**
 * Network grants for IPv6 clients through real nginx in front of svc-auth (issue 30). Loopback has one IPv6 address,
 * so the clients live in a network namespace of the test's own (`ip netns`), joined to the host by a veth pair whose
 * addresses only this test uses: fd5c:<run>::2 is in the scope's network, fd5c:<run>::3 is not. The namespace (and
 * with it both ends of the pair) is deleted afterwards; nothing of the host's own interfaces is touched.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWafTree, TOPIC, WAF, type WafTree } from './support/fixtures.js';
import { ensureNginx, Nginx, nginxPlan } from './support/nginx.js';
import { mainConf } from './support/nginx-conf.js';
import { manifestFile, newToken, tokenRecord } from './support/scopes.js';
import { SvcAuth } from './support/svc-auth.js';
import { freePorts } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { dumpManifests, newProtectedScope, scopeObjectName } from '../../core/index.js';

jest.setTimeout(120_000);

const plan = nginxPlan();
/** Root and iproute2 are needed for a namespace; under CI both must be there (a missing tool fails, never skips). */
const canNamespace = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0;
if (!canNamespace && process.env.CI === 'true') throw new Error('the IPv6 network-grant suite needs root and iproute2 (ip netns) under CI');
const suite = plan.action === 'skip' || !canNamespace ? describe.skip : describe;

const run = randomBytes(2).toString('hex');
const NS = `svc-e2e-${run}`;
const HOST_END = `svch${run}`;
const NS_END = `svcn${run}`;
const PREFIX = `fd5c:${run}::`;
const SERVER = `${PREFIX}1`;
const ALLOWED = `${PREFIX}2`;
const OTHER = `${PREFIX}3`;

let base: string;
let waf: WafTree;
let nginx: Nginx | undefined;
let svcAuth: SvcAuth | undefined;
let listen = 0;
let namespaced = false;

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

function setUpNamespace(): void {
  ip('netns', 'add', NS);
  namespaced = true;
  ip('link', 'add', HOST_END, 'type', 'veth', 'peer', 'name', NS_END);
  ip('link', 'set', NS_END, 'netns', NS);
  ip('addr', 'add', `${SERVER}/64`, 'dev', HOST_END, 'nodad');
  ip('link', 'set', HOST_END, 'up');
  for (const a of [ALLOWED, OTHER]) ip('-n', NS, 'addr', 'add', `${a}/64`, 'dev', NS_END, 'nodad');
  ip('-n', NS, 'link', 'set', NS_END, 'up');
  ip('-n', NS, 'link', 'set', 'lo', 'up');
}

/** A GET from inside the namespace, from source address `from` (curl --interface), with extra headers: the status. */
function get(from: string, headers: readonly string[] = []): { status: number; body: string } {
  const out = execFileSync('ip', ['netns', 'exec', NS, 'curl', '-sS', '-g', '--max-time', '10', '--interface', from, '-H', 'Host: data.example.org', ...headers.flatMap((h) => ['-H', h]), '-w', '\n%{http_code}', `http://[${SERVER}]:${listen}${WAF.topicFile}`], { encoding: 'utf8' });
  const cut = out.lastIndexOf('\n');
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

beforeAll(async () => {
  if (plan.action === 'skip' || !canNamespace) return;
  const binary = ensureNginx(plan);
  base = mkdtempSync(join(tmpdir(), 'svc-e2e-networks6-'));
  chmodSync(base, 0o755);
  const scopesDir = join(base, 'scopes');
  for (const d of [scopesDir, join(base, 'nginx', 'logs'), join(base, 'nginx', 'temp')]) mkdirSync(d, { recursive: true });
  waf = buildWafTree(join(base, 'waf'));
  const o = newProtectedScope(TOPIC, scopeObjectName(TOPIC), undefined, [tokenRecord(newToken())]);
  writeFileSync(manifestFile(scopesDir, TOPIC), dumpManifests([{ ...o, spec: { ...o.spec, networks: [{ cidr: `${ALLOWED}/128` }] } }]));
  const [auth, metrics, port] = await freePorts(3);
  listen = port!;
  setUpNamespace();
  svcAuth = new SvcAuth({ scopesDir, port: auth!, metricsPort: metrics! });
  await svcAuth.start();
  // The auth location of deploy/nginx/svc-auth.conf, listening on the veth's host end.
  nginx = await Nginx.start(binary, join(base, 'nginx'), mainConf(join(base, 'nginx'), `
    server {
        listen [${SERVER}]:${listen};
        server_name data.example.org;
        location /data/ {
            auth_request /_svc_auth;
            root ${waf.root};
        }
        location = /_svc_auth {
            internal;
            proxy_pass http://127.0.0.1:${auth}/authz/auth-request;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Real-IP $remote_addr;
        }
    }`, { errorLevel: 'warn', workerConnections: 64 }), []);
  // Nginx.start waits for loopback ports; this one listens on the veth: wait until a request is answered.
  await waitUntil(() => { try { return get(OTHER).status > 0; } catch { return false; } }, { what: 'nginx on the veth', timeoutMs: 15_000, intervalMs: 200 });
});

afterAll(async () => {
  await nginx?.stop();
  await svcAuth?.stop();
  // Deleting the namespace deletes its end of the pair, and with it the host's end.
  if (namespaced) spawnSync('ip', ['netns', 'del', NS]);
  spawnSync('ip', ['link', 'del', HOST_END]);
  if (base && process.env.SVC_E2E_KEEP !== '1') rmSync(base, { recursive: true, force: true });
});

suite('network grants for IPv6 clients (nginx, X-Real-IP)', () => {
  it('the allowed IPv6 address gets the file without a token', () => {
    const r = get(ALLOWED);
    expect(r.status).toBe(200);
    expect(r.body).toContain(waf.markers.topicFile);
  });

  it('another IPv6 address gets 401, also when it names the allowed one in every address header', () => {
    expect(get(OTHER).status).toBe(401);
    expect(get(OTHER, [`X-Real-IP: ${ALLOWED}`, `X-Forwarded-For: ${ALLOWED}`, `Forwarded: for="[${ALLOWED}]"`, `X-Client-IP: ${ALLOWED}`]).status).toBe(401);
  });
});
