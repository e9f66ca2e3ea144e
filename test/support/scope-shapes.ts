// The ProtectedScope objects a tree of the repository holds, wherever it keeps them: manifests (deploy/wis2box/scopes/,
// test/integration/fixtures/, any YAML or JSON file), the YAML blocks of its Markdown documents, what the CLI printed
// as its Jest snapshots record it, and the example `npm start` writes into .svc/scopes. A tree is a commit's (read with
// git, so an older release is read without checking it out) or the working tree's. test/integration/crd-compat.test.ts
// applies them to the CRDs of two releases (docs/architecture.md, "Compatibility of the ProtectedScope CRD").
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { dumpManifests } from '../../core/manifest.js';
import { API_GROUP_VERSION, KIND, newProtectedScope } from '../../core/protected-scope.js';
import { scopeObjectName, type ScopeKind } from '../../core/scope.js';
import { formatGeneratedToken, hashToken, tokenIdOf } from '../../core/token.js';
import { fences } from '../docs/markdown.js';
import { isRecord } from '../../lib/is-record.js';

/** Files of a tree: those containing a word, and their text. */
export interface Tree {
  /** How sources name the tree: a short commit, or "working tree". */
  readonly label: string;
  /** The files matching the pathspecs whose text contains `word`. */
  grep(word: string, pathspecs: readonly string[]): string[];
  read(path: string): string;
}

const MAX_BUFFER = 64 * 1024 * 1024;

function gitGrep(root: string, args: readonly string[]): string[] {
  try {
    return execFileSync('git', ['grep', '-l', '-z', '-F', ...args], { cwd: root, encoding: 'utf8', maxBuffer: MAX_BUFFER }).split('\0').filter((f) => f !== '');
  } catch (e) {
    if ((e as { status?: number }).status === 1) return []; // no match
    throw e;
  }
}

/** The tree of `commit` (it must be in the clone: a shallow clone may lack an older release's). */
export function commitTree(commit: string, root: string): Tree {
  return {
    label: commit.slice(0, 12),
    grep: (word, pathspecs) => gitGrep(root, ['-e', word, commit, '--', ...pathspecs]).map((f) => f.slice(commit.length + 1)),
    read: (path) => execFileSync('git', ['show', `${commit}:${path}`], { cwd: root, encoding: 'utf8', maxBuffer: MAX_BUFFER }),
  };
}

/** The working tree: files git tracks, and new ones it does not ignore. */
export function workingTree(root: string): Tree {
  return {
    label: 'working tree',
    grep: (word, pathspecs) => gitGrep(root, ['--untracked', '-e', word, '--', ...pathspecs]),
    read: (path) => readFileSync(join(root, path), 'utf8'),
  };
}

/** One ProtectedScope shape (spec and status; names and namespaces are no part of it) and everywhere it was found. */
export interface ScopeShape {
  readonly spec: Record<string, unknown>;
  readonly status?: Record<string, unknown>;
  readonly sources: string[];
}


/** The ProtectedScopes among parsed documents (a List's items too). */
function scopesIn(docs: readonly unknown[]): Omit<ScopeShape, 'sources'>[] {
  return docs.flatMap((d) => {
    if (!isRecord(d)) return [];
    if (d.kind === 'List' && Array.isArray(d.items)) return scopesIn(d.items);
    if (d.apiVersion !== API_GROUP_VERSION || d.kind !== KIND || !isRecord(d.spec)) return [];
    return [{ spec: d.spec, ...(isRecord(d.status) ? { status: d.status } : {}) }];
  });
}

/** The ProtectedScopes of a YAML or JSON text, or none when it does not parse (a Helm template, a half example). */
export function scopesOfText(text: string): Omit<ScopeShape, 'sources'>[] {
  try {
    return scopesIn(loadAll(text));
  } catch {
    return [];
  }
}

/** The entries of a Jest snapshot file, `exports[`name`] = `value`;`, with the template literals' escapes undone. */
export function snapshotEntries(text: string): { name: string; value: string }[] {
  const unescape = (s: string) => s.replace(/\\([\s\S])/g, '$1');
  return [...text.matchAll(/^exports\[`((?:[^`\\]|\\[\s\S])*)`\] = `((?:[^`\\]|\\[\s\S])*)`;$/gm)]
    .map((m) => ({ name: unescape(m[1]!), value: unescape(m[2]!) }));
}

/**
 * The multi-line strings of a snapshot value that mention ProtectedScope: a string that opens a line (`"...` or
 * `"key": "...`), up to the line pretty-format closes it on (`"` or `",` alone). Jest prints strings unescaped, so this
 * reads the layout, not a grammar; what it cuts wrong fails to parse and is left out.
 */
export function manifestTextsInSnapshot(value: string): string[] {
  const lines = value.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(?:\s*"[^"\n]*": "|")(.*)$/.exec(lines[i]!);
    if (!open || /",?$/.test(open[1]!)) continue;
    let j = i + 1;
    while (j < lines.length && !/^\s*",?$/.test(lines[j]!)) j++;
    const body = [open[1]!, ...lines.slice(i + 1, j)].join('\n');
    if (body.includes('ProtectedScope')) out.push(body);
    i = j;
  }
  return out;
}

/** The scopes scripts/start.mjs writes for `npm start` (its `examples` list), built with core as it builds them. */
export function startExampleScopes(startMjs: string): Omit<ScopeShape, 'sources'>[] {
  const examples = [...startMjs.matchAll(/\[\{ kind: '(\w+)', value: '([^']+)' \}, record\(\w+, '([^']*)'\)\]/g)];
  const docs = examples.map((m, i) => {
    const scope = { kind: m[1] as ScopeKind, value: m[2]! };
    const hash = hashToken(formatGeneratedToken(Buffer.alloc(32, i + 1)));
    const record = { id: tokenIdOf(hash), hash, description: m[3]!, createdAt: '2026-11-21T10:00:00Z' };
    return newProtectedScope(scope, scopeObjectName(scope), undefined, [record]);
  });
  return scopesOfText(dumpManifests(docs));
}

const MANIFEST_FILES = ['*.yaml', '*.yml', '*.json'];
/** Not manifests: the chart's templates (Go templates), the mutation tool's records, what is built or cached. */
const NOT_MANIFESTS = /^(node_modules|dist|\.cache|test\/mutations|charts\/[^/]+\/templates)\//;

/** Every ProtectedScope shape of a tree, each once, with where it was found. */
export function scopeShapes(tree: Tree): ScopeShape[] {
  const found: { shape: Omit<ScopeShape, 'sources'>; source: string }[] = [];
  const add = (shapes: Omit<ScopeShape, 'sources'>[], source: string) => shapes.forEach((shape) => found.push({ shape, source }));
  for (const file of tree.grep('ProtectedScope', MANIFEST_FILES).filter((f) => !NOT_MANIFESTS.test(f))) {
    add(scopesOfText(tree.read(file)), `${tree.label}:${file}`);
  }
  for (const file of tree.grep('kind: ProtectedScope', ['*.md']).filter((f) => !f.startsWith('node_modules/'))) {
    for (const fence of fences(tree.read(file)).filter((f) => /^(ya?ml)?$/.test(f.info))) add(scopesOfText(fence.body), `${tree.label}:${file}:${fence.line}`);
  }
  for (const file of tree.grep('ProtectedScope', ['*.snap'])) {
    for (const entry of snapshotEntries(tree.read(file))) {
      for (const text of manifestTextsInSnapshot(entry.value)) add(scopesOfText(text), `${tree.label}:${file} "${entry.name}"`);
    }
  }
  if (tree.grep('examples', ['scripts/start.mjs']).length > 0) add(startExampleScopes(tree.read('scripts/start.mjs')), `${tree.label}:scripts/start.mjs (npm start's example)`);
  const byShape = new Map<string, ScopeShape>();
  for (const { shape, source } of found) {
    const key = canonicalJson(shape);
    const seen = byShape.get(key);
    if (seen) seen.sources.push(source);
    else byShape.set(key, { ...shape, sources: [source] });
  }
  return [...byShape.values()];
}

/** JSON with object keys sorted, so that two spellings of one object compare equal. */
export function canonicalJson(v: unknown): string {
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isRecord(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}
