/**
 * The CLI measures time by the server's clock (issue #32): the built binary with its clock
 * 10 minutes behind and an hour ahead of the real API (a preload moves its Date, see
 * ../support/skewed-clock.cjs), on a session whose access token the server holds expired and
 * whose refresh token is good. It refreshes instead of failing, never deletes a session the
 * server has not refused, and remembers the offset so the next command neither fails nor
 * renews again. Then what ends a session: only the server's refusal of its refresh token.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '@prospect/contract';
import { type Sandbox, validSession } from '../support/run-cli.js';
import { approve, authorizedPoll, cliToken } from '../support/real-api.js';
import { fakeBackend, json } from '../support/fake-backend.js';
import { expireAccessToken, familyEvents } from '../support/api-fixtures.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

const SKEWED_CLOCK = fileURLToPath(new URL('../support/skewed-clock.cjs', import.meta.url));
const TEN_MINUTES_BEHIND = -10 * 60_000;
const AN_HOUR_AHEAD = 60 * 60_000;

useRealApi('clock');

/** `prospect …` on a machine whose clock is `skewMs` off the server's. */
const runSkewed = (skewMs: number, args: string[], options: Parameters<Sandbox['run']>[1] = {}) =>
  box.run(args, { ...options, env: { NODE_OPTIONS: `--require ${JSON.stringify(SKEWED_CLOCK)}`, PROSPECT_TEST_CLOCK_SKEW_MS: String(skewMs), ...options.env } });

/**
 * A session from a real device login whose access token has expired on the server a second
 * ago (by the server's clock, which stamped it); its refresh token is good for 30 days.
 */
async function sessionExpiredOnTheServer() {
  const { body } = await authorizedPoll(api, person);
  const expiresAt = await expireAccessToken(api, body.accessToken);
  const me = await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${body.accessToken}` } });
  expect(me.status).toBe(401);
  expect(me.headers.get('www-authenticate')).toContain('error_description="token expired"');
  const session = {
    accessToken: body.accessToken as string,
    refreshToken: body.refreshToken as string,
    apiBaseUrl: api.baseUrl,
    user: body.user,
    expiresAt: expiresAt.toISOString(),
    createdAt: new Date(expiresAt.getTime() - 3_600_000).toISOString(),
  };
  await box.writeSession(session);
  return session;
}

const meStatus = async (token: string) => (await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${token}` } })).status;

/** The offset the CLI keeps for the API, beside the session file. */
const keptOffsetMs = async () => JSON.parse(await readFile(join(box.configDir, 'auth-session.clock.json'), 'utf8')).servers[api.baseUrl].offsetMs as number;

describe.each([
  ['10 minutes behind', TEN_MINUTES_BEHIND],
  ['an hour ahead of', AN_HOUR_AHEAD],
])('a CLI whose clock is %s the server', (_, skewMs) => {
  it('`prospect api /api/cli/auth/me` renews the expired access token and runs; the next command neither fails nor renews again', async () => {
    const old = await sessionExpiredOnTheServer();

    const run = await runSkewed(skewMs, ['api', ROUTES.me]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout).user.email).toBe(person.email);
    const renewed = await box.readSession();
    expect(renewed.refreshToken).not.toBe(old.refreshToken);
    expect(await meStatus(renewed.accessToken)).toBe(200);
    // The server's clock minus this machine's, to the second or two that `Date` allows.
    expect(Math.abs(await keptOffsetMs() - -skewMs)).toBeLessThan(3_000);
    // createdAt is by the server's clock, as expiresAt: the pair's lifetime is an hour.
    expect(Date.parse(renewed.expiresAt) - Date.parse(renewed.createdAt)).toBeGreaterThan(3_500_000);

    const next = await runSkewed(skewMs, ['api', ROUTES.me]);
    expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: '' });
    const whoami = await runSkewed(skewMs, ['auth:whoami']);
    expect(whoami.code).toBe(0);
    // By the server's clock: this machine's would say 50 or 0 minutes.
    expect(whoami.stdout).toMatch(/Access token expires .* \(in 60 minutes\); renewed automatically/);
    expect((await box.readSession()).refreshToken).toBe(renewed.refreshToken);
    expect(await familyEvents(api, old.accessToken)).toEqual(['token.refresh']);
  });

  it('`auth:whoami --verify` renews the expired access token, verifies it and keeps the session', async () => {
    const old = await sessionExpiredOnTheServer();

    const run = await runSkewed(skewMs, ['auth:whoami', '--verify']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`Logged in to ${api.baseUrl} as Grace Hopper <${person.email}> (verified)`);
    expect(run.stdout).toContain('Refreshed the session: a new access token and refresh token are saved.');
    expect(run.stdout).toMatch(/Access token expires .* \(in 60 minutes\); renewed automatically/);
    expect(box.hasSession()).toBe(true);
    const renewed = await box.readSession();
    expect(renewed.refreshToken).not.toBe(old.refreshToken);
    expect(await meStatus(renewed.accessToken)).toBe(200);

    const again = await runSkewed(skewMs, ['auth:whoami', '--verify', '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ expired: false, verified: true, refreshed: false });
    expect(await familyEvents(api, old.accessToken)).toEqual(['token.refresh']);
  });
});

describe.each([
  ['10 minutes behind', TEN_MINUTES_BEHIND],
  ['an hour ahead of', AN_HOUR_AHEAD],
])('auth:status and auth:login on a CLI whose clock is %s the server', (_, skewMs) => {
  it('`auth:status --verify` renews an access token the server holds expired, calls it valid, and `auth:status` then judges expiry by the server\'s clock', async () => {
    const old = await sessionExpiredOnTheServer();

    const verified = await runSkewed(skewMs, ['auth:status', '--verify']);
    expect({ code: verified.code, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
    expect(verified.stdout).toContain('Server says:  the token is valid\n');
    expect(verified.stdout).toContain('Refreshed:    just now: a new access token and refresh token are saved\n');
    expect(verified.stdout).toMatch(/Expires: +\S+ \S+ UTC \(in 60 minutes\)\n/);
    const renewed = await box.readSession();
    expect(renewed.refreshToken).not.toBe(old.refreshToken);
    expect(await meStatus(renewed.accessToken)).toBe(200);

    // Without --verify nothing is asked: the offset kept beside the session judges the expiry.
    const local = await runSkewed(skewMs, ['auth:status', '--json']);
    expect(local.code).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ expired: false, usable: true });
    const shown = await runSkewed(skewMs, ['auth:status']);
    expect(shown.stdout).toMatch(/Expires: +\S+ \S+ UTC \(in 60 minutes\)\n/);
    expect(await familyEvents(api, old.accessToken)).toEqual(['token.refresh']);
  });

  it('`auth:login` (device and --token) saves createdAt by the server\'s clock and names the lifetime the server gave', async () => {
    const device = await runSkewed(skewMs, ['auth:login', '--api-url', api.baseUrl], {
      onStarted: (_child, output) => {
        const whenShown = setInterval(() => {
          const userCode = /shows the code ([A-Z]{4}-[A-Z]{4})/.exec(output())?.[1];
          if (userCode) {
            clearInterval(whenShown);
            void approve(api, userCode, person);
          }
        }, 50);
      },
    });
    expect(device.code).toBe(0);
    // This machine's clock would say 70 or 0 minutes.
    expect(device.stderr).toMatch(/\(the access token lasts 60 minutes and is renewed automatically\)\.\n$/);
    const session = await box.readSession();
    expect(Math.abs(Date.parse(session.createdAt) - Date.now())).toBeLessThan(5_000);
    expect(Date.parse(session.expiresAt) - Date.parse(session.createdAt)).toBeGreaterThan(3_500_000);

    const pasted = await runSkewed(skewMs, ['auth:login', '--api-url', api.baseUrl, '--token', '-'], { stdin: await cliToken(api, person) });
    expect(pasted.code).toBe(0);
    expect(Math.abs(Date.parse((await box.readSession()).createdAt) - Date.now())).toBeLessThan(5_000);
  });
});

describe('what ends a session: the server refusing its refresh token, and nothing else', () => {
  const refusedAsExpired = (res: Parameters<typeof json>[0]) =>
    json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'The token has expired.' }, { 'www-authenticate': 'Bearer realm="prospect", error="invalid_token", error_description="token expired"' });
  const refusedAsRevoked = (res: Parameters<typeof json>[0]) =>
    json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'The token was revoked.' }, { 'www-authenticate': 'Bearer realm="prospect", error="invalid_token", error_description="token revoked"' });

  it('auth:whoami --verify with a refused access token and a refresh the server cannot answer: the session is kept, exit 1', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_q, _b, res) => refusedAsRevoked(res),
      'POST /api/cli/auth/refresh': (_q, _b, res) => json(res, 503, { statusCode: 503, error: 'service_unavailable', message: 'The database is unavailable.' }),
    });
    try {
      const session = validSession(backend.url, { refreshToken: 'prsr_live' });
      await box.writeSession(session);
      const run = await box.run(['auth:whoami', '--verify']);
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toBe('Error: Could not refresh the session: The database is unavailable.\nThe session is kept; try again when the server is back.\n');
      expect(await box.readSession()).toEqual(session);
    } finally {
      await backend.close();
    }
  });

  it('auth:whoami --verify for a disabled account: the refresh is refused too, so the session goes, and the line says who can help', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_q, _b, res) =>
        json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'Account disabled.' }, { 'www-authenticate': 'Bearer realm="prospect", error="invalid_token", error_description="account disabled"' }),
      'POST /api/cli/auth/refresh': (_q, _b, res) => json(res, 401, { statusCode: 401, error: 'invalid_grant', message: 'This session has been revoked.' }),
    });
    try {
      await box.writeSession(validSession(backend.url, { refreshToken: 'prsr_of_a_disabled_account' }));
      const run = await box.run(['auth:whoami', '--verify']);
      expect(run).toMatchObject({ code: 4, stdout: '' });
      expect(run.stderr).toBe(`Error: Your account is disabled on ${backend.url}; removed the local session — ask an administrator of that service to enable it.\n`);
      expect(box.hasSession()).toBe(false);
      expect(backend.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /api/cli/auth/me', 'POST /api/cli/auth/refresh']);
    } finally {
      await backend.close();
    }
  });

  it('a refresh answered 401 by something that is not the server refusing the grant (a proxy): the session is kept, exit 1', async () => {
    const backend = await fakeBackend({
      'GET /x': (_q, _b, res) => refusedAsExpired(res),
      'POST /api/cli/auth/refresh': (_q, _b, res) => {
        res.writeHead(401, { 'content-type': 'text/html', 'www-authenticate': 'Basic realm="corp proxy"' });
        res.end('<h1>Proxy authentication</h1>');
      },
    });
    try {
      const session = validSession(backend.url, { refreshToken: 'prsr_live' });
      await box.writeSession(session);
      const run = await box.run(['api', '/x']);
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toContain('Could not refresh the session: POST /api/cli/auth/refresh failed with HTTP 401.');
      expect(await box.readSession()).toEqual(session);
    } finally {
      await backend.close();
    }
  });

  it('a refresh token the server refuses (invalid_grant): the session is removed, one line says so, and nothing is revoked', async () => {
    const backend = await fakeBackend({
      'GET /x': (_q, _b, res) => refusedAsExpired(res),
      'POST /api/cli/auth/refresh': (_q, _b, res) =>
        json(res, 401, { statusCode: 401, error: 'invalid_grant', message: 'This session has been revoked.' }, { 'www-authenticate': 'Bearer realm="prospect"' }),
    });
    try {
      await box.writeSession(validSession(backend.url, { refreshToken: 'prsr_refused' }));
      const run = await box.run(['api', '/x']);
      expect(run).toEqual({
        code: 4,
        signal: null,
        stdout: '',
        stderr: `Error: This session has been revoked. The local session is removed — run \`prospect auth:login --api-url ${backend.url}\`.\n`,
      });
      expect(box.hasSession()).toBe(false);
      // No revocation, no logout: the request, the refresh, and nothing after.
      expect(backend.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /x', 'POST /api/cli/auth/refresh']);
      expect(existsSync(`${box.sessionPath}.lock`)).toBe(false);
    } finally {
      await backend.close();
    }
  });
});
