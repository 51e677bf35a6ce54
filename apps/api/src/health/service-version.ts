import { createRequire } from 'node:module';

/**
 * This service's version, apps/api/package.json's (from src/health and dist/health alike): the
 * liveness answer tells it, so `prospect --version --verify` can show which server it talks to.
 */
export const SERVICE_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
