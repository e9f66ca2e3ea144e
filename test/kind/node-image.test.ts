// The pure parts of the node image recipe: reading kind's manifests out of its Go source, and adapting its
// containerd configuration to these hosts.
import { describe, it, expect } from '@jest/globals';
import { containerdConfig, goStringConst } from './node-image.js';

describe('goStringConst', () => {
  const source = [
    'const image = "docker.io/kindest/helper:v1"',
    'const other = `x`',
    'const manifest = `kind: A',
    'image: ` + image + `',
    'args: [` + other + `]',
    '`',
  ].join('\n');

  it('joins backquoted literals and the constants spliced between them', () => {
    expect(goStringConst(source, 'manifest')).toBe('kind: A\nimage: docker.io/kindest/helper:v1\nargs: [x]\n');
  });

  it('reads a double-quoted constant', () => {
    expect(goStringConst(source, 'image')).toBe('docker.io/kindest/helper:v1');
  });

  it('fails on a constant that is not there', () => {
    expect(() => goStringConst(source, 'missing')).toThrow('no constant missing');
  });
});

describe('containerdConfig', () => {
  const kind = [
    'version = 2',
    '[proxy_plugins]',
    '[proxy_plugins."fuse-overlayfs"]',
    '  type = "snapshot"',
    '  address = "/run/containerd-fuse-overlayfs.sock"',
    '[plugins."io.containerd.grpc.v1.cri"]',
    '  sandbox_image = "registry.k8s.io/pause:3.10"',
    '  restrict_oom_score_adj = false',
    '',
  ].join('\n');
  const out = containerdConfig(kind, 'registry.k8s.io/pause:3.10.2');

  it('names the preloaded pause image', () => {
    expect(out).toContain('sandbox_image = "registry.k8s.io/pause:3.10.2"');
  });

  it('clamps OOM scores (no CAP_SYS_RESOURCE) and drops the fuse-overlayfs snapshotter', () => {
    expect(out).toContain('restrict_oom_score_adj = true');
    expect(out).not.toContain('fuse-overlayfs');
  });

  it("points the CRI at Debian's CNI plugins", () => {
    expect(out).toContain('bin_dir = "/usr/lib/cni"');
  });
});
