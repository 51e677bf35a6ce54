/**
 * The built binary refreshing against the real API (issue #19): access tokens that live 40 s
 * (a fixed minute of margin would have every command renew them, so five processes at once
 * would refresh five times), and a renewed pair the CLI cannot save (a full disk), recovered
 * later with the old refresh token.
 */
import { ROUTES } from '@prospect/contract';
import { assertBuilt, makeSandbox, type Sandbox } from '../support/run-cli.js';
import { authorizedPoll, createUser, type TestApp } from '../support/real-api.js';
import { familyEvents } from '../support/api-fixtures.js';
import { FakeClock } from '../../../api/test/support/fake-clock.js';
import { startTestApp } from '../../../api/test/support/test-app.js';

const ACCESS_TOKEN_TTL_SECONDS = 40;
/** The API's clock: the CLI's own time, until a test moves it on. */
const clock = new FakeClock(Date.now());
let api: TestApp;
let box: Sandbox;

beforeAll(async () => {
  assertBuilt();
  api = await startTestApp({ clock, env: { ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TOKEN_TTL_SECONDS) } });
});
afterAll(() => api?.close());
beforeEach(async () => (box = await makeSandbox()));
afterEach(() => box.cleanup());

/** A session from a real device login whose pair was obtained a lifetime ago and has just expired. */
async function expiredSession() {
  // The server's time catches up with the CLI's (starting the API took a while).
  clock.advanceSeconds(Math.max(0, Date.now() - clock.now().getTime()) / 1000);
  const person = await createUser(api, { name: 'Grace Hopper', email: `grace-${Date.now()}-${Math.random()}@example.com` });
  const { body } = await authorizedPoll(api, person);
  expect(Date.parse(body.expiresAt) - clock.now().getTime()).toBe(ACCESS_TOKEN_TTL_SECONDS * 1000);
  const session = {
    accessToken: body.accessToken as string,
    refreshToken: body.refreshToken as string,
    apiBaseUrl: api.baseUrl,
    user: body.user,
    createdAt: new Date(Date.now() - (ACCESS_TOKEN_TTL_SECONDS + 1) * 1000).toISOString(),
    expiresAt: new Date(Date.now() - 1000).toISOString(),
  };
  await box.writeSession(session);
  return session;
}

it('five CLI processes at once on an expired 40 s access token: one refresh on the server, all five run', async () => {
  const old = await expiredSession();

  const runs = await Promise.all(Array.from({ length: 5 }, () => box.run(['api', ROUTES.me])));

  for (const run of runs) expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  expect(await familyEvents(api, old.accessToken)).toEqual(['token.refresh']);
  // The renewed pair records when it was obtained, which is what sizes the next margin.
  const renewed = await box.readSession();
  const lifetimeMs = Date.parse(renewed.expiresAt) - Date.parse(renewed.createdAt);
  expect(lifetimeMs).toBeLessThan((ACCESS_TOKEN_TTL_SECONDS + 2) * 1000);
  expect(lifetimeMs).toBeGreaterThan((ACCESS_TOKEN_TTL_SECONDS - 15) * 1000);
});

it('a renewed pair the disk cannot take: the old pair is kept, and 15 s later the next command recovers the successor, no reuse', async () => {
  const old = await expiredSession();
  const full = await box.run(['auth:token'], { noFileWrites: true });
  expect(full.code).toBe(1);
  expect(full.stderr).toBe(`Error: The renewed session could not be saved to ${box.sessionPath} (the file size limit is reached); the previous one is kept, and the next command renews it again.\n`);
  expect(await box.readSession()).toEqual(old);

  clock.advanceSeconds(15);
  const next = await box.run(['api', ROUTES.me]);
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(next.stdout).user.email).toBe(old.user.email);
  const recovered = await box.readSession();
  expect(recovered.refreshToken).not.toBe(old.refreshToken);
  expect(await familyEvents(api, old.accessToken)).not.toContain('token.reuse');
  // The recovered refresh token is the family's live one: it rotates as any other.
  const refreshed = await fetch(api.baseUrl + ROUTES.refresh, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: recovered.refreshToken }) });
  expect(refreshed.status).toBe(200);
});
