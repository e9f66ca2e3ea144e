// Deleting the kind cluster `npm run demo:cluster -- --kind` keeps (scripts/kind-kept.ts): the record test/kind/run.sh
// writes, read back into the commands its own cleanup runs, run with stand-ins for kind and podman that log what they
// were asked, and forgotten once done; a failed step keeps the record. `cluster.ts down` and `demo-cluster.ts --kind
// --down` call deleteKept; a real kind cluster is deleted by test/kind/run.sh in the kind project.
import { afterAll, describe, expect, it } from '@jest/globals';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { deleteKept, deleteSteps, readKept, type KeptKind } from './kind-kept.js';

const work = mkdtempSync(join(tmpdir(), 'svc-kind-kept-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A stand-in command that logs its arguments and the environment kind reads, then exits with `code`. */
function standIn(dir: string, name: string, log: string, code = 0): string {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\necho "${name} $* provider=$KIND_EXPERIMENTAL_PROVIDER conf=$CONTAINERS_CONF" >> ${log}\nexit ${code}\n`);
  chmodSync(file, 0o755);
  return file;
}

function keep(dir: string, record: Partial<KeptKind>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'kept.json'), JSON.stringify(record));
  writeFileSync(join(dir, 'kubeconfig'), 'apiVersion: v1\n');
}

describe('the kept kind cluster', () => {
  it('none kept: nothing to do, said so', () => {
    const said: string[] = [];
    expect(readKept(join(work, 'none'))).toBeUndefined();
    expect(deleteKept((m) => said.push(m), join(work, 'none'))).toBe(true);
    expect(said).toEqual(['no kind cluster kept (npm run demo:cluster -- --kind keeps one)']);
  });

  it('an unreadable record is refused, naming the file', () => {
    keep(join(work, 'bad'), { provider: 'docker' });
    expect(() => readKept(join(work, 'bad'))).toThrow(/kept.json: not a record of a kept kind cluster/);
  });

  it('docker: kind delete cluster, as run.sh does', () => {
    expect(deleteSteps({ provider: 'docker', cluster: 'svc-kind', kind: '/usr/bin/kind', kubeconfig: 'k' }, { PATH: '/bin' }))
      .toEqual([{ cmd: '/usr/bin/kind', args: ['delete', 'cluster', '--name', 'svc-kind'], env: { PATH: '/bin' } }]);
  });

  it('podman: kind with the podman provider, its containers.conf and shim first on PATH, then the network if it exists; the record forgotten', () => {
    const dir = join(work, 'podman');
    const bin = join(work, 'podman-bin');
    mkdirSync(bin, { recursive: true });
    const log = join(work, 'podman.log');
    const kind = standIn(bin, 'kind', log);
    standIn(bin, 'podman', log);
    keep(dir, { provider: 'podman', cluster: 'svc-kind', kind, network: 'svc-kind-net', containersConf: join(dir, 'containers.conf'), path: bin, kubeconfig: join(dir, 'kubeconfig') });
    const said: string[] = [];
    expect(deleteKept((m) => said.push(m), dir, { PATH: process.env.PATH })).toBe(true);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      `kind delete cluster --name svc-kind provider=podman conf=${join(dir, 'containers.conf')}`,
      `podman network exists svc-kind-net provider=podman conf=${join(dir, 'containers.conf')}`,
      `podman network rm -f svc-kind-net provider=podman conf=${join(dir, 'containers.conf')}`,
    ]);
    expect(said).toEqual(['deleting the kind cluster svc-kind (podman)', 'kind cluster svc-kind deleted']);
    expect(existsSync(join(dir, 'kept.json'))).toBe(false);
    expect(existsSync(join(dir, 'kubeconfig'))).toBe(false);
  });

  it('a failed deletion says what failed and keeps the record for another try', () => {
    const dir = join(work, 'failing');
    const bin = join(work, 'failing-bin');
    mkdirSync(bin, { recursive: true });
    const kind = standIn(bin, 'kind', join(work, 'failing.log'), 3);
    keep(dir, { provider: 'docker', cluster: 'svc-kind', kind, kubeconfig: join(dir, 'kubeconfig') });
    const said: string[] = [];
    expect(deleteKept((m) => said.push(m), dir)).toBe(false);
    expect(said[1]).toMatch(/kind delete cluster --name svc-kind failed \(exit 3\)/);
    expect(readKept(dir)?.cluster).toBe('svc-kind');
  });

  it('test/kind/run.sh writes the record this reads (its cleanup, run on a kept cluster\'s values)', () => {
    // The recording lines of run.sh's cleanup, cut out and run with a kept cluster's variables set.
    const script = readFileSync(fileURLToPath(new URL('../test/kind/run.sh', import.meta.url)), 'utf8');
    const start = script.indexOf('    KEPT="$ROOT/.cache/kind"');
    const end = script.indexOf('    printf \'\\nCluster "%s" kept');
    expect(start).toBeGreaterThan(0);
    const root = join(work, 'root');
    const snippet = `set -e\nROOT=${root}\nHERE=${root}/test/kind\nKUBECONFIG=${work}/kc\nCONTAINERS_CONF=${work}/cc\nPROVIDER=podman\nCLUSTER=svc-kind\nKIND=/cache/kind\nKIND_EXPERIMENTAL_PODMAN_NETWORK=svc-kind-net\n${script.slice(start, end)}`;
    writeFileSync(join(work, 'kc'), 'apiVersion: v1\n');
    writeFileSync(join(work, 'cc'), '[engine]\n');
    const r = spawnSync('bash', ['-c', snippet], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(readKept(join(root, '.cache', 'kind'))).toEqual({
      provider: 'podman', cluster: 'svc-kind', kind: '/cache/kind', network: 'svc-kind-net',
      containersConf: join(root, '.cache', 'kind', 'containers.conf'), path: join(root, 'test', 'kind', 'bin'), kubeconfig: join(root, '.cache', 'kind', 'kubeconfig'),
    });
  });
});
