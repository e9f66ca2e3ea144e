import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, canConnect } from './ports.js';
import { anyExited, pidAlive, runCommand, Supervised, untilWhileRunning } from './process.js';
import { waitUntil } from './wait.js';

const node = process.execPath;
// A child that prints, listens on argv[1] and, with argv[2] === 'stubborn', ignores SIGTERM.
const SERVER = `
const port = Number(process.argv[1]);
console.log('starting on ' + port);
console.error('a warning');
if (process.argv[2] === 'stubborn') process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
require('node:net').createServer((s) => s.end()).listen(port, '127.0.0.1', () => console.log('listening'));
`;

describe('Supervised', () => {
  it('starts a child, waits for its port, keeps its output, and stops it with SIGTERM', async () => {
    const port = await freePort();
    const p = await Supervised.start('server', node, ['-e', SERVER, String(port)], { ports: [port], timeoutMs: 10_000 });
    try {
      expect(p.running).toBe(true);
      // stdout and stderr are two pipes: their lines arrive in either order, so wait for both and compare as a set.
      await waitUntil(() => p.output.includes('listening') && p.output.includes('a warning'), { what: 'both streams\' lines', timeoutMs: 5000 });
      expect(p.tail(3).split('\n').sort()).toEqual([`starting on ${port}`, 'a warning', 'listening'].sort());
    } finally {
      // A failed expectation must not leave the child running: its pipes would keep jest from ever exiting.
      await p.stop();
    }
    expect(p.running).toBe(false);
    expect(await p.exited).toBe('SIGTERM');
    expect(await canConnect(port)).toBe(false);
  });

  it('SIGKILLs a child that ignores SIGTERM after the grace', async () => {
    const port = await freePort();
    const p = await Supervised.start('stubborn', node, ['-e', SERVER, String(port), 'stubborn'], { ports: [port], timeoutMs: 10_000 });
    await p.stop('SIGTERM', 300);
    // SIGTERM first, survived, then SIGKILL: event order, not elapsed time.
    expect(p.output).toContain('ignoring SIGTERM');
    expect(p.exitStatus).toBe('SIGKILL');
  });

  it('fails a start whose process exits, quoting its last lines', async () => {
    const port = await freePort();
    await expect(Supervised.start('broken', node, ['-e', 'console.error("bad config"); process.exit(3)'], { ports: [port], timeoutMs: 10_000 }))
      .rejects.toThrow(/broken did not start: broken exited \(exit 3\) while waiting for something to listen on 127\.0\.0\.1:\d+\nbad config/);
  });

  it('reports a binary that cannot be spawned', async () => {
    const p = Supervised.spawn('missing', '/nonexistent/binary', []);
    expect(await p.exited).toMatch(/^spawn error: .*ENOENT/);
    expect(anyExited([p])()).toMatch(/^missing exited \(spawn error/);
  });

  it('writes output to a log file when asked, and hands captured chunks to onOutput', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-proc-test-'));
    try {
      const file = join(dir, 'x.log');
      const logged = Supervised.spawn('logged', node, ['-e', 'console.log("one"); console.error("two")'], { output: { file } });
      await logged.exited;
      expect(logged.output).toBe('one\ntwo\n');
      expect(logged.tail(1)).toBe('two');
      const seen: string[] = [];
      const captured = Supervised.spawn('captured', node, ['-e', 'console.log("three")'], { onOutput: (t) => seen.push(t) });
      await captured.exited;
      expect(seen.join('')).toBe('three\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('untilWhileRunning', () => {
  it('returns what the check returns while the processes run', async () => {
    const port = await freePort();
    const p = await Supervised.start('server', node, ['-e', SERVER, String(port)], { ports: [port], timeoutMs: 10_000 });
    try {
      expect(await untilWhileRunning('the listening line', 5000, [p], () => p.output.includes('listening') && 'seen', { intervalMs: 10 })).toBe('seen');
    } finally {
      await p.stop();
    }
  });

  it('fails at once when one of them exits, quoting its output', async () => {
    const p = Supervised.spawn('dies', node, ['-e', 'console.error("bad flag"); process.exit(4)']);
    await expect(untilWhileRunning('something that never comes', 60_000, [p], () => false, { intervalMs: 10 }))
      .rejects.toThrow(/dies exited \(exit 4\)[^]*--- dies\.log\nbad flag/);
  });

  it('on a timeout, says what it waited for and quotes the running processes\' output', async () => {
    const port = await freePort();
    const p = await Supervised.start('server', node, ['-e', SERVER, String(port)], { ports: [port], timeoutMs: 10_000 });
    try {
      await waitUntil(() => p.output.includes('a warning'), { what: 'the stderr line', timeoutMs: 5000 });
      await expect(untilWhileRunning('a condition', 100, [p], () => false, { intervalMs: 10 })).rejects.toThrow(/timed out after 100 ms waiting for a condition[^]*--- server\.log\n[^]*a warning/);
    } finally {
      await p.stop();
    }
  });
});

describe('runCommand', () => {
  it('returns the exit code and both outputs, with stdin from input', async () => {
    const r = await runCommand(node, ['-e', 'process.stdin.pipe(process.stdout); console.error("err"); process.exitCode = 2'], { input: 'secret' });
    expect(r).toEqual({ code: 2, signal: null, stdout: 'secret', stderr: 'err\n' });
  });

  it('kills a command that outlives its timeout', async () => {
    const r = await runCommand(node, ['-e', 'setTimeout(() => {}, 60000)'], { timeoutMs: 200 });
    expect(r.code).toBeNull();
    expect(r.signal).toBe('SIGKILL');
  });
});

describe('pidAlive', () => {
  it('knows this process and not one that has exited', async () => {
    expect(pidAlive(process.pid)).toBe(true);
    const p = Supervised.spawn('short', node, ['-e', '']);
    const pid = p.pid;
    await p.exited;
    expect(pidAlive(pid)).toBe(false);
    expect(pidAlive(undefined)).toBe(false);
  });
});
