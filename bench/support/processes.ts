// What the benches share about the processes they measure: pinning to a core, CPU time spent, and the node
// options svc-auth is deployed with.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Whether taskset is here: then the servers run on CPU 0 and the load generator (the bench itself) on CPU 1. */
export const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Moves this process (the load generator) to `cpu`, where taskset is here. */
export function pinSelf(cpu = 1): void {
  if (hasTaskset) execFileSync('taskset', ['-cp', String(cpu), String(process.pid)], { stdio: 'ignore' });
}

/** The command and arguments that run `cmd args` on `cpu` (unpinned where taskset is missing). */
export function pinned(cpu: number, cmd: string, args: readonly string[]): [string, string[]] {
  return hasTaskset ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, [...args]];
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, all threads) a process has used so far, in milliseconds; NaN where /proc is missing. */
export function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** The node options of svc-auth's bin in the tree at `root` (its `#!/usr/bin/env -S node ...` line), so it is benched as deployed. */
export function svcAuthNodeFlags(root: string): string[] {
  const first = readFileSync(join(root, 'authz/main.ts'), 'utf8').split('\n', 1)[0]!;
  return (/^#!\/usr\/bin\/env -S node (.*)$/.exec(first)?.[1] ?? '').split(/\s+/).filter(Boolean);
}
