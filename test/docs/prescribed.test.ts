// A configuration no test runs is not documented (docs/access-rules.md, "What the proxy in front may pass"): every proxy
// configuration written in deploy/ or in a document's fenced block is one the suite of prescribed configurations
// (test/e2e/prescribed.test.ts) runs against a hostile client, by its list in test/e2e/support/prescribed.ts; and
// every source that list names still exists, so the list cannot outlive what it covers.
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fences, read, repoRoot, trackedFiles } from './markdown.js';
import { CONFIGURATION_DIRS, isProxyConfiguration, PRESCRIBED } from '../e2e/support/prescribed.js';

const files = trackedFiles();
const covered = new Set<string>(PRESCRIBED.flatMap((p) => [...p.sources]));

/** The heading each line of a Markdown text falls under (its text without the #s), outside fenced blocks. */
function headingAt(text: string, line: number): string {
  let heading = '';
  let inFence = false;
  text.split('\n').slice(0, line - 1).forEach((l) => {
    if (/^\s*(```|~~~)/.test(l)) inFence = !inFence;
    else if (!inFence && /^#{1,6}\s/.test(l)) heading = l.replace(/^#+\s*/, '').trim();
  });
  return heading;
}

/** `file § heading` of every fenced block of the tracked Markdown files that configures a proxy. */
function documentedConfigurations(): string[] {
  return files.filter((f) => f.endsWith('.md') && !f.startsWith('node_modules/')).flatMap((file) => {
    const text = read(file);
    return fences(text).filter((f) => isProxyConfiguration(f.info, f.body)).map((f) => `${file} § ${headingAt(text, f.line)}`);
  });
}

describe('every prescribed proxy configuration is in the hostile suite', () => {
  it('each file of deploy/\'s configuration folders', () => {
    const configurations = files.filter((f) => CONFIGURATION_DIRS.some((d) => f.startsWith(`${d}/`)));
    expect(configurations.length).toBeGreaterThanOrEqual(12);
    expect(configurations.filter((f) => !covered.has(f))).toEqual([]);
  });

  it('each fenced block of a document that configures a proxy (named by file and heading)', () => {
    const documented = documentedConfigurations();
    // docs/wis2box.md's nginx blocks at least: the test must find what it guards.
    expect(documented.filter((d) => d.startsWith('docs/wis2box.md')).length).toBeGreaterThanOrEqual(2);
    expect([...new Set(documented)].filter((d) => !covered.has(d))).toEqual([]);
  });

  it('names only sources that exist: files, and documents with that heading', () => {
    const missing = [...covered].filter((source) => {
      const [file, heading] = source.split(' § ');
      if (!existsSync(join(repoRoot, file!))) return true;
      return heading !== undefined && !read(file!).split('\n').some((l) => /^#{1,6}\s/.test(l) && l.replace(/^#+\s*/, '').trim() === heading);
    });
    expect(missing).toEqual([]);
  });

  it('tells a proxy configuration from other blocks', () => {
    expect(isProxyConfiguration('nginx', 'location / {}')).toBe(true);
    expect(isProxyConfiguration('yaml', 'kind: Middleware\nspec:\n  forwardAuth: {}')).toBe(true);
    expect(isProxyConfiguration('yaml', 'entryPoints:\n  web:\n    proxyProtocol:\n      trustedIPs: []')).toBe(true);
    expect(isProxyConfiguration('yaml', 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope')).toBe(false);
    expect(isProxyConfiguration('sh', 'svc auth show')).toBe(false);
  });
});
