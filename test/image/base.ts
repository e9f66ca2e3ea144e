// Base images assembled from Debian's packages, because no registry of container images is reachable here.
//
// The package needs Node >= 20.19. Debian 12 (bookworm, this host's release) ships nodejs 18.20; Debian 13
// (trixie), served by the same mirror, ships nodejs 20.19.2. So the bases are mmdebstrap'd trixie root
// filesystems, imported with `podman import`:
//
//   localhost/node-base:<key>    nodejs + ca-certificates: what the Dockerfile's runtime stage runs on (NODE_IMAGE)
//   localhost/node-build:<key>   the same + npm: what its build stages run `npm ci` and tsc with (BUILD_IMAGE)
//   localhost/nginx-base:<key>   nginx: the reverse proxy pod of the node suite
//
// The tag is a hash of the recipe (suite, variant, packages, image config), so a changed recipe builds a new image
// and an unchanged one is reused (warm runs cost nothing). Debian's package versions within a suite move with
// security updates; the key does not follow them, which is what a CI cache keyed on a base-image tag does too.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { imageExists, podmanOk, which } from './podman.js';

export interface BaseRecipe {
  /** Repository part of the image name, under localhost/. */
  readonly name: string;
  readonly suite: string;
  readonly packages: readonly string[];
  /** `podman import --change` instructions. */
  readonly changes: readonly string[];
}

export const DEBIAN_SUITE = process.env.SVC_DEBIAN_SUITE ?? 'trixie';
/** The mirror mmdebstrap fetches from; the host's apt uses the same one. */
export const DEBIAN_MIRROR = process.env.SVC_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';

export const nodeBase: BaseRecipe = {
  name: 'node-base', suite: DEBIAN_SUITE, packages: ['nodejs', 'ca-certificates'],
  changes: ['CMD ["node"]', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
};
export const nodeBuild: BaseRecipe = {
  name: 'node-build', suite: DEBIAN_SUITE, packages: ['nodejs', 'npm', 'ca-certificates'],
  changes: nodeBase.changes,
};
export const nginxBase: BaseRecipe = {
  name: 'nginx-base', suite: DEBIAN_SUITE, packages: ['nginx-light'],
  changes: ['CMD ["nginx", "-g", "daemon off;"]', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
};

// mmdebstrap's "essential" variant: Essential: yes packages (dash, coreutils, ...) and what is included, no apt.
const VARIANT = 'essential';

export function baseImageRef(recipe: BaseRecipe): string {
  const key = createHash('sha256').update(JSON.stringify({ v: 1, variant: VARIANT, ...recipe })).digest('hex').slice(0, 12);
  return `localhost/${recipe.name}:${recipe.suite}-${key}`;
}

function log(m: string): void {
  process.stderr.write(`[image] ${m}\n`);
}

/** mmdebstrap's tarball piped straight into `podman import`: no rootfs left on disk. */
function debootstrapInto(recipe: BaseRecipe, ref: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const strap = spawn('mmdebstrap', [
      `--variant=${VARIANT}`, '--mode=root', '--format=tar', `--include=${recipe.packages.join(',')}`,
      // Docs, man pages and locales are dead weight in an image (what the official slim images drop too).
      '--dpkgopt=path-exclude=/usr/share/man/*', '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright', '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--aptopt=Acquire::Retries "3"',
      recipe.suite, '-', DEBIAN_MIRROR,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const changes = recipe.changes.flatMap((c) => ['--change', c]);
    const imp = spawn('podman', ['import', ...changes, '-', ref], { stdio: ['pipe', 'pipe', 'pipe'] });
    strap.stdout.pipe(imp.stdin);
    let strapErr = '';
    let impErr = '';
    strap.stderr.on('data', (d: Buffer) => { strapErr = (strapErr + d.toString()).slice(-4000); });
    imp.stderr.on('data', (d: Buffer) => { impErr = (impErr + d.toString()).slice(-4000); });
    let strapCode: number | null | undefined;
    strap.on('error', reject);
    imp.on('error', reject);
    strap.on('exit', (code) => { strapCode = code; });
    imp.on('exit', (code) => {
      const finish = () => {
        if (strapCode !== 0) reject(new Error(`mmdebstrap ${recipe.suite} (${recipe.packages.join(', ')}) failed (exit ${strapCode}): ${strapErr.trim()}`));
        else if (code !== 0) reject(new Error(`podman import ${ref} failed (exit ${code}): ${impErr.trim()}`));
        else resolvePromise();
      };
      if (strapCode === undefined) strap.on('exit', finish);
      else finish();
    });
  });
}

/** The base image of `recipe`, built when missing. Needs root, mmdebstrap and podman. */
export async function ensureBaseImage(recipe: BaseRecipe): Promise<string> {
  const ref = baseImageRef(recipe);
  if (imageExists(ref)) return ref;
  for (const tool of ['mmdebstrap', 'podman']) {
    if (!which(tool)) throw new Error(`${tool} not found: apt-get install mmdebstrap podman (see test/node/README.md)`);
  }
  const started = Date.now();
  log(`assembling ${ref} from Debian ${recipe.suite}: ${recipe.packages.join(', ')}`);
  await debootstrapInto(recipe, ref);
  log(`${ref} built in ${Math.round((Date.now() - started) / 1000)}s`);
  return ref;
}

export function imageSize(ref: string): number {
  return Number(podmanOk(['image', 'inspect', '--format', '{{.Size}}', ref]).trim());
}
