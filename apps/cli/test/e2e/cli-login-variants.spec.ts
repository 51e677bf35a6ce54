/**
 * `auth:login` against backend variants the real API does not produce (device login switched off, a dead server, a server that restarts).
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { stat } from 'node:fs/promises';
import { deviceStart as start, fakeBackend, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

describe('auth:login against backend variants', () => {
  it('device login in plain mode: URL and code as lines, then "Logged in as", session 0600 in a 0700 directory', async () => {
    let polls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) =>
        json(res, 200, ++polls < 2 ? { status: 'pending' } : { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(
        `To log in, open ${backend.url}/device?user_code=BCDF-GHJK\nand check that it shows the code BCDF-GHJK\n(you are signing in to ${new URL(backend.url).host})\n` +
          `Logged in as Ada Lovelace <ada@example.com> on ${backend.url}.\n`,
      );
      expect(run.stdout + run.stderr).not.toMatch(/\u001b\[/); // no escape codes
      expect(JSON.parse(backend.requests[0]!.body)).toEqual({ clientName: 'prospect CLI 0.1.0', hostname: expect.any(String) });
      const session = await box.readSession();
      expect(Object.keys(session).sort()).toEqual(['accessToken', 'apiBaseUrl', 'createdAt', 'expiresAt', 'user']);
      expect(session).toMatchObject({ accessToken: 'prs_device', apiBaseUrl: backend.url, user, expiresAt: '2030-01-01T00:00:00.000Z' });
      expect((await stat(box.sessionPath)).mode & 0o777).toBe(0o600);
      expect((await stat(box.configDir)).mode & 0o777).toBe(0o700);
    } finally {
      await backend.close();
    }
  });

  it("keeps the server's verification URL on another name than the API given, and says so", async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url.replace('127.0.0.1', 'localhost'))),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'denied' }),
    });
    try {
      const given = new URL(backend.url);
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.stdout).toBe(
        `To log in, open http://localhost:${given.port}/device?user_code=BCDF-GHJK\nand check that it shows the code BCDF-GHJK\n(you are signing in to localhost:${given.port})\n` +
          `Note: the server sends you to localhost:${given.port} to approve, not ${given.host} as given (its PUBLIC_URL); your browser signs in there.\n`,
      );
    } finally {
      await backend.close();
    }
  });

  it('accepts verificationUri for verificationUrl', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => {
        const { verificationUrl, ...rest } = start(backend.url);
        json(res, 200, { ...rest, verificationUri: verificationUrl });
      },
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'denied' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.stdout).toContain(`open ${backend.url}/device?user_code=BCDF-GHJK`);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`Error: Login was denied in the browser, or the code expired.\nRun \`prospect auth:login --api-url ${backend.url}\` to try again.\n`);
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });

  it.each([
    ['no address', { verificationUrl: undefined }, /malformed \(verificationUrl\)/],
    ['no user code', { userCode: undefined }, /malformed \(userCode\)/],
    ['a javascript: address', { verificationUrl: 'javascript:alert(1)' }, /Refusing to send you to "javascript:alert\(1\)": not an http\(s\) address/],
  ])('refuses a start response with %s, exit 1, nothing written', async (_, change, message) => {
    const backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, { ...start(backend.url), ...change }) });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });

  it.each([404, 405, 501])('start answering %i: device login is off; points to --web and token login with the exact commands', async (status) => {
    const backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, status, { statusCode: status, error: 'not_found', message: 'Not found.' }) });
    try {
      const run = await box.run(['auth:login'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `Error: Device login is turned off on ${backend.url}.\n` +
          `Log in through your browser: prospect auth:login --api-url ${backend.url} --web; or create a token at ${backend.url}/settings/tokens, then run: prospect auth:login --api-url ${backend.url} --token -\n`,
      );
    } finally {
      await backend.close();
    }
  });

  it('a server that cannot be reached gets its own message', async () => {
    const backend = await fakeBackend({});
    await backend.close();
    const run = await box.run(['auth:login', '--api-url', backend.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `Error: Cannot reach ${backend.url} (ECONNREFUSED).\nCheck the address (--api-url or PROSPECT_API_BASE_URL) and that the server is running.\n`,
    );
  });

  it('rides out a restarting server and a 429 slow_down while it waits', async () => {
    let polls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (req, _b, res) => {
        polls++;
        if (polls === 1) return req.socket.destroy();
        if (polls === 2) return json(res, 503, { statusCode: 503, error: 'service_unavailable', message: 'Restarting.' });
        if (polls === 3) return json(res, 429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '1' });
        return json(res, 200, { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user });
      },
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      const host = new URL(backend.url).host;
      expect(run.stderr).toContain(`Can't reach ${host}; trying again in 1 s.\n${host} is briefly unavailable; trying again in 1 s.\n`);
      expect(run.stderr).toContain('The server asked to poll less often: every 6 s.');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Logged in as Ada Lovelace <ada@example.com>');
    } finally {
      await backend.close();
    }
  });

  it('Retry-After: 99999999 on slow_down is a minute: no overflowed timer, no storm of polls', async () => {
    const polls: string[] = [];
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url, { intervalSeconds: 1, expiresInSeconds: 999_999_999 })),
      'POST /api/cli/auth/device/poll': (_q, body, res) => {
        polls.push(body);
        json(res, 429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '99999999' });
      },
      'POST /api/cli/auth/device/cancel': (_q, _b, res) => void res.writeHead(204).end(),
    });
    try {
      // The first poll after 1 s is told to wait 99999999 s: clamped to 60, it outlasts the 3 s given.
      const run = await box.run(['auth:login', '--api-url', backend.url, '--timeout-seconds', '3']);
      expect(run.stderr).toContain('Waiting for approval (0:03 left)…\nThe server asked to poll less often: every 60 s.\n');
      expect(run.stderr).toContain('Error: Gave up waiting for approval after 3 s.');
      expect(run.stderr).not.toMatch(/TimeoutOverflowWarning/);
      expect(run.code).toBe(1);
      expect(polls).toHaveLength(1);
    } finally {
      await backend.close();
    }
  });

  it('a lifetime of 999999999 s counts down from an hour, and the interval of as many seconds is a minute', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url, { intervalSeconds: 999_999_999, expiresInSeconds: 999_999_999 })),
      'POST /api/cli/auth/device/cancel': (_q, _b, res) => void res.writeHead(204).end(),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], {
        onStarted: (child, output) => {
          let stopped = false;
          child.stderr!.on('data', () => !stopped && output().includes('left)') && (stopped = child.kill('SIGINT')));
        },
      });
      expect(run.stderr).toContain('Waiting for approval (60:00 left)…');
      expect(run.code).toBe(130);
      expect(backend.requests.map((r) => r.url)).toEqual(['/api/cli/auth/device/start', '/api/cli/auth/device/cancel']);
    } finally {
      await backend.close();
    }
  });

  it('--timeout-seconds: gives up with a clear failure, exit 1, nothing written', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url, '--timeout-seconds', '1']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`Error: Gave up waiting for approval after 1 s.\nRun \`prospect auth:login --api-url ${backend.url}\` to get a new code.\n`);
      expect(box.hasSession()).toBe(false);
      // The code can no longer be approved in the browser.
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/device/cancel').map((r) => JSON.parse(r.body))).toEqual([{ deviceCode: 'prsd_device' }]);
    } finally {
      await backend.close();
    }
  });

  it('Ctrl-C while waiting: exit 130, nothing written', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], {
        onStarted: (child, output) => {
          const whenWaiting = setInterval(() => {
            if (output().includes('Waiting for approval')) {
              clearInterval(whenWaiting);
              child.kill('SIGINT');
            }
          }, 20);
        },
      });
      expect(run.code).toBe(130);
      expect(run.stderr).toContain('Cancelled. Nothing was saved.');
      expect(box.hasSession()).toBe(false);
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/device/cancel').map((r) => JSON.parse(r.body))).toEqual([{ deviceCode: 'prsd_device' }]);
    } finally {
      await backend.close();
    }
  });

  it('--token: the /me answer may be flat or wrapped in data; a malformed one is a clear error', async () => {
    const answers: unknown[] = [{ ...user, expiresAt: '2030-01-01T00:00:00.000Z' }, { data: { user, expiresAt: '2030-01-01T00:00:00.000Z' } }, { hello: 'world' }];
    const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, answers.shift()) });
    try {
      for (let i = 0; i < 2; i++) {
        const run = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_given']);
        expect(run.code).toBe(0);
        expect((await box.readSession()).user).toEqual(user);
      }
      await box.cleanup();
      const bad = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_given']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('The server answered /api/cli/auth/me with an unexpected shape.');
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });
});
