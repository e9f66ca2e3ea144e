// docs/GLOSSARY.md promises one meaning per word in the code. These tests hold it to that: every name in code the
// glossary gives exists in the sources, the names it retired (a word that meant two things) are gone from them, and
// what is written once — the `'Open' | 'Closed'` type, why a scope is closed — is written in one place.
import { describe, expect, it } from '@jest/globals';
import { read, trackedFiles } from './markdown.js';
import { whyClosed } from '../../core/index.js';

const sources = trackedFiles().filter((f) => /^(lib|core|k8s|operator|authz|cli)\/.*\.ts$/.test(f) && !f.endsWith('.test.ts'));
const text = new Map(sources.map((f) => [f, read(f)]));
const glossary = read('docs/GLOSSARY.md');

/** The files whose text has `word` as a whole word. */
function filesWith(word: string): string[] {
  const re = new RegExp(`(?<![\\w$])${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w$])`);
  return sources.filter((f) => re.test(text.get(f)!));
}

/** The files holding `s` verbatim. */
const filesHolding = (s: string): string[] => sources.filter((f) => text.get(f)!.includes(s));

describe('docs/GLOSSARY.md and the code agree', () => {
  it('finds the sources it checks', () => {
    expect(sources).toEqual(expect.arrayContaining(['core/scope-state.ts', 'authz/pipeline/serving-state.ts', 'k8s/snapshot/reader.ts']));
  });

  it('every name in code the glossary gives exists in the sources (`IndexedScope.caseFolded`: both parts)', () => {
    const names = [...glossary.matchAll(/`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?`/g)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(['IndexedScope.caseFolded', 'CredentialCarrier', 'ServingState', 'ListWatch', 'OpenOrClosed', 'whyClosed']));
    const missing = [...new Set(names)].filter((n) => n.split('.').some((part) => filesWith(part).length === 0));
    expect(missing).toEqual([]);
  });

  it.each([
    ['TokenSource', 'the credential carrier is CredentialCarrier'],
    ['ListWatchSource', 'a snapshot source is not what an informer reads: ListWatch'],
    ['SnapshotState', 'one object, one name: ServingState'],
    ['INDEX_KEY', 'the snapshot index: SNAPSHOT_INDEX_KEY'],
    ['indexWatch', 'snapshotIndexWatch'],
    ['indexWritten', 'snapshotIndexWritten'],
    ['currentIndexText', 'currentSnapshotIndexText'],
    ['markMerged', 'merged means objects sharing a scope: markCaseFolded'],
    ['oldGeneration', 'an object generation is objectGeneration'],
  ])('the retired name %s is gone (%s)', (name) => {
    expect(filesWith(name)).toEqual([]);
  });

  it('has no bare `merged` flag on a decision index entry, no `index` for a snapshot index, no `scopes()` returning objects', () => {
    expect(filesHolding('readonly merged?')).toEqual([]);
    expect(filesHolding('{ index: SnapshotIndex')).toEqual([]);
    expect(filesHolding('readonly index: SnapshotIndex')).toEqual([]);
    expect(filesHolding('scopes: () => readonly ProtectedScope[]')).toEqual([]);
    expect(filesHolding('readonly source: CredentialCarrier')).toEqual([]);
  });

  it("writes 'Open' | 'Closed' once: core's OpenOrClosed", () => {
    const spelt = sources.flatMap((f) => [...text.get(f)!.matchAll(/'Open' \| 'Closed'|'Closed' \| 'Open'/g)].map(() => f));
    expect(spelt).toEqual(['core/scope-state.ts']);
  });

  it('words why a scope is closed in one place: core/scope-state.ts (whyClosed)', () => {
    const byDefault = whyClosed({ by: 'default' }).reason;
    const covered = whyClosed({ by: 'covered', governing: ['x'] }).reason.split('x covers it: ')[1]!;
    expect(filesHolding(byDefault)).toEqual(['core/scope-state.ts']);
    expect(filesHolding(covered)).toEqual(['core/scope-state.ts']);
    expect(filesHolding('declared public, but')).toEqual(['core/scope-state.ts']);
    expect(filesHolding("' (closed: true)'")).toEqual([]);
  });
});
