import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Supervised } from '../../support/process.js';

/**
 * The nginx the end-to-end suite runs in front of svc-auth: the Debian package, started as a foreground
 * child with everything (config, pid, logs, temp files) inside a temporary prefix.
 */
export const NGINX_PACKAGE = 'nginx';
/**
 * nginx's stream module (a TCP load balancer that speaks the PROXY protocol): the balancer in front of Traefik in the
 * suites of the prescribed configurations (docs/access-rules.md, "Load balancers in front of the proxy").
 */
export const STREAM_MODULE_PACKAGE = 'libnginx-mod-stream';
export const STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';
export const NGINX_INSTALL_COMMAND = `apt-get update && apt-get install -y ${NGINX_PACKAGE} ${STREAM_MODULE_PACKAGE}`;

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'];

/** The nginx binary on PATH or in the usual places, if any. */
export function findNginx(): string | undefined {
  const dirs = (process.env.PATH ?? '').split(':').filter((d) => d.length > 0);
  for (const path of [...dirs.map((d) => join(d, 'nginx')), ...CANDIDATES]) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * What the suite does about nginx, decided before any test runs: use it, install it (root, package
 * missing), fail with the install command, or skip (only when nginx is missing, we are not root, CI is
 * not true and SVC_E2E_SKIP_NGINX=1 asks for it: under CI=true the suite never skips).
 */
export type NginxPlan =
  | { readonly action: 'use'; readonly binary: string }
  | { readonly action: 'install' }
  | { readonly action: 'fail'; readonly message: string }
  | { readonly action: 'skip'; readonly message: string };

export function nginxPlan(): NginxPlan {
  const binary = findNginx();
  if (binary && existsSync(STREAM_MODULE)) return { action: 'use', binary };
  if (isRoot()) return { action: 'install' };
  const message = `nginx is not installed and this user cannot install it: run \`sudo sh -c '${NGINX_INSTALL_COMMAND}'\` (or as root: ${NGINX_INSTALL_COMMAND})`;
  if (process.env.CI !== 'true' && process.env.SVC_E2E_SKIP_NGINX === '1') return { action: 'skip', message };
  return { action: 'fail', message };
}

/** Installs the Debian package (root only); returns the binary. Takes a minute or two on a cold apt cache. */
export function installNginx(): string {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const steps: [string, string[]][] = [
    ['apt-get', ['update']],
    ['apt-get', ['install', '-y', '--no-install-recommends', NGINX_PACKAGE, STREAM_MODULE_PACKAGE]],
  ];
  for (const [cmd, args] of steps) {
    const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 540_000 });
    if (r.status !== 0) {
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-15).join('\n');
      throw new Error(`installing nginx failed at \`${cmd} ${args.join(' ')}\` (exit ${r.status ?? r.signal}); install it by hand: ${NGINX_INSTALL_COMMAND}\n${out}`);
    }
  }
  const binary = findNginx();
  if (!binary) throw new Error(`${NGINX_PACKAGE} installed but no nginx binary found; install it by hand: ${NGINX_INSTALL_COMMAND}`);
  return binary;
}

/** Resolves the plan to a binary that has the auth_request module, or throws with what to do. */
export function ensureNginx(plan: NginxPlan): string {
  if (plan.action === 'fail' || plan.action === 'skip') throw new Error(plan.message);
  const binary = plan.action === 'use' ? plan.binary : installNginx();
  const v = spawnSync(binary, ['-V'], { encoding: 'utf8' });
  const build = `${v.stdout ?? ''}${v.stderr ?? ''}`;
  if (!build.includes('--with-http_auth_request_module')) {
    throw new Error(`${binary} was built without the auth_request module; install Debian's: ${NGINX_INSTALL_COMMAND}`);
  }
  return binary;
}

/** A running nginx (master in the foreground, `daemon off`), its prefix holding config, pid and logs. */
export class Nginx {
  private constructor(
    readonly binary: string,
    readonly prefix: string,
    private readonly proc: Supervised,
  ) {}

  get errorLogPath(): string {
    return join(this.prefix, 'logs', 'error.log');
  }

  get accessLogPath(): string {
    return join(this.prefix, 'logs', 'access.log');
  }

  /** Writes the config into the prefix, checks it with `nginx -t`, starts nginx and waits for its ports. */
  static async start(binary: string, prefix: string, conf: string, ports: readonly number[]): Promise<Nginx> {
    const confPath = join(prefix, 'nginx.conf');
    writeFileSync(confPath, conf);
    const errorLog = join(prefix, 'logs', 'error.log');
    const base = ['-p', `${prefix}/`, '-c', confPath, '-e', errorLog];
    const check = spawnSync(binary, [...base, '-t'], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx -t rejected the generated config:\n${check.stderr}`);
    // SIGTERM if we exit first: a SIGKILLed master leaves its workers serving as orphans.
    const proc = Supervised.spawn('nginx', binary, [...base, '-g', 'daemon off;'], { signalOnExit: 'SIGTERM' });
    const nginx = new Nginx(binary, prefix, proc);
    try {
      await proc.waitForPorts(ports, 15_000);
    } catch (e) {
      await nginx.stop();
      throw new Error(`nginx did not start: ${(e as Error).message}\n${proc.output}\n${nginx.tail()}`, { cause: e });
    }
    return nginx;
  }

  /** The last lines of the error log, for failure messages. */
  tail(lines = 30): string {
    if (!existsSync(this.errorLogPath)) return '';
    return readFileSync(this.errorLogPath, 'utf8').split('\n').slice(-lines).join('\n');
  }

  /** Fast shutdown (SIGTERM to the master, which stops its workers); SIGKILL if it lingers. */
  async stop(): Promise<void> {
    await this.proc.stop();
  }
}
