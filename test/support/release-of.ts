// Which commit a release is. Tags do not always travel with a clone (CI's checkout, a mirror); the branch does, and
// with it CHANGELOG.md, whose `Release commit:` line under each `## [X.Y.Z] - date` heading names the release's commit
// once the commit after the release has written it (scripts/release.ts). So a release is found by its tag vX.Y.Z,
// else by that line, and only when the clone holds the commit.
//
//   npx tsx test/support/release-of.ts 0.1.0       the commit of v0.1.0 (exit 1 when the clone cannot tell)
//   npx tsx test/support/release-of.ts --previous  the newest release that is not HEAD (else HEAD's own release)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHANGELOG, compareVersions, parseChangelog, taggedCommit } from '../../scripts/release.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A release as CHANGELOG.md lists it, with its commit when this clone can name it. */
export interface Release {
  readonly version: string;
  readonly date: string;
  /** The full hash of the release's commit, or undefined: no tag and no recorded commit this clone holds. */
  readonly commit: string | undefined;
  /** How it was found. */
  readonly via: 'tag' | 'changelog' | undefined;
  /** What the changelog records (undefined while pending). */
  readonly recordedCommit: string | undefined;
}

/** The full hash of `rev` when it names a commit this clone holds. */
function commitOf(root: string, rev: string): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Every release CHANGELOG.md lists, newest first, each with its commit: its tag's, else the recorded one. */
export function releases(root: string = repoRoot): Release[] {
  const log = parseChangelog(readFileSync(join(root, CHANGELOG), 'utf8'));
  return log.releases.map((r) => {
    const tagged = taggedCommit(root, r.version);
    const recorded = tagged ? undefined : r.recordedCommit && commitOf(root, r.recordedCommit);
    return { version: r.version, date: r.date, commit: tagged ?? recorded, via: tagged ? 'tag' as const : recorded ? 'changelog' as const : undefined, recordedCommit: r.recordedCommit };
  }).sort((a, b) => compareVersions(b.version, a.version));
}

/** The commit of release `version` (`X.Y.Z` or `vX.Y.Z`), or undefined when this clone cannot tell. */
export function releaseCommit(version: string, root: string = repoRoot): string | undefined {
  const v = version.replace(/^v/, '');
  return releases(root).find((r) => r.version === v)?.commit;
}

/**
 * The release a change is measured against: the newest release whose commit is not HEAD's; where HEAD is the only
 * release this clone can name, that one (`headOnly`). Undefined when the clone names no release at all.
 */
export function previousRelease(root: string = repoRoot): { release: Release & { commit: string }; headOnly: boolean } | undefined {
  const head = commitOf(root, 'HEAD');
  const named = releases(root).filter((r): r is Release & { commit: string } => r.commit !== undefined);
  const previous = named.find((r) => r.commit !== head);
  if (previous) return { release: previous, headOnly: false };
  return named[0] ? { release: named[0], headOnly: true } : undefined;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2];
  const commit = arg === '--previous' ? previousRelease()?.release.commit : arg ? releaseCommit(arg) : undefined;
  if (!arg) process.stderr.write('usage: tsx test/support/release-of.ts X.Y.Z | --previous\n');
  else if (!commit) process.stderr.write(`release-of: this clone names no commit for ${arg} (no tag, and no recorded commit it holds)\n`);
  if (commit) process.stdout.write(`${commit}\n`);
  process.exitCode = commit ? 0 : 1;
}
