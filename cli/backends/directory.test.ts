import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { hashToken, newProtectedScope, scopeObjectName, tokenIdOf, type ProtectedScope, type Scope } from '../../core/index.js';
import { dirState } from '../../test/cli/harness.js';
import { tempDirsPerTest } from '../../test/support/temp-dirs.js';
import { CliError } from '../errors.js';
import type { Mutate } from './backend.js';
import { DirectoryStore } from './directory.js';
import { LOCK_FILE } from './directory-lock.js';

const fresh = tempDirsPerTest('svc-cli-');

const topic: Scope = { kind: 'topic', value: 'a.b' };
const rec = (token: string) => {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-01-01T00:00:00Z' };
};
/** Adds a token to the scope's deterministic object (what add-token does). */
const add = (scope: Scope, token: string): Mutate => (current) => {
  const name = scopeObjectName(scope);
  const o = current.find((c) => c.metadata.name === name) ?? newProtectedScope(scope, name, undefined, []);
  return [{ ...o, spec: { ...o.spec, tokens: [...(o.spec.tokens ?? []), rec(token)] } as ProtectedScope['spec'] }];
};
const clearAll: Mutate = (current) => current.map((o) => ({ ...o, spec: { ...o.spec, tokens: [] } as ProtectedScope['spec'] }));

const MULTI = `# Partner scopes, maintained by hand.
apiVersion: auth.svc.io/v1alpha1
kind: ProtectedScope
metadata:
  name: hand-a   # the first one
spec:
  topicHierarchy: a.b
  tokens:
    - {id: ${rec('token-number-one-0001').id}, hash: "${rec('token-number-one-0001').hash}", createdAt: "2026-01-01T00:00:00Z"}
---
# not ours: left alone
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {x: "1"}
---
# the other partner
apiVersion: auth.svc.io/v1alpha1
kind: ProtectedScope
metadata:
  name: hand-c
spec:
  topicHierarchy: c.d   # different scope
  tokens: []
`;

describe('DirectoryStore', () => {
  it('reads every manifest: several documents per file, .yml and .json, other kinds and kustomization ignored', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'multi.yaml'), MULTI);
    writeFileSync(join(dir, 'one.json'), JSON.stringify(newProtectedScope({ kind: 'path', value: 'processes/svc' }, 'proc', undefined, [rec('token-number-two-0002')])));
    writeFileSync(join(dir, 'other.yml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: svc}\n');
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: [multi.yaml]\n');
    writeFileSync(join(dir, 'README.md'), '# not a manifest\n');
    writeFileSync(join(dir, '.hidden.yaml'), 'garbage: [');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'x.yaml'), 'garbage: [');
    const store = new DirectoryStore({ dir });
    const all = await store.list();
    expect(all.map((s) => [s.object.metadata.name, s.location])).toEqual([
      ['hand-a', join(dir, 'multi.yaml')],
      ['hand-c', join(dir, 'multi.yaml')],
      ['proc', join(dir, 'one.json')],
    ]);
    expect((await store.get(topic)).map((s) => s.object.metadata.name)).toEqual(['hand-a']);
  });

  it('an edit rewrites only its own document: comments and the other documents keep their bytes', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'multi.yaml'), MULTI);
    const store = new DirectoryStore({ dir });
    const result = await store.update(topic, clearAll);
    expect(result.written).toEqual(['hand-a']);
    const text = readFileSync(join(dir, 'multi.yaml'), 'utf8');
    expect(text.startsWith('# Partner scopes, maintained by hand.\napiVersion: auth.svc.io/v1alpha1\n')).toBe(true);
    expect(text).toContain('tokens: []');
    const rest = MULTI.slice(MULTI.indexOf('---\n# not ours'));
    expect(text.endsWith(rest)).toBe(true);
    expect(text).toMatchSnapshot();
  });

  it('creates DIR/<deterministic name>.yaml for a new scope; edits a JSON manifest as JSON', async () => {
    const dir = fresh();
    const proc: Scope = { kind: 'path', value: 'processes/svc' };
    writeFileSync(join(dir, 'proc.json'), JSON.stringify(newProtectedScope(proc, scopeObjectName(proc), undefined, [])));
    const store = new DirectoryStore({ dir, namespace: 'svc' });
    await store.update(topic, add(topic, 'token-number-one-0001'));
    await store.update(proc, add(proc, 'token-number-two-0002'));
    expect(readdirSync(dir).sort()).toEqual(['proc.json', `${scopeObjectName(topic)}.yaml`]);
    expect(readFileSync(join(dir, `${scopeObjectName(topic)}.yaml`), 'utf8')).toMatchSnapshot();
    expect(JSON.parse(readFileSync(join(dir, 'proc.json'), 'utf8')).spec.tokens).toHaveLength(1);
  });

  it('a dry run computes the edit and writes nothing', async () => {
    const dir = fresh();
    const store = new DirectoryStore({ dir });
    const r = await store.update(topic, add(topic, 'token-number-one-0001'), { dryRun: true });
    expect(r.written).toEqual([scopeObjectName(topic)]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it.each([
    ['bad YAML', 'x.yaml', 'spec: [', /x\.yaml: not valid YAML/],
    ['bad hash', 'x.yaml', MULTI.replace(/sha256:[0-9a-f]+/, 'sha256:nothex'), /x\.yaml: documents\[0\]\.spec\.tokens\[0\]\.hash: must be sha256/],
    ['two scope fields', 'x.yaml', 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nmetadata: {name: x}\nspec: {path: processes/svc, topicHierarchy: a, tokens: []}\n', /x\.yaml: spec: exactly one of/],
    ['no kind at all', 'x.yaml', 'metadata: {name: x}\nspec: {path: processes/svc}\n', /x\.yaml: apiVersion: must be auth\.svc\.io\/v1alpha1; kind: must be ProtectedScope/],
    ['bad topic', 'x.yml', 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nmetadata: {name: x}\nspec: {topicHierarchy: "a..b", tokens: []}\n', /x\.yml: spec\.topicHierarchy: invalid topic hierarchy/],
    ['a 0-byte file', 'x.yaml', '', /x\.yaml: holds no document/],
    ['a file of ---', 'x.yaml', '---\n', /x\.yaml: holds no document/],
    ['a file of null', 'x.yaml', 'null\n', /x\.yaml: holds no document/],
    ['tokenz for tokens', 'x.yaml', 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nmetadata: {name: x}\nspec: {path: processes/svc, tokenz: []}\n', /x\.yaml: spec\.tokenz: unknown field.*spec\.tokens: must be stated/],
    ['apiVersion and kind misspelt', 'x.yaml', 'apiVersion: auth.scv.io/v1alpha1\nkind: ProtectedScop\nmetadata: {name: x}\nspec: {path: processes/svc, tokens: []}\n', /x\.yaml: apiVersion: must be auth\.svc\.io\/v1alpha1; kind: must be ProtectedScope/],
  ])('an invalid manifest (%s) is an error naming the file and field; nothing changes', async (_name, file, text, pattern) => {
    const dir = fresh();
    writeFileSync(join(dir, 'good.yaml'), MULTI);
    writeFileSync(join(dir, file), text);
    const before = dirState(dir);
    const store = new DirectoryStore({ dir });
    await expect(store.list()).rejects.toThrow(pattern);
    await expect(store.update(topic, clearAll)).rejects.toThrow(pattern);
    await expect(store.update(topic, clearAll)).rejects.toThrow(/nothing was changed/);
    expect(dirState(dir)).toEqual(before);
  });

  it('two objects with one name are an error naming both files', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'a.yaml'), MULTI);
    writeFileSync(join(dir, 'b.yaml'), MULTI.split('---')[0]!);
    await expect(new DirectoryStore({ dir }).list()).rejects.toThrow(/a\.yaml and .*b\.yaml both define ProtectedScope "hand-a"/);
  });

  it('a file in the way of a new object is an error, not overwritten', async () => {
    const dir = fresh();
    writeFileSync(join(dir, `${scopeObjectName(topic)}.yaml`), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    const before = dirState(dir);
    await expect(new DirectoryStore({ dir }).update(topic, add(topic, 'token-number-one-0001'))).rejects.toThrow(/exists but does not define ProtectedScope/);
    expect(dirState(dir)).toEqual(before);
  });

  it('a refused edit (the mutation throws) writes nothing and releases the lock', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'multi.yaml'), MULTI);
    const before = dirState(dir);
    const store = new DirectoryStore({ dir });
    await expect(store.update(topic, () => { throw new CliError('no'); })).rejects.toThrow('no');
    expect(dirState(dir)).toEqual(before);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('an edit that would make an invalid object is refused before writing', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'multi.yaml'), MULTI);
    const before = dirState(dir);
    const bad: Mutate = (current) => current.map((o) => ({ ...o, spec: { ...o.spec, tokens: [{ ...rec('token-number-one-0001'), createdAt: 'yesterday' }] } as ProtectedScope['spec'] }));
    await expect(new DirectoryStore({ dir }).update(topic, bad)).rejects.toThrow(/refusing to write ProtectedScope "hand-a": spec\.tokens\[0\]\.createdAt/);
    expect(dirState(dir)).toEqual(before);
  });

  it('leaves no temp files and no lock behind', async () => {
    const dir = fresh();
    const store = new DirectoryStore({ dir });
    for (let i = 0; i < 5; i++) await store.update(topic, add(topic, `token-number-${i}-000000`));
    expect(readdirSync(dir)).toEqual([`${scopeObjectName(topic)}.yaml`]);
  });

  it('concurrent edits in one process serialize on the lock: none is lost', async () => {
    const dir = fresh();
    const store = new DirectoryStore({ dir });
    await Promise.all(Array.from({ length: 20 }, (_, i) => new DirectoryStore({ dir }).update(topic, add(topic, `parallel-token-${String(i).padStart(4, '0')}`))));
    const [only] = await store.get(topic);
    expect(only!.object.spec.tokens).toHaveLength(20);
  });

  it('waits for a live holder of the lock, then gives up with who holds it; nothing written (directory-lock.test.ts has the rest)', async () => {
    const dir = fresh();
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname(), since: '2026-11-21T10:00:00Z' }));
    await expect(new DirectoryStore({ dir, lockTimeoutMs: 300 }).update(topic, add(topic, 'token-number-one-0001'))).rejects.toThrow(
      new RegExp(`is locked by pid ${process.pid} on ${hostname()} .*remove .*\\.svc\\.lock \\(nothing was changed\\)`),
    );
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('a missing directory or a file instead of one: a clear error', async () => {
    const dir = fresh();
    await expect(new DirectoryStore({ dir: join(dir, 'nope') }).list()).rejects.toThrow(/does not exist: create it \(mkdir -p .*nope\)/);
    await expect(new DirectoryStore({ dir: join(dir, 'nope') }).update(topic, clearAll)).rejects.toThrow(/does not exist/);
    writeFileSync(join(dir, 'file'), '');
    await expect(new DirectoryStore({ dir: join(dir, 'file') }).list()).rejects.toThrow(/is not a directory/);
  });
});

describe('DirectoryStore.updateAll: several scopes together, or none', () => {
  const other: Scope = { kind: 'topic', value: 'c.d' };
  const third: Scope = { kind: 'path', value: 'wis2downloader' };
  const bytes = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((n) => [n, readFileSync(join(dir, n)).toString('base64')]));

  it('edits of two scopes in one hand-written file and a new file, in one lock', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'partners.yaml'), MULTI);
    const store = new DirectoryStore({ dir });
    const r = await store.updateAll([{ scope: topic, mutate: clearAll }, { scope: other, mutate: clearAll }, { scope: third, mutate: add(third, 'downloader-token-0001') }]);
    expect(r.map((x) => x.written)).toEqual([['hand-a'], [], [scopeObjectName(third)]]);
    expect(readFileSync(join(dir, 'partners.yaml'), 'utf8')).toContain('# not ours: left alone');
    expect((await store.get(topic))[0]!.object.spec.tokens).toEqual([]);
    expect((await store.get(third))[0]!.object.spec.tokens).toHaveLength(1);
  });

  it('a refused edit (the last one) writes nothing of the others', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'partners.yaml'), MULTI);
    const before = bytes(dir);
    const refuse: Mutate = () => {
      throw new CliError('no');
    };
    await expect(new DirectoryStore({ dir }).updateAll([{ scope: third, mutate: add(third, 'downloader-token-0001') }, { scope: topic, mutate: clearAll }, { scope: other, mutate: refuse }])).rejects.toThrow('no');
    expect(bytes(dir)).toEqual(before);
  });

  it('a write that fails midway puts back, byte for byte, the files written before it (created ones removed)', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'partners.yaml'), MULTI);
    writeFileSync(join(dir, 'kept.yaml'), '# unrelated\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n');
    const before = bytes(dir);
    let writes = 0;
    const store = new DirectoryStore({
      dir,
      replaceFile: (d, path, text, mode) => {
        // The first two writes go through (the edited file, then one created); the third fails; the undo writes go through.
        if (++writes === 3) throw new CliError(`cannot write ${path}: no space left on device`);
        writeFileSync(path, text, { mode });
      },
    });
    const fourth: Scope = { kind: 'path', value: 'collections/stations' };
    const edits = [{ scope: topic, mutate: add(topic, 'token-number-two-0002') }, { scope: third, mutate: add(third, 'downloader-token-0001') }, { scope: fourth, mutate: add(fourth, 'stations-token-00003') }];
    await expect(store.updateAll(edits)).rejects.toThrow(/^cannot write \S+: no space left on device \(nothing was changed: the 2 files written before it got their old contents back\)$/);
    expect(bytes(dir)).toEqual(before);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });
});
