import { scaledTimeout } from './process-cleanup.js';

declare global {
  interface ImportMeta {
    /** jest's object in a native ESM module (jest-runtime sets it; there is no global `jest` here). */
    jest: typeof jest;
  }
}

/**
 * jest's bound on each test and hook (60 s, jest.config.js's testTimeout) scaled to the machine's
 * load as every other wait of the tests is (scaledTimeout): read when each test file starts, so a
 * second suite started beside this one on the same cores stretches the files that follow, not
 * only the waits inside them (issue #49: 22 files failed with "Exceeded timeout of 60000 ms for a
 * hook" that way, each passing alone). Both workspaces' configs load it (setupFilesAfterEnv).
 */
export const TEST_TIMEOUT_MS = 60_000;

import.meta.jest.setTimeout(scaledTimeout(TEST_TIMEOUT_MS));
