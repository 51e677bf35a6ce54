/**
 * `auth:login --scopes` (issue #31, item 4): the CLI asks for `profile tokens orgs` unless told, and for
 * administration only when `--scopes` names `admin`. The built binary against a fake backend.
 */
import { deviceStart as start, fakeBackend, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

describe('auth:login --scopes', () => {
  async function loginAsking(args: string[]) {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url, ...args]);
      return { run, starts: backend.requests.filter((r) => r.url === '/api/cli/auth/device/start').map((r) => JSON.parse(r.body) as Record<string, unknown>) };
    } finally {
      await backend.close();
    }
  }

  it('asks for what --scopes names (commas or spaces, in the registry’s order), and for nothing by name without it', async () => {
    const asked = await loginAsking(['--scopes', 'admin,profile, tokens']);
    expect(asked.run.code).toBe(0);
    expect(asked.starts).toEqual([{ clientName: 'prospect CLI 0.1.0', hostname: expect.any(String), scopes: ['profile', 'tokens', 'admin'] }]);
    const orgs = await loginAsking(['--scopes', 'orgs,profile']);
    expect(orgs.run.code).toBe(0);
    expect(orgs.starts).toEqual([{ clientName: 'prospect CLI 0.1.0', hostname: expect.any(String), scopes: ['profile', 'orgs'] }]);

    // Without the flag the server's default applies (profile, tokens, orgs): a server from before scopes still takes the start.
    const plain = await loginAsking([]);
    expect(plain.run.code).toBe(0);
    expect(plain.starts).toEqual([{ clientName: 'prospect CLI 0.1.0', hostname: expect.any(String) }]);
  });

  it.each([
    [['--scopes', 'profile,billing'], 'unknown scope "billing"'],
    [['--scopes', ','], 'no scope'],
    [['--scopes', 'profile', '--token', 'prs_x'], '--scopes is for the browser login'],
  ])('refuses %j before asking the server anything (exit 2)', async (args, message) => {
    const { run, starts } = await loginAsking(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(starts).toEqual([]);
    expect(box.hasSession()).toBe(false);
  });

  it('says so in its help', async () => {
    const help = await box.run(['auth:login', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--scopes <list>');
    expect(help.stdout).toContain('of profile, tokens, admin, orgs');
    expect(help.stdout).toContain('default: profile,tokens,orgs)');
    expect(help.stdout).toContain('--scopes profile,tokens,admin,orgs)');
  });
});
