// One version for everything a release ships (scripts/release.ts): every place agrees with package.json here, and
// `npm version` — the command itself, on a temporary copy of the files it edits — moves every one of them, stages
// them into its release commit and tag, and then records that commit in CHANGELOG.md.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from '../test/support/release-of.js';
import { runCommand } from '../test/support/process.js';
import { tempDirsPerTest } from '../test/support/temp-dirs.js';
import { CHANGELOG, compareVersions, cutRelease, disagreements, parseChangelog, recordReleaseCommit, versionPlaces } from './release.js';

const fresh = tempDirsPerTest('svc-release-');
const read = (root: string, file: string) => readFileSync(join(root, file), 'utf8');

describe('one version', () => {
  it('every place names package.json\'s version: the lock, --version, the chart, the image tags in the docs, the newest release', () => {
    const places = versionPlaces(repoRoot);
    expect(places.map((p) => `${p.file}: ${p.what}`)).toEqual(expect.arrayContaining([
      'package.json: version', 'package-lock.json: version', 'package-lock.json: packages[""].version',
      'lib/version.ts: VERSION (--version of svc, svc-auth, svc-operator)', 'charts/svc/Chart.yaml: version',
      'charts/svc/Chart.yaml: appVersion (the image tag by default)', 'CHANGELOG.md: the newest release',
    ]));
    expect(disagreements(repoRoot)).toEqual([]);
  });

  it('CHANGELOG.md has the keep-a-changelog shape: Unreleased first, releases newest first, each dated and naming its commit', () => {
    const text = read(repoRoot, CHANGELOG);
    const log = parseChangelog(text);
    expect(text.indexOf('## [Unreleased]')).toBeLessThan(text.indexOf('## [', text.indexOf('## [Unreleased]') + 1));
    expect(log.releases.length).toBeGreaterThan(0);
    const versions = log.releases.map((r) => r.version);
    expect([...versions].sort((a, b) => compareVersions(b, a))).toEqual(versions);
    const subsections = [...text.matchAll(/^### (.*)$/gm)].map((m) => m[1]);
    expect(subsections.filter((s) => !['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security', 'Upgrading'].includes(s!))).toEqual([]);
    for (const r of log.releases) expect(`${r.version}: ${r.body}`).toMatch(/\n### (Added|Changed|Deprecated|Removed|Fixed|Security)\n/);
  });
});

const SAMPLE = `# Changelog

Intro.

## [Unreleased]

### Fixed

- a thing

### Upgrading

- do this

## [0.1.0] - 2026-11-28

Release commit: 2dab875e92c40f9f0336ea7a338fd03f3f290cb0

### Added

- everything
`;

describe('the changelog steps', () => {
  it('a release: Unreleased becomes "## [X.Y.Z] - date" with a pending commit line, and a new empty Unreleased above it', () => {
    const cut = cutRelease(SAMPLE, '0.2.0', '2027-01-15');
    expect(cut).toBe(SAMPLE.replace('## [Unreleased]\n', '## [Unreleased]\n\n## [0.2.0] - 2027-01-15\n\nRelease commit: pending (the tag v0.2.0; the commit after the release writes its hash here)\n'));
    const log = parseChangelog(cut);
    expect(log.unreleased).toBe('');
    expect(log.releases.map((r) => [r.version, r.date, r.recordedCommit])).toEqual([
      ['0.2.0', '2027-01-15', undefined], ['0.1.0', '2026-11-28', '2dab875e92c40f9f0336ea7a338fd03f3f290cb0'],
    ]);
    expect(() => cutRelease(cut, '0.3.0', '2027-02-01')).toThrow(/Unreleased section is empty/);
    expect(() => cutRelease(SAMPLE, '0.1.0', '2027-02-01')).toThrow(/already has a section for 0\.1\.0/);
  });

  it('the commit after a release records it under its heading, and only there', () => {
    const cut = cutRelease(SAMPLE, '0.2.0', '2027-01-15');
    const recorded = recordReleaseCommit(cut, '0.2.0', 'a'.repeat(40));
    expect(parseChangelog(recorded).releases.map((r) => r.recordedCommit)).toEqual(['a'.repeat(40), '2dab875e92c40f9f0336ea7a338fd03f3f290cb0']);
    expect(recorded.replace(`Release commit: ${'a'.repeat(40)}`, '')).toBe(cut.replace(/Release commit: pending.*/, ''));
  });

  it('refuses a release heading without its date or commit line', () => {
    expect(() => parseChangelog(SAMPLE.replace(' - 2026-11-28', ''))).toThrow(/is not "## \[X\.Y\.Z\] - YYYY-MM-DD"/);
    expect(() => parseChangelog(SAMPLE.replace(/^Release commit: .*\n/m, ''))).toThrow(/0\.1\.0 has no "Release commit/);
    expect(() => parseChangelog(SAMPLE.replace('## [Unreleased]', '## Next'))).toThrow(/no "## \[Unreleased\]"/);
  });

  it('orders versions as semver does', () => {
    expect(['0.10.0', '0.2.0', '1.0.0-rc.1', '1.0.0', '0.2.1'].sort(compareVersions)).toEqual(['0.2.0', '0.2.1', '0.10.0', '1.0.0-rc.1', '1.0.0']);
  });
});

/** The files `npm version` reads and writes, copied into a fresh git repository (node_modules linked, for tsx). */
function releaseCopy(): string {
  const dir = fresh();
  for (const f of ['package.json', CHANGELOG, 'lib/version.ts', 'charts/svc/Chart.yaml', 'scripts/release.ts', 'scripts/write-version.mjs']) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(repoRoot, f), join(dir, f));
  }
  const { name, version } = JSON.parse(read(repoRoot, 'package.json')) as { name: string; version: string };
  writeFileSync(join(dir, 'package-lock.json'), `${JSON.stringify({ name, version, lockfileVersion: 3, requires: true, packages: { '': { name, version } } }, null, 2)}\n`);
  mkdirSync(join(dir, 'docs'));
  writeFileSync(join(dir, 'docs', 'deploying.md'), `docker build -t REGISTRY/svc-access-control:${version} .\nhelm install svc charts/svc --set image.tag=${version}\nsvc-access-control:dev stays\n`);
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n');
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q');
  for (const [k, v] of [['user.name', 'release test'], ['user.email', 'release@test.invalid'], ['commit.gpgSign', 'false'], ['tag.gpgSign', 'false']]) git('config', k!, v!);
  git('add', '-A');
  git('commit', '-q', '-m', 'before the release');
  return dir;
}

/** `npm version ARGS` in `dir`, with none of an outer npm's settings. */
function npmVersion(dir: string, ...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return runCommand('npm', ['version', '--no-update-notifier', ...args], { cwd: dir, env: { ...env, SVC_RELEASE_DATE: '2027-01-15' }, timeoutMs: 90_000 });
}

describe('npm version (on a temporary copy)', () => {
  it('moves every place, commits them as the release and tags it vX.Y.Z; then CHANGELOG.md names that commit', async () => {
    const dir = releaseCopy();
    const r = await npmVersion(dir, '0.2.0');
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();

    expect(disagreements(dir)).toEqual([]);
    expect(versionPlaces(dir).filter((p) => p.version !== '0.2.0')).toEqual([]);
    expect(read(dir, 'lib/version.ts')).toContain("export const VERSION = '0.2.0';");
    expect(read(dir, 'charts/svc/Chart.yaml')).toMatch(/^version: 0\.2\.0\nappVersion: "0\.2\.0"$/m);
    expect(read(dir, 'docs/deploying.md')).toBe('docker build -t REGISTRY/svc-access-control:0.2.0 .\nhelm install svc charts/svc --set image.tag=0.2.0\nsvc-access-control:dev stays\n');

    // The release commit holds every changed file, and the tag names it.
    const release = git('rev-parse', 'HEAD');
    expect(git('rev-parse', 'v0.2.0^{commit}')).toBe(release);
    expect(git('show', '--name-only', '--format=', 'HEAD').split('\n').sort()).toEqual(
      ['CHANGELOG.md', 'charts/svc/Chart.yaml', 'docs/deploying.md', 'lib/version.ts', 'package-lock.json', 'package.json']);
    const committed = parseChangelog(git('show', 'HEAD:CHANGELOG.md'));
    expect(committed.unreleased).toBe('');
    expect(committed.releases[0]).toMatchObject({ version: '0.2.0', date: '2027-01-15', recordedCommit: undefined });
    expect(committed.releases[0]!.body).toContain(parseChangelog(read(repoRoot, CHANGELOG)).unreleased);

    // postversion: the working tree's CHANGELOG.md names the release commit, for the next commit to carry.
    expect(git('status', '--porcelain')).toBe('M CHANGELOG.md');
    expect(parseChangelog(read(dir, CHANGELOG)).releases[0]!.recordedCommit).toBe(release);

    // Nothing left to release: the next `npm version` refuses before it changes anything.
    git('commit', '-q', '-am', 'CHANGELOG: v0.2.0 is its commit');
    const again = await npmVersion(dir, '0.3.0');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('Unreleased section is empty');
    expect(git('status', '--porcelain')).toBe('');
    expect(JSON.parse(read(dir, 'package.json')).version).toBe('0.2.0');
  }, 120_000);
});
