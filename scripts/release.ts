// One version names everything released together: package.json (and its lock), what `--version` prints in the three
// programs (lib/version.ts), the chart's `version` and `appVersion` (the image tag the chart pulls by default), and
// the image tag the documentation builds and installs (`svc-access-control:X.Y.Z`, `image.tag=X.Y.Z` in Markdown).
// `npm version <new>` moves all of them, through package.json's lifecycle scripts:
//
//   preversion   tsx scripts/release.ts check --unreleased   every place agrees, and CHANGELOG.md has something to release
//   (npm writes the new version into package.json and package-lock.json)
//   version      node scripts/write-version.mjs && tsx scripts/release.ts version
//                lib/version.ts, Chart.yaml, the Markdown image tags; CHANGELOG.md's Unreleased becomes
//                "## [X.Y.Z] - <today>"; every changed file staged, so npm's release commit carries it
//   (npm commits and tags vX.Y.Z, unless --no-git-tag-version)
//   postversion  tsx scripts/release.ts record                 the tag's commit written under the release's heading
//                (left uncommitted: the commit after the release records it, since no commit can name itself)
//
// `tsx scripts/release.ts check` prints every place and fails when one disagrees (scripts/release.test.ts runs it).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHANGELOG = 'CHANGELOG.md';
const CHART = 'charts/svc/Chart.yaml';
const VERSION_TS = 'lib/version.ts';
const VERSION_TEXT = String.raw`\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]*[0-9A-Za-z])?`;
const SEMVER = new RegExp(`^${VERSION_TEXT}$`);
/** Where the documentation names the image's tag: a build tag and the chart value. Other tags (dev, kind) are no version. */
const IMAGE_TAG_MENTIONS = [new RegExp(`(svc-access-control:)(${VERSION_TEXT})(?![0-9A-Za-z.-])`, 'g'), new RegExp(`(image\\.tag=)(${VERSION_TEXT})(?![0-9A-Za-z.-])`, 'g')];

/** One place that names the version: the file, what in it, and the version it names. */
export interface Place {
  readonly file: string;
  readonly what: string;
  readonly version: string;
}

const read = (root: string, file: string) => readFileSync(join(root, file), 'utf8');

/** Orders versions as semver does (numbers by value; a pre-release before its release). */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => {
    const [core, pre] = [v.replace(/-.*$/, ''), /-(.*)$/.exec(v)?.[1]];
    return { nums: core.split('.').map(Number), pre };
  };
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x.nums[i] ?? 0) !== (y.nums[i] ?? 0)) return (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}

// ---------------------------------------------------------------- CHANGELOG.md (keep-a-changelog 1.1.0)

/** One `## [X.Y.Z] - YYYY-MM-DD` section and the commit its `Release commit:` line names (undefined while pending). */
export interface ChangelogRelease {
  readonly version: string;
  readonly date: string;
  readonly recordedCommit: string | undefined;
  readonly body: string;
}

export interface Changelog {
  /** The text between `## [Unreleased]` and the next heading of its level, trimmed. */
  readonly unreleased: string;
  /** Newest first, as written. */
  readonly releases: readonly ChangelogRelease[];
}

const SECTION = /^## \[([^\]]+)\](.*)$/gm;
const RELEASE_COMMIT = /^Release commit: (?:`?([0-9a-f]{7,40})`?|pending\b.*)$/m;

/** The `## [...]` sections of a changelog, with where each starts and where its body starts and ends. */
function sections(text: string): { name: string; rest: string; start: number; bodyStart: number; end: number }[] {
  const found = [...text.matchAll(SECTION)].map((m) => ({ name: m[1]!, rest: m[2]!, start: m.index, bodyStart: m.index + m[0].length }));
  return found.map((s, i) => ({ ...s, end: found[i + 1]?.start ?? text.length }));
}

export function parseChangelog(text: string): Changelog {
  const all = sections(text);
  const unreleased = all.find((s) => s.name === 'Unreleased');
  if (!unreleased) throw new Error(`${CHANGELOG} has no "## [Unreleased]" section`);
  const releases = all.filter((s) => s !== unreleased).map((s) => {
    const date = /^ - (\d{4}-\d{2}-\d{2})\s*$/.exec(s.rest)?.[1];
    if (!SEMVER.test(s.name) || !date) throw new Error(`${CHANGELOG}: "## [${s.name}]${s.rest}" is not "## [X.Y.Z] - YYYY-MM-DD"`);
    const body = text.slice(s.bodyStart, s.end).trim();
    const record = RELEASE_COMMIT.exec(body);
    if (!record) throw new Error(`${CHANGELOG}: ${s.name} has no "Release commit: <hash>" (or "Release commit: pending") line`);
    return { version: s.name, date, recordedCommit: record[1], body };
  });
  return { unreleased: text.slice(unreleased.bodyStart, unreleased.end).trim(), releases };
}

/** The changelog with its Unreleased section turned into release `version` of `date`, and a new empty Unreleased above it. */
export function cutRelease(text: string, version: string, date: string): string {
  const log = parseChangelog(text);
  if (log.releases.some((r) => r.version === version)) throw new Error(`${CHANGELOG} already has a section for ${version}`);
  if (!/^(### |- )/m.test(log.unreleased)) throw new Error(`${CHANGELOG}'s Unreleased section is empty: nothing to release as ${version}`);
  const s = sections(text).find((x) => x.name === 'Unreleased')!;
  const heading = `## [${version}] - ${date}\n\nRelease commit: pending (the tag v${version}; the commit after the release writes its hash here)`;
  const after = text.slice(s.end);
  return `${text.slice(0, s.start)}## [Unreleased]\n\n${heading}\n\n${log.unreleased}\n${after === '' ? '' : `\n${after}`}`;
}

/** The changelog with `version`'s `Release commit:` line naming `commit`. */
export function recordReleaseCommit(text: string, version: string, commit: string): string {
  const s = sections(text).find((x) => x.name === version);
  if (!s) throw new Error(`${CHANGELOG} has no section for ${version}`);
  const body = text.slice(s.bodyStart, s.end).replace(RELEASE_COMMIT, `Release commit: ${commit}`);
  return text.slice(0, s.bodyStart) + body + text.slice(s.end);
}

// ---------------------------------------------------------------- the places that name the version

/** The Markdown files of the tree (tracked, or new and not ignored), CHANGELOG.md aside: it names every release. */
export function markdownFiles(root: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '*.md'], { cwd: root, encoding: 'utf8' });
  return [...new Set(out.split('\0'))].filter((f) => f !== '' && f !== CHANGELOG && !f.startsWith('node_modules/')).sort();
}

function chartField(text: string, field: 'version' | 'appVersion'): string {
  const m = new RegExp(`^${field}:\\s*"?([^"\\s]+)"?\\s*$`, 'm').exec(text);
  if (!m) throw new Error(`${CHART} has no top-level ${field}`);
  return m[1]!;
}

/** Every place that names the release's version, as the files hold it now. */
export function versionPlaces(root: string): Place[] {
  const places: Place[] = [];
  const pkg = JSON.parse(read(root, 'package.json')) as { version: string };
  places.push({ file: 'package.json', what: 'version', version: pkg.version });
  const lock = JSON.parse(read(root, 'package-lock.json')) as { version: string; packages?: Record<string, { version?: string }> };
  places.push({ file: 'package-lock.json', what: 'version', version: lock.version });
  places.push({ file: 'package-lock.json', what: 'packages[""].version', version: lock.packages?.['']?.version ?? '(none)' });
  places.push({ file: VERSION_TS, what: 'VERSION (--version of svc, svc-auth, svc-operator)', version: /export const VERSION = '([^']*)'/.exec(read(root, VERSION_TS))?.[1] ?? '(none)' });
  const chart = read(root, CHART);
  places.push({ file: CHART, what: 'version', version: chartField(chart, 'version') });
  places.push({ file: CHART, what: 'appVersion (the image tag by default)', version: chartField(chart, 'appVersion') });
  for (const file of markdownFiles(root)) {
    read(root, file).split('\n').forEach((line, i) => {
      for (const re of IMAGE_TAG_MENTIONS) for (const m of line.matchAll(re)) places.push({ file, what: `line ${i + 1}: ${m[1]}${m[2]}`, version: m[2]! });
    });
  }
  const newest = parseChangelog(read(root, CHANGELOG)).releases[0];
  places.push({ file: CHANGELOG, what: 'the newest release', version: newest?.version ?? '(none)' });
  return places;
}

/** The places that do not name package.json's version. */
export function disagreements(root: string): Place[] {
  const places = versionPlaces(root);
  return places.filter((p) => p.version !== places[0]!.version);
}

// ---------------------------------------------------------------- npm version's steps

/**
 * The "version" step, after npm wrote the new version into package.json: the chart, the Markdown image tags and the
 * changelog follow it (lib/version.ts is scripts/write-version.mjs's). Returns the files it changed.
 */
export function applyVersion(root: string, date: string): string[] {
  const { version } = JSON.parse(read(root, 'package.json')) as { version: string };
  if (!SEMVER.test(version)) throw new Error(`package.json's version ${JSON.stringify(version)} is not X.Y.Z`);
  const changed: string[] = [];
  const rewrite = (file: string, edit: (text: string) => string) => {
    const before = read(root, file);
    const after = edit(before);
    if (after !== before) {
      writeFileSync(join(root, file), after);
      changed.push(file);
    }
  };
  rewrite(CHART, (t) => t.replace(/^version:.*$/m, `version: ${version}`).replace(/^appVersion:.*$/m, `appVersion: "${version}"`));
  for (const file of markdownFiles(root)) rewrite(file, (t) => IMAGE_TAG_MENTIONS.reduce((acc, re) => acc.replace(re, `$1${version}`), t));
  rewrite(CHANGELOG, (t) => cutRelease(t, version, date));
  return changed;
}

function git(root: string, args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The commit tag vX.Y.Z names, or undefined when the clone has no such tag. */
export function taggedCommit(root: string, version: string): string | undefined {
  try {
    return git(root, ['rev-parse', '--verify', '--quiet', `refs/tags/v${version}^{commit}`]) || undefined;
  } catch {
    return undefined;
  }
}

/** The "postversion" step: writes the tag's commit under the release's heading (uncommitted). Returns it, if tagged. */
export function recordTaggedRelease(root: string): string | undefined {
  const { version } = JSON.parse(read(root, 'package.json')) as { version: string };
  const commit = taggedCommit(root, version);
  if (commit) writeFileSync(join(root, CHANGELOG), recordReleaseCommit(read(root, CHANGELOG), version, commit));
  return commit;
}

/** Today in UTC, as the changelog dates releases (SVC_RELEASE_DATE=YYYY-MM-DD overrides it, for tests). */
export function releaseDate(): string {
  const given = process.env.SVC_RELEASE_DATE;
  if (given !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(given)) throw new Error(`SVC_RELEASE_DATE=${given} is not YYYY-MM-DD`);
  return given ?? new Date().toISOString().slice(0, 10);
}

function main(argv: string[]): number {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const say = (m: string) => process.stderr.write(`release: ${m}\n`);
  const [command, ...flags] = argv;
  if (command === 'check') {
    const places = versionPlaces(root);
    const wrong = places.filter((p) => p.version !== places[0]!.version);
    for (const p of places) process.stdout.write(`${p.version === places[0]!.version ? 'ok  ' : 'DIFF'} ${p.version}  ${p.file}: ${p.what}\n`);
    if (wrong.length > 0) say(`${wrong.length} place(s) do not name package.json's ${places[0]!.version}`);
    const empty = flags.includes('--unreleased') && !/^(### |- )/m.test(parseChangelog(read(root, CHANGELOG)).unreleased);
    if (empty) say(`${CHANGELOG}'s Unreleased section is empty: write what the release changes first`);
    return wrong.length > 0 || empty ? 1 : 0;
  }
  if (command === 'version') {
    const changed = [VERSION_TS, ...applyVersion(root, releaseDate())];
    git(root, ['add', '--', ...changed]);
    say(`staged ${changed.join(', ')}`);
    return 0;
  }
  if (command === 'record') {
    const commit = recordTaggedRelease(root);
    say(commit
      ? `${CHANGELOG} now names the release commit ${commit}: commit that change (a commit cannot name itself)`
      : 'no tag for this version (--no-git-tag-version?): after the release commit is tagged, run `npx tsx scripts/release.ts record`');
    return 0;
  }
  say('usage: tsx scripts/release.ts check [--unreleased] | version | record');
  return 2;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`release: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}
