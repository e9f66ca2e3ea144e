// Completion beyond bash and zsh (program.test.ts): the fish script run by a real fish, and `kubectl svc <TAB>`
// through kubectl's plugin completion protocol, by running kubectl_complete-svc as kubectl runs it. All of them
// offer the same candidates for the same words: one command tree, one walk.
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, svc } from '../test/cli/harness.js';
import { runCommand } from '../test/support/process.js';
import { completeWords, DIRECTIVE } from './completion.js';
import { buildProgram } from './program.js';
import { processIo } from './io.js';

/** Words typed (the last one being completed) → what every shell and kubectl offer. */
const CASES: [string[], string[]][] = [
  [[''], ['auth', 'completion']],
  [['auth', 're'], ['remove-network', 'remove-subject', 'remove-token', 'remove-tokens']],
  [['--dir', 'x', 'auth', 'sh'], ['show']],
  [['auth', 'show', '-o', ''], ['json', 'table', 'text', 'wcmp2', 'yaml']],
  [['auth', 'add-token', '--output', 'y'], ['yaml']],
  [['auth', 'remove-token', '--i'], ['--id']],
  [['auth', 'add-token', '--ex'], ['--expires-at', '--expires-in']],
  [['auth', 'show', '--kube'], ['--kubeconfig']],
  [['completion', ''], ['bash', 'fish', 'zsh']],
  [['auth', 'has'], ['has-access-topic']],
  [['auth', 'add-token', '--topic-hierarchy', ''], []],
  [['auth', 'add-n'], ['add-network']],
  [['auth', 'add-network', '--c'], ['--cidr', '--context']],
  [['auth', 'add-network', '--r'], ['--replace', '--request-timeout']],
  [['auth', 'remove-network', '--c'], ['--cidr', '--context']],
  [['auth', 'has-access-topic', '--fr'], ['--from']],
  // public offers --path only: the scope kinds it refuses are not offered.
  [['auth', 'public', '--p'], ['--path']],
  [['auth', 'public', '--'], ['--allow-unserved', '--api-prefix', '--context', '--dir', '--help', '--kubeconfig', '--namespace', '--off', '--open-paths-by-default', '--output', '--path', '--request-timeout', '--version', '--waf-prefix', '--wait', '--wait-timeout']],
];

const plain = (lines: readonly string[]) => lines.map((l) => l.split('\t')[0]!).sort();

describe('completeWords (the walk kubectl_complete-svc uses)', () => {
  const program = buildProgram(processIo('kubectl svc'), () => undefined);
  it.each(CASES)('%j → %j', (words, expected) => {
    expect(plain(completeWords(program, words).candidates)).toEqual(expected);
  });

  it('says where the shell completes files or directories, and where nothing', () => {
    expect(completeWords(program, ['--kubeconfig', '']).directive).toBe(DIRECTIVE.files);
    expect(completeWords(program, ['--dir', '']).directive).toBe(DIRECTIVE.directories);
    expect(completeWords(program, ['auth', 'import', '']).directive).toBe(DIRECTIVE.files);
    expect(completeWords(program, ['auth', 'add-network', '--from-file', '']).directive).toBe(DIRECTIVE.files);
    expect(completeWords(program, ['auth', 'add-network', '--cidr', '']).directive).toBe(DIRECTIVE.noFiles);
    expect(completeWords(program, ['auth', '']).directive).toBe(DIRECTIVE.noFiles);
    expect(completeWords(program, ['--context', ''])).toMatchObject({ contexts: true, directive: DIRECTIVE.noFiles });
  });
});

describe('kubectl_complete-svc (kubectl svc <TAB>)', () => {
  it('is an executable of the package, beside kubectl-svc', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(pkg.bin['kubectl_complete-svc']).toBe('dist/cli/kubectl-complete.js');
    expect(pkg.bin['kubectl-svc']).toBe('dist/cli/main.js');
    expect(readFileSync(join(repoRoot, 'cli', 'kubectl-complete.ts'), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  /** As kubectl runs it: the words after `kubectl svc`, the last one the word being completed. */
  const complete = async (words: string[]) => {
    const r = await runCommand(process.execPath, ['--import', 'tsx', 'cli/kubectl-complete.ts', ...words], { cwd: repoRoot, env: { ...process.env, NODE_OPTIONS: '' } });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    return { candidates: lines.slice(0, -1), directive: lines.at(-1) };
  };

  it('prints the candidates, one a line with its description, then the directive', async () => {
    const first = await complete(['']);
    expect(first.directive).toBe(':4');
    expect(first.candidates).toContain('auth\tmanage the tokens of protected scopes');
    for (const [words, expected] of [CASES[1]!, CASES[3]!, CASES[11]!]) expect(plain((await complete(words)).candidates)).toEqual(expected);
    expect(await complete(['--dir', ''])).toEqual({ candidates: [], directive: ':16' });
  }, 60_000);
});

/** fish from Debian's package: installed here when missing and we are root (as the e2e suite installs nginx). */
function fishBinary(): string {
  const found = spawnSync('fish', ['--version'], { encoding: 'utf8' });
  if (found.status === 0) return 'fish';
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) throw new Error("fish is not installed: run `sudo sh -c 'apt-get update && apt-get install -y fish'`");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'fish']]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', timeout: 540_000 });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status ?? r.signal}): install fish by hand\n${r.stderr}`);
  }
  return 'fish';
}

describe('svc completion fish, run by fish', () => {
  let fish = '';
  let script = '';
  const dir = mkdtempSync(join(tmpdir(), 'svc-fish-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ready = async () => {
    fish ||= fishBinary();
    if (!script) {
      script = join(dir, 'svc.fish');
      writeFileSync(script, (await svc(['completion', 'fish'])).stdout);
    }
  };
  /** What fish offers for a command line, as it does at a TAB after it (`complete --do-complete`). */
  const offered = (line: string) => {
    const r = spawnSync(fish, ['--no-config', '-c', 'source $argv[1]; complete --do-complete=$argv[2]', script, line], { encoding: 'utf8', cwd: repoRoot });
    expect(r.stderr).toBe('');
    return r.stdout.split('\n').filter((l) => l !== '');
  };

  it('is a valid fish script', async () => {
    await ready();
    const check = spawnSync(fish, ['--no-config', '--no-execute', script], { encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  }, 600_000);

  it.each(CASES)('svc %j → %j', async (words, expected) => {
    await ready();
    expect(plain(offered(['svc', ...words].join(' ')))).toEqual(expected);
  }, 600_000);

  it('completes kubectl-svc too, and directories for --dir', async () => {
    await ready();
    const run = (line: string) => offered(line).join('\n');
    expect(plain(offered('kubectl-svc auth has'))).toEqual(['has-access-topic']);
    expect(run('svc --dir cl')).toMatch(/^cli\//);
    expect(run('svc auth add-network --from-file cli/comp')).toMatch(/^cli\/completion\.test\.ts/m);
  }, 600_000);
});
