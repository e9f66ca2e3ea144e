// `npm run image:build`: the repository's Dockerfile, built by podman (buildah inside) as
// localhost/svc-access-control:dev, on the Debian-assembled bases of ./base.ts. The Dockerfile is the one users
// build; only its NODE_IMAGE / BUILD_IMAGE build arguments differ from a plain `docker build .`.
//
// The build's `npm ci` reaches the npm registry the way the host does: the host network (`--network host`), the
// host's proxy variables as build arguments (docker's predefined proxy args need no ARG in the Dockerfile), and the
// host's CA bundle (NODE_EXTRA_CA_CERTS or SSL_CERT_FILE, where a TLS-inspecting egress proxy's CA is added) mounted
// read-only over the build image's bundle for the RUN steps only: build-time volumes never reach the image.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBaseImage, imageSize, nodeBase, nodeBuild } from './base.js';
import { podman, ulimitFlags } from './podman.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const IMAGE = process.env.SVC_IMAGE ?? 'localhost/svc-access-control:dev';

const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

function log(m: string): void {
  process.stderr.write(`[image] ${m}\n`);
}

export interface BuiltImage {
  ref: string;
  id: string;
  bytes: number;
  nodeBase: string;
  buildBase: string;
  seconds: number;
}

/** Builds the image (layers cached by podman, so an unchanged tree rebuilds in seconds). */
export async function buildImage(ref = IMAGE): Promise<BuiltImage> {
  const started = Date.now();
  const runtimeBase = await ensureBaseImage(nodeBase);
  const buildBase = await ensureBaseImage(nodeBuild);
  const proxyArgs = PROXY_VARS.filter((v) => process.env[v]).flatMap((v) => ['--build-arg', `${v}=${process.env[v]}`]);
  const hostCa = [process.env.NODE_EXTRA_CA_CERTS, process.env.SSL_CERT_FILE].find((f) => f && existsSync(f));
  const caArgs = hostCa ? ['--volume', `${hostCa}:/etc/ssl/certs/ca-certificates.crt:ro`] : [];
  log(`podman build ${ref} (NODE_IMAGE=${runtimeBase}, BUILD_IMAGE=${buildBase})`);
  const r = podman([
    'build', '--network', 'host', ...ulimitFlags, '--layers',
    '--build-arg', `NODE_IMAGE=${runtimeBase}`, '--build-arg', `BUILD_IMAGE=${buildBase}`, ...proxyArgs, ...caArgs,
    '-f', join(repoRoot, 'Dockerfile'), '-t', ref, repoRoot,
  ], { stdio: ['ignore', 'inherit', 'pipe'] });
  if (r.status !== 0) throw new Error(`podman build failed (exit ${r.status}): ${r.stderr.trim().slice(-3000)}`);
  const id = podman(['image', 'inspect', '--format', '{{.Id}}', ref]).stdout.trim();
  const bytes = imageSize(ref);
  const seconds = Math.round((Date.now() - started) / 1000);
  log(`${ref} ${id.slice(0, 12)}: ${(bytes / 1e6).toFixed(1)} MB, ${seconds}s`);
  return { ref, id, bytes, nodeBase: runtimeBase, buildBase, seconds };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildImage().then((b) => {
    process.stdout.write(`${JSON.stringify(b, null, 2)}\n`);
  }, (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
