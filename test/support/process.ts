// Child processes for the suites and benches, supervised one way: started with their output captured (in memory
// or in a log file), awaited on their ports, quoted (the last lines) in failure messages, and stopped with SIGTERM,
// then SIGKILL after a grace. A child still running when this process exits is killed, so a crashed test or bench
// never leaves one behind. One-shot commands whose output is the result go through `runCommand`.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { waitForPort } from './ports.js';
import { waitUntil, type Check } from './wait.js';

/** Where a child's stdout and stderr go. */
export type Output =
  /** Kept in memory (`output`, `tail()`), each chunk also handed to `onOutput`. */
  | 'capture'
  /** stdout dropped, stderr to our stderr (benches, whose own output is the report). */
  | 'stderr'
  /** Appended to a file (long-lived daemons whose logs are kept with their working dir). */
  | { readonly file: string };

export interface StartOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Default 'capture'. */
  readonly output?: Output;
  /** Each chunk of output as it arrives (with 'capture'). */
  readonly onOutput?: (text: string) => void;
  /** Its own process group, so a Ctrl-C meant for the test runner does not kill it before stop() runs. */
  readonly detached?: boolean;
  /** Sent if this process exits while the child still runs; default SIGKILL. nginx wants SIGTERM: a SIGKILLed
   *  master leaves its workers running (and serving) as orphans. */
  readonly signalOnExit?: NodeJS.Signals;
  /** Ports to wait for after the spawn (see `start`). */
  readonly ports?: readonly number[];
  /** How long the ports may take; default 60 s. */
  readonly timeoutMs?: number;
}

// Every child still running, signalled when this process exits (one listener for all of them).
const live = new Map<ChildProcess, NodeJS.Signals>();
let reaperInstalled = false;
function track(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!reaperInstalled) {
    reaperInstalled = true;
    process.on('exit', () => {
      for (const [c, sig] of live) c.kill(sig);
    });
  }
  live.set(child, signal);
  child.once('exit', () => live.delete(child));
}

function stdioFor(output: Output): { stdio: StdioOptions; fd?: number } {
  if (output === 'capture') return { stdio: ['ignore', 'pipe', 'pipe'] };
  if (output === 'stderr') return { stdio: ['ignore', 'ignore', 'inherit'] };
  const fd = openSync(output.file, 'a');
  return { stdio: ['ignore', fd, fd], fd };
}

/**
 * Sends `signal`, waits for the exit, and SIGKILLs after `graceMs`. The grace timer is cleared on exit, so a
 * stopped child never keeps jest alive.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([done.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)))]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await done;
  }
}

/** One supervised child process. */
export class Supervised {
  private out = '';
  private exitInfo: string | undefined;
  /** Resolves with how it ended ("exit 1", "SIGKILL", "spawn error: ..."). */
  readonly exited: Promise<string>;

  private constructor(readonly name: string, readonly child: ChildProcess, private readonly logFile: string | undefined, options: StartOptions) {
    const take = (d: Buffer) => {
      const text = d.toString('utf8');
      this.out += text;
      options.onOutput?.(text);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve((this.exitInfo = signal ?? `exit ${code}`)));
      // A binary that cannot be spawned emits 'error' and no 'exit'.
      child.once('error', (e) => resolve((this.exitInfo ??= `spawn error: ${e.message}`)));
    });
    track(child, options.signalOnExit);
  }

  /** Spawns `cmd` without waiting for anything. */
  static spawn(name: string, cmd: string, args: readonly string[], options: StartOptions = {}): Supervised {
    const { stdio, fd } = stdioFor(options.output ?? 'capture');
    const child = spawn(cmd, [...args], { cwd: options.cwd, env: options.env ?? process.env, stdio, detached: options.detached ?? false });
    if (fd !== undefined) closeSync(fd); // the child has its own copy
    const file = typeof options.output === 'object' ? options.output.file : undefined;
    return new Supervised(name, child, file, options);
  }

  /**
   * Spawns `cmd` and waits until each of `options.ports` accepts connections; when one does not (or the process
   * exits first) it is stopped and the error quotes its last lines.
   */
  static async start(name: string, cmd: string, args: readonly string[], options: StartOptions = {}): Promise<Supervised> {
    const p = Supervised.spawn(name, cmd, args, options);
    try {
      await p.waitForPorts(options.ports ?? [], options.timeoutMs ?? 60_000);
    } catch (e) {
      await p.stop();
      throw new Error(`${name} did not start: ${(e as Error).message}\n${p.tail()}`, { cause: e });
    }
    return p;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** How it ended, or undefined while it runs. */
  get exitStatus(): string | undefined {
    return this.exitInfo;
  }

  /** For waitUntil's abortIf: why waiting on this process is pointless (it exited), else undefined. */
  readonly exitReason = (): string | undefined => (this.exitInfo === undefined ? undefined : `${this.name} exited (${this.exitInfo})`);

  /** Everything it printed (captured output, or its log file). */
  get output(): string {
    if (this.logFile === undefined) return this.out;
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** Its last lines, for failure messages. */
  tail(lines = 30): string {
    return this.output.trimEnd().split('\n').slice(-lines).join('\n');
  }

  async waitForPorts(ports: readonly number[], timeoutMs: number): Promise<void> {
    for (const port of ports) await waitForPort(port, timeoutMs, this.exitReason);
  }

  /** SIGTERM (or `signal`; SIGKILL simulates a crash), then SIGKILL after `graceMs`; resolves once it is gone. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
    if (this.running) await stopChild(this.child, signal, graceMs);
  }
}

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function pidAlive(pid: number | undefined): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** For waitUntil's abortIf over several processes: the first one's exit, if any. */
export function anyExited(procs: readonly Supervised[]): () => string | undefined {
  return () => procs.map((p) => p.exitReason()).find((r) => r !== undefined);
}

/** The last lines of each process's output, headed by its name (what a failed wait on them quotes). */
function tailsOf(procs: readonly Supervised[], lines = 25): string {
  return procs.map((p) => `--- ${p.name}.log\n${p.tail(lines)}`).join('\n');
}

/**
 * waitUntil for a condition that depends on running processes (a harness waiting for etcd, a kubelet, a relay):
 * fails at once when one of them exits, and either failure quotes the tails of their output.
 */
export function untilWhileRunning<T>(what: string, timeoutMs: number, procs: readonly Supervised[], check: Check<T>, pacing: { intervalMs: number; maxIntervalMs?: number }): Promise<T> {
  const exited = anyExited(procs);
  return waitUntil(check, {
    what, timeoutMs, ...pacing,
    abortIf: () => {
      const why = exited();
      return why === undefined ? undefined : `${why}:\n${tailsOf(procs)}\n`;
    },
    describe: () => `\n${tailsOf(procs)}\n`,
  });
}

export interface CommandResult {
  /** The exit code; null when a signal ended it (a timeout's SIGKILL, say). */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end and returns its output. `input` goes to its stdin (a token goes there, never on the
 * command line where `ps` would show it); after `timeoutMs` it is killed.
 */
export function runCommand(cmd: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const stdin = options.input === undefined ? 'ignore' : 'pipe';
    const child = spawn(cmd, [...args], { cwd: options.cwd, env: options.env ?? process.env, stdio: [stdin, 'pipe', 'pipe'] });
    track(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    // 'close', not 'exit': the output is complete only then.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
