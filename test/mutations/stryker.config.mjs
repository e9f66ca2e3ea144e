// `npm run test:mutation` (scripts/test-mutation.mjs): StrykerJS over the files that decide who gets in (issue 27
// item 10), one group at a time, each file tested by its own core unit tests only: perTest coverage would
// otherwise run every decision test against each normalizer mutant (everything decides through normalizeTarget).
// MUTATION_GROUP picks the group; each keeps its own incremental file (committed: a later run re-tests only the
// mutants whose code or tests changed). Every surviving mutant is explained in test/mutations/SURVIVORS.md.
import jestConfig from '../../jest.config.js';

export const GROUPS = {
  normalize: { mutate: ['core/normalize.ts'], tests: ['core/normalize.test.ts'] },
  decide: {
    mutate: ['core/decide.ts', 'core/governing.ts', 'core/judge.ts'],
    // Every decide*.test.ts: each credential kind (tokens, identities, sessions, networks) has its own file.
    tests: ['core/decide*.test.ts', 'core/prefix-paths.test.ts', 'core/imported-hash.test.ts'],
  },
};

const name = process.env.MUTATION_GROUP ?? 'normalize';
const group = GROUPS[name];
if (!group) throw new Error(`MUTATION_GROUP=${name}: not one of ${Object.keys(GROUPS).join(', ')}`);
// The unit project of jest.config.js as one flat project (its `projects` would run every project).
const { displayName: _unit, ...unit } = jestConfig.projects.find((p) => p.displayName === 'unit');

export default {
  packageManager: 'npm',
  mutate: group.mutate,
  testRunner: 'jest',
  testRunnerNodeArgs: ['--experimental-vm-modules'],
  jest: {
    projectType: 'custom',
    enableFindRelatedTests: false,
    config: { ...unit, testMatch: group.tests.map((t) => `<rootDir>/${t}`) },
  },
  coverageAnalysis: 'perTest',
  // The machine is shared: one test process at a time.
  concurrency: 1,
  // Jest's ESM modules (--experimental-vm-modules) are never freed between runs in one process: left alone, a test
  // runner grows past Node's heap limit within a few hundred mutants. A fresh one every 25 runs stays small.
  maxTestRunnerReuse: 25,
  incremental: true,
  incrementalFile: `test/mutations/incremental/${name}.json`,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  // Only what the tests need is copied into the sandbox.
  ignorePatterns: ['/*', '!/core', '!/lib', '!/test', '/test/*', '!/test/mutations', '!/test/support', '!/package.json', '!/tsconfig.json'],
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `.cache/stryker/${name}.json` },
  clearTextReporter: { allowColor: false, allowEmojis: false, logTests: false, reportTests: false, reportMutants: false, reportScoreTable: true },
  thresholds: { high: 95, low: 90, break: null },
  timeoutMS: 10000,
};
