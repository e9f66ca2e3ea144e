// svc-gitops-check (test/gitops/go): the GitOps tools' own health code as one binary, for
// test/integration/gitops.test.ts. Found as TEST_ASSET_SVC_GITOPS_CHECK, else in the tool cache
// (../support/cache.ts) under svc-gitops-check-<fluxcd/pkg/ssa version>-<hash of go.mod, go.sum and the sources>,
// else built there with `go build` (as the control plane's binaries are: GOTOOLCHAIN=local, CGO_ENABLED=0,
// -trimpath, atomically and under a lock). `tsx test/gitops/tool.ts` builds (or finds) it and prints its path.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetsUnavailableError, goBuildIntoCache, goEnv, goVersion, requiredVersion } from '../controlplane/assets.js';
import { cacheEntryDir, cacheRoot, isExecutable } from '../support/cache.js';

const NAME = 'svc-gitops-check';
const ENV_VAR = 'TEST_ASSET_SVC_GITOPS_CHECK';
export const GITOPS_MODULE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'go');
const LDFLAGS = '-s -w';
// Measured with an empty Go build cache (the module cache filled by `go mod tidy` beforehand) on 2 cores while other
// suites kept the load average near 11: 364 s. With the build cache warm from the other Go tools it is shorter.
const COLD_MINUTES = 6;

/** Where the build is cached: keyed by the ssa version and the exact module files and sources. */
export function gitopsCheckBuildDir(): { dir: string; version: string } {
  const goMod = readFileSync(join(GITOPS_MODULE_DIR, 'go.mod'), 'utf8');
  const version = requiredVersion(goMod, 'github.com/fluxcd/pkg/ssa');
  const files = readdirSync(GITOPS_MODULE_DIR).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')).sort();
  const key = [...files.flatMap((f) => [`${f}\0`, readFileSync(join(GITOPS_MODULE_DIR, f)), '\0']), LDFLAGS];
  return { dir: cacheEntryDir(NAME, version, key), version };
}

let pending: Promise<string> | undefined;

/** TEST_ASSET_SVC_GITOPS_CHECK, else the cached build, else `go build` into the cache (minutes when cold). */
export function ensureGitopsCheck(): Promise<string> {
  pending ??= provide();
  return pending;
}

async function provide(): Promise<string> {
  const given = process.env[ENV_VAR];
  if (given) {
    if (!isExecutable(given)) throw new Error(`${ENV_VAR}=${given} is not an executable file`);
    return resolve(given);
  }
  const { dir, version } = gitopsCheckBuildDir();
  const binary = join(dir, NAME);
  if (isExecutable(binary)) return binary;
  const have = goVersion();
  const need = /^go\s+(\S+)/m.exec(readFileSync(join(GITOPS_MODULE_DIR, 'go.mod'), 'utf8'))?.[1] ?? '0';
  if (!have) throw new AssetsUnavailableError(`no ${NAME}: install Go >= ${need} to build ${GITOPS_MODULE_DIR} (needs the Go module proxy), or set ${ENV_VAR}`);
  mkdirSync(cacheRoot(), { recursive: true });
  return goBuildIntoCache(dir, NAME, `ssa-${version}`, have, COLD_MINUTES, '.', LDFLAGS, GITOPS_MODULE_DIR, goEnv());
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureGitopsCheck().then((p) => process.stdout.write(`${p}\n`), (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
