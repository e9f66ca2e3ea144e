// Written by scripts/write-version.mjs from package.json ("version"; `npm version` runs it): not edited by hand.
// lib/version.test.ts checks that the two agree.

/** The package's version: what `--version` prints in every program. */
export const VERSION = '0.1.0';
