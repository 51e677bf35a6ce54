/**
 * `prospect auth:refresh --scopes` (issue #48, item 4): the built binary against the real API.
 * A new device login of the same account with other scopes replaces the session and ends the
 * old one on the server; another account's approval is refused and the old session kept.
 */
import { ROUTES } from '@prospect/contract';
import { authEvents } from '../../../api/test/support/fixtures.js';
import { approve, cliToken, createUser } from '../support/real-api.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('refresh');

const meStatus = async (token: string) => (await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${token}` } })).status;
const refreshStatus = async (refreshToken: string) =>
  (await fetch(api.baseUrl + ROUTES.refresh, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken }) })).status;

/** Runs `args` and, once a device login's code is shown (plain lines, on stdout or stderr), approves it as `approver`. */
const runApproving = (args: string[], approver: { id: string }) =>
  box.run(args, {
    onStarted: (_child, output) => {
      const whenShown = setInterval(() => {
        const userCode = /shows the code ([A-Z]{4}-[A-Z]{4})/.exec(output())?.[1];
        if (userCode) {
          clearInterval(whenShown);
          void approve(api, userCode, approver);
        }
      }, 50);
    },
  });

/** A session of `person` with only `profile`, from a real device login. */
async function loginWithProfileOnly() {
  const login = await runApproving(['auth:login', '--api-url', api.baseUrl, '--scopes', 'profile'], person);
  expect(login.code).toBe(0);
  return box.readSession();
}

describe('auth:refresh --scopes', () => {
  it('more scopes: a new approval of the same account, the scopes in auth:status --verify --json, the old session ended on the server', async () => {
    const old = await loginWithProfileOnly();
    const before = await box.run(['auth:status', '--verify', '--json']);
    expect(JSON.parse(before.stdout).scopes).toEqual(['profile']);

    const run = await runApproving(['auth:refresh', '--scopes', 'profile,tokens', '--json'], person);
    expect(run.code).toBe(0);
    // --json: stdout is the JSON alone; the link and the code went to stderr.
    expect(JSON.parse(run.stdout)).toEqual({
      server: api.baseUrl,
      user: { id: person.id, email: person.email, name: 'Grace Hopper' },
      scopes: ['profile', 'tokens'],
      requestedScopes: ['profile', 'tokens'],
      expiresAt: expect.any(String),
      oldSessionEnded: true,
    });
    expect(run.stderr).toContain('shows the code');

    const now = await box.readSession();
    expect(now.user.id).toBe(old.user.id);
    expect(now.accessToken).not.toBe(old.accessToken);
    const status = await box.run(['auth:status', '--verify', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ scopes: ['profile', 'tokens'], serverSays: 'valid', user: { id: person.id } });
    // No stray grant: the old pair no longer works.
    expect(await refreshStatus(old.refreshToken!)).toBe(401);
    expect(await meStatus(old.accessToken)).toBe(401);
  });

  it('fewer scopes, in plain lines', async () => {
    await runApproving(['auth:login', '--api-url', api.baseUrl], person);
    const run = await runApproving(['auth:refresh', '--scopes', 'profile'], person);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Refreshed the session of Grace Hopper <${person.email}> on ${api.baseUrl}: its scopes are 'profile'.\n`);
    expect(run.stderr).toContain('The previous session was signed out on the server.');
  });

  it('a session of a pasted token: replaced, and the token only forgotten here, as auth:logout does', async () => {
    const token = await cliToken(api, person);
    expect((await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token])).code).toBe(0);
    const run = await runApproving(['auth:refresh', '--scopes', 'profile'], person);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`The token you had pasted was only forgotten here and still works wherever else it is used: revoke it at ${api.baseUrl}/settings/tokens.`);
    expect((await box.readSession()).refreshToken).toMatch(/^prsr_/);
    expect(await meStatus(token)).toBe(200);
  });

  it('another account approving is refused: one line, exit 1, the old session kept and still working', async () => {
    const old = await loginWithProfileOnly();
    const other = await createUser(api, { name: 'Ada Lovelace', email: `ada-refresh-${Date.now()}@example.com` });
    const run = await runApproving(['auth:refresh', '--scopes', 'profile,tokens'], other);
    expect(run.code).toBe(1);
    const errors = run.stderr.split('\n').filter((line) => line.startsWith('Error:'));
    expect(errors).toEqual([
      `Error: Refused: Ada Lovelace <${other.email}> approved it, not Grace Hopper <${person.email}> whose session this is; your session is unchanged and the new one was signed out on the server.`,
    ]);
    expect(await box.readSession()).toEqual(old);
    expect(await meStatus(old.accessToken)).toBe(200);
    // The session the other account approved is ended on the server, not left as a stray grant.
    expect((await authEvents(api, { userId: other.id })).map((event) => event.type)).toContain('token.revoke_family');
    const status = await box.run(['auth:status', '--verify', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ scopes: ['profile'], user: { id: person.id } });
  });

  it('not logged in: exit 4 with the login command', async () => {
    const run = await box.run(['auth:refresh', '--scopes', 'profile,tokens']);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe('Error: Not logged in — run `prospect auth:login`.\n');
  });

  it.each([
    [['--scopes', 'profile,billing'], 'Error: --scopes takes a comma-separated list of profile, tokens, admin, orgs; got unknown scope "billing".'],
    [['--scopes', ','], 'Error: --scopes takes a comma-separated list of profile, tokens, admin, orgs; got no scope.'],
    [[], 'Error: auth:refresh needs --scopes, the scopes the session should have (for example --scopes profile,tokens,admin).'],
  ])('a bad --scopes (%j): exit 2, one error line, the session untouched', async (args, message) => {
    const old = await loginWithProfileOnly();
    const run = await box.run(['auth:refresh', ...args]);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(message);
    expect(run.stderr.split('\n').filter((line) => line.startsWith('Error:'))).toHaveLength(1);
    expect(await box.readSession()).toEqual(old);
  });

  it('says what it does in its help', async () => {
    const help = await box.run(['help', 'auth:refresh']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('$ prospect auth:refresh --scopes <list>');
    expect(help.stdout).toContain('another account\'s is refused');
  });
});
