// Test binaries (etcd, kube-apiserver, helm): found the way envtest finds them, else built from the Go modules in
// test/controlplane/go/ into a version-keyed cache. Shared by the jest global setup and scripts/cluster.ts.
//
// Lookup order, per binary:
//   1. TEST_ASSET_ETCD / TEST_ASSET_KUBE_APISERVER / TEST_ASSET_HELM / TEST_ASSET_KUBELET ... (a path to the binary)
//   2. KUBEBUILDER_ASSETS (a directory holding `etcd`, `kube-apiserver` and optionally `helm`)
//   3. the tool cache (../support/cache.ts): <cache root>/<name>-<version>-<hash>/<name>
//   4. `go build` into that cache (GOTOOLCHAIN=local, CGO_ENABLED=0, -trimpath), atomically and under a lock.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheEntryDir, cacheRoot, fillCacheEntry, isExecutable } from '../support/cache.js';

export interface Assets {
  etcd: string;
  kubeApiserver: string;
  helm?: string;
}

export interface EnsureAssetsOptions {
  /** Also provide helm (built only when asked: the chart tests need it, the control plane does not). */
  helm?: boolean;
}

/** Raised when binaries are neither given nor buildable (no Go): callers decide whether that skips or fails. */
export class AssetsUnavailableError extends Error {
  override name = 'AssetsUnavailableError';
}

type Component = 'etcd' | 'kube-apiserver' | 'helm' | NodeComponent;

/** What the node harness (test/node) runs besides the control plane: same k8s.io/kubernetes version, own module. */
export type NodeComponent = 'kubelet' | 'kube-scheduler' | 'kube-controller-manager' | 'kube-proxy';
export const nodeComponents: readonly NodeComponent[] = ['kube-scheduler', 'kube-controller-manager', 'kube-proxy', 'kubelet'];

interface Recipe {
  /** Directory under test/controlplane/go holding go.mod and go.sum. */
  moduleDir: string;
  /** The module whose required version names the build. */
  versionOf: string;
  /** What `go build` builds, from inside moduleDir. */
  target: string;
  ldflags: (version: string, goMod: string) => string[];
  envVar: string;
}

const here = dirname(fileURLToPath(import.meta.url));
export const goModulesRoot = join(here, 'go');

// kube-apiserver needs its version stamped: unstamped (v0.0.0-master) recent apiservers reject their own
// emulation version. These are the variables hack/lib/version.sh sets.
export function kubeVersionFlags(version: string): string[] {
  const m = /^v(\d+)\.(\d+)\./.exec(version);
  if (!m) throw new Error(`unexpected Kubernetes version ${version}`);
  const flags: string[] = [];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(`-X ${pkg}.gitVersion=${version}`, `-X ${pkg}.gitMajor=${m[1]}`, `-X ${pkg}.gitMinor=${m[2]}`,
      `-X ${pkg}.gitTreeState=clean`, `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`);
  }
  return flags;
}

// What helm's Makefile stamps: its version, and the Kubernetes version of the client-go it links
// (the default .Capabilities.KubeVersion for `helm template` and `helm lint`).
function helmVersionFlags(version: string, goMod: string): string[] {
  const flags = [`-X helm.sh/helm/v3/internal/version.version=${version}`, '-X helm.sh/helm/v3/internal/version.gitTreeState=clean'];
  const m = /^v0\.(\d+)\./.exec(requiredVersion(goMod, 'k8s.io/client-go'));
  if (m) {
    for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil']) {
      flags.push(`-X ${pkg}.k8sVersionMajor=1`, `-X ${pkg}.k8sVersionMinor=${m[1]}`);
    }
  }
  return flags;
}

const recipes: Record<Component, Recipe> = {
  'kube-apiserver': {
    moduleDir: 'kube-apiserver', versionOf: 'k8s.io/kubernetes', target: 'k8s.io/kubernetes/cmd/kube-apiserver',
    ldflags: kubeVersionFlags, envVar: 'TEST_ASSET_KUBE_APISERVER',
  },
  etcd: {
    moduleDir: 'etcd', versionOf: 'go.etcd.io/etcd/server/v3', target: '.',
    ldflags: () => [], envVar: 'TEST_ASSET_ETCD',
  },
  ...Object.fromEntries(nodeComponents.map((c) => [c, {
    moduleDir: 'node', versionOf: 'k8s.io/kubernetes', target: `k8s.io/kubernetes/cmd/${c}`,
    ldflags: kubeVersionFlags, envVar: `TEST_ASSET_${c.toUpperCase().replace(/-/g, '_')}`,
  } satisfies Recipe])) as unknown as Record<NodeComponent, Recipe>,
  helm: {
    moduleDir: 'helm', versionOf: 'helm.sh/helm/v3', target: 'helm.sh/helm/v3/cmd/helm',
    ldflags: helmVersionFlags,
    envVar: 'TEST_ASSET_HELM',
  },
};

// Measured on a 2-core machine with empty Go module and build caches, each built alone: etcd 101 s, kube-apiserver
// 254 s, helm 180 s. Built one after another they share packages: all three took 337 s.
// The node components, after kube-apiserver (shared packages): all four together 4.3 min.
const coldMinutes: Record<Component, number> = {
  etcd: 2, 'kube-apiserver': 5, helm: 3, kubelet: 3, 'kube-scheduler': 2, 'kube-controller-manager': 2, 'kube-proxy': 1,
};

function log(message: string): void {
  process.stderr.write(`[assets] ${message}\n`);
}

/** The version of `module` that go.mod requires (a replace with a version wins, as it does for go). */
export function requiredVersion(goMod: string, module: string): string {
  const esc = module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const replaced = new RegExp(`^\\s*(?:replace\\s+)?${esc}(?:\\s+v\\S+)?\\s+=>\\s+\\S+\\s+(v\\S+)`, 'm').exec(goMod);
  if (replaced?.[1]) return replaced[1];
  const required = new RegExp(`^\\s*(?:require\\s+)?${esc}\\s+(v\\S+)`, 'm').exec(goMod);
  if (!required?.[1]) throw new Error(`go.mod does not require ${module}`);
  return required[1];
}

/** Where the cached build of a component lives: keyed by version and by the exact module files. */
export function cachedBuildDir(component: Component): { dir: string; version: string; goMod: string } {
  const recipe = recipes[component];
  const modDir = join(goModulesRoot, recipe.moduleDir);
  const goMod = readFileSync(join(modDir, 'go.mod'), 'utf8');
  const version = requiredVersion(goMod, recipe.versionOf);
  // go.mod + go.sum (and any Go source of the wrapper module) decide the binary; so do the link flags.
  const files = readdirSync(modDir).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')).sort();
  const key = [...files.flatMap((file) => [`${file}\0`, readFileSync(join(modDir, file)), '\0']), recipe.ldflags(version, goMod).join(' ')];
  return { dir: cacheEntryDir(component, version, key), version, goMod };
}

function given(component: Component): string | undefined {
  const fromVar = process.env[recipes[component].envVar];
  if (fromVar) {
    if (!isExecutable(fromVar)) throw new Error(`${recipes[component].envVar}=${fromVar} is not an executable file`);
    return resolve(fromVar);
  }
  const dir = process.env.KUBEBUILDER_ASSETS;
  if (dir) {
    const p = join(dir, component);
    if (isExecutable(p)) return resolve(p);
    if (component === 'etcd' || component === 'kube-apiserver') throw new Error(`KUBEBUILDER_ASSETS=${dir} has no executable ${component}`);
  }
  return undefined;
}

/** The installed Go's version ("1.26.8"), or undefined when there is no usable `go`. */
export function goVersion(): string | undefined {
  const r = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } });
  if (r.status !== 0) return undefined;
  return r.stdout.trim().replace(/^go/, '');
}

function versionAtLeast(have: string, need: string): boolean {
  const a = have.split(/[.\-a-z]/).map(Number);
  const b = need.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (Number.isNaN(x)) return true;
    if (x !== y) return x > y;
  }
  return true;
}

function runGo(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('go', args, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolvePromise();
      else reject(new Error(`go ${args.slice(0, 2).join(' ')} ... failed (${signal ?? `exit ${code}`}) in ${cwd}`));
    });
  });
}

/**
 * `go build` into cache entry `dir` (atomically, under its lock, see fillCacheEntry), with a line when it starts, one
 * a minute while it runs and a BUILD-INFO file beside the binary.
 */
export async function goBuildIntoCache(dir: string, name: string, version: string, go: string, coldMinutes: number, target: string, ldflags: string,
  cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const binary = join(dir, name);
  await fillCacheEntry(dir, `${name} ${version}`, () => isExecutable(binary), async (tmp) => {
    const started = Date.now();
    const seconds = () => Math.round((Date.now() - started) / 1000);
    log(`building ${name} ${version} with go${go} into ${dir} (a cold build, module download + compile, took ~${coldMinutes} min on 2 cores)`);
    const heartbeat = setInterval(() => log(`... still building ${name} (${seconds()}s)`), 60_000);
    heartbeat.unref();
    try {
      await runGo(['build', '-trimpath', '-ldflags', ldflags, '-o', join(tmp, name), target], cwd, env);
    } finally {
      clearInterval(heartbeat);
    }
    writeFileSync(join(tmp, 'BUILD-INFO'), `${name} ${version}\ngo${go}\nbuilt ${new Date().toISOString()} in ${seconds()}s\n`);
    log(`built ${name} ${version} in ${seconds()}s`);
  });
  return binary;
}

async function build(component: Component): Promise<string> {
  const recipe = recipes[component];
  const { dir, version, goMod } = cachedBuildDir(component);
  const binary = join(dir, component);
  if (isExecutable(binary)) return binary;

  const modDir = join(goModulesRoot, recipe.moduleDir);
  const need = /^go\s+(\S+)/m.exec(goMod)?.[1] ?? '0';
  const have = goVersion();
  if (!have) {
    throw new AssetsUnavailableError(`no ${component} binary (the test control plane needs etcd and kube-apiserver): set KUBEBUILDER_ASSETS (a directory with etcd and kube-apiserver) or `
      + `${recipe.envVar}, or install Go >= ${need} so it can be built from ${modDir} (needs network access to the Go module proxy).`);
  }
  if (!versionAtLeast(have, need)) {
    throw new AssetsUnavailableError(`building ${component} ${version} needs Go >= ${need}; found go${have} (GOTOOLCHAIN=local). `
      + `Install a newer Go or provide the binary via KUBEBUILDER_ASSETS / ${recipe.envVar}.`);
  }

  const ldflags = ['-s', '-w', ...recipe.ldflags(version, goMod)].join(' ');
  return goBuildIntoCache(dir, component, version, have, coldMinutes[component], recipe.target, ldflags, modDir, goEnv());
}

async function provide(component: Component): Promise<string> {
  const found = given(component);
  if (found) return found;
  return build(component);
}

/** Finds or builds etcd and kube-apiserver (and helm when asked); progress goes to stderr. */
export async function ensureAssets(options: EnsureAssetsOptions = {}): Promise<Assets> {
  // etcd first: it is the quicker build, so a broken toolchain shows up early.
  const etcd = await provide('etcd');
  const kubeApiserver = await provide('kube-apiserver');
  const assets: Assets = { etcd, kubeApiserver };
  if (options.helm) assets.helm = await provide('helm');
  return assets;
}

/** Finds or builds kubelet, kube-scheduler, kube-controller-manager and kube-proxy (one at a time: 2 cores). */
export async function ensureNodeAssets(): Promise<Record<NodeComponent, string>> {
  const out: Partial<Record<NodeComponent, string>> = {};
  for (const c of nodeComponents) out[c] = await provide(c);
  return out as Record<NodeComponent, string>;
}

/** Version strings of what ensureAssets provides, as pinned in the go.mod files. */
export function pinnedVersions(): Record<'etcd' | 'kube-apiserver' | 'helm', string> {
  return {
    etcd: cachedBuildDir('etcd').version,
    'kube-apiserver': cachedBuildDir('kube-apiserver').version,
    helm: cachedBuildDir('helm').version,
  };
}

// `tsx test/controlplane/assets.ts [--helm]` builds (or finds) the binaries and prints their paths.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureAssets({ helm: process.argv.includes('--helm') }).then(async (a) => (process.argv.includes('--node') ? { ...a, ...await ensureNodeAssets() } : a)).then((a) => {
    process.stdout.write(`${JSON.stringify(a, null, 2)}\n`);
  }, (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}

// --- Proxies built from their own Go modules (the e2e proxy suites) -----------------------------------
// Built inside the downloaded module (`go build ./cmd/<name>` there, as their Makefiles do): their go.mod files
// have replace directives, which a wrapper module importing them would ignore. The module's h1 sum is pinned, so
// a different download never builds.
export interface PinnedModuleBinary {
  /** The binary's name, the cache directory's prefix and the log's word for it. */
  name: string;
  module: string;
  version: string;
  /** The module zip's h1 hash, as `go mod download -json` reports it. */
  sum: string;
  /** What `go build` builds, from inside the module. */
  target: string;
  ldflags: string;
  envVar: string;
  /** The go directive of the module's go.mod, for the message when there is no Go at all. */
  goNeeded: string;
  /** Measured cold (empty module and build caches, 2 cores), for the log line. */
  coldMinutes: number;
}

export function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=readonly -buildvcs=false', GOWORK: 'off' };
}

/** The module cache's copy of module@version (downloaded when missing), refused unless its h1 sum is `sum`. */
function downloadedModuleDir(module: string, version: string, sum: string): string {
  const dl = spawnSync('go', ['mod', 'download', '-json', `${module}@${version}`], { encoding: 'utf8', env: goEnv(), cwd: cacheRoot() });
  const info = dl.status === 0 ? (JSON.parse(dl.stdout) as { Dir?: string; Sum?: string }) : {};
  if (!info.Dir || info.Sum !== sum) {
    throw new Error(`go mod download ${module}@${version} failed or its sum ${info.Sum ?? '(none)'} is not the pinned ${sum}:\n${dl.stderr}`);
  }
  return info.Dir;
}

export function pinnedBuildDir(p: PinnedModuleBinary): string {
  return cacheEntryDir(p.name, p.version, [`${p.module}@${p.version} ${p.sum}`]);
}

export async function ensurePinnedModuleBinary(p: PinnedModuleBinary): Promise<string> {
  const fromVar = process.env[p.envVar];
  if (fromVar) {
    if (!isExecutable(fromVar)) throw new Error(`${p.envVar}=${fromVar} is not an executable file`);
    return resolve(fromVar);
  }
  const dir = pinnedBuildDir(p);
  const binary = join(dir, p.name);
  if (isExecutable(binary)) return binary;
  const have = goVersion();
  if (!have) throw new AssetsUnavailableError(`no ${p.name} binary: install Go >= ${p.goNeeded} to build ${p.module}@${p.version}, or set ${p.envVar}`);
  // The module is downloaded only when a build is due: the cache dir it runs in must exist.
  mkdirSync(cacheRoot(), { recursive: true });
  return goBuildIntoCache(dir, p.name, p.version, have, p.coldMinutes, p.target, `-s -w ${p.ldflags}`, downloadedModuleDir(p.module, p.version, p.sum), goEnv());
}

// v3.7 needs module versions the proxy refuses; v3.6.x builds.
export const TRAEFIK = { module: 'github.com/traefik/traefik/v3', version: 'v3.6.12', sum: 'h1:6pe4s7aaDTQs+AsF7KP3sM/xnq7zOVvibRQe5tw9eFo=' } as const;

const traefikRecipe: PinnedModuleBinary = {
  ...TRAEFIK, name: 'traefik', target: './cmd/traefik', ldflags: `-X github.com/traefik/traefik/v3/pkg/version.Version=${TRAEFIK.version}`,
  envVar: 'TEST_ASSET_TRAEFIK', goNeeded: '1.25', coldMinutes: 10,
};

/** Where the Traefik build is cached (keyed by version and the pinned module sum). */
export function traefikBuildDir(): string {
  return pinnedBuildDir(traefikRecipe);
}

/** TEST_ASSET_TRAEFIK, else the cached build, else `go build` of the pinned module (about 10 min cold on 2 cores). */
export function ensureTraefik(): Promise<string> {
  return ensurePinnedModuleBinary(traefikRecipe);
}

// The newest release (August 2026); its go directive is 1.26.7. The version is stamped where its Makefile stamps it:
// unstamped, `envoy-gateway version` prints an empty version.
export const ENVOY_GATEWAY = { module: 'github.com/envoyproxy/gateway', version: 'v1.9.1', sum: 'h1:vAVp6/AlBXJ1aOhp1mxL7fNEzVEfjADUguUhm2wzxQY=' } as const;

const envoyGatewayRecipe: PinnedModuleBinary = {
  ...ENVOY_GATEWAY, name: 'envoy-gateway', target: './cmd/envoy-gateway',
  ldflags: `-X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=${ENVOY_GATEWAY.version}`,
  // 752 s cold, measured while two other Go builds (kube-apiserver, Traefik) shared the 2 cores.
  envVar: 'TEST_ASSET_ENVOY_GATEWAY', goNeeded: '1.26.7', coldMinutes: 13,
};

/** Where the Envoy Gateway build is cached (keyed by version and the pinned module sum). */
export function envoyGatewayBuildDir(): string {
  return pinnedBuildDir(envoyGatewayRecipe);
}

/** The module cache's copy of the pinned Envoy Gateway module (its CRDs and charts), downloaded when missing. */
export function envoyGatewayModuleDir(): string {
  mkdirSync(cacheRoot(), { recursive: true });
  return downloadedModuleDir(ENVOY_GATEWAY.module, ENVOY_GATEWAY.version, ENVOY_GATEWAY.sum);
}

/** TEST_ASSET_ENVOY_GATEWAY, else the cached build, else `go build` of the pinned module. */
export function ensureEnvoyGateway(): Promise<string> {
  return ensurePinnedModuleBinary(envoyGatewayRecipe);
}

// oauth2-proxy, the peer bench:auth measures svc-auth's browser sessions against (issue 29). Its main package is the
// module's root; the version is stamped where its Makefile stamps it.
export const OAUTH2_PROXY = { module: 'github.com/oauth2-proxy/oauth2-proxy/v7', version: 'v7.15.6', sum: 'h1:4xZOFvyGysSUxdrEVyLjo+NduqGHbGV9bLE8XD49IJM=' } as const;

const oauth2ProxyRecipe: PinnedModuleBinary = {
  ...OAUTH2_PROXY, name: 'oauth2-proxy', target: '.',
  ldflags: `-X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=${OAUTH2_PROXY.version}`,
  // 136 s with empty module and build caches (module download + compile), while the 2 cores ran a load average of ~7.
  envVar: 'TEST_ASSET_OAUTH2_PROXY', goNeeded: '1.26.0', coldMinutes: 3,
};

/** Where the oauth2-proxy build is cached (keyed by version and the pinned module sum). */
export function oauth2ProxyBuildDir(): string {
  return pinnedBuildDir(oauth2ProxyRecipe);
}

/** TEST_ASSET_OAUTH2_PROXY, else the cached build, else `go build` of the pinned module. */
export function ensureOauth2Proxy(): Promise<string> {
  return ensurePinnedModuleBinary(oauth2ProxyRecipe);
}
