import { spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delay, stopChild } from './net.js';

/** The repository root, found from this file (test/e2e/support/), so the suite runs from any cwd. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** svc-auth's entry; SVC_E2E_AUTH_ENTRY runs the suite against another one (a build in dist/, say). */
export const SVC_AUTH_ENTRY = process.env.SVC_E2E_AUTH_ENTRY ?? 'authz/main.ts';

export interface SvcAuthOptions {
  readonly scopesDir: string;
  readonly port: number;
  readonly metricsPort: number;
  readonly extraArgs?: readonly string[];
  /** Plaintexts to blank out of any output quoted in an error. */
  readonly secrets?: readonly string[];
}

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('<redacted token>');
  return out;
}

function httpStatus(port: number, path: string): Promise<number> {
  return new Promise((resolvePromise) => {
    const req = get({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      res.resume();
      resolvePromise(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolvePromise(0));
  });
}

/**
 * svc-auth as a child process (`node --import tsx authz/main.ts --scopes-dir ...`), started from the
 * sources like `npm start` does. Its output is kept (and offered to the caller with known secrets
 * redacted) so a failing start explains itself.
 */
export class SvcAuth {
  private child: ChildProcess | undefined;
  private out = '';
  private exitInfo: string | undefined;

  constructor(readonly options: SvcAuthOptions) {}

  get port(): number {
    return this.options.port;
  }

  /** Everything svc-auth printed so far, over all its starts. */
  get output(): string {
    return this.out;
  }

  get running(): boolean {
    return this.child !== undefined && this.exitInfo === undefined;
  }

  /** The status of one of its own endpoints (0 when it does not answer). */
  status(path: string): Promise<number> {
    return httpStatus(this.port, path);
  }

  /**
   * Starts it and waits until `/readyz` (a snapshot is loaded) answers 200, or only `/healthz` (the
   * process serves) with `waitFor: 'healthz'`.
   */
  async start(readyTimeoutMs = 60_000, waitFor: 'readyz' | 'healthz' = 'readyz'): Promise<void> {
    const { scopesDir, port, metricsPort, extraArgs = [] } = this.options;
    const args = ['--import', 'tsx', SVC_AUTH_ENTRY, '--scopes-dir', scopesDir, '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${metricsPort}`, ...extraArgs];
    this.exitInfo = undefined;
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    child.on('exit', (code, signal) => {
      if (this.child === child) this.exitInfo = `exit ${code ?? signal}`;
    });
    const deadline = Date.now() + readyTimeoutMs;
    let last = 0;
    while (Date.now() < deadline) {
      if (this.exitInfo !== undefined) throw new Error(`svc-auth exited before it was ready (${this.exitInfo}):\n${this.tail()}`);
      last = await httpStatus(port, `/${waitFor}`);
      if (last === 200) return;
      await delay(100);
    }
    throw new Error(`svc-auth not ready within ${readyTimeoutMs} ms (last /${waitFor} status ${last}):\n${this.tail()}`);
  }

  /** The last lines of its output, known tokens redacted. */
  tail(lines = 20): string {
    return redact(this.out.split('\n').slice(-lines).join('\n'), this.options.secrets ?? []);
  }

  /** Stops it: SIGTERM, then SIGKILL after 10 s; `signal: 'SIGKILL'` simulates a crash. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.child) await stopChild(this.child, signal);
  }
}
