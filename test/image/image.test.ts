// The image as users get it: the repository's Dockerfile built by podman (./build.ts), then run the way the chart
// runs it — uid 65532, read-only root filesystem, no capabilities. Each program starts; svc-auth in the container
// serves a manifest directory written by the image's own CLI and answers through a published port; the image holds
// the production dependencies and nothing else.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { waitUntil } from '../support/wait.js';
import { TOPIC, WAF } from '../e2e/support/fixtures.js';
import { ensureHostPackages, hostPlan, IMAGE_PACKAGES } from '../node/host-packages.js';
import { buildImage, repoRoot, type BuiltImage } from './build.js';
import { podman, ulimitFlags } from './podman.js';

const plan = hostPlan(IMAGE_PACKAGES);
const suite = plan.action === 'skip' ? describe.skip : describe;
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };

/** How the chart's pod securityContext runs every container of ours. */
const RESTRICTED = ['--user', '65532:65532', '--read-only', '--cap-drop=ALL', '--security-opt', 'no-new-privileges', ...ulimitFlags];

suite('the image (podman)', () => {
  let image: BuiltImage;
  let dir: string;
  const containers: string[] = [];

  beforeAll(async () => {
    ensureHostPackages(plan);
    image = await buildImage();
    process.stderr.write(`[image] ${image.ref}: ${(image.bytes / 1e6).toFixed(1)} MB\n`);
    dir = mkdtempSync(join(tmpdir(), 'svc-image-test-'));
  }, 1_500_000);

  afterAll(() => {
    for (const c of containers) podman(['rm', '-f', '-t', '0', c]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const run = (args: readonly string[], extra: readonly string[] = []) => podman(['run', '--rm', ...RESTRICTED, ...extra, image.ref, ...args]);

  it('runs as uid 65532 by default', () => {
    expect(podman(['image', 'inspect', '--format', '{{.Config.User}}', image.ref]).stdout.trim()).toBe('65532:65532');
    const r = podman(['run', '--rm', ...ulimitFlags, '--entrypoint', 'node', image.ref, '-e', 'process.stdout.write(String(process.getuid()))']);
    expect(r.stdout).toBe('65532');
  });

  it('svc --version prints the package version (uid 65532, read-only, no capabilities)', () => {
    const r = run(['svc', '--version']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it.each([['svc-auth', '--scopes-dir'], ['svc-operator', '--leader-elect'], ['kubectl-svc', '--kubeconfig']])('%s --help starts and describes its options', (bin, option) => {
    const r = run([bin, '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(option);
  });

  it('holds the production dependencies and nothing else (npm ls --omit=dev equals the host tree)', () => {
    const tree = (out: string) => JSON.stringify((JSON.parse(out) as { dependencies?: unknown }).dependencies ?? {});
    const host = spawnSync('npm', ['ls', '--omit=dev', '--all', '--json'], { cwd: repoRoot, encoding: 'utf8' });
    expect(host.status).toBe(0);
    // npm itself is removed from the runtime image: read the installed tree with the same npm from the host, over a
    // read-only bind mount of the image's /app.
    const mount = podman(['image', 'mount', image.ref]).stdout.trim();
    try {
      const inImage = spawnSync('npm', ['ls', '--omit=dev', '--all', '--json'], { cwd: join(mount, 'app'), encoding: 'utf8' });
      expect(inImage.status).toBe(0);
      expect(tree(inImage.stdout)).toBe(tree(host.stdout));
      expect(inImage.stdout).not.toContain('"extraneous"');
      // No development dependency (unless production code needs it too) made it in.
      const { devDependencies = {} } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string> };
      const prodPaths = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: repoRoot, encoding: 'utf8' }).stdout;
      const devOnly = Object.keys(devDependencies).filter((d) => !prodPaths.includes(`/node_modules/${d}\n`));
      expect(devOnly.length).toBeGreaterThan(0);
      expect(devOnly.filter((d) => existsSync(join(mount, 'app', 'node_modules', d)))).toEqual([]);
    } finally {
      podman(['image', 'unmount', image.ref]);
    }
  });

  it('svc-auth serves a mounted manifest directory through a published port: 401 without the token, 200 with it', async () => {
    chmodSync(dir, 0o777);
    const added = run(['svc', '--dir', '/scopes', 'auth', 'add-token', '--topic-hierarchy', TOPIC.value, '-o', 'json'], ['--volume', `${dir}:/scopes`]);
    expect(added.status).toBe(0);
    const { token } = JSON.parse(added.stdout) as { token: string };
    expect(token.length).toBeGreaterThan(20);

    const [port] = await freePorts(1);
    const name = `svc-image-test-${process.pid}`;
    const started = podman(['run', '-d', '--name', name, ...RESTRICTED, '--volume', `${dir}:/scopes:ro`, '-p', `127.0.0.1:${port}:8080`, image.ref, 'svc-auth', '--scopes-dir', '/scopes']);
    expect(started.status).toBe(0);
    containers.push(name);
    const base = `http://127.0.0.1:${port}`;
    const ask = async (target: string, auth?: string) => {
      const res = await fetch(`${base}/authz/auth-request`, {
        headers: { 'X-Original-URL': `https://data.example.org${target}`, 'X-Original-Method': 'GET', ...(auth ? { Authorization: auth } : {}) },
      });
      return res.status;
    };
    await waitUntil(async () => (await fetch(`${base}/readyz`).then((r) => r.status, () => 0)) === 200,
      { what: 'svc-auth in the container to be ready', timeoutMs: 60_000, intervalMs: 250, describe: () => podman(['logs', name]).stderr.slice(-2000) });
    expect(await ask(WAF.topicFile)).toBe(401);
    expect(await ask(WAF.topicFile, `Bearer ${token}`)).toBe(200);
    expect(await ask(WAF.topicFile, 'Bearer svc_not-the-token')).toBe(401);
    expect(await ask(WAF.openTopicFile)).toBe(200);
    // The container logged its decisions, never the token.
    const logs = podman(['logs', name]);
    expect(`${logs.stdout}${logs.stderr}`).not.toContain(token);
  }, 120_000);

  it('reports its size', () => {
    expect(image.bytes).toBeGreaterThan(50e6);
    expect(image.bytes).toBeLessThan(400e6);
  });
});
