import { spawn, type ChildProcess } from 'node:child_process';
import { stopChild, waitForPort } from './net.js';

/** A proxy or backend run as a foreground child: output kept for failure messages, ports awaited. */
export class Proc {
  private out = '';
  private exited = false;

  private constructor(readonly name: string, private readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    child.on('exit', () => (this.exited = true));
  }

  static async start(name: string, cmd: string, args: readonly string[], ports: readonly number[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): Promise<Proc> {
    const p = new Proc(name, spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    try {
      for (const port of ports) await waitForPort(port, timeoutMs, () => p.exited);
    } catch (e) {
      await p.stop();
      throw new Error(`${name} did not start: ${(e as Error).message}\n${p.tail()}`, { cause: e });
    }
    return p;
  }

  get running(): boolean {
    return !this.exited;
  }

  tail(lines = 30): string {
    return this.out.split('\n').slice(-lines).join('\n');
  }

  async stop(): Promise<void> {
    if (!this.exited) await stopChild(this.child);
  }
}
