import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { VERSION } from './version.js';

describe('VERSION', () => {
  it('is package.json\'s version (after a hand edit of it: node scripts/write-version.mjs)', () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(version);
  });
});
