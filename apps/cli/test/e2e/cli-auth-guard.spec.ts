/**
 * What a command authenticates with: PROSPECT_TOKEN, auth:status, auth:token, and the auth guard in front of every non-auth command.
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { validSession } from '../support/run-cli.js';
import { fakeBackend, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

describe('PROSPECT_TOKEN, auth:status and auth:token', () => {
  const me = (token: string) => fakeBackend({
    'GET /api/cli/auth/me': (req, _b, res) =>
      req.headers.authorization === `Bearer ${token}`
        ? json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' })
        : json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'revoked' }, { 'www-authenticate': 'Bearer realm="prospect", error="invalid_token", error_description="token revoked"' }),
    'GET /x': (_q, _b, res) => json(res, 200, { ran: true }),
  });

  it('PROSPECT_TOKEN is used by every command instead of the session file, and never written', async () => {
    const backend = await me('prs_from_env');
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_from_file' }));
      const env = { PROSPECT_TOKEN: 'prs_from_env', PROSPECT_API_BASE_URL: backend.url };
      expect((await box.run(['api', '/x'], { env })).code).toBe(0);
      expect(backend.requests.at(-1)!.authorization).toBe('Bearer prs_from_env');
      expect(await box.run(['auth:token'], { env })).toMatchObject({ code: 0, stdout: 'prs_from_env\n' });
      const status = await box.run(['auth:status', '--verify'], { env });
      expect(status.code).toBe(0);
      expect(status.stdout).toContain('Token from:   the PROSPECT_TOKEN environment variable');
      expect(status.stdout).toContain(`User:         ${user.name} <${user.email}>`);
      expect((await box.readSession()).accessToken).toBe('prs_from_file');
      const login = await box.run(['auth:login', '--token', 'prs_from_env'], { env });
      expect(login.stderr).toContain('Warning: PROSPECT_TOKEN is set');
      // A refused PROSPECT_TOKEN: logging in would not help, so the hint says what would.
      const refused = await box.run(['api', '/api/cli/auth/me'], { env: { ...env, PROSPECT_TOKEN: 'prs_revoked' } });
      expect(refused.code).toBe(4);
      expect(refused.stderr).toBe(
        `Error: ${backend.url} refused the token in PROSPECT_TOKEN: it is revoked.\nSet PROSPECT_TOKEN to a valid token, or unset it to use your session.\n`,
      );
      const refusedStatus = await box.run(['auth:status', '--verify'], { env: { ...env, PROSPECT_TOKEN: 'prs_revoked' } });
      expect(refusedStatus.code).toBe(4);
      expect(refusedStatus.stderr).toBe('Error: The server says the token is revoked — set PROSPECT_TOKEN to a valid token, or unset it to use your session.\n');
    } finally {
      await backend.close();
    }
  });

  it('auth:status says where the token comes from and what the server says; auth:token prints only the token', async () => {
    const backend = await me('prs_good');
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_revoked' }));
      const local = await box.run(['auth:status']);
      expect(local.code).toBe(0);
      expect(local.stdout).toContain(`Server:       ${backend.url}`);
      // Masked like `gh auth status`: the kind of token, none of the secret; --show-token shows it.
      expect(local.stdout).toContain('Token:        prs_*******\n');
      expect(local.stdout).toMatch(/Token from: +.*auth-session\.json/);
      expect(local.stdout).toContain('Refresh:      none');
      expect((await box.run(['auth:status', '--show-token'])).stdout).toContain('Token:        prs_revoked\n');
      const json = JSON.parse((await box.run(['auth:status', '--json'])).stdout);
      expect(json).toMatchObject({ server: backend.url, expired: false, usable: true, refreshToken: false });
      expect(JSON.stringify(json)).not.toContain('prs_revoked');
      const verified = await box.run(['auth:status', '--verify']);
      expect(verified.code).toBe(4);
      expect(verified.stdout).toContain('Server says:  the token is revoked');
      expect(verified.stderr).toBe(`Error: The server says the token is revoked — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      expect(await box.run(['auth:token'])).toMatchObject({ code: 0, stdout: 'prs_revoked\n', stderr: '' });
      await box.run(['auth:logout']);
      expect(await box.run(['auth:token'])).toMatchObject({ code: 4, stdout: '' });
    } finally {
      await backend.close();
    }
  });
});

describe('the auth guard (prospect api)', () => {
  it('without a session: "not logged in" with the login for the backend asked for, exit 4, and the command never runs', async () => {
    const backend = await fakeBackend({});
    try {
      const run = await box.run(['api', '/api/anything'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(run).toMatchObject({ code: 4, stdout: '' });
      expect(run.stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      const flag = await box.run(['api', '/api/anything', '--api-url', `${backend.url}/`]);
      expect(flag.stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      for (const command of ['auth:whoami', 'auth:status']) {
        expect((await box.run([command, '--api-url', backend.url])).stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      }
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('without a session and no backend asked for, or the default one: the bare login command', async () => {
    for (const args of [['api', '/x'], ['api', '/x', '--api-url', 'http://localhost:3000/'], ['auth:whoami']]) {
      const run = await box.run(args);
      expect(run).toMatchObject({ code: 4, stderr: 'Error: Not logged in — run `prospect auth:login`.\n' });
    }
  });

  it('names even the default backend when PROSPECT_API_BASE_URL would send a bare login elsewhere', async () => {
    const run = await box.run(['api', '/x', '--api-url', 'http://localhost:3000'], { env: { PROSPECT_API_BASE_URL: 'http://127.0.0.1:9' } });
    expect(run).toMatchObject({ code: 4, stderr: 'Error: Not logged in — run `prospect auth:login --api-url http://localhost:3000`.\n' });
  });

  it('without a session, a backend that is not a URL is a usage error, not a hint to log in to it', async () => {
    const run = await box.run(['api', '/x', '--api-url', 'not a url']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('Error: Not a URL: "not a url".\nPass the backend as --api-url https://host\n');
  });

  it.each([
    ['corrupt JSON', '{"accessToken": "prs_', /is not valid JSON/],
    ['a partial file', JSON.stringify({ accessToken: 'prs_x' }), /is not a valid session \(apiBaseUrl: /],
    ['a wrongly typed field', JSON.stringify(validSession('http://localhost:3000', { user: 'ada' })), /is not a valid session \(user: /],
  ])('counts %s as no session, in one line without a stack trace', async (_, content, reason) => {
    await box.writeSession(content);
    const run = await box.run(['api', '/x']);
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(reason);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\bat .*\.js:\d+/);
    const whoami = await box.run(['auth:whoami']);
    expect(whoami.code).toBe(4);
    expect(whoami.stderr).toMatch(reason);
  });

  it('refuses an expired session before the command runs, exit 4', async () => {
    const backend = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    try {
      await box.writeSession(validSession(backend.url, { expiresAt: '2020-01-01T00:00:00.000Z' }));
      const run = await box.run(['api', '/x']);
      expect(run).toMatchObject({ code: 4, stdout: '' });
      expect(run.stderr).toBe(`Error: Session expired at 2020-01-01T00:00:00.000Z — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('never calls an expired session logged in: auth:whoami says it expired, exit 4', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9', { expiresAt: '2020-01-01T00:00:00.000Z' }));
    const run = await box.run(['auth:whoami']);
    expect(run).toMatchObject({ code: 4, stdout: '' });
    expect(run.stderr).toBe(
      `Error: Your session for http://127.0.0.1:9 (${user.email}) expired at 2020-01-01T00:00:00.000Z — run \`prospect auth:login --api-url http://127.0.0.1:9\`.\n`,
    );
  });

  it('an expired session for another backend than the one asked for: says to log in to the one asked for', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9', { expiresAt: '2020-01-01T00:00:00.000Z' }));
    const run = await box.run(['api', '/x', '--api-url', 'http://127.0.0.1:8']);
    expect(run).toMatchObject({ code: 4, stdout: '' });
    expect(run.stderr).toBe('Error: Your session is for http://127.0.0.1:9, not http://127.0.0.1:8 — run `prospect auth:login --api-url http://127.0.0.1:8`.\n');
  });

  it('auth:whoami applies the same other-backend check as every command', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9'));
    const run = await box.run(['auth:whoami', '--api-url', 'http://127.0.0.1:8']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('Your session is for http://127.0.0.1:9, not http://127.0.0.1:8');
  });

  it('says which session a login to another server keeps, and names itself on every request', async () => {
    const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }) });
    try {
      await box.writeSession(validSession('http://127.0.0.1:9'));
      const run = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_new']);
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(
        `Kept the session of ${user.name} <${user.email}> on http://127.0.0.1:9: switch back with \`prospect auth:switch --host http://127.0.0.1:9 --user ${user.email}\`.`,
      );
      expect(backend.requests[0]!.userAgent).toMatch(/^prospect-cli\/0\.1\.0 \(linux; node \d+\.\d+\.\d+\)$/);
    } finally {
      await backend.close();
    }
  });

  it('never sends the token to another backend than the session’s', async () => {
    const mine = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    const other = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    try {
      await box.writeSession(validSession(mine.url));
      const envs: Array<Record<string, string>> = [{ PROSPECT_API_BASE_URL: other.url }, { PROSPECT_SKIP_AUTH: '1', PROSPECT_API_BASE_URL: other.url }];
      for (const env of envs) {
        const run = await box.run(['api', '/x'], { env });
        if (env.PROSPECT_SKIP_AUTH) {
          expect(run.code).toBe(0); // bypassed: the request goes out, but without the token
        } else {
          expect(run.code).toBe(4);
          expect(run.stderr).toContain(`Your session is for ${mine.url}, not ${other.url} — run \`prospect auth:login --api-url ${other.url}\`.`);
        }
      }
      const flag = await box.run(['api', '/x', '--api-url', other.url]);
      expect(flag.code).toBe(4);
      expect(mine.requests).toEqual([]);
      expect(other.requests.map((r) => r.authorization)).toEqual([undefined]);
    } finally {
      await mine.close();
      await other.close();
    }
  });

  it('sends the session’s token to the session’s backend and prints the JSON', async () => {
    const backend = await fakeBackend({ 'POST /api/things': (_q, body, res) => json(res, 201, { got: JSON.parse(body) }) });
    try {
      await box.writeSession(validSession(backend.url));
      const run = await box.run(['api', '/api/things', '--data', '{"name":"x"}']);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ got: { name: 'x' } });
      expect(backend.requests[0]).toMatchObject({ method: 'POST', authorization: `Bearer prs_${'a'.repeat(43)}` });
    } finally {
      await backend.close();
    }
  });
});
