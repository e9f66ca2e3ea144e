// Jest runs the TypeScript sources as ESM through @swc/jest; tsc type-checks separately (npm run typecheck).
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
};
const common = {
  transform,
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
  // npm run test:mutation's sandboxes (test/mutations/stryker.config.mjs) are copies of the sources.
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
};

export default {
  projects: [
    {
      ...common,
      displayName: 'unit',
      // Generous: CI machines have 2 cores and some unit tests spawn real processes and servers. (A project's own
      // testTimeout is ignored by Jest; test/support/jest-timeout.ts applies this one.)
      globals: { SVC_TEST_TIMEOUT_MS: 30000 },
      setupFilesAfterEnv: ['<rootDir>/test/support/jest-timeout.ts'],
      testMatch: ['<rootDir>/{lib,core,k8s,operator,authz,cli}/**/*.test.ts', '<rootDir>/test/support/**/*.test.ts', '<rootDir>/scripts/**/*.test.ts', '<rootDir>/test/docs/**/*.test.ts', '<rootDir>/bench/support/**/*.test.ts'],
    },
    {
      ...common,
      displayName: 'e2e',
      globals: { SVC_TEST_TIMEOUT_MS: 60000 },
      setupFilesAfterEnv: ['<rootDir>/test/support/jest-timeout.ts'],
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      globals: { SVC_TEST_TIMEOUT_MS: 30000 },
      setupFilesAfterEnv: ['<rootDir>/test/support/jest-timeout.ts'],
      // One real etcd + kube-apiserver per run (test/controlplane), each test in its own namespace. test/prometheus:
      // the chart's alerts and dashboard on Debian's Prometheus, scraping svc-auth and svc-operator on that control plane.
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/controlplane/**/*.test.ts', '<rootDir>/test/prometheus/**/*.test.ts'],
      globalSetup: '<rootDir>/test/controlplane/global-setup.ts',
      globalTeardown: '<rootDir>/test/controlplane/global-teardown.ts',
    },
    {
      ...common,
      displayName: 'node',
      // The image built by podman and the chart on a real node (test/node/README.md).
      // Minutes, not seconds: each test states its own timeout.
      testMatch: ['<rootDir>/test/image/**/*.test.ts', '<rootDir>/test/node/**/*.test.ts'],
    },
    {
      ...common,
      displayName: 'kind',
      // test/kind/run.sh on a two-node kind cluster on podman, node image built offline (test/kind/README.md).
      // Minutes: each test states its own timeout.
      testMatch: ['<rootDir>/test/kind/**/*.test.ts'],
    },
  ],
};
