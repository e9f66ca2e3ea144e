// Helpers for the svc CLI's tests: the program run in-process with a fixed clock, fixed randomness and
// captured output (so formats can be pinned by snapshots), a real process when exit codes and
// concurrency matter, and a byte-for-byte picture of a manifest directory.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Io } from '../../cli/io.js';
import { run } from '../../cli/program.js';
import { runCommand } from '../support/process.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** 2026-11-21T10:00:00Z: every createdAt in snapshots. */
export const FIXED_NOW = Date.parse('2026-11-21T10:00:00Z');

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  now?: number;
  env?: Record<string, string | undefined>;
  stdin?: string;
  /** Seed of the deterministic "random" bytes: the same seed, the same generated tokens. */
  seed?: string;
  programName?: string;
}

/** Deterministic bytes: sha256(seed, counter); distinct per call, stable per seed. */
export function fakeRandom(seed = 'svc'): (n: number) => Uint8Array {
  let counter = 0;
  return (n) => {
    const out = Buffer.alloc(n);
    for (let off = 0; off < n; off += 32) createHash('sha256').update(`${seed}:${counter++}`).digest().copy(out, off);
    return out;
  };
}

export function fakeIo(options: RunOptions = {}): Io & { stdout: string; stderr: string } {
  const random = fakeRandom(options.seed);
  const io = {
    stdout: '',
    stderr: '',
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
    env: options.env ?? {},
    now: () => options.now ?? FIXED_NOW,
    random,
    readStdin: async () => options.stdin ?? '',
    programName: options.programName ?? 'svc',
  };
  return io;
}

/** The program in-process; a fresh fake I/O per call unless one is given. */
export async function svc(args: readonly string[], options: RunOptions | (Io & { stdout: string; stderr: string }) = {}): Promise<Result> {
  const io = 'out' in options ? options : fakeIo(options);
  const before = { out: io.stdout.length, err: io.stderr.length };
  const code = await run(args, io);
  return { code, stdout: io.stdout.slice(before.out), stderr: io.stderr.slice(before.err) };
}

/** The program as a real process (`node --import tsx cli/main.ts`), from the repository root. */
export function svcProcess(
  args: readonly string[],
  options: { env?: Record<string, string | undefined>; stdin?: string; timeoutMs?: number; script?: string; built?: string } = {},
): Promise<Result> {
  // `built`: a transpiled copy (buildCli()), which starts without tsx's per-module cost (client-node is ~1000 modules).
  const argv = options.built ? [join(options.built, 'cli', 'main.js')] : ['--import', 'tsx', options.script ?? 'cli/main.ts'];
  return runCommand(process.execPath, [...argv, ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: '', SVC_SCOPES_DIR: '', ...options.env },
    // Always a pipe (empty by default), as a shell pipeline would give it.
    input: options.stdin ?? '',
    timeoutMs: options.timeoutMs ?? 120_000,
  }).then((r) => ({ code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr }));
}

export function tempDir(prefix = 'svc-cli-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Every file of a directory (dotfiles too) with its bytes: compare before and after a failing command. */
export function dirState(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) out[name] = readFileSync(join(dir, name), 'utf8');
  return out;
}

/** Every file's text joined: a place to look for leaked tokens. */
export function allText(dir: string): string {
  return Object.entries(dirState(dir))
    .map(([name, text]) => `${name}\n${text}`)
    .join('\n');
}

/** Replaces volatile strings (temp paths, namespaces) so snapshots are stable. */
export function scrub(text: string, replacements: Record<string, string>): string {
  let out = text;
  for (const [from, to] of Object.entries(replacements)) out = out.split(from).join(to);
  return out;
}

/**
 * Transpiles cli/, core/, k8s/ and lib/ (TypeScript to ESM JavaScript, no type check) into a fresh directory under
 * .cache/, inside the repository so node_modules resolve; returns that directory (remove it with removeDir).
 * For tests that start many processes: the same source, without tsx's loader on every import.
 */
export async function buildCli(): Promise<string> {
  const ts = (await import('typescript')).default;
  const base = join(repoRoot, '.cache');
  mkdirSync(base, { recursive: true });
  const out = mkdtempSync(join(base, 'cli-build-'));
  const walk = (dir: string): string[] =>
    readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? walk(join(dir, d.name)) : d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [join(dir, d.name)] : [],
    );
  // lib/ (shared helpers such as parseDuration) is new and imported by cli/; skipped where a checkout lacks it.
  for (const file of ['cli', 'core', 'k8s', 'lib'].filter((d) => existsSync(join(repoRoot, d))).flatMap(walk)) {
    const js = ts.transpileModule(readFileSync(join(repoRoot, file), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      fileName: file,
    }).outputText;
    const target = join(out, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, js);
  }
  return out;
}
