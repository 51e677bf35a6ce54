/**
 * The OS keychain as an opt-in (issue 48, item 3), with the built binary: `auth:login
 * --secure-storage` (or PROSPECT_CREDENTIAL_STORE=keychain) keeps the tokens in a real Secret
 * Service started in the test (gnome-keyring-daemon on a D-Bus session bus of its own, see
 * ../support/secret-service.ts), and the session file all but them. Where no Secret Service
 * runs (no D-Bus session, as on a server or in CI's own environment), the login says so in one
 * line and keeps the file.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { deviceStart, fakeBackend, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';
import { missingForSecretService, type SecretService, startSecretService } from '../support/secret-service.js';

useSandbox();

/**
 * A server that logs Ada in by device login at once and rotates her tokens on every refresh:
 * `prs_access_<n>` and `prsr_refresh_<n>`. `expiresAt` of the login: one in the past makes the
 * next command renew the pair.
 */
async function server(loginExpiresAt = new Date(Date.now() + 3_600_000).toISOString()) {
  let n = 1;
  const backend = await fakeBackend({
    'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, deviceStart(backend.url)),
    'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'authorized', accessToken: 'prs_access_1', refreshToken: 'prsr_refresh_1', expiresAt: loginExpiresAt, user }),
    'POST /api/cli/auth/refresh': (_q, _b, res) => {
      n += 1;
      json(res, 200, { status: 'authorized', accessToken: `prs_access_${n}`, refreshToken: `prsr_refresh_${n}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString(), user });
    },
    'POST /oauth/revoke': (_q, _b, res) => json(res, 200, {}),
  });
  return backend;
}

/** Every file of the config directory, as text: where a token must not be. */
async function configFiles(): Promise<string> {
  const names = await readdir(box.configDir);
  return (await Promise.all(names.map((name) => readFile(join(box.configDir, name), 'utf8').catch(() => '')))).join('\n');
}

describe('where no Secret Service runs', () => {
  it('a --secure-storage login says so in one line, keeps the tokens in the file, and succeeds', async () => {
    const backend = await server();
    try {
      // The sandbox's environment has no DBUS_SESSION_BUS_ADDRESS: there is no bus to reach.
      const run = await box.run(['auth:login', '--api-url', backend.url, '--secure-storage']);
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(
        'The OS keychain cannot be used: no Secret Service runs here (no D-Bus session bus).\n' +
          'The tokens are saved in the session file instead, readable by you only.\n' +
          'To use the keychain: unlock your keyring, or start a Secret Service, then log in with --secure-storage.\n',
      );
      expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_access_1', refreshToken: 'prsr_refresh_1' });
      const status = await box.run(['auth:status']);
      expect(status.stdout).toContain(`Token from:   ${box.sessionPath}\n`);
    } finally {
      await backend.close();
    }
  });

  it('a bad PROSPECT_CREDENTIAL_STORE is a usage error before the server hears anything', async () => {
    const backend = await server();
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], { env: { PROSPECT_CREDENTIAL_STORE: 'vault' } });
      expect(run).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toContain('PROSPECT_CREDENTIAL_STORE must be keychain or file, not "vault".');
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });
});

const missing = missingForSecretService();
if (missing.length) {
  // Said where a person reads it: these tests did not run, and why (.ci/run installs the packages).
  console.warn(`Skipping the tests with a real Secret Service: ${missing.join(', ')} not installed (Debian packages dbus and gnome-keyring).`);
}

(missing.length ? describe.skip : describe)('with a real Secret Service (gnome-keyring-daemon on a D-Bus session bus of the test)', () => {
  let keychain: SecretService;
  beforeEach(async () => {
    keychain = await startSecretService(dirname(box.configDir));
  });
  afterEach(() => keychain.stop());

  const service = (url: string) => `prospect:${new URL(url).host}`;

  it('--secure-storage keeps the tokens in the keychain and the rest in the file; commands use them; logout deletes them', async () => {
    const backend = await server();
    try {
      const login = await box.run(['auth:login', '--api-url', backend.url, '--secure-storage'], { env: keychain.env });
      expect({ code: login.code, stderr: login.stderr }).toMatchObject({ code: 0 });
      expect(login.stderr).toContain(`Tokens saved to the OS keychain (service ${service(backend.url)}, account u-1).\n`);

      // The file: every field but the tokens, and where they are.
      const file = await box.readSession();
      expect(file).toEqual({ apiBaseUrl: backend.url, user, expiresAt: expect.any(String), createdAt: expect.any(String), credentialStore: 'keychain' });
      expect(await configFiles()).not.toMatch(/prs_access|prsr_refresh/);
      expect(JSON.parse((await keychain.read(service(backend.url), 'u-1'))!)).toEqual({ accessToken: 'prs_access_1', refreshToken: 'prsr_refresh_1' });

      // A command gets its token from the keychain.
      const token = await box.run(['auth:token'], { env: keychain.env });
      expect(token).toMatchObject({ code: 0, stdout: 'prs_access_1\n' });

      const status = await box.run(['auth:status'], { env: keychain.env });
      expect(status.stdout).toContain(`Token from:   the OS keychain (service ${service(backend.url)}, account u-1)\n`);
      expect(status.stdout).toContain(`Session file: ${box.sessionPath}\n`);
      const asJson = JSON.parse((await box.run(['auth:status', '--json'], { env: keychain.env })).stdout);
      expect(asJson).toMatchObject({ credentialStore: 'keychain', sessionFile: box.sessionPath, accounts: [expect.objectContaining({ credentialStore: 'keychain' })] });

      const logout = await box.run(['auth:logout'], { env: keychain.env });
      expect(logout.code).toBe(0);
      expect(box.hasSession()).toBe(false);
      expect(await keychain.read(service(backend.url), 'u-1')).toBeNull();
      // Revoked with the refresh token read from the keychain.
      expect(backend.requests.find((r) => r.url === '/oauth/revoke')?.body).toContain('token=prsr_refresh_1');
    } finally {
      await backend.close();
    }
  });

  it('PROSPECT_CREDENTIAL_STORE=keychain does the same; a refresh rotates the pair in the keychain, never into the file', async () => {
    // Expired at once: the next command renews it.
    const backend = await server(new Date(Date.now() - 60_000).toISOString());
    try {
      const env = { ...keychain.env, PROSPECT_CREDENTIAL_STORE: 'keychain' };
      expect((await box.run(['auth:login', '--api-url', backend.url], { env })).code).toBe(0);
      const token = await box.run(['auth:token'], { env: keychain.env });
      expect(token).toMatchObject({ code: 0, stdout: 'prs_access_2\n' });
      expect(backend.requests.find((r) => r.url === '/api/cli/auth/refresh')?.body).toContain('prsr_refresh_1');
      expect(JSON.parse((await keychain.read(service(backend.url), 'u-1'))!)).toEqual({ accessToken: 'prs_access_2', refreshToken: 'prsr_refresh_2' });
      expect(await configFiles()).not.toMatch(/prs_access|prsr_refresh/);
      expect(await box.readSession()).toMatchObject({ credentialStore: 'keychain' });
    } finally {
      await backend.close();
    }
  });

  it('logging in again keeps the tokens in the keychain unless told otherwise; --no-secure-storage moves them to the file and deletes the entry', async () => {
    const backend = await server();
    try {
      expect((await box.run(['auth:login', '--api-url', backend.url, '--secure-storage'], { env: keychain.env })).code).toBe(0);
      expect((await box.run(['auth:login', '--api-url', backend.url], { env: keychain.env })).code).toBe(0);
      expect(await box.readSession()).toMatchObject({ credentialStore: 'keychain' });

      expect((await box.run(['auth:login', '--api-url', backend.url, '--no-secure-storage'], { env: keychain.env })).code).toBe(0);
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_access_1', refreshToken: 'prsr_refresh_1' });
      expect(await box.readSession()).not.toHaveProperty('credentialStore');
      expect(await keychain.read(service(backend.url), 'u-1')).toBeNull();
    } finally {
      await backend.close();
    }
  });

  it('a locked keychain: a command says so in one line and how to proceed, and the session stays', async () => {
    const backend = await server();
    try {
      expect((await box.run(['auth:login', '--api-url', backend.url, '--secure-storage'], { env: keychain.env })).code).toBe(0);
      const before = await readFile(box.sessionPath, 'utf8');
      await keychain.lock();
      const run = await box.run(['auth:token'], { env: keychain.env });
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toMatch(/^Error: The tokens of the session in .* are in the OS keychain, which cannot be used: it is locked, and no prompt to unlock it could be shown\.\n/);
      expect(run.stderr).toContain(`or remove ${box.sessionPath} to forget the session here.`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(await readFile(box.sessionPath, 'utf8')).toBe(before);
    } finally {
      await backend.close();
    }
  });
});
