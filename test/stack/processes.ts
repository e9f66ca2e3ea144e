// Our programs as real child processes (`node --import tsx <entry> ...`, from the sources, like `npm start`), started
// with the command line and environment the chart gives their containers: the Deployment's args with the kubelet's
// `$(VAR)` expansion and downward-API env done here, listen addresses moved to 127.0.0.1 ports, and KUBECONFIG pointing
// at the identity they run under.
import { appendFileSync } from 'node:fs';
import { repoRoot } from '../controlplane/controlplane.js';
import { redact } from '../e2e/support/svc-auth.js';
import { httpStatus } from '../support/ports.js';
import { runCommand, Supervised } from '../support/process.js';
import { waitUntil } from '../support/wait.js';
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
  private proc: Supervised | undefined;
  private out = '';

  constructor(readonly options: ProgramOptions) {}

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get running(): boolean {
    return this.proc?.running ?? false;
  }

  /** Everything it printed so far, known tokens redacted. */
  get output(): string {
    return redact(this.out, this.options.secrets ?? []);
  }

  start(): void {
    const { command, kubeconfig, logFile } = this.options;
    const env: NodeJS.ProcessEnv = { ...process.env, ...command.env, KUBECONFIG: kubeconfig, NODE_OPTIONS: '' };
    // Output is kept over all its starts; the log file gets it redacted as it comes.
    this.proc = Supervised.spawn(this.name, process.execPath, ['--import', 'tsx', command.entry, ...command.args], {
      cwd: repoRoot, env, onOutput: (text) => {
        this.out += text;
        if (logFile) appendFileSync(logFile, redact(text, this.options.secrets ?? []));
      },
    });
  }

  /** Waits until GET `path` on `port` answers `status`; fails early when the process exits. */
  async waitForHttp(port: number, path: string, timeoutMs = 60_000, status = 200): Promise<void> {
    let last = 0;
    try {
      await waitUntil(async () => (last = await httpStatus(port, path)) === status,
        { what: `${path} to answer ${status}`, timeoutMs, ...(this.proc ? { abortIf: this.proc.exitReason } : {}), describe: () => `status ${last}` });
    } catch (e) {
      throw new Error(`${this.name}: ${(e as Error).message}:\n${this.tail()}`, { cause: e });
    }
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
    await this.proc?.stop();
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
  // A token goes in on stdin ("-"), never on the command line where `ps` would show it.
  return runCommand(process.execPath, ['--import', 'tsx', PROGRAM_ENTRIES.svc!, ...args], {
    cwd: repoRoot, env: { ...process.env, KUBECONFIG: kubeconfig, NODE_OPTIONS: '' }, timeoutMs: opts.timeoutMs ?? 60_000,
    ...(opts.input === undefined ? {} : { input: opts.input }),
  }).then((r) => ({ status: r.code ?? (r.signal ? 128 : -1), stdout: r.stdout, stderr: r.stderr }));
}
