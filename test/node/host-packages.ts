// The Debian packages the image and node suites run on, and what a suite does when some are missing: install them
// (root), fail with the command (CI=true, or not root), or skip — only outside CI, not root, and asked for with
// SVC_NODE_SKIP=1. The same rule as the nginx suite (../e2e/support/nginx.ts): under CI=true nothing skips.
import { spawnSync } from 'node:child_process';

/** podman builds and runs the image; mmdebstrap assembles its Debian bases (no image registry is reachable). */
export const IMAGE_PACKAGES = ['podman', 'mmdebstrap'] as const;
/** The node: containerd (CRI, `ctr`), runc (crun refuses the hybrid cgroup v1 host), the CNI bridge, kube-proxy's tools. */
export const NODE_PACKAGES = [...IMAGE_PACKAGES, 'containerd', 'runc', 'containernetworking-plugins', 'iptables', 'conntrack'] as const;

export type HostPlan =
  | { readonly action: 'use' }
  | { readonly action: 'install'; readonly missing: readonly string[] }
  | { readonly action: 'fail' | 'skip'; readonly message: string };

function installed(pkg: string): boolean {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() === 'install ok installed';
}

const installCommand = (missing: readonly string[]) => `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;

export function hostPlan(packages: readonly string[]): HostPlan {
  const missing = packages.filter((p) => !installed(p));
  if (missing.length === 0) return { action: 'use' };
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root) return { action: 'install', missing };
  const message = `the node and image suites need root and these Debian packages: run \`sudo sh -c '${installCommand(missing)}'\``;
  if (process.env.CI !== 'true' && process.env.SVC_NODE_SKIP === '1') return { action: 'skip', message };
  return { action: 'fail', message };
}

/** Carries the plan out: installs what is missing, or throws what to do. */
export function ensureHostPackages(plan: HostPlan): void {
  if (plan.action === 'use') return;
  if (plan.action !== 'install') throw new Error(plan.message);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', ...plan.missing]]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) {
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-15).join('\n');
      throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status ?? r.signal}); install by hand: ${installCommand(plan.missing)}\n${out}`);
    }
  }
}
