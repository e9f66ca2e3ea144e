import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Supervised } from '../test/support/process.js';
import { until } from '../test/support/wait.js';

// svc-auth as a real child process (`node --import tsx authz/main.ts`, as npm start and the suites run it):
// usage errors, and SIGTERM draining in-flight requests.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const children: Supervised[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.stop('SIGKILL')));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function svcAuth(args: string[]): Supervised {
  const child = Supervised.spawn('svc-auth', process.execPath, ['--import', 'tsx', 'authz/main.ts', ...args], { cwd: ROOT });
  children.push(child);
  return child;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-auth-main-'));
  dirs.push(d);
  return d;
}

describe('svc-auth usage errors', () => {
  it.each([
    [[], /exactly one snapshot source/],
    [['--scopes-dir', '.', '--snapshot-file', 'x'], /exactly one snapshot source/],
    [['--scopes-dir', '/nonexistent/svc-scopes'], /no such directory/],
    [['--scopes-dir', '.', '--listen', 'nonsense'], /--listen .*HOST:PORT/],
    [['--scopes-dir', '.', '--bogus'], /unknown option/],
  ])('%j exits 2 and says what to do', async (args, message) => {
    const p = svcAuth(args as string[]);
    expect(await p.exited).toBe('exit 2');
    expect(p.output).toMatch(message);
    expect(p.output).toContain('svc-auth --help');
  }, 30_000);
});

describe('svc-auth on a port already taken', () => {
  it.each(['--listen', '--metrics-listen'])('names %s, the flag that changes it, and exits 1', async (flag) => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const taken = (holder.address() as AddressInfo).port;
    try {
      const other = flag === '--listen' ? '--metrics-listen' : '--listen';
      const p = svcAuth(['--scopes-dir', tempDir(), flag, `127.0.0.1:${taken}`, other, '127.0.0.1:0']);
      expect(await p.exited).toBe('exit 1');
      expect(p.output).toContain(`cannot listen on 127.0.0.1:${taken} (${flag}): the address is already in use; choose another with ${flag} HOST:PORT`);
    } finally {
      holder.close();
    }
  }, 30_000);
});

describe('svc-auth SIGTERM', () => {
  it('stops accepting, finishes the request in flight, then exits 0', async () => {
    const dir = tempDir();
    const p = svcAuth(['--scopes-dir', dir, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0']);
    const lines = () => p.output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const listening = await until('svc-auth listening', () => lines().find((l) => l.msg === 'svc-auth listening'), 20_000);
    await until('the first snapshot', () => lines().find((l) => l.msg === 'snapshot loaded'), 20_000);
    const { hostname, port } = new URL(String(listening.listen));

    // A request in flight: its head is only partly sent when SIGTERM arrives.
    const socket = connect(Number(port), hostname);
    let response = '';
    socket.setEncoding('utf8').on('data', (c: string) => (response += c));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /authz/auth-request HTTP/1.1\r\nHost: svc-auth\r\nX-Original-URI: /data/x.bufr4\r\n');
    await new Promise((r) => setTimeout(r, 100));

    p.child.kill('SIGTERM');
    await until('draining', () => lines().find((l) => l.msg?.toString().startsWith('draining')), 5000).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));

    // New connections are refused while the old one is drained.
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect(Number(port), hostname);
      s.on('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.on('error', () => resolve(true));
    });
    expect(refused).toBe(true);

    socket.write('\r\n');
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(await p.exited).toBe('exit 0');
    expect(lines().some((l) => l.msg === 'stopped')).toBe(true);
  }, 40_000);
});
