/**
 * The built `prospect` binary against the real API on a fresh database:
 * token login, whoami, logout, the guard, and a device login approved the way
 * the approval page does it.
 */
import { ROUTES } from '@prospect/contract';
import { assertBuilt, makeSandbox, type Sandbox, validSession } from '../support/run-cli.js';
import { approve, createUser, deny, deviceLoginToken, requestsLoggedFor, startRealApi, type TestApp } from '../support/real-api.js';

let api: TestApp;
let person: Awaited<ReturnType<typeof createUser>>;
let box: Sandbox;

beforeAll(async () => {
  assertBuilt();
  api = await startRealApi();
  person = await createUser(api, { name: 'Grace Hopper', email: `grace-${Date.now()}@example.com` });
});
afterAll(() => api?.close());
beforeEach(async () => (box = await makeSandbox()));
afterEach(() => box.cleanup());

const meStatus = async (token: string) => (await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${token}` } })).status;

describe('auth:login --token', () => {
  it('verifies the token with GET /me, then writes the session', async () => {
    const token = await deviceLoginToken(api, person);
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
    const token = await deviceLoginToken(api, person);
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
    const revokedToken = await deviceLoginToken(api, person);
    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${revokedToken}` } });
    const revoked = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', revokedToken]);
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toContain('refused the token: it was revoked.');
    expect(box.hasSession()).toBe(false);
  });
});

describe('auth:whoami', () => {
  it('reads the session file alone; --verify round-trips /me and refreshes the stored user', async () => {
    const token = await deviceLoginToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);

    const local = await box.run(['auth:whoami']);
    expect(local.code).toBe(0);
    expect(local.stdout).toMatch(new RegExp(`^Logged in to ${api.baseUrl} as Grace Hopper <${person.email}>\nSession expires .* \\(in 30 days\\)\n$`));

    await api.dataSource.query('UPDATE users SET name = $1 WHERE id = $2', ['Rear Admiral Grace Hopper', person.id]);
    const verified = await box.run(['auth:whoami', '--verify', '--json']);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toEqual({
      user: { id: person.id, email: person.email, name: 'Rear Admiral Grace Hopper' },
      apiBaseUrl: api.baseUrl,
      expiresAt: expect.any(String),
      expired: false,
      verified: true,
    });
    expect((await box.readSession()).user.name).toBe('Rear Admiral Grace Hopper');
    await api.dataSource.query('UPDATE users SET name = $1 WHERE id = $2', ['Grace Hopper', person.id]);
  });

  it('--verify with a revoked token: says so, removes the local session, with the fix, exit 4', async () => {
    const token = await deviceLoginToken(api, person);
    await box.writeSession(validSession(api.baseUrl, { accessToken: token }));
    await fetch(api.baseUrl + ROUTES.logout, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const run = await box.run(['auth:whoami', '--verify']);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(
      `Error: Your token was revoked (logged out elsewhere, or by an admin) (${api.baseUrl}); removed the local session — run \`prospect auth:login --api-url ${api.baseUrl}\`.\n`,
    );
    expect(box.hasSession()).toBe(false);
  });
});

describe('auth:logout', () => {
  it('revokes the token on the server and removes the session file', async () => {
    const token = await deviceLoginToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    expect(await meStatus(token)).toBe(200);
    const run = await box.run(['auth:logout']);
    expect(run).toMatchObject({ code: 0, stdout: `Logged out of ${api.baseUrl}.\n` });
    expect(box.hasSession()).toBe(false);
    expect(await meStatus(token)).toBe(401);
  });
});

describe('the guard in front of `prospect api`', () => {
  it('runs the request with a valid session', async () => {
    const token = await deviceLoginToken(api, person);
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    const run = await box.run(['api', ROUTES.me]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ user: { id: person.id, email: person.email } });
  });

  it('an expired session: exit 4 before the command’s code runs (the API never sees the request)', async () => {
    const token = await deviceLoginToken(api, person);
    await box.writeSession(validSession(api.baseUrl, { accessToken: token, expiresAt: new Date(Date.now() - 60_000).toISOString() }));
    const probe = `/api/guard-probe-expired-${Date.now()}`;
    const run = await box.run(['api', probe]);
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/^Error: Session expired at .* — run `prospect auth:login --api-url http:\/\/[^`]+`\.\n$/);
    expect(run.stderr).toContain(`--api-url ${api.baseUrl}\``);
    expect(requestsLoggedFor(api, probe)).toBe(0);
  });

  it('a session for another backend: refused, the token is not sent anywhere', async () => {
    const token = await deviceLoginToken(api, person);
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
  });

  it('denied: a clear failure, exit 1, nothing written', async () => {
    const run = await loginAnd((code) => deny(api, code, person));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Error: Login was denied in the browser, or the code expired.');
    expect(box.hasSession()).toBe(false);
  });
});
