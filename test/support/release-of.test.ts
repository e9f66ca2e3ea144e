import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { previousRelease, releaseCommit, releases, repoRoot } from './release-of.js';
import { tempDirsPerTest } from './temp-dirs.js';
import { taggedCommit } from '../../scripts/release.js';

const fresh = tempDirsPerTest('svc-release-of-');

/** A repository of three commits (0.1.0, 0.2.0, then work after it), its CHANGELOG.md as the branch carries it. */
function history(): { dir: string; git: (...args: string[]) => string; commits: string[] } {
  const dir = fresh();
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q');
  git('config', 'user.name', 'release-of test');
  git('config', 'user.email', 'release-of@test.invalid');
  git('config', 'tag.gpgSign', 'false');
  git('config', 'commit.gpgSign', 'false');
  const commits = ['0.1.0', '0.2.0', 'after 0.2.0'].map((what) => {
    git('commit', '-q', '--allow-empty', '-m', what);
    return git('rev-parse', 'HEAD');
  });
  return { dir, git, commits };
}

function changelog(dir: string, entries: [version: string, commit: string | undefined][]): void {
  const sections = entries.map(([v, c]) => `## [${v}] - 2026-11-28\n\nRelease commit: ${c ?? 'pending (the tag)'}\n\n### Added\n\n- x\n`);
  writeFileSync(join(dir, 'CHANGELOG.md'), `# Changelog\n\n## [Unreleased]\n\n${sections.join('\n')}`);
}

describe('release-of: a release is found by its tag, else by the commit CHANGELOG.md records', () => {
  it('without tags, by the recorded commit; a pending one is not found; the previous release is the newest that is not HEAD', () => {
    const { dir, commits } = history();
    changelog(dir, [['0.2.0', undefined], ['0.1.0', commits[0]]]);
    expect(releaseCommit('0.1.0', dir)).toBe(commits[0]);
    expect(releaseCommit('v0.1.0', dir)).toBe(commits[0]);
    expect(releaseCommit('0.2.0', dir)).toBeUndefined();
    expect(releaseCommit('0.3.0', dir)).toBeUndefined();
    expect(releases(dir).map((r) => [r.version, r.via])).toEqual([['0.2.0', undefined], ['0.1.0', 'changelog']]);
    expect(previousRelease(dir)).toMatchObject({ release: { version: '0.1.0', commit: commits[0] }, headOnly: false });
  });

  it('a tag wins over the record; a short recorded hash is resolved in full', () => {
    const { dir, git, commits } = history();
    changelog(dir, [['0.2.0', commits[1]!.slice(0, 12)], ['0.1.0', commits[0]]]);
    git('tag', '-a', 'v0.2.0', commits[1]!, '-m', '0.2.0');
    expect(releases(dir).map((r) => [r.version, r.commit, r.via])).toEqual([['0.2.0', commits[1], 'tag'], ['0.1.0', commits[0], 'changelog']]);
    expect(previousRelease(dir)?.release.version).toBe('0.2.0');
    git('tag', 'v0.1.0', commits[2]!); // a lightweight tag, somewhere else: the tag is what the clone says
    expect(releaseCommit('0.1.0', dir)).toBe(commits[2]);
  });

  it('where HEAD is the only release, it is the one to compare with; a commit the clone lacks names nothing', () => {
    const { dir, commits } = history();
    changelog(dir, [['0.1.0', commits[2]]]);
    expect(previousRelease(dir)).toMatchObject({ release: { version: '0.1.0', commit: commits[2] }, headOnly: true });
    changelog(dir, [['0.1.0', 'f'.repeat(40)]]);
    expect(releases(dir)[0]).toMatchObject({ version: '0.1.0', commit: undefined, via: undefined, recordedCommit: 'f'.repeat(40) });
    expect(previousRelease(dir)).toBeUndefined();
  });

  it('in this repository, a release\'s tag and its recorded commit agree wherever the clone has both', () => {
    const listed = releases(repoRoot);
    expect(listed.length).toBeGreaterThan(0);
    for (const r of listed) {
      const tagged = taggedCommit(repoRoot, r.version);
      if (!tagged || !r.recordedCommit) continue;
      expect(`${r.version}: ${tagged}`).toBe(`${r.version}: ${execFileSync('git', ['rev-parse', `${r.recordedCommit}^{commit}`], { cwd: repoRoot, encoding: 'utf8' }).trim()}`);
    }
  });
});
