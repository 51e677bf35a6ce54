/** Kept equal to apps/cli/package.json's version (a test checks). */
export const VERSION = '0.1.0';
