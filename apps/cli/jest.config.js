/**
 * The CLI is native ESM (ink and meow are ESM-only); @swc/jest compiles TS and
 * TSX to ESM. The end-to-end tests start the real API in-process from its own
 * test support (apps/api/test/support), so TS files are compiled with Nest's
 * decorators and their metadata, as the API's jest config does.
 */
const swc = (tsx) => [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', tsx, decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, react: { runtime: 'automatic' } },
      keepClassNames: true,
    },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

export default {
  extensionsToTreatAsEsm: ['.ts', '.tsx'],
  transform: { '^.+\\.tsx$': swc(true), '^.+\\.ts$': swc(false) },
  moduleNameMapper: {
    '^@prospect/contract$': '<rootDir>/../../libs/contract/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.spec.tsx'],
  // As the API's: the bound when the machine is idle, scaled with its load when each file starts.
  testTimeout: 60_000,
  setupFilesAfterEnv: ['<rootDir>/../api/test/support/scaled-test-timeout.ts'],
  // The API's template database, copied by each real API's database (the API's jest.config.js).
  globalSetup: '<rootDir>/../api/test/support/template-database-setup.mjs',
  globalTeardown: '<rootDir>/../api/test/support/template-database-teardown.mjs',
  // The end-to-end files each run an embedded Postgres; two workers fit the 2-core machines.
  maxWorkers: 2,
  // A worker left above this after a file is replaced before the next, and a worker whose jest is
  // gone ends itself and what its file started (the API's jest.config.js).
  workerIdleMemoryLimit: '1GB',
  testEnvironment: '<rootDir>/../api/test/support/test-environment.cjs',
};
