import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpStatus } from '../../support/ports.js';
import { Supervised } from '../../support/process.js';
import { waitUntil } from '../../support/wait.js';

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

/**
 * svc-auth as a child process (`node --import tsx authz/main.ts --scopes-dir ...`), started from the
 * sources like `npm start` does. Its output is kept (and offered to the caller with known secrets
 * redacted) so a failing start explains itself.
 */
export class SvcAuth {
  private proc: Supervised | undefined;
  private out = '';

  constructor(readonly options: SvcAuthOptions) {}

  get port(): number {
    return this.options.port;
  }

  /** Everything svc-auth printed so far, over all its starts. */
  get output(): string {
    return this.out;
  }

  get running(): boolean {
    return this.proc?.running ?? false;
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
    // Output is kept over all its starts (a restart's failure may be explained by the run before).
    const proc = Supervised.spawn('svc-auth', process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, NODE_OPTIONS: '' }, onOutput: (t) => (this.out += t) });
    this.proc = proc;
    let last = 0;
    try {
      await waitUntil(async () => (last = await httpStatus(port, `/${waitFor}`)) === 200,
        { what: `svc-auth /${waitFor}`, timeoutMs: readyTimeoutMs, abortIf: proc.exitReason, describe: () => `status ${last}` });
    } catch (e) {
      throw new Error(`svc-auth not ready: ${(e as Error).message}:\n${this.tail()}`, { cause: e });
    }
  }

  /** The last lines of its output, known tokens redacted. */
  tail(lines = 20): string {
    return redact(this.out.split('\n').slice(-lines).join('\n'), this.options.secrets ?? []);
  }

  /** Stops it: SIGTERM, then SIGKILL after 10 s; `signal: 'SIGKILL'` simulates a crash. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.proc?.stop(signal);
  }
}
