#!/usr/bin/env node
// Writes lib/version.ts from package.json's "version", so that the programs know their version without reading
// package.json at run time. `npm version` runs it after the bump (package.json "version" script), and
// scripts/release.ts then moves the other places that name the version and stages them all with this file;
// after a hand edit of the version, run `node scripts/write-version.mjs`. lib/version.test.ts fails while they differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (typeof version !== 'string' || !/^[0-9A-Za-z.+-]+$/.test(version)) throw new Error(`package.json's "version" is no version: ${JSON.stringify(version)}`);
writeFileSync(join(root, 'lib', 'version.ts'), `// Written by scripts/write-version.mjs from package.json ("version"; \`npm version\` runs it): not edited by hand.
// lib/version.test.ts checks that the two agree.

/** The package's version: what \`--version\` prints in every program. */
export const VERSION = '${version}';
`);
