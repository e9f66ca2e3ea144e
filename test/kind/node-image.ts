// The kind node image, built offline: no Docker, no registry, nothing pulled but Debian packages and Go modules.
//
//   1. the binaries (./binaries.ts): Kubernetes at the version the node harness builds, etcd, CoreDNS,
//      local-path-provisioner, kube-router, from their Go modules, into the tool cache;
//   2. the component images, as podman builds of one binary each (FROM scratch, or a small Debian base for the
//      ones that exec iptables/ipset or sh), named as kubeadm and kind's manifests name them (registry.k8s.io/...);
//   3. those images preloaded, unpacked on demand as kind's own node images do (`ctr images import --no-unpack`),
//      into a containerd root filled by the host's containerd (Debian 12's, the version the node runs);
//   4. the node's root filesystem, mmdebstrap'd from Debian 12 (systemd, containerd, runc, CNI plugins,
//      iptables...), with kind's node files from kind's module at the version used (entrypoint, kubelet unit,
//      containerd unit and config, /kind/version, the default storage and CNI manifests) and the preloaded
//      containerd root, `podman import`ed as localhost/kind-node:<k8s version>-<key>.
//
// The key hashes every input (binaries' cache entries, kind's version, this file), so an unchanged recipe is
// reused from podman's image store and a changed one builds anew. Builds take a lock in the tool cache.
//
//   npx tsx test/kind/node-image.ts     builds (or finds) it; prints {image, seconds, size, binaries} as JSON
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEBIAN_MIRROR, DEBIAN_SUITE, ensureBaseImage, imageSize, type BaseRecipe } from '../image/base.js';
import { imageExists, podmanOk } from '../image/podman.js';
import { ensurePauseImage } from '../node/node.js';
import { cacheRoot, withLock } from '../support/cache.js';
import { Supervised } from '../support/process.js';
import { waitUntil } from '../support/wait.js';
import { ensureKindBinaries, KIND_VERSION, pinnedVersions, type KindBinaries } from './binaries.js';

/** The node's Debian: the hosts' own release, so the node's containerd is the one that fills its store here. */
const NODE_SUITE = 'bookworm';
const NODE_PACKAGES = [
  'systemd', 'systemd-sysv', 'containerd', 'runc', 'containernetworking-plugins', 'iptables', 'nftables', 'ipset', 'iproute2',
  'conntrack', 'ethtool', 'util-linux', 'mount', 'kmod', 'libseccomp2', 'procps', 'ca-certificates', 'bash', 'curl', 'jq', 'socat',
];
/** What kubeadm v1.37 names (`kubeadm config images list`): etcd 3.7.0 is what the harness builds. */
const ETCD_TAG = '3.7.0-0';
const PAUSE_TAG = '3.10.2';
const KUBE_ROUTER_IMAGE = `localhost/kube-router:${pinnedVersions['kube-router']}`;

/** The base of the images that exec more than their own binary: kube-proxy, kube-router (iptables, ipset), the storage helper (sh). */
export const kindToolsBase: BaseRecipe = {
  name: 'kind-tools', suite: DEBIAN_SUITE, packages: ['iptables', 'nftables', 'ipset', 'conntrack', 'iproute2', 'ca-certificates'],
  changes: ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
};

function log(m: string): void {
  process.stderr.write(`[kind-node] ${m}\n`);
}

function run(cmd: string, args: readonly string[], input?: string | Buffer): string {
  const r = spawnSync(cmd, [...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, input });
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 4).join(' ')} ... failed (exit ${r.status ?? r.signal}): ${(r.stderr ?? '').trim().slice(-2000)}${r.error?.message ?? ''}`);
  return r.stdout;
}

function kindModuleDir(): string {
  const out = run('go', ['mod', 'download', '-json', `sigs.k8s.io/kind@${KIND_VERSION}`]);
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/**
 * The value of Go string constant `name` in `source`: backquoted or double-quoted literals and other constants of
 * the same file joined by `+` (how kind writes its manifests, with the image names spliced in).
 */
export function goStringConst(source: string, name: string): string {
  const start = new RegExp(`\\b${name}\\s*=\\s*`).exec(source);
  if (!start) throw new Error(`no constant ${name}`);
  let i = start.index + start[0].length;
  let out = '';
  for (;;) {
    const c = source[i];
    if (c === '`' || c === '"') {
      const end = source.indexOf(c, i + 1);
      out += source.slice(i + 1, end);
      i = end + 1;
    } else {
      const ident = /^[A-Za-z_]\w*/.exec(source.slice(i));
      if (!ident) throw new Error(`cannot read constant ${name}`);
      out += goStringConst(source, ident[0]);
      i += ident[0].length;
    }
    const more = /^\s*\+\s*/.exec(source.slice(i));
    if (!more) return out;
    i += more[0].length;
  }
}

interface ComponentImage {
  ref: string;
  binary?: string;
  /** Name inside the image (/usr/local/bin/<name>). */
  name: string;
  from: 'scratch' | 'tools';
}

function componentImages(b: KindBinaries, manifests: { storage: string }): ComponentImage[] {
  const k = b.kubeVersion;
  const image = (re: RegExp) => {
    const m = re.exec(manifests.storage);
    if (!m?.[1]) throw new Error(`kind's storage manifest names no image matching ${re}`);
    return m[1];
  };
  return [
    ...(['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const).map((c) => ({ ref: `registry.k8s.io/${c}:${k}`, binary: b[c], name: c, from: 'scratch' as const })),
    { ref: `registry.k8s.io/kube-proxy:${k}`, binary: b['kube-proxy'], name: 'kube-proxy', from: 'tools' },
    { ref: `registry.k8s.io/etcd:${ETCD_TAG}`, binary: b.etcd, name: 'etcd', from: 'scratch' },
    { ref: `registry.k8s.io/coredns/coredns:${pinnedVersions.coredns}`, binary: b.coredns, name: 'coredns', from: 'scratch' },
    { ref: image(/image: (\S*local-path-provisioner:\S+)/), binary: b['local-path-provisioner'], name: 'local-path-provisioner', from: 'tools' },
    { ref: image(/--helper-image\s+- (\S+)/), name: 'sh', from: 'tools' },
    { ref: KUBE_ROUTER_IMAGE, binary: b['kube-router'], name: 'kube-router', from: 'tools' },
    { ref: 'localhost/traefik:kind', binary: b.traefik, name: 'traefik', from: 'scratch' },
  ];
}

/** podman build of one binary onto scratch or the tools base; the entrypoint is the binary (or sh). */
function buildComponentImage(c: ComponentImage, toolsRef: string, work: string): void {
  const ctx = mkdtempSync(join(work, 'ctx-'));
  const lines = [`FROM ${c.from === 'scratch' ? 'scratch' : toolsRef}`];
  if (c.binary) {
    copyFileSync(c.binary, join(ctx, c.name));
    chmodSync(join(ctx, c.name), 0o755);
    lines.push(`COPY ${c.name} /usr/local/bin/${c.name}`, `ENTRYPOINT ["/usr/local/bin/${c.name}"]`);
  } else {
    lines.push('ENTRYPOINT ["/bin/sh"]');
  }
  lines.push('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  writeFileSync(join(ctx, 'Containerfile'), `${lines.join('\n')}\n`);
  podmanOk(['build', '--quiet', '--network', 'none', '-t', c.ref, '-f', join(ctx, 'Containerfile'), ctx]);
  rmSync(ctx, { recursive: true, force: true });
}

/** containerd's store under `root` with `archive`'s images, not unpacked (the node unpacks what it runs). */
async function preload(root: string, archive: string, tags: readonly [string, string][], work: string): Promise<void> {
  const sock = join(work, 'containerd.sock');
  const config = join(work, 'containerd-preload.toml');
  writeFileSync(config, `version = 2\nroot = "${root}"\nstate = "${join(work, 'containerd-state')}"\n`
    + `disabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "${sock}"\n[ttrpc]\n  address = "${sock}.ttrpc"\n`);
  const daemon = Supervised.spawn('containerd-preload', 'containerd', ['--config', config], { output: { file: join(work, 'containerd.log') } });
  try {
    await waitUntil(() => existsSync(sock) && spawnSync('ctr', ['--address', sock, 'version']).status === 0, { timeoutMs: 30_000, intervalMs: 200, what: 'containerd (preload) to answer' });
    const ctr = ['--address', sock, '--namespace', 'k8s.io'];
    run('ctr', [...ctr, 'images', 'import', '--all-platforms', '--no-unpack', archive]);
    for (const [src, dst] of tags) run('ctr', [...ctr, 'images', 'tag', '--force', src, dst]);
    for (const [src] of tags) run('ctr', [...ctr, 'images', 'rm', src]);
    log(`preloaded: ${run('ctr', [...ctr, 'images', 'list', '-q']).trim().split('\n').join(' ')}`);
  } finally {
    await daemon.stop();
  }
}

/** kind's node files (images/base/files of its module), adapted to Debian's containerd and to these hosts. */
function stageKindFiles(stage: string, kindDir: string, pauseRef: string): void {
  const files = join(kindDir, 'images', 'base', 'files');
  const put = (rel: string, content: string | Buffer, mode = 0o644) => {
    mkdirSync(dirname(join(stage, rel)), { recursive: true });
    writeFileSync(join(stage, rel), content);
    chmodSync(join(stage, rel), mode);
  };
  const copy = (rel: string, mode = 0o644) => put(rel, readFileSync(join(files, rel)), mode);
  for (const f of ['usr/local/bin/entrypoint', 'usr/local/bin/clean-install']) copy(f, 0o755);
  for (const f of readdirSync(join(files, 'kind/bin'))) copy(`kind/bin/${f}`, 0o755);
  for (const f of ['etc/crictl.yaml', 'etc/default/kubelet', 'etc/systemd/system/kubelet.slice', 'etc/systemd/system/kubelet.service',
    'etc/systemd/system/undo-mount-hacks.service', 'etc/systemd/system/kubelet.service.d/10-kubeadm.conf',
    'etc/systemd/system/kubelet.service.d/11-kind.conf']) copy(f);
  for (const f of readdirSync(join(files, 'etc/sysctl.d'))) copy(`etc/sysctl.d/${f}`);
  // Debian's containerd is /usr/bin/containerd. Root here lacks CAP_SYS_RESOURCE: systemd could neither raise the
  // rlimits to infinity nor lower the OOM score, and would refuse to start the unit.
  put('etc/systemd/system/containerd.service', readFileSync(join(files, 'etc/systemd/system/containerd.service'), 'utf8')
    .replace('ExecStart=/usr/local/bin/containerd', 'ExecStart=/usr/bin/containerd')
    .replace(/^(Limit(NPROC|CORE|NOFILE)=infinity|OOMScoreAdjust=-999)$/gm, '# $1 (not here: no CAP_SYS_RESOURCE)'));
  put('etc/containerd/config.toml', containerdConfig(readFileSync(join(files, 'etc/containerd/config.toml'), 'utf8'), pauseRef));
  const spec = JSON.parse(run('ctr', ['oci', 'spec'])) as { process: { rlimits?: unknown }; hooks?: { createContainer?: { path: string }[] } };
  delete spec.process.rlimits;
  spec.hooks = { ...spec.hooks, createContainer: [...(spec.hooks?.createContainer ?? []), { path: '/kind/bin/mount-product-files.sh' }] };
  put('etc/containerd/cri-base.json', JSON.stringify(spec, null, 2));
}

/** kind's containerd config, for Debian 12's containerd 1.6 on these hosts. */
export function containerdConfig(kindConfig: string, pauseRef: string): string {
  const withoutFuse = kindConfig.replace(/\[proxy_plugins\][\s\S]*?address = "\/run\/containerd-fuse-overlayfs.sock"\n/, '');
  return `${withoutFuse
    .replace(/sandbox_image = ".*"/, `sandbox_image = "${pauseRef}"`)
    // No CAP_SYS_RESOURCE: runc cannot lower a process's oom_score_adj below containerd's (see test/node/README.md).
    .replace('restrict_oom_score_adj = false', 'restrict_oom_score_adj = true')}
[plugins."io.containerd.grpc.v1.cri".cni]
  # Debian's containernetworking-plugins
  bin_dir = "/usr/lib/cni"
  conf_dir = "/etc/cni/net.d"
`;
}

/** What kind's base image Dockerfile does after installing its packages, in the chroot. */
const SYSTEMD_SETUP = [
  'set -e',
  'find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete',
  'rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* /lib/systemd/system/local-fs.target.wants/*',
  'rm -f /lib/systemd/system/sockets.target.wants/*udev* /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*',
  'echo ReadKMsg=no >> /etc/systemd/journald.conf',
  'systemctl enable kubelet.service containerd.service undo-mount-hacks.service',
  'systemctl mask systemd-binfmt.service',
  'mkdir -p /etc/kubernetes/manifests /etc/cni/net.d',
  'chmod 755 /kind /kind/bin',
].join('\n');

/** mmdebstrap's tarball of the node's root filesystem with `stage` synced in, piped into `podman import`. */
function assemble(stage: string, ref: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const strap = spawn('mmdebstrap', [
      '--variant=essential', '--mode=root', '--format=tar', `--include=${NODE_PACKAGES.join(',')}`,
      '--dpkgopt=path-exclude=/usr/share/man/*', '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright', '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--aptopt=Acquire::Retries "3"',
      `--customize-hook=sync-in ${stage} /`,
      `--customize-hook=chroot "$1" sh -c '${SYSTEMD_SETUP}'`,
      NODE_SUITE, '-', DEBIAN_MIRROR,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const changes = ['ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]', 'ENV container=docker', 'STOPSIGNAL SIGRTMIN+3'];
    const imp = spawn('podman', ['import', ...changes.flatMap((c) => ['--change', c]), '-', ref], { stdio: ['pipe', 'pipe', 'pipe'] });
    strap.stdout.pipe(imp.stdin);
    let err = '';
    const keep = (d: Buffer) => { err = (err + d.toString()).slice(-4000); };
    strap.stderr.on('data', keep);
    imp.stderr.on('data', keep);
    const codes: (number | null)[] = [];
    const done = (code: number | null) => {
      codes.push(code);
      if (codes.length < 2) return;
      if (codes.every((c) => c === 0)) resolvePromise();
      else reject(new Error(`mmdebstrap | podman import ${ref} failed (${codes.join(', ')}): ${err.trim()}`));
    };
    strap.on('error', reject);
    imp.on('error', reject);
    strap.on('exit', done);
    imp.on('exit', done);
  });
}

/** localhost/kind-node:<k8s version>-<hash of every input>. */
export function nodeImageRef(b: KindBinaries): string {
  const hash = createHash('sha256').update(readFileSync(fileURLToPath(import.meta.url)));
  hash.update(JSON.stringify({ b, KIND_VERSION, NODE_SUITE, NODE_PACKAGES, tools: kindToolsBase }));
  return `localhost/kind-node:${b.kubeVersion}-${hash.digest('hex').slice(0, 12)}`;
}

async function buildNodeImage(b: KindBinaries, ref: string, work: string): Promise<void> {
  const kindDir = kindModuleDir();
  const nodeimage = (f: string) => readFileSync(join(kindDir, 'pkg/build/nodeimage', f), 'utf8');
  const manifests = { storage: goStringConst(nodeimage('const_storage.go'), 'defaultStorageManifest'), cni: goStringConst(nodeimage('const_cni.go'), 'defaultCNIManifest') };
  const toolsRef = await ensureBaseImage(kindToolsBase);
  const images = componentImages(b, manifests);
  let t = Date.now();
  for (const c of images) buildComponentImage(c, toolsRef, work);
  const pauseLocal = ensurePauseImage(b.kubeVersion, work);
  const pauseRef = `registry.k8s.io/pause:${PAUSE_TAG}`;
  log(`component images built in ${Math.round((Date.now() - t) / 1000)}s`);
  t = Date.now();
  const archive = join(work, 'images.tar');
  podmanOk(['save', '-m', '--format', 'docker-archive', '-o', archive, ...images.map((c) => c.ref), pauseLocal]);
  const stage = join(work, 'stage');
  await preload(join(stage, 'var/lib/containerd'), archive, [[pauseLocal, pauseRef]], work);
  rmSync(archive, { force: true });
  log(`images preloaded in ${Math.round((Date.now() - t) / 1000)}s`);
  stageKindFiles(stage, kindDir, pauseRef);
  const put = (rel: string, content: string) => {
    mkdirSync(dirname(join(stage, rel)), { recursive: true });
    writeFileSync(join(stage, rel), content);
  };
  put('kind/version', `${b.kubeVersion}\n`);
  put('kind/manifests/default-storage.yaml', manifests.storage);
  put('kind/manifests/default-cni.yaml', manifests.cni);
  mkdirSync(join(stage, 'usr/bin'), { recursive: true });
  for (const c of ['kubeadm', 'kubelet', 'kubectl'] as const) {
    copyFileSync(b[c], join(stage, 'usr/bin', c));
    chmodSync(join(stage, 'usr/bin', c), 0o755);
  }
  t = Date.now();
  await assemble(stage, ref);
  log(`root filesystem assembled and imported in ${Math.round((Date.now() - t) / 1000)}s`);
}

export interface NodeImage {
  image: string;
  /** Seconds this call spent building it (0: found in podman's store). */
  seconds: number;
  bytes: number;
  binaries: KindBinaries;
  /** The NetworkPolicy controller's image, preloaded (manifests/kube-router.yaml). */
  kubeRouterImage: string;
}

/** The node image for the binaries the tool cache holds (built, with them, when missing). */
export async function ensureKindNodeImage(): Promise<NodeImage> {
  const started = Date.now();
  const binaries = await ensureKindBinaries();
  const ref = nodeImageRef(binaries);
  mkdirSync(cacheRoot(), { recursive: true });
  await withLock(join(cacheRoot(), 'kind-node.lock'), 'the kind node image', async () => {
    if (imageExists(ref)) return;
    const work = mkdtempSync(join(tmpdir(), 'kind-node-'));
    log(`building ${ref}`);
    try {
      await buildNodeImage(binaries, ref, work);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  return { image: ref, seconds, bytes: imageSize(ref), binaries, kubeRouterImage: KUBE_ROUTER_IMAGE };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureKindNodeImage().then((r) => {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  }, (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exit(1);
  });
}
