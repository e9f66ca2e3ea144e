// Every repository path a reader is sent to exists: the paths named in the documents' prose (outside fenced blocks,
// which hold examples of a user's own files) and in the comments of the sources, tests and scripts. A file moved or
// renamed without its mentions leaves a reader at nothing; this finds each such mention by its file and line.
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { prose, read, repoRoot, trackedFiles } from './markdown.js';

/** A repository path: one of the repository's top folders, then a file name with an extension we keep. */
const PATH = /(?<![\w./$-])((?:lib|core|k8s|operator|authz|cli|test|bench|scripts|deploy|charts|crds|docs)\/[\w.\-/]*?\w\.(?:ts|mjs|js|md|yaml|yml|json|sh|conf|tpl|txt|lua|go|snap))(?![\w.-]*\w)/g;

/**
 * Mentions that are not paths of this repository, each with why: a path inside another project's module, and test
 * fixtures that must not exist.
 */
const NOT_OURS: Readonly<Record<string, string>> = {
  'test/stack/controller-crds.ts': 'names files inside the Traefik module (docs/content/reference/...)',
  'test/docs/links.test.ts': 'links to missing files on purpose, to see them refused',
  'test/docs/paths.test.ts': 'this file',
  'CHANGELOG.md': 'a release names the files of its own time',
};

/** The comments of a source file (line and block comments), other text blanked line for line. */
function comments(text: string): string {
  return text.split('\n').map((line) => {
    const at = line.search(/(^|\s)(\/\/|\/\*|\*|#)(?=\s|$)/);
    return at < 0 ? '' : line.slice(at);
  }).join('\n');
}

function mentions(file: string): { path: string; line: number }[] {
  const text = read(file);
  const searched = file.endsWith('.md') ? prose(text) : comments(text);
  const out: { path: string; line: number }[] = [];
  searched.split('\n').forEach((l, i) => {
    for (const m of l.matchAll(PATH)) out.push({ path: m[1]!, line: i + 1 });
  });
  return out;
}

const files = trackedFiles().filter((f) => !f.startsWith('node_modules/') && !f.startsWith('test/differential/.legacy/') && NOT_OURS[f] === undefined
  && /\.(md|ts|mjs|js|sh|ya?ml|tpl|go|lua)$/.test(f) && !f.includes('/fixtures/'));

describe('repository paths in documents and comments', () => {
  it('finds mentions to check', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(mentions('README.md').length).toBeGreaterThan(0);
  });

  it('each names a file of the repository', () => {
    const stale = files.flatMap((f) => mentions(f)
      .filter(({ path }) => !existsSync(join(repoRoot, path)) && !existsSync(join(repoRoot, dirname(f), path)))
      .map(({ path, line }) => `${f}:${line}: ${path}`));
    expect(stale).toEqual([]);
  });
});
