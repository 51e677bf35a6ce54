/**
 * Jest runs the API's TypeScript as native ESM (Nest 12 and our own code are
 * ESM). @swc/jest strips types and emits the decorator metadata Nest's DI needs.
 */
const swcConfig = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

export default {
  rootDir: '.',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swcConfig] },
  moduleNameMapper: {
    '^@prospect/contract$': '<rootDir>/../../libs/contract/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  // The bound on a test or hook when the machine is idle; test/support/scaled-test-timeout.ts
  // scales it with the load when each file starts, as the tests' own waits are scaled.
  testTimeout: 60_000,
  setupFilesAfterEnv: ['<rootDir>/test/support/scaled-test-timeout.ts'],
  // One migrated template database per run, which the files' databases are copied from
  // (test/support/test-database.ts, createTestDatabase's `migrated`).
  globalSetup: '<rootDir>/test/support/template-database-setup.mjs',
  globalTeardown: '<rootDir>/test/support/template-database-teardown.mjs',
  // Each test file gets its own database; two workers fit the 2-core machines.
  maxWorkers: 2,
  // Every file imports the whole app again in a fresh module registry, and a worker's heap grows
  // with each file it runs: a worker whose heap is above this after a file is replaced before the
  // next (issue #49: unbounded, workers reached 3 GiB RSS; docs/performance.md has the figures).
  // With it jest runs even a single file in a worker; the environment makes a worker whose jest is
  // gone end itself, so its reaper ends the API processes and clusters the file started
  // (test/harness/interrupt.e2e-spec.ts, in band and in a worker).
  workerIdleMemoryLimit: '512MB',
  testEnvironment: '<rootDir>/test/support/test-environment.cjs',
};
