// The whole stack, end to end, on the real control plane: `svc auth ...` (the CLI as a process, svc-management's
// identity) → ProtectedScopes → svc-operator (its ServiceAccount) → snapshot ConfigMaps → svc-auth (ConfigMap source, its
// ServiceAccount) → nginx configured as ingress-nginx configures `auth-url` → a static WAF tree and a stand-in OGC API.
// A protected file is refused, served with its token, refused again for a removed token, open after remove-tokens.
// Tokens come from the CLI's JSON output, stay in memory, and are never printed.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { redact } from '../e2e/support/svc-auth.js';
import { API, PROCESSES, TOPIC, WAF } from '../e2e/support/fixtures.js';
import { ensureNginx, nginxPlan } from '../e2e/support/nginx.js';
import { OAPI_MARKER } from '../e2e/support/oapi-standin.js';
import type { RawResponse } from '../e2e/support/net.js';
import { describeCluster, kubeconfigPath, newNamespace } from '../controlplane/testenv.js';
import { helmBinary } from '../stack/helm.js';
import { Stack, type RequestOptions } from '../stack/stack.js';
import { until } from '../support/wait.js';

const plan = nginxPlan();
if (plan.action === 'skip') console.warn(`stack suite skipped (SVC_E2E_SKIP_NGINX=1): ${plan.message}`);
const suite = plan.action === 'skip' ? describe.skip : describeCluster;

// Each step runs the CLI (a process: ~1-2 s) and waits for propagation (bounded below).
jest.setTimeout(120_000);

const PROPAGATION_MS = 30_000;
const secrets: string[] = [];
const topicArgs = ['--topic-hierarchy', TOPIC.value];
const processArgs = ['--path', PROCESSES.value];

suite('the whole stack: CLI → operator → ConfigMaps → svc-auth → nginx (ingress-nginx auth-url)', () => {
  let stack: Stack;
  const steps: string[] = [];

  beforeAll(async () => {
    const nginxBinary = ensureNginx(plan);
    const helm = await helmBinary();
    const namespace = await newNamespace('stack');
    stack = await Stack.start({ helm, adminKubeconfig: kubeconfigPath(), namespace, nginxBinary, secrets });
  }, 15 * 60_000);

  afterAll(async () => {
    if (steps.length > 0) console.log(`whole-stack flow (namespace ${stack?.namespace}):\n${steps.map((s, i) => `  ${i + 1}. ${s}`).join('\n')}`);
    await stack?.stop();
  });

  /** Runs the CLI; fails with its (redacted) output unless it exits `expected`. */
  async function cli(args: string[], expected = 0, input?: string): Promise<string> {
    const r = await stack.cli(args, input);
    if (r.status !== expected) throw new Error(`svc ${args.join(' ')} exited ${r.status}, expected ${expected}:\n${redact(`${r.stdout}${r.stderr}`, secrets)}`);
    return r.stdout;
  }

  async function addToken(scopeArgs: string[]): Promise<{ token: string; id: string }> {
    const out = JSON.parse(await cli(['auth', 'add-token', ...scopeArgs, '--description', 'stack test', '-o', 'json'])) as { token?: string; id?: string; state?: string };
    if (!out.token || !out.id) throw new Error(`add-token printed no token/id (keys: ${Object.keys(out).join(', ')})`);
    secrets.push(out.token);
    expect(out.state).toBe('Closed');
    return { token: out.token, id: out.id };
  }

  /** Waits (bounded) until `target` through nginx answers `status`; returns that answer. */
  async function expectStatus(what: string, target: string, status: number | number[], opts: RequestOptions = {}): Promise<RawResponse> {
    const want = Array.isArray(status) ? status : [status];
    let last: RawResponse | undefined;
    const res = await until(`${what}: ${opts.method ?? 'GET'} ${target} → ${want.join('/')}`, async () => {
      last = await stack.request(target, opts);
      return want.includes(last.status) ? last : undefined;
    }, PROPAGATION_MS, () => `${last?.status ?? 'nothing'}\n${stack.logs()}`);
    steps.push(`${what}: ${opts.method ?? 'GET'} ${target}${opts.bearer ? ' (Bearer token)' : ''} → ${res.status}`);
    return res;
  }

  const topicFile = WAF.topicFile;
  const execution = API.execution;
  let a: { token: string; id: string };
  let b: { token: string; id: string };
  let p: { token: string; id: string };

  it('serves data while no scope is closed; process execution is closed by default', async () => {
    const res = await expectStatus('open before any token', topicFile, 200);
    expect(res.body).toContain(stack.waf.markers.topicFile);
    const api = await expectStatus('closed by default before any token', execution, 401, { method: 'POST', body: '{}' });
    expect(api.body).not.toContain(OAPI_MARKER);
  });

  it('closes a topic and a process with `svc auth add-token`: refused without a token, served with one', async () => {
    a = await addToken(topicArgs);
    b = await addToken(topicArgs);
    p = await addToken(processArgs);
    expect(new Set([a.token, b.token, p.token]).size).toBe(3);

    await expectStatus('closed, no token', topicFile, 401);
    const served = await expectStatus('closed, its token', topicFile, 200, { bearer: a.token });
    expect(served.body).toContain(stack.waf.markers.topicFile);
    await expectStatus('closed, its other token', topicFile, 200, { bearer: b.token });

    await expectStatus('process closed, no token', execution, 401, { method: 'POST', body: '{}' });
    const ran = await expectStatus('process closed, its token', execution, 200, { method: 'POST', body: '{}', bearer: p.token });
    expect(ran.body).toContain(OAPI_MARKER);

    // Every token has arrived now: one scope's token is refused (403, not "unknown" 401) by the other scope.
    const wrong = await stack.request(topicFile, { bearer: p.token });
    expect(wrong.status).toBe(403);
    expect(wrong.body).not.toContain(stack.waf.markers.topicFile);
    expect((await stack.request(execution, { method: 'POST', body: '{}', bearer: a.token })).status).toBe(403);
  });

  it('has-access-topic agrees (token on stdin)', async () => {
    await cli(['auth', 'has-access-topic', ...topicArgs, '-'], 0, `${a.token}\n`);
    await cli(['auth', 'has-access-topic', ...topicArgs, '-'], 1, `${p.token}\n`);
  });

  it('refuses a token again after `svc auth remove-token --id`, the other one still served', async () => {
    await cli(['auth', 'remove-token', ...topicArgs, '--id', a.id]);
    const refused = await expectStatus('removed token', topicFile, [401, 403], { bearer: a.token });
    expect(refused.body).not.toContain(stack.waf.markers.topicFile);
    expect((await stack.request(topicFile, { bearer: b.token })).status).toBe(200);
    expect((await stack.request(topicFile)).status).toBe(401);
    await cli(['auth', 'has-access-topic', ...topicArgs, '-'], 1, `${a.token}\n`);
  });

  it('opens the topic after `svc auth remove-tokens`; the process stays closed', async () => {
    await cli(['auth', 'remove-tokens', ...topicArgs]);
    const open = await expectStatus('open again after remove-tokens', topicFile, 200);
    expect(open.body).toContain(stack.waf.markers.topicFile);
    expect((await stack.request(execution, { method: 'POST', body: '{}' })).status).toBe(401);
    expect((await stack.request(execution, { method: 'POST', body: '{}', bearer: p.token })).status).toBe(200);
  });

  it('never printed a token: not in svc-operator\'s or svc-auth\'s output', () => {
    expect(secrets.length).toBe(3);
    expect(stack.operator?.printed(secrets)).toBe(false);
    expect(stack.auth?.printed(secrets)).toBe(false);
  });
});
