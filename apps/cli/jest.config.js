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
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts', '.tsx'],
  transform: { '^.+\\.tsx$': swc(true), '^.+\\.ts$': swc(false) },
  moduleNameMapper: {
    '^@prospect/contract$': '<rootDir>/../../libs/contract/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.spec.tsx'],
  testTimeout: 60_000,
  // The end-to-end files each run an embedded Postgres; two workers fit the 2-core machines.
  maxWorkers: 2,
};
