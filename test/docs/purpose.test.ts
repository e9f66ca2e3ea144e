// Every production file opens with its purpose: its first lines are a comment saying what the file is for, so a reader
// who opens any file learns why it exists before reading an import.
import { describe, expect, it } from '@jest/globals';
import { read, trackedFiles } from './markdown.js';

const sources = trackedFiles().filter((f) => /^(lib|core|k8s|operator|authz|cli)\/.*\.ts$/.test(f) && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'));

describe('every production file opens with its purpose', () => {
  it('finds the files', () => {
    expect(sources.length).toBeGreaterThan(100);
  });

  it('each begins with a comment', () => {
    const silent = sources.filter((f) => !/^\s*(\/\*|\/\/|#!)/.test(read(f)));
    expect(silent).toEqual([]);
  });
});
