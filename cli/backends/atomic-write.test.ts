import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDirsPerTest } from '../../test/support/temp-dirs.js';
import { CliError } from '../errors.js';
import { modeOf, writeAllOrNone, writeAtomically, type FileWrite } from './atomic-write.js';

const fresh = tempDirsPerTest('svc-cli-');
const contents = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((n) => [n, readFileSync(join(dir, n), 'utf8')]));

describe('writeAtomically', () => {
  it('replaces the file with the new text and the given mode, and leaves no temp file', () => {
    const dir = fresh();
    const path = join(dir, 'a.yaml');
    writeFileSync(path, 'old\n', { mode: 0o600 });
    writeAtomically(dir, path, 'new\n', modeOf(path));
    expect(contents(dir)).toEqual({ 'a.yaml': 'new\n' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    writeAtomically(dir, join(dir, 'b.yaml'), 'created\n', modeOf(join(dir, 'b.yaml')));
    expect(statSync(join(dir, 'b.yaml')).mode & 0o777).toBe(0o644 & ~process.umask());
  });

  it('a failed write names the file, keeps the old one and leaves no temp file', () => {
    const dir = fresh();
    mkdirSync(join(dir, 'in-the-way.yaml'));
    writeFileSync(join(dir, 'in-the-way.yaml', 'x'), 'x');
    expect(() => writeAtomically(dir, join(dir, 'in-the-way.yaml'), 'new\n', 0o644)).toThrow(new RegExp(`^cannot write ${join(dir, 'in-the-way.yaml')}: `));
    expect(readdirSync(dir)).toEqual(['in-the-way.yaml']);
  });
});

describe('writeAllOrNone', () => {
  const writes = (dir: string): FileWrite[] => [
    { path: join(dir, 'edited.yaml'), text: 'edited\n', mode: 0o644, before: 'before\n' },
    { path: join(dir, 'created.yaml'), text: 'created\n', mode: 0o644 },
    { path: join(dir, 'third.yaml'), text: 'third\n', mode: 0o644 },
  ];

  it('writes every file', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'edited.yaml'), 'before\n');
    writeAllOrNone(dir, writes(dir));
    expect(contents(dir)).toEqual({ 'created.yaml': 'created\n', 'edited.yaml': 'edited\n', 'third.yaml': 'third\n' });
  });

  it('when one fails, the ones written before it get their old bytes back and the created ones go', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'edited.yaml'), 'before\n');
    let n = 0;
    const failingThird = (d: string, path: string, text: string, mode: number) => {
      if (++n === 3) throw new CliError(`cannot write ${path}: no space left on device`);
      writeAtomically(d, path, text, mode);
    };
    expect(() => writeAllOrNone(dir, writes(dir), failingThird)).toThrow(/^cannot write \S+third\.yaml: no space left on device \(nothing was changed: the 2 files written before it got their old contents back\)$/);
    expect(contents(dir)).toEqual({ 'edited.yaml': 'before\n' });
  });

  it('the first write failing: nothing had been written', () => {
    const dir = fresh();
    const failing = () => {
      throw new CliError('cannot write x: read-only file system');
    };
    expect(() => writeAllOrNone(dir, writes(dir), failing)).toThrow('cannot write x: read-only file system (nothing was changed: no file had been written)');
  });

  it('a file that cannot be put back either is named, to restore from version control', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'edited.yaml'), 'before\n');
    let n = 0;
    // The second write fails, and so does every write after it: the undo of the first file too.
    const failingFromSecond = (d: string, path: string, text: string, mode: number) => {
      if (++n >= 2) throw new CliError(`cannot write ${path}: disk gone`);
      writeAtomically(d, path, text, mode);
    };
    expect(() => writeAllOrNone(dir, writes(dir), failingFromSecond)).toThrow(/^cannot write \S+created\.yaml: disk gone; and \S+edited\.yaml could not be put back: restore it from version control$/);
    expect(existsSync(join(dir, 'created.yaml'))).toBe(false);
  });
});
