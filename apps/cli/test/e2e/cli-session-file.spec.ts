/**
 * The session file under stress: a config directory that cannot be written, logout, and refreshing against a flaky network.
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { validSession } from '../support/run-cli.js';
import { deviceStart as start, fakeBackend, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

describe('a config directory that cannot be written', () => {
  /** A backend that would log anyone in: it must hear nothing. */
  const willingBackend = () =>
    fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(`http://127.0.0.1`)),
      'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }),
    });
  const refusal = (dir: string, reason: string) => `Error: Cannot log in: ${dir} cannot be written (${reason}); set PROSPECT_CONFIG_DIR to a directory you can write to.\n`;

  // A regular file in the path stops root too, for whom a read-only mode changes nothing.
  it('refuses a device login or a --token login before the server hears of it, in one sentence naming the directory, exit 1', async () => {
    const backend = await willingBackend();
    try {
      const file = join(box.configDir, '..', 'a-file');
      await writeFile(file, 'not a directory');
      for (const [dir, reason] of [
        [join(file, 'prospect'), 'part of the path is a file, not a directory'],
        [file, 'it is a file, not a directory'],
      ] as const) {
        for (const args of [['auth:login', '--api-url', backend.url], ['auth:login', '--api-url', backend.url, '--token', 'prs_x']]) {
          const run = await box.run(args, { env: { PROSPECT_CONFIG_DIR: dir } });
          expect(run).toEqual({ code: 1, signal: null, stdout: '', stderr: refusal(dir, reason) });
        }
      }
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('refuses a login when no byte can be written (a full disk): the probe writes, not only creates', async () => {
    const backend = await willingBackend();
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], { noFileWrites: true });
      expect(run).toMatchObject({ code: 1, stdout: '', stderr: refusal(box.configDir, 'the file size limit is reached') });
      expect(backend.requests).toEqual([]);
      expect(await readdir(box.configDir)).toEqual([]); // the probe file is gone
    } finally {
      await backend.close();
    }
  });

  it('every other command says what is wrong in one plain line, never "this is a bug"', async () => {
    const file = join(box.configDir, '..', 'a-file');
    await writeFile(file, 'not a directory');
    const dir = join(file, 'prospect');
    const logout = await box.run(['auth:logout'], { env: { PROSPECT_CONFIG_DIR: dir } });
    expect(logout).toMatchObject({ code: 1, stdout: '' });
    expect(logout.stderr).toBe(`Error: Cannot lock the session file in ${dir}: part of the path is a file, not a directory.\nCheck that the directory is writable (PROSPECT_CONFIG_DIR).\n`);
    for (const args of [['auth:whoami'], ['auth:status'], ['api', '/x']]) {
      const run = await box.run(args, { env: { PROSPECT_CONFIG_DIR: dir } });
      expect(run.stderr).not.toMatch(/bug|Unexpected/i);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('auth:logout', () => {
  it('removes the session even when the server cannot be told, and is idempotent', async () => {
    const backend = await fakeBackend({});
    await backend.close();
    // A device login's session (it holds a refresh token): the CLI tries to revoke it.
    await box.writeSession(validSession(backend.url, { refreshToken: `prsr_${'b'.repeat(43)}` }));
    const run = await box.run(['auth:logout']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `Logged out of ${backend.url} (the server could not be told; the local session is removed).\n` +
        `Its refresh token may still be valid on the server for up to 30 days: revoke the session at ${backend.url}/settings/tokens.\n`,
    );
    expect(box.hasSession()).toBe(false);
    expect(await box.run(['auth:logout'])).toMatchObject({ code: 0, stdout: 'Not logged in.\n' });
  });

  it('with PROSPECT_TOKEN set, says the variable is in use, keeps the session file and exits 1', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9'));
    const run = await box.run(['auth:logout'], { env: { PROSPECT_TOKEN: `prs_${'c'.repeat(43)}` } });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      'Error: PROSPECT_TOKEN is set: the CLI uses that token, and logging out cannot forget it.\n' +
        "Unset PROSPECT_TOKEN to stop using it (revoke it on the server's tokens page if it should stop working everywhere).\n",
    );
    expect(box.hasSession()).toBe(true);
  });
});

describe('refreshing the session against a flaky network', () => {
  it('an answer lost after the server rotated is asked for again at once, and the command runs', async () => {
    let calls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/refresh': (req, _body, res) => {
        calls += 1;
        // The first answer never arrives: the connection drops, as after a server-side commit.
        if (calls === 1) return req.socket.destroy();
        json(res, 200, { status: 'authorized', accessToken: 'prs_renewed', refreshToken: 'prsr_renewed', expiresAt: new Date(Date.now() + 3_600_000).toISOString(), user });
      },
    });
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_old', refreshToken: 'prsr_old', expiresAt: new Date(Date.now() - 1000).toISOString() }));
      const run = await box.run(['auth:token']);
      expect(run).toMatchObject({ code: 0, stdout: 'prs_renewed\n', stderr: '' });
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/refresh').map((r) => JSON.parse(r.body))).toEqual([
        { refreshToken: 'prsr_old' },
        { refreshToken: 'prsr_old' },
      ]);
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_renewed', refreshToken: 'prsr_renewed' });
    } finally {
      await backend.close();
    }
  });

  it('a renewed pair that cannot be saved (a full disk): one sentence naming the file, the old pair kept, and the next run recovers with it', async () => {
    // As the server's rule has it: the just-rotated token answers the same successor until that is used.
    const successor = { status: 'authorized', accessToken: 'prs_renewed', refreshToken: 'prsr_renewed', expiresAt: new Date(Date.now() + 3_600_000).toISOString(), user };
    const backend = await fakeBackend({ 'POST /api/cli/auth/refresh': (_q, _b, res) => json(res, 200, successor) });
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_old', refreshToken: 'prsr_old', expiresAt: new Date(Date.now() - 1000).toISOString() }));
      const before = await readFile(box.sessionPath, 'utf8');
      const full = await box.run(['auth:token'], { noFileWrites: true });
      expect(full).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `Error: The renewed session could not be saved to ${box.sessionPath} (the file size limit is reached); the previous one is kept, and the next command renews it again.\n`,
      });
      expect(await readFile(box.sessionPath, 'utf8')).toBe(before);
      expect(await readdir(box.configDir)).toEqual(['auth-session.json']); // no temp file, no lock left
      const next = await box.run(['auth:token']);
      expect(next).toMatchObject({ code: 0, stdout: 'prs_renewed\n', stderr: '' });
      expect(backend.requests.map((r) => JSON.parse(r.body))).toEqual([{ refreshToken: 'prsr_old' }, { refreshToken: 'prsr_old' }]);
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_renewed', refreshToken: 'prsr_renewed' });
    } finally {
      await backend.close();
    }
  });

  it('a refresh refused by the server removes the session and exits 4; an answer of the wrong shape keeps it and exits 1', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/refresh': (req, body, res) =>
        JSON.parse(body).refreshToken === 'prsr_odd'
          ? json(res, 200, { hello: 'world' })
          : json(res, 401, { statusCode: 401, error: 'invalid_grant', message: 'This refresh token was already used, so the session has been revoked everywhere.' }),
    });
    try {
      const expired = { expiresAt: new Date(Date.now() - 1000).toISOString() };
      await box.writeSession(validSession(backend.url, { ...expired, refreshToken: 'prsr_odd' }));
      expect(await box.run(['auth:token'])).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/answered the refresh with an unexpected shape; the session is kept/) });
      expect(box.hasSession()).toBe(true);
      await box.writeSession(validSession(backend.url, { ...expired, refreshToken: 'prsr_reused' }));
      const refused = await box.run(['auth:token'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(refused).toMatchObject({ code: 4, stdout: '' });
      expect(refused.stderr).toBe(
        `Error: This refresh token was already used, so the session has been revoked everywhere. The local session is removed — run \`prospect auth:login --api-url ${backend.url}\`.\n`,
      );
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });
});
