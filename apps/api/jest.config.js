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
  testEnvironment: 'node',
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
  // Each test file gets its own database; two workers fit the 2-core machines.
  maxWorkers: 2,
  // No workerIdleMemoryLimit: with it jest runs even one file in a worker, and a SIGTERM to jest
  // alone then leaves that worker's API process and cluster behind (test/harness/interrupt.e2e-spec.ts).
};
