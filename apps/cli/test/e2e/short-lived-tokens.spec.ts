/**
 * The built binary against the real API whose access tokens live 40 s: five commands at
 * once refresh once (issue #19, item 9). A fixed minute of margin would have every command
 * renew a token that lives less than that, so five processes would refresh five times.
 */
import { ROUTES } from '@prospect/contract';
import { assertBuilt, makeSandbox, type Sandbox } from '../support/run-cli.js';
import { authorizedPoll, createUser, type TestApp } from '../support/real-api.js';
import { startTestApp } from '../../../api/test/support/test-app.js';

const ACCESS_TOKEN_TTL_SECONDS = 40;
let api: TestApp;
let box: Sandbox;

beforeAll(async () => {
  assertBuilt();
  api = await startTestApp({ env: { ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TOKEN_TTL_SECONDS) } });
});
afterAll(() => api?.close());
beforeEach(async () => (box = await makeSandbox()));
afterEach(() => box.cleanup());

it('five CLI processes at once on an expired 40 s access token: one refresh on the server, all five run', async () => {
  const person = await createUser(api, { name: 'Grace Hopper', email: `grace-${Date.now()}@example.com` });
  const { body } = await authorizedPoll(api, person);
  expect(Date.parse(body.expiresAt) - Date.now()).toBeLessThan((ACCESS_TOKEN_TTL_SECONDS + 2) * 1000);
  // The pair was obtained a lifetime ago and has just expired.
  await box.writeSession({
    accessToken: body.accessToken,
    refreshToken: body.refreshToken,
    apiBaseUrl: api.baseUrl,
    user: body.user,
    createdAt: new Date(Date.now() - (ACCESS_TOKEN_TTL_SECONDS + 1) * 1000).toISOString(),
    expiresAt: new Date(Date.now() - 1000).toISOString(),
  });

  const runs = await Promise.all(Array.from({ length: 5 }, () => box.run(['api', ROUTES.me])));

  for (const run of runs) expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  const [{ device_login_id: family }] = await api.dataSource.query(`SELECT device_login_id FROM access_tokens WHERE token_hash = sha256($1::text::bytea)`, [body.accessToken]);
  const events = await api.dataSource.query(`SELECT type FROM auth_events WHERE detail ->> 'deviceLoginId' = $1 AND type IN ('token.refresh', 'token.reuse', 'token.revoke_family')`, [family]);
  expect(events.map((e: { type: string }) => e.type)).toEqual(['token.refresh']);
  // The renewed pair records when it was obtained, which is what sizes the next margin.
  const renewed = await box.readSession();
  const lifetimeMs = Date.parse(renewed.expiresAt) - Date.parse(renewed.createdAt);
  expect(lifetimeMs).toBeLessThan((ACCESS_TOKEN_TTL_SECONDS + 2) * 1000);
  expect(lifetimeMs).toBeGreaterThan((ACCESS_TOKEN_TTL_SECONDS - 15) * 1000);
});
