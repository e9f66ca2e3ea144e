// The documentation links only to what the repository holds: every relative link of every Markdown file resolves to
// a file or directory of the repository (never out of it through ../, never an absolute path), and every anchor
// into a Markdown file names one of its headings. The contract documents live in docs/, nowhere else.
import { describe, expect, it } from '@jest/globals';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { anchors, links, read, repoRoot, trackedFiles } from './markdown.js';

const files = trackedFiles();
const markdown = files.filter((f) => f.endsWith('.md') && !f.startsWith('node_modules/'));

/** Why a link from `file` to `target` does not hold, or undefined when it does. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^(https?:|mailto:)/i.test(target)) return undefined;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return `${target}: not a web link nor a path in the repository`;
  const [path = '', anchor] = target.split('#');
  if (path.startsWith('/')) return `${target}: an absolute path; link relative to ${file}`;
  const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
  if (resolved === '..' || resolved.startsWith(`..${sep}`) || relative(repoRoot, join(repoRoot, resolved)).startsWith('..')) {
    return `${target}: leaves the repository`;
  }
  if (!existsSync(join(repoRoot, resolved))) return `${target}: ${resolved} does not exist in the repository`;
  if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md') && statSync(join(repoRoot, resolved)).isFile()) {
    if (!anchors(read(resolved)).has(anchor)) return `${target}: ${resolved} has no heading #${anchor}`;
  }
  return undefined;
}

describe('documentation links', () => {
  it('finds the Markdown files to check: README, docs/ and deploy/README.md among them', () => {
    expect(markdown).toEqual(expect.arrayContaining(['README.md', 'deploy/README.md', 'docs/access-rules.md', 'docs/architecture.md']));
  });

  it.each(markdown)('%s links only to files of the repository, and to headings they have', (file) => {
    const broken = links(read(file)).map((l) => [l.line, brokenLink(file, l.target)] as const).filter(([, why]) => why !== undefined).map(([line, why]) => `${file}:${line}: ${why}`);
    expect(broken).toEqual([]);
  });

  it('names no contract document outside the repository: the access rules and the architecture are in docs/', () => {
    const outside = /\.\.\/shared\/design|\bACCESS-RULES(\.md)?\b|\bARCHITECTURE\.md\b/;
    // test/mutations/incremental/ holds what the last mutation run recorded (test titles of its day); it is regenerated, never edited.
    const text = files.filter((f) => /\.(md|ts|mjs|js|ya?ml|txt|tpl|json)$/.test(f) && !f.startsWith('node_modules/') && !f.startsWith('test/docs/') && !f.startsWith('test/mutations/incremental/') && !f.endsWith('.snap') && existsSync(join(repoRoot, f)));
    const found = text.flatMap((f) => read(f).split('\n').map((l, i) => [f, i + 1, l] as const).filter(([, , l]) => outside.test(l)).map(([f, n]) => `${f}:${n}`));
    expect(found).toEqual([]);
    expect(read('docs/access-rules.md')).toMatch(/\n## Who can change who gets in\n/);
  });
});

describe('the link checker itself', () => {
  it('refuses links out of the repository, to missing files and to missing headings', () => {
    expect(brokenLink('README.md', '../shared/design')).toMatch(/leaves the repository/);
    expect(brokenLink('docs/x.md', '../../elsewhere.md')).toMatch(/leaves the repository/);
    expect(brokenLink('README.md', 'docs/nothing-here.md')).toMatch(/does not exist/);
    expect(brokenLink('README.md', 'deploy/README.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink('README.md', '/etc/passwd')).toMatch(/absolute/);
    expect(brokenLink('README.md', 'deploy/README.md#the-header-contract')).toBeUndefined();
    expect(brokenLink('docs/access-rules.md', '../deploy/README.md')).toBeUndefined();
    expect(brokenLink('README.md', 'https://example.org/x')).toBeUndefined();
  });
});
