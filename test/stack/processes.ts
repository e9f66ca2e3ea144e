// Our programs as real child processes (`node --import tsx <entry> ...`, from the sources, like `npm start`), started
// with the command line and environment the chart gives their containers: the Deployment's args with the kubelet's
// `$(VAR)` expansion and downward-API env done here, listen addresses moved to 127.0.0.1 ports, and KUBECONFIG pointing
// at the identity they run under.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { get } from 'node:http';
import { repoRoot } from '../controlplane/controlplane.js';
import { delay } from '../e2e/support/net.js';
import { redact } from '../e2e/support/svc-auth.js';
import type { Manifest } from './helm.js';

/** What each image command runs from the sources (package.json's "bin", dist/ → the .ts entry). */
export const PROGRAM_ENTRIES: Readonly<Record<string, string>> = {
  'svc-operator': 'operator/main.ts',
  'svc-auth': 'authz/main.ts',
  svc: 'cli/main.ts',
  'kubectl-svc': 'cli/main.ts',
};

export interface CommandLine {
  readonly entry: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/**
 * The command line of a Deployment's first container as a local process: `$(VAR)` references expanded from the
 * container's env (as the kubelet does), `--listen` / `--metrics-listen` moved to the given 127.0.0.1 ports.
 */
export function chartCommandLine(manifests: readonly Manifest[], deployment: string, namespace: string,
  ports: { listen?: number; metricsListen?: number }): CommandLine {
  const d = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === deployment);
  if (!d) throw new Error(`the chart rendered no Deployment ${deployment}`);
  const c = (d.spec as { template: { spec: { containers: { command?: string[]; args?: string[]; env?: EnvVar[] }[] } } }).template.spec.containers[0]!;
  const command = c.command?.[0] ?? '';
  const entry = PROGRAM_ENTRIES[command];
  if (!entry || (c.command?.length ?? 0) !== 1) throw new Error(`Deployment ${deployment} runs ${JSON.stringify(c.command)}, not one of our programs`);
  const env: Record<string, string> = {};
  for (const v of c.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[v.name] = namespace;
    else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[v.name] = `${deployment}-local`;
    else throw new Error(`env ${v.name} of ${deployment}: unsupported source ${JSON.stringify(v.valueFrom)}`);
  }
  const args = (c.args ?? []).map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole));
  for (const [flag, port] of [['--listen', ports.listen], ['--metrics-listen', ports.metricsListen]] as const) {
    const i = args.indexOf(flag);
    if (i < 0) continue;
    if (port === undefined) throw new Error(`${deployment} listens with ${flag}: give it a port`);
    args[i + 1] = `127.0.0.1:${port}`;
  }
  const unresolved = args.filter((a) => /\$\(|0\.0\.0\.0/.test(a));
  if (unresolved.length > 0) throw new Error(`${deployment}: arguments left unresolved: ${unresolved.join(' ')}`);
  return { entry, args, env };
}

export function httpStatus(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, headers, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

export interface ProgramOptions {
  /** For messages: svc-operator, svc-auth. */
  readonly name: string;
  readonly command: CommandLine;
  /** The kubeconfig of the identity it runs under (KUBECONFIG). */
  readonly kubeconfig: string;
  /** Plaintexts to blank out of anything quoted (a live list: tokens added later are redacted too). */
  readonly secrets?: readonly string[];
  /** Also append its output to this file. */
  readonly logFile?: string;
}

/** One of our programs as a child process; its output is kept for failure messages, known tokens redacted. */
export class Program {
  private child: ChildProcess | undefined;
  private out = '';
  private exitInfo: string | undefined;

  constructor(readonly options: ProgramOptions) {}

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.exitInfo === undefined;
  }

  /** Everything it printed so far, known tokens redacted. */
  get output(): string {
    return redact(this.out, this.options.secrets ?? []);
  }

  start(): void {
    const { command, kubeconfig, logFile } = this.options;
    const env: NodeJS.ProcessEnv = { ...process.env, ...command.env, KUBECONFIG: kubeconfig, NODE_OPTIONS: '' };
    const child = spawn(process.execPath, ['--import', 'tsx', command.entry, ...command.args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exitInfo = undefined;
    const take = (d: Buffer) => {
      const text = d.toString('utf8');
      this.out += text;
      if (logFile) appendFileSync(logFile, redact(text, this.options.secrets ?? []));
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    child.on('exit', (code, signal) => {
      if (this.child === child) this.exitInfo = `exit ${code ?? signal}`;
    });
  }

  /** Waits until GET `path` on `port` answers `status`; fails early when the process exits. */
  async waitForHttp(port: number, path: string, timeoutMs = 60_000, status = 200): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = 0;
    while (Date.now() < deadline) {
      if (this.exitInfo !== undefined) throw new Error(`${this.name} exited (${this.exitInfo}) before ${path} answered ${status}:\n${this.tail()}`);
      last = await httpStatus(port, path);
      if (last === status) return;
      await delay(100);
    }
    throw new Error(`${this.name}: ${path} did not answer ${status} within ${timeoutMs} ms (last ${last}):\n${this.tail()}`);
  }

  /** Whether its raw (unredacted) output contains any of these strings: a token must never be there. */
  printed(texts: readonly string[]): boolean {
    return texts.some((t) => t.length > 0 && this.out.includes(t));
  }

  tail(lines = 25): string {
    return this.output.trimEnd().split('\n').slice(-lines).join('\n');
  }

  /** SIGTERM, then SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    // A timer cleared once it exits (an uncleared 10 s timer would keep jest waiting).
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([done.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), 10_000)))]);
    clearTimeout(timer);
    if (timedOut) {
      child.kill('SIGKILL');
      await done;
    }
  }
}

export interface CliResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The `svc` CLI as a real process under `kubeconfig`'s identity. Its output is returned unredacted (add-token's JSON
 * carries the new token): callers must never print it whole; `redacted()` is for messages.
 */
export function runCli(args: readonly string[], kubeconfig: string, opts: { input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', PROGRAM_ENTRIES.svc!, ...args], {
      cwd: repoRoot,
      env: { ...process.env, KUBECONFIG: kubeconfig, NODE_OPTIONS: '' },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    // A token goes in on stdin ("-"), never on the command line where `ps` would show it.
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ status: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
}
