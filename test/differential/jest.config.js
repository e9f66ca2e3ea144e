// `npm run test:differential`: the credential road's redesign (issue 38) checked against the road it replaced, kept
// out of `npm test` because it reads the old code from git history (test/differential/README.md).
import base from '../../jest.config.js';

const unit = base.projects.find((p) => p.displayName === 'unit');

export default {
  rootDir: '../..',
  transform: unit.transform,
  extensionsToTreatAsEsm: unit.extensionsToTreatAsEsm,
  moduleNameMapper: unit.moduleNameMapper,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/differential/*.test.ts'],
  // The old tree it extracts holds test files of its own: never run them.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/differential/.legacy/'],
  globals: { SVC_TEST_TIMEOUT_MS: 300000 },
  setupFilesAfterEnv: ['<rootDir>/test/support/jest-timeout.ts'],
};
