/**
 * The built `prospect` binary against the real API on a fresh database:
 * token login, whoami, logout, the guard, and a device login approved the way
 * the approval page does it.
 */
import { existsSync } from 'node:fs';
import { mkdir, utimes } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROUTES } from '@prospect/contract';
import { AccountService } from '../../../api/src/accounts/account.service.js';
import { AdminUsersService } from '../../../api/src/admin/admin-users.service.js';
import { validSession } from '../support/run-cli.js';
import { familyEvents } from '../support/api-fixtures.js';
import { approve, authorizedPoll, cliToken, createUser, deny, requestsLoggedFor } from '../support/real-api.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('real');

const meStatus = async (token: string) => (await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${token}` } })).status;

describe('auth:login --token', () => {
  it('verifies the token with GET /me, then writes the session', async () => {
    const token = await cliToken(api, person);
    const run = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Logged in as Grace Hopper <${person.email}> on ${api.baseUrl}.\n`);
    expect(run.stderr).toMatch(/^Session saved to .*auth-session\.json \(expires in 30 days\)\.\n$/);
    const session = await box.readSession();
    expect(session).toEqual({
      accessToken: token,
      apiBaseUrl: api.baseUrl,
      user: { id: person.id, email: person.email, name: 'Grace Hopper' },
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  });

  it('reads the token from stdin with --token - (out of shell history and ps)', async () => {
    const token = await cliToken(api, person);
    const run = await box.run(['auth:login', '--token', '-'], { env: { PROSPECT_API_BASE_URL: api.baseUrl }, stdin: `${token}\n` });
    expect(run.code).toBe(0);
    expect((await box.readSession()).accessToken).toBe(token);
  });

  it('writes nothing when the server refuses the token, and says why', async () => {
    const unknown = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', `prs_${'x'.repeat(43)}`]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      `Error: ${api.baseUrl} refused the token: it is not a valid token. Nothing was saved.\nCreate a new one at ${api.baseUrl}/settings/tokens\n`,
    );
    const revokedToken = await cliToken(api, person);
    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${revokedToken}` } });
    const revoked = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', revokedToken]);
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toContain('refused the token: it was revoked.');
    expect(box.hasSession()).toBe(false);
  });
});

describe('auth:whoami', () => {
  it('reads the session file alone; --verify round-trips /me and refreshes the stored user', async () => {
    const token = await cliToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);

    const local = await box.run(['auth:whoami']);
    expect(local.code).toBe(0);
    expect(local.stdout).toMatch(new RegExp(`^Logged in to ${api.baseUrl} as Grace Hopper <${person.email}>\nSession expires .* \\(in 30 days\\)\n$`));

    // She renames herself on her account page, as a person does.
    await api.app.get(AccountService).rename(person.id, 'Rear Admiral Grace Hopper', null);
    const verified = await box.run(['auth:whoami', '--verify', '--json']);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toEqual({
      user: { id: person.id, email: person.email, name: 'Rear Admiral Grace Hopper' },
      apiBaseUrl: api.baseUrl,
      expiresAt: expect.any(String),
      expired: false,
      verified: true,
      refreshed: false,
      refreshable: false,
      // The CLI's tokens have `orgs` (issue #44): /me lists her organizations, and none is active.
      organization: null,
      organizations: [],
    });
    expect((await box.readSession()).user.name).toBe('Rear Admiral Grace Hopper');
    await api.app.get(AccountService).rename(person.id, 'Grace Hopper', null);
  });

  it('--verify with a revoked token: says so, removes the local session, with the fix, exit 4', async () => {
    const token = await cliToken(api, person);
    await box.writeSession(validSession(api.baseUrl, { accessToken: token }));
    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const run = await box.run(['auth:whoami', '--verify']);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(
      `Error: Your token was revoked (logged out elsewhere, or by an admin) (${api.baseUrl}); removed the local session — run \`prospect auth:login --api-url ${api.baseUrl}\`.\n`,
    );
    expect(box.hasSession()).toBe(false);
  });
  it('--verify for a disabled account: says so and who can help, not to log in again, exit 4', async () => {
    const token = await cliToken(api, person);
    await box.writeSession(validSession(api.baseUrl, { accessToken: token }));
    // An administrator disables her, as on /admin/users: that revokes her tokens too, but the server names the disabled account first.
    const admin = await createUser(api, { role: 'admin' });
    const adminUsers = api.app.get(AdminUsersService);
    await adminUsers.update(person.id, { disabled: true }, admin.id, null);
    try {
      const run = await box.run(['auth:whoami', '--verify']);
      expect(run.code).toBe(4);
      expect(run.stderr).toBe(`Error: Your account is disabled on ${api.baseUrl}; removed the local session — ask an administrator of that service to enable it.\n`);
    } finally {
      await adminUsers.update(person.id, { disabled: false }, admin.id, null);
    }
  });
});

describe('auth:logout', () => {
  it('forgets a pasted token without revoking it (it may be in use elsewhere), and says how to; --revoke revokes it', async () => {
    const token = await cliToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    const run = await box.run(['auth:logout']);
    expect(run).toMatchObject({
      code: 0,
      stdout:
        `Logged out of ${api.baseUrl}. The token you pasted was only forgotten here and still works wherever else it is used:\n` +
        `revoke it at ${api.baseUrl}/settings/tokens, or log in with it again and run \`prospect auth:logout --revoke\`.\n`,
    });
    expect(box.hasSession()).toBe(false);
    expect(await meStatus(token)).toBe(200);

    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    const revoking = await box.run(['auth:logout', '--revoke']);
    expect(revoking).toMatchObject({ code: 0, stdout: `Logged out of ${api.baseUrl} and revoked the token on the server.\n` });
    expect(await meStatus(token)).toBe(401);
  });
});

describe('the guard in front of `prospect api`', () => {
  it('runs the request with a valid session', async () => {
    const token = await cliToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    const run = await box.run(['api', ROUTES.me]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ user: { id: person.id, email: person.email } });
  });

  it('an expired session: exit 4 before the command’s code runs (the API never sees the request)', async () => {
    const token = await cliToken(api, person);
    await box.writeSession(validSession(api.baseUrl, { accessToken: token, expiresAt: new Date(Date.now() - 60_000).toISOString() }));
    const probe = `/api/guard-probe-expired-${Date.now()}`;
    const run = await box.run(['api', probe]);
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/^Error: Session expired at .* — run `prospect auth:login --api-url http:\/\/[^`]+`\.\n$/);
    expect(run.stderr).toContain(`--api-url ${api.baseUrl}\``);
    expect(requestsLoggedFor(api, probe)).toBe(0);
  });

  it('a session for another backend: refused, the token is not sent anywhere', async () => {
    const token = await cliToken(api, person);
    await box.writeSession(validSession('http://prospect.example.com', { accessToken: token }));
    const probe = `/api/guard-probe-other-${Date.now()}`;
    const run = await box.run(['api', probe, '--api-url', api.baseUrl]);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`Your session is for http://prospect.example.com, not ${api.baseUrl}`);
    expect(requestsLoggedFor(api, probe)).toBe(0);
  });

  it('PROSPECT_SKIP_AUTH=1 bypasses it, with a warning on stderr', async () => {
    const run = await box.run(['api', '/api/health'], { env: { PROSPECT_SKIP_AUTH: '1', PROSPECT_API_BASE_URL: api.baseUrl } });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('warning: PROSPECT_SKIP_AUTH=1 — skipping the login check (for tests and local development only)\n');
    expect(JSON.parse(run.stdout)).toMatchObject({ status: expect.any(String) });
  });
});

describe('auth:login (device login, plain output)', () => {
  /** Runs `auth:login` and, once the code is on screen, lets `decide` act on it as the person would. */
  const loginAnd = (decide: (userCode: string) => Promise<unknown>) =>
    box.run(['auth:login', '--api-url', api.baseUrl], {
      onStarted: (_child, output) => {
        const whenShown = setInterval(() => {
          const userCode = /shows the code ([A-Z]{4}-[A-Z]{4})/.exec(output())?.[1];
          if (userCode) {
            clearInterval(whenShown);
            void decide(userCode);
          }
        }, 50);
      },
    });

  it('approved: "Logged in as Name <email>", session written', async () => {
    const run = await loginAnd((code) => approve(api, code, person));
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^To log in, open ${api.baseUrl}/device\\?user_code=[A-Z]{4}-[A-Z]{4}\\n`));
    expect(run.stdout).toContain(`Logged in as Grace Hopper <${person.email}> on ${api.baseUrl}.`);
    const session = await box.readSession();
    expect(await meStatus(session.accessToken)).toBe(200);
    expect(session.refreshToken).toMatch(/^prsr_/);
    expect(run.stderr).toMatch(/Session saved to .*auth-session\.json \(the access token lasts 60 minutes and is renewed automatically\)\./);
  });

  it('logging in again ends the replaced session on the server', async () => {
    const { body } = await authorizedPoll(api, person);
    await box.writeSession({ ...validSession(api.baseUrl), accessToken: body.accessToken, refreshToken: body.refreshToken, user: body.user });
    const run = await loginAnd((code) => approve(api, code, person));
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`Replaced the session of Grace Hopper <${person.email}> on ${api.baseUrl} (signed out on the server).`);
    expect(await meStatus(body.accessToken)).toBe(401);
    expect(await meStatus((await box.readSession()).accessToken)).toBe(200);
  });

  it('denied: a clear failure, exit 1, nothing written', async () => {
    const run = await loginAnd((code) => deny(api, code, person));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Error: Login was denied in the browser, or the code expired.');
    expect(box.hasSession()).toBe(false);
  });
});

describe('refreshing the session (issue #14)', () => {
  /** A session from a real device login whose access token the CLI must treat as expired. */
  const expiredSession = async () => {
    const { body } = await authorizedPoll(api, person);
    const session = {
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
      apiBaseUrl: api.baseUrl,
      user: body.user,
      expiresAt: new Date(Date.now() - 1000).toISOString(),
      createdAt: new Date(Date.now() - 3_600_000).toISOString(),
    };
    await box.writeSession(session);
    return session;
  };

  it('an expired access token with a valid refresh token: the guard renews it, the command runs, the file holds the new pair', async () => {
    const old = await expiredSession();
    const run = await box.run(['api', '/api/cli/auth/me']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).user.email).toBe(person.email);
    const renewed = await box.readSession();
    expect(renewed).toEqual({ ...old, accessToken: expect.stringMatching(/^prs_/), refreshToken: expect.stringMatching(/^prsr_/), expiresAt: expect.any(String), createdAt: expect.any(String) });
    // createdAt is when the current pair was obtained: it sizes the refresh margin.
    expect(Date.parse(renewed.createdAt)).toBeGreaterThan(Date.parse(old.createdAt));
    expect(renewed.accessToken).not.toBe(old.accessToken);
    expect(renewed.refreshToken).not.toBe(old.refreshToken);
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThan(Date.now() + 3_500_000);
    expect(await meStatus(renewed.accessToken)).toBe(200);
  });

  it('two CLI processes refreshing at once both succeed, with one refresh on the server and no reuse', async () => {
    const old = await expiredSession();
    const runs = await Promise.all([box.run(['api', '/api/cli/auth/me']), box.run(['auth:token']), box.run(['api', '/api/cli/auth/me'])]);
    for (const run of runs) expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const renewed = await box.readSession();
    expect(runs[1]!.stdout).toBe(`${renewed.accessToken}\n`);
    expect(await meStatus(renewed.accessToken)).toBe(200);
    expect(await familyEvents(api, old.accessToken)).toEqual(['token.refresh']);
    expect(existsSync(`${box.sessionPath}.lock`)).toBe(false);
  });

  it('a lock left by a process killed mid-refresh is taken over', async () => {
    await expiredSession();
    const lock = `${box.sessionPath}.lock`;
    await mkdir(lock);
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(lock, longAgo, longAgo);
    const run = await box.run(['auth:token']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${(await box.readSession()).accessToken}\n`);
    expect(existsSync(lock)).toBe(false);
  });

  it('auth:status tells that an expired access token is renewed by the next command; --verify renews it', async () => {
    await expiredSession();
    const offline = await box.run(['auth:status', '--json']);
    expect(offline.code).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ expired: true, usable: true, refreshToken: true });
    const verified = await box.run(['auth:status', '--verify']);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain('Server says:  the token is valid');
    // A device login asks for `profile tokens orgs` by default: `admin` only with `--scopes`.
    expect(verified.stdout).toContain("Token scopes: 'profile', 'tokens', 'orgs'\n");
    expect(verified.stdout).toMatch(/Expires: {6}\d{4}-.* \(in 60 minutes\)/);
  });

  it('a revoked family: the session is removed and the command exits 4 with the login hint', async () => {
    const old = await expiredSession();
    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${old.accessToken}` } });
    const run = await box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_API_BASE_URL: api.baseUrl } });
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(`Error: This session has been revoked. The local session is removed — run \`prospect auth:login --api-url ${api.baseUrl}\`.\n`);
    expect(box.hasSession()).toBe(false);
  });

  it('a server out of reach keeps the session and exits 1', async () => {
    const old = await expiredSession();
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    await box.writeSession({ ...old, apiBaseUrl: `http://127.0.0.1:${closed}` });
    const run = await box.run(['api', '/api/cli/auth/me']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^Error: Could not refresh the session: Cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    expect((await box.readSession()).refreshToken).toBe(old.refreshToken);
  });

  it('auth:whoami --verify refreshes when needed and says so', async () => {
    await expiredSession();
    const run = await box.run(['auth:whoami', '--verify']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Refreshed the session: a new access token and refresh token are saved.');
    expect(run.stdout).toMatch(/\(verified\)/);
    expect(run.stdout).toMatch(/Access token expires .* \(in 60 minutes\); renewed automatically/);
  });

  it('auth:logout revokes the whole family on the server, even with the access token expired', async () => {
    const old = await expiredSession();
    const run = await box.run(['auth:logout']);
    expect(run.stdout).toBe(`Logged out of ${api.baseUrl} and revoked the token on the server.\n`);
    const refresh = await fetch(api.baseUrl + ROUTES.refresh, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: old.refreshToken }) });
    expect(refresh.status).toBe(401);
    expect(await meStatus(old.accessToken)).toBe(401);
  });
});
