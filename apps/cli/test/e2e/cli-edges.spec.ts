/**
 * The CLI's edges (issue #36, item 2), the built binary against the real API: PROSPECT_TOKEN in
 * every command, a backend typed without a scheme or with a path of the service, a logout while
 * the server is out of reach, and what GET /me says of the grant that made a token.
 */
import { ROUTES } from '@prospect/contract';
import { validSession } from '../support/run-cli.js';
import { authorizedPoll, cliToken, createUser } from '../support/real-api.js';
import { fakeBackend } from '../support/fake-backend.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('edges');

/** A session from a real device login, written where the CLI keeps it. */
async function deviceSession() {
  const { body } = await authorizedPoll(api, person);
  const session = validSession(api.baseUrl, { accessToken: body.accessToken, refreshToken: body.refreshToken, user: body.user, expiresAt: body.expiresAt });
  await box.writeSession(session);
  return session;
}

/** An address on this machine where nothing listens (a server that is down). */
async function downServerUrl(): Promise<string> {
  const backend = await fakeBackend({});
  await backend.close();
  return backend.url;
}

describe('PROSPECT_TOKEN, in every command', () => {
  it('auth:whoami says who the token in PROSPECT_TOKEN is, even with no session file, and never "Not logged in"', async () => {
    const token = await cliToken(api, person);
    const env = { PROSPECT_TOKEN: token, PROSPECT_API_BASE_URL: api.baseUrl };
    const run = await box.run(['auth:whoami'], { env });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(
      new RegExp(`^Logged in to ${api.baseUrl} as Grace Hopper <${person.email}> \\(verified\\), with the token in PROSPECT_TOKEN\nToken expires .* \\(in 30 days\\)\n$`),
    );
    const json = await box.run(['auth:whoami', '--json'], { env });
    expect(JSON.parse(json.stdout)).toEqual({
      user: { id: person.id, email: person.email, name: 'Grace Hopper' },
      apiBaseUrl: api.baseUrl,
      expiresAt: expect.stringMatching(/^\d{4}-/),
      expired: false,
      verified: true,
      refreshed: false,
      refreshable: false,
      tokenSource: 'PROSPECT_TOKEN',
      organization: null,
      organizations: [],
    });
    expect(box.hasSession()).toBe(false);
  });

  it('beats the session file in auth:whoami, auth:status, auth:token and api alike; a refused one says what to do about the variable', async () => {
    const other = await createUser(api, { name: 'Ada Lovelace' });
    await box.writeSession(validSession(api.baseUrl, { accessToken: await cliToken(api, other), user: { id: other.id, email: other.email, name: other.name } }));
    const token = await cliToken(api, person);
    const env = { PROSPECT_TOKEN: token, PROSPECT_API_BASE_URL: api.baseUrl };

    expect((await box.run(['auth:whoami'], { env })).stdout).toContain(`as Grace Hopper <${person.email}>`);
    expect((await box.run(['auth:whoami', '--verify'], { env })).stdout).toContain(`as Grace Hopper <${person.email}>`);
    expect((await box.run(['auth:status', '--verify'], { env })).stdout).toContain(`User:         Grace Hopper <${person.email}>`);
    expect(await box.run(['auth:token'], { env })).toMatchObject({ code: 0, stdout: `${token}\n` });
    const me = await box.run(['api', ROUTES.me], { env });
    expect(JSON.parse(me.stdout).user.email).toBe(person.email);
    expect((await box.run(['auth:login', '--token', token], { env })).stderr).toContain('Warning: PROSPECT_TOKEN is set');
    expect(await box.run(['auth:logout'], { env })).toMatchObject({ code: 1, stderr: expect.stringContaining('PROSPECT_TOKEN is set') });

    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const refused = await box.run(['auth:whoami'], { env });
    expect(refused).toEqual({
      code: 4,
      signal: null,
      stdout: '',
      stderr: `Error: ${api.baseUrl} refused the token in PROSPECT_TOKEN: it is revoked.\nSet PROSPECT_TOKEN to a valid token, or unset it to use your session.\n`,
    });
  });
});

describe('a backend given without a scheme, or with a path of the service', () => {
  it.each([
    ['localhost:3000', 'http://localhost:3000'],
    ['127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['prospect.example.com', 'https://prospect.example.com'],
  ])('--api-url %s: "did you mean %s?", exit 2, in every command that takes it', async (given, meant) => {
    for (const args of [['auth:login'], ['auth:login', '--token', 'prs_x'], ['auth:whoami'], ['auth:status'], ['auth:token'], ['api', '/x']]) {
      const run = await box.run([...args, '--api-url', given]);
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(run.stderr.split('\n')[0]).toBe(`Error: "${given}" has no scheme: did you mean ${meant}?`);
    }
    // PROSPECT_API_BASE_URL is held to the same.
    const fromEnv = await box.run(['auth:login'], { env: { PROSPECT_API_BASE_URL: given } });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain(`did you mean ${meant}?`);
  });

  it('--api-url <server>/api: a hint naming the base, exit 2, and the server hears nothing', async () => {
    const before = api.logs().length;
    for (const path of ['/api', '/api/', '/settings/tokens']) {
      const run = await box.run(['auth:login', '--api-url', `${api.baseUrl}${path}`]);
      expect(run.code).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(`Error: ${api.baseUrl}${path.replace(/\/$/, '')} is a path of the Prospect service, not its base URL: did you mean ${api.baseUrl}?`);
      expect(run.stderr).not.toMatch(/does not offer device login|404/);
    }
    expect(api.logs().slice(before)).not.toContain(ROUTES.deviceStart);
  });

  it('--api-url <server>/<a prefix it does not serve>: not "does not offer device login" but the base, and the hinted command logs in', async () => {
    const prefixed = `${api.baseUrl}/prospect`;
    const device = await box.run(['auth:login', '--api-url', prefixed]);
    expect(device).toEqual({
      code: 1,
      signal: null,
      stdout: '',
      stderr:
        `Error: ${prefixed} is not the base URL of a Prospect service: ${prefixed}${ROUTES.deviceStart} was not found (HTTP 404).\n` +
        `Its base is usually the server's address, without a path: did you mean ${api.baseUrl}? Then run \`prospect auth:login --api-url ${api.baseUrl}\`.\n`,
    });
    const token = await cliToken(api, person);
    const pasted = await box.run(['auth:login', '--api-url', prefixed, '--token', '-'], { stdin: token });
    expect(pasted.code).toBe(1);
    const hinted = /Then run `(prospect [^`]+)`/.exec(pasted.stderr)?.[1];
    expect(hinted).toBe(`prospect auth:login --api-url ${api.baseUrl} --token -`);
    expect(box.hasSession()).toBe(false);

    const run = await box.run(hinted!.split(' ').slice(1), { stdin: token });
    expect(run).toMatchObject({ code: 0, stdout: `Logged in as Grace Hopper <${person.email}> on ${api.baseUrl}.\n` });
  });
});

describe('auth:logout while the server is out of reach', () => {
  it('removes the session and says, in one line, for how long its refresh token may still work there and where to revoke it', async () => {
    const down = await downServerUrl();
    const twentyDaysAgo = new Date(Date.now() - 20 * 24 * 3600_000).toISOString();
    await box.writeSession(validSession(down, { refreshToken: `prsr_${'b'.repeat(43)}`, createdAt: twentyDaysAgo }));
    const run = await box.run(['auth:logout']);
    expect(run).toEqual({
      code: 0,
      signal: null,
      stderr: '',
      stdout:
        `Logged out of ${down} (the server could not be told; the local session is removed).\n` +
        `Its refresh token may still be valid on the server for up to 10 days: revoke the session at ${down}/settings/tokens.\n`,
    });
    expect(box.hasSession()).toBe(false);
  });

  it('a pasted token with --revoke: says until when it still works and where to revoke it', async () => {
    const down = await downServerUrl();
    await box.writeSession(validSession(down, { expiresAt: '2030-01-02T03:04:05.000Z' }));
    const run = await box.run(['auth:logout', '--revoke']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `Logged out of ${down} (the server could not be told; the local session is removed).\n` +
        `The token still works until 2030-01-02 03:04 UTC: revoke it at ${down}/settings/tokens.\n`,
    );
  });

  it('with the server up, a device login is revoked there and no such line is printed', async () => {
    const session = await deviceSession();
    const run = await box.run(['auth:logout']);
    expect(run).toMatchObject({ code: 0, stdout: `Logged out of ${api.baseUrl} and revoked the token on the server.\n` });
    expect((await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${session.accessToken}` } })).status).toBe(401);
  });
});

describe('which grant made a token (GET /me madeWith)', () => {
  it('auth:status --verify shows "Made with" for a token made with a CLI session, and nothing for the session itself', async () => {
    await deviceSession();
    const own = await box.run(['auth:status', '--verify']);
    expect(own.code).toBe(0);
    expect(own.stdout).not.toContain('Made with');

    const made = await box.run(['api', '-X', 'POST', ROUTES.issueToken, '-f', 'label=ci']);
    expect(made.code).toBe(0);
    const { accessToken } = JSON.parse(made.stdout);
    const env = { PROSPECT_TOKEN: accessToken, PROSPECT_API_BASE_URL: api.baseUrl };
    const status = await box.run(['auth:status', '--verify'], { env });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('Made with:    the Prospect CLI session on laptop\n');
    expect(JSON.parse((await box.run(['auth:status', '--verify', '--json'], { env })).stdout).madeWith).toBe('the Prospect CLI session on laptop');
  });
});
