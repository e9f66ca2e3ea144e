// Debian packages the suites install when a tool is missing (Chromium, unzip): as root only, `apt-get update` then
// `apt-get install --no-install-recommends`, waiting for another apt (a helper or a parallel suite) to let go of
// dpkg's lock instead of failing on it. A failure names the command to run by hand.
import { spawnSync } from 'node:child_process';

export const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** The command line a person runs to install `packages`. */
export function aptInstallCommand(packages: readonly string[]): string {
  return `apt-get update && apt-get install -y ${packages.join(' ')}`;
}

/** Installs `packages` (root only; throws otherwise, or when apt fails, with the command to run by hand). */
export function aptInstall(packages: readonly string[]): void {
  const command = aptInstallCommand(packages);
  if (!isRoot()) throw new Error(`${packages.join(', ')} missing and this user cannot install them: run \`sudo sh -c '${command}'\``);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=600'];
  const steps: string[][] = [[...lock, 'update'], [...lock, 'install', '-y', '--no-install-recommends', ...packages]];
  for (const args of steps) {
    process.stderr.write(`[apt] apt-get ${args.join(' ')}\n`);
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', timeout: 900_000 });
    if (r.status !== 0) {
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}`.split('\n').slice(-15).join('\n');
      throw new Error(`installing ${packages.join(', ')} failed at \`apt-get ${args.join(' ')}\` (exit ${r.status ?? r.signal}); install by hand: ${command}\n${out}`);
    }
  }
}
