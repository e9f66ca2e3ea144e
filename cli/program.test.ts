import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, repoRoot, svc, tempDir } from '../test/cli/harness.js';

describe('svc program', () => {
  it.each([
    [[]],
    [['--help']],
    [['auth', '--help']],
    [['auth', 'add-token', '--help']],
    [['auth', 'show', '--help']],
    [['auth', 'has-access-topic', '--help']],
    [['auth', 'remove-tokens', '--help']],
    [['auth', 'remove-token', '--help']],
    [['auth', 'public', '--help']],
    [['auth', 'add-network', '--help']],
    [['auth', 'remove-network', '--help']],
    [['completion', '--help']],
    [['help', 'auth']],
  ])('help: %j', async (args) => {
    const r = await svc(args);
    // Help asked for goes to stdout, exit 0; help shown because a command is missing goes to stderr, exit 2.
    if (args.length === 0) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/error: a command is needed/);
    } else {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
    }
    expect(r.stdout + r.stderr).toMatchSnapshot();
  });

  it('public --help offers only what public accepts; remove-tokens says what happens to path scopes', async () => {
    const pub = (await svc(['auth', 'public', '--help'])).stdout;
    expect(pub).toContain('--path <path>');
    expect(pub).not.toMatch(/--topic-hierarchy|--metadata-id/);
    const bare = await svc(['auth', 'public']);
    expect(bare).toMatchObject({ code: 2, stderr: 'error: only a path scope can be public: give --path P (see svc auth public --help)\n' });
    for (const args of [['auth', 'remove-tokens', '--help'], ['auth', 'remove-token', '--help']]) {
      const help = (await svc(args)).stdout.replace(/\s+/g, ' ');
      expect(help).not.toMatch(/the scope opens|opens the scope/);
      expect(help).toMatch(/a path scope stays closed/);
    }
    expect((await svc(['auth', 'remove-tokens', '--help'])).stdout.replace(/\s+/g, ' ')).toContain('Closed, 0 tokens (closed by default: ...)');
  });

  it('svc auth without a command: help on stderr, exit 2', async () => {
    const r = await svc(['auth']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Usage: svc auth \[options\] \[command\]/);
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect(await svc(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('as kubectl-svc, help and hints say "kubectl svc"', async () => {
    const help = await svc(['auth', 'add-token', '--help'], { programName: 'kubectl svc' });
    expect(help.stdout).toMatch(/^Usage: kubectl svc auth add-token \[options\] \[token\]/);
    expect(help.stdout).toContain('kubectl svc auth add-token --path processes/svc');
    const bad = await svc(['auth', 'show', '--nope'], { programName: 'kubectl svc' });
    expect(bad.stderr).toBe("error: unknown option '--nope' (see kubectl svc auth show --help)\n");
  });

  it('a token typed where a command or option belongs is not echoed', async () => {
    const token = 'svc_0123456789abcdefghijABCDEFGHIJ0123456789abcXYZ123';
    for (const args of [['auth', token], [token], ['auth', 'show', `-${token}`]]) {
      const r = await svc(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: unknown (command|option) \(not shown, in case it is a token/);
      expect(r.stderr).not.toContain(token.slice(4));
    }
  });

  it("the global options reach a command wherever they stand, and each command gets its own options as declared", async () => {
    const dir = tempDir();
    try {
      const before = await svc(['--dir', dir, 'auth', 'close', '--metadata-id', 'urn:wmo:md:x:y', '-o', 'json']);
      const after = await svc(['auth', 'close', '--topic-hierarchy', 'a.b', '--dir', dir, '-o', 'json', '--open-paths-by-default']);
      expect([before.code, after.code]).toEqual([0, 0]);
      expect(JSON.parse(before.stdout)).toMatchObject({ scope: { kind: 'dataset', value: 'urn:wmo:md:x:y' }, state: 'Closed' });
      expect(JSON.parse(after.stdout)).toMatchObject({ scope: { kind: 'topic', value: 'a.b' }, state: 'Closed' });
      const shown = await svc(['auth', 'show', '-o', 'json', '--dir', dir]);
      expect((JSON.parse(shown.stdout) as { scopes: { value: string; closedBy: string }[] }).scopes.filter((s) => s.closedBy === 'flag').map((s) => s.value).sort()).toEqual(['a.b', 'urn:wmo:md:x:y']);
      expect(await svc(['--dir', dir, 'auth', 'show', '-o', 'csv'])).toMatchObject({ code: 2 });
    } finally {
      removeDir(dir);
    }
  });

  it('every usage error is one line that says where to look', async () => {
    for (const args of [['auth', 'nope'], ['nope'], ['auth', 'show', '-o'], ['completion'], ['completion', 'tcsh']]) {
      const r = await svc(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: [^\n]+ \(see svc[a-z -]* --help\)\n$/);
    }
  });
});

describe('svc completion', () => {
  it.each(['bash', 'zsh', 'fish'])('%s script, generated from the command tree', async (shell) => {
    const r = await svc(['completion', shell]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatchSnapshot();
  });

  it('the bash script is valid bash', async () => {
    const script = (await svc(['completion', 'bash'])).stdout;
    const check = spawnSync('bash', ['-n'], { input: script });
    expect(check.status).toBe(0);
  });

  /** What bash offers for the words typed so far (the last one is being completed). */
  const complete = async (words: string[]): Promise<string[]> => {
    const script = (await svc(['completion', 'bash'])).stdout;
    const quoted = words.map((w) => `'${w}'`).join(' ');
    const r = spawnSync('bash', ['-c', `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; __svc_complete; printf '%s\\n' "\${COMPREPLY[@]}"`], {
      encoding: 'utf8',
      cwd: repoRoot,
    });
    expect(r.stderr).toBe('');
    return r.stdout.split('\n').filter((l) => l.length > 0);
  };

  it.each([
    [['svc', ''], ['auth', 'completion']],
    [['svc', 'auth', 're'], ['remove-subject', 'remove-network', 'remove-tokens', 'remove-token']],
    [['svc', 'auth', 'add-n'], ['add-network']],
    [['svc', 'auth', 'add-network', '--'], ['--topic-hierarchy', '--metadata-id', '--path', '--wait', '--wait-timeout', '--cidr', '--description', '--from-file', '--replace', '--allow-wide-network', '--output', '--help', '--version', '--kubeconfig', '--context', '--namespace', '--dir', '--request-timeout', '--allow-unserved', '--open-paths-by-default', '--waf-prefix', '--api-prefix']],
    [['svc', 'auth', 'has-access-topic', '--fr'], ['--from']],
    [['svc', '--dir', 'x', 'auth', 'sh'], ['show']],
    [['svc', 'auth', 'show', '-o', ''], ['table', 'text', 'json', 'yaml', 'wcmp2']],
    [['svc', 'auth', 'add-token', '--output', 'y'], ['yaml']],
    [['svc', 'auth', 'remove-token', '--i'], ['--id']],
    [['svc', 'auth', 'add-token', '--ex'], ['--expires-in', '--expires-at']],
    [['svc', 'auth', 'show', '--kube'], ['--kubeconfig']],
    [['svc', 'completion', ''], ['bash', 'zsh', 'fish']],
    [['kubectl-svc', 'auth', 'has'], ['has-access-topic']],
    [['svc', 'auth', 'add-token', '--topic-hierarchy', ''], []],
    [['svc', '--dir', 'cl'], ['cli']],
  ])('%j → %j', async (words, expected) => {
    expect(await complete(words)).toEqual(expected);
  });
});
