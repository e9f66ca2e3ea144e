// svc on a manifest directory as real processes: exit codes and streams as a shell sees them, 50 concurrent
// add-token processes on one scope (the lock serializes them: 50 tokens), a failing command changes no byte,
// `svc --help` never loads client-node, and the kubectl plugin name.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashToken, parseManifests, scopeObjectName, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { allText, buildCli, dirState, removeDir, repoRoot, svcProcess, tempDir } from '../cli/harness.js';

const dirs: string[] = [];
const fresh = () => {
  const d = tempDir('svc-cli-it-');
  dirs.push(d);
  return d;
};
let built = '';
beforeAll(async () => {
  built = await buildCli();
  dirs.push(built);
});
afterAll(() => dirs.forEach(removeDir));

const TOKEN = 'directory-process-token-01';

describe('svc --dir, as processes', () => {
  it('50 parallel add-token processes on one scope leave 50 tokens', async () => {
    const dir = fresh();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        svcProcess(['--dir', dir, 'auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.core', '--description', `writer ${i}`, '-o', 'json'], { timeoutMs: 560_000, built }),
      ),
    );
    const failed = results.filter((r) => r.code !== 0);
    expect(failed.map((r) => r.stderr)).toEqual([]);
    const printed = results.map((r) => JSON.parse(r.stdout) as { token: string; id: string });
    const name = scopeObjectName({ kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' });
    expect(readdirSync(dir)).toEqual([`${name}.yaml`]); // no lock, no temp file left
    const docs = parseManifests(readFileSync(join(dir, `${name}.yaml`), 'utf8'));
    const stored = (docs.ok ? (docs.value[0] as ProtectedScope) : undefined)!.spec.tokens!;
    expect(stored).toHaveLength(50);
    expect(new Set(stored.map((t) => t.id))).toEqual(new Set(printed.map((p) => p.id)));
    expect(new Set(stored.map((t) => t.description)).size).toBe(50);
    const text = allText(dir);
    for (const p of printed) {
      expect(text).not.toContain(p.token);
      expect(text).toContain(hashToken(p.token));
    }
  }, 600_000);

  it('exit codes and streams: 0 with the token on stdout only, 1 denied or failed, 2 usage; failures change nothing', async () => {
    const dir = fresh();
    const add = await svcProcess(['auth', 'add-token', '--path', 'processes/svc'], { env: { SVC_SCOPES_DIR: dir } });
    expect(add.code).toBe(0);
    const token = /^Token: +(svc_\w+)$/m.exec(add.stdout)![1]!;
    expect(add.stderr).toMatch(/^Store this token now: it is shown only once\./);
    expect(add.stderr).not.toContain(token);

    const granted = await svcProcess(['--dir', dir, 'auth', 'has-access-topic', '--path', 'processes/svc-synop2bufr', '-'], { stdin: `${token}\n` });
    expect([granted.code, granted.stdout]).toEqual([0, `granted: token ${tokenIdOf(hashToken(token))} is a valid token of path:processes/svc, which governs path:processes/svc-synop2bufr\n`]);
    const denied = await svcProcess(['--dir', dir, 'auth', 'has-access-topic', '--path', 'processes/svc', TOKEN]);
    expect([denied.code, denied.stderr]).toEqual([1, '']);
    expect(denied.stdout).toMatch(/^denied: /);

    const before = dirState(dir);
    const failures: [string[], number, RegExp][] = [
      [['auth', 'add-token', '--path', 'processes/svc', '--topic-hierarchy', 'a'], 2, /give exactly one scope/],
      // `processes/nope/` names processes/nope (slashes around a path are dropped); below processes/ only a process id.
      [['auth', 'add-token', '--path', 'processes/no.pe'], 2, /--path: invalid path/],
      [['auth', 'add-token', '--path', 'processes/svc', 'short'], 2, /at least 16 characters/],
      [['auth', 'add-token', '--path', 'processes/svc', token], 1, /already a token of path:processes\/svc/],
      [['auth', 'remove-token', '--path', 'processes/svc', '--id', '0123456789ab'], 1, /no token with id 0123456789ab/],
      [['auth', 'remove-token', '--path', 'processes/svc', '--id', 'nothex'], 2, /is not a token id/],
      [['auth', 'shwo'], 2, /unknown command 'shwo' \(Did you mean show\?\) \(see svc auth --help\)/],
      [[], 2, /a command is needed/],
    ];
    for (const [args, code, pattern] of failures) {
      const r = await svcProcess(['--dir', dir, ...args]);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code, stdout: '' });
      expect(r.stderr).toMatch(pattern);
      expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^error: /);
      expect(r.stderr).not.toContain(token);
      expect(dirState(dir)).toEqual(before);
    }
    const missing = await svcProcess(['--dir', join(dir, 'nope'), 'auth', 'show']);
    expect(missing).toEqual({ code: 1, stdout: '', stderr: `error: directory ${join(dir, 'nope')} does not exist: create it (mkdir -p ${join(dir, 'nope')}) or check --dir / SVC_SCOPES_DIR\n` });
  }, 120_000);

  it('an invalid manifest: exit 1 naming the file and field, nothing written', async () => {
    const dir = fresh();
    const bad = 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nmetadata: {name: bad}\nspec:\n  path: processes/svc\n  tokens: [{id: abc, hash: "sha256:00", createdAt: now}]\n';
    writeFileSync(join(dir, 'bad.yaml'), bad);
    const before = dirState(dir);
    const r = await svcProcess(['--dir', dir, 'auth', 'add-token', '--topic-hierarchy', 'a.b', TOKEN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: ${join(dir, 'bad.yaml')}: spec.tokens[0].id: must be 12 lowercase hex characters; spec.tokens[0].hash: must be sha256:<64 lowercase hex>, or pbkdf2-sha256:<iterations>:<salt hex>:<key hex> (imported); spec.tokens[0].createdAt: must be an RFC 3339 date-time (fix the file; nothing was changed)\n`,
    );
    expect(dirState(dir)).toEqual(before);
  }, 60_000);

  it('svc --help loads neither client-node nor the command code', async () => {
    const dir = fresh();
    const log = join(dir, 'imports.log');
    const r = await svcProcess(['--help'], { env: { SVC_IMPORT_LOG: log, NODE_OPTIONS: `--import ${join(repoRoot, 'test/cli/import-spy.mjs')}` } });
    expect(r.code).toBe(0);
    const loaded = readFileSync(log, 'utf8');
    expect(loaded).toContain('/cli/program.ts');
    expect(loaded).not.toContain('@kubernetes/client-node');
    expect(loaded).not.toContain('/cli/commands/');
    expect(loaded).not.toContain('/core/');
    // ... while a Kubernetes command does load it.
    const show = await svcProcess(['--kubeconfig', join(dir, 'absent'), 'auth', 'show'], { env: { SVC_IMPORT_LOG: log, NODE_OPTIONS: `--import ${join(repoRoot, 'test/cli/import-spy.mjs')}` } });
    expect(show.code).toBe(2);
    expect(readFileSync(log, 'utf8')).toContain('@kubernetes/client-node');
  }, 60_000);

  it('invoked as kubectl-svc (kubectl plugin), it names itself "kubectl svc"', async () => {
    const dir = fresh();
    const link = join(dir, 'kubectl-svc');
    symlinkSync(join(repoRoot, 'cli', 'main.ts'), link);
    const viaLink = await svcProcess(['auth', 'show', '--bogus'], { script: link });
    expect(viaLink).toEqual({ code: 2, stdout: '', stderr: "error: unknown option '--bogus' (see kubectl svc auth show --help)\n" });
  }, 60_000);
});
