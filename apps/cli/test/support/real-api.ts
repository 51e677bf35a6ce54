/**
 * The real Prospect API for the CLI's end-to-end tests: the API's own test
 * support starts the real application on a real port and a fresh database
 * (embedded Postgres, or TEST_DATABASE_URL in CI). Approving a device login
 * goes through the same service the approval page calls.
 */
import { TokensService } from '../../../api/src/tokens/tokens.service.js';
import { approve, authorizedPoll, createUser, deny } from '../../../api/test/support/fixtures.js';
import { startTestApp, type TestApp } from '../../../api/test/support/test-app.js';

export { approve, authorizedPoll, createUser, deny, type TestApp };

/** A long-lived CLI token without a refresh token, as the tokens page creates one (for `--token`). */
export const cliToken = async (api: TestApp, user: { id: string }) => (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;

/** Polls every second instead of five, so a device login test takes seconds; `env`: a spec's own settings. */
export const startRealApi = (env: Record<string, string> = {}) => startTestApp({ env: { DEVICE_POLL_INTERVAL_SECONDS: '1', ...env } });

/** How many requests for `path` the API has logged (its request log carries the path without the query). */
export const requestsLoggedFor = (api: TestApp, path: string) => api.logs().split('\n').filter((line) => line.includes(`"url":"${path}"`)).length;
