import { Mailer } from '../../src/mail/mailer.js';
import { AdminSetupCodes, InvalidSetupCodeError } from '../../src/users/admin-setup-codes.js';
import { UsersService } from '../../src/users/users.service.js';
import { type ApiProcess, runApiProcess, startApiProcess } from '../support/api-process.js';
import { adminEmails } from '../support/direct-sql.js';
import { poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { get } from '../support/http.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { startTestApp } from '../support/test-app.js';
import { signInAs, signUp, webClient } from '../support/web-client.js';

const CODE_LINE = /signup\?setup_code=(prss_[A-Za-z0-9_-]{43})/;
const startAll = (env: Record<string, string>) => Promise.all([1, 2, 3].map(() => startApiProcess(env, 60_000)));
const output = (api: ApiProcess) => api.stdout() + api.stderr();
/** The process's output once it holds `text`: log lines are written in batches, flushed every second. */
async function outputWith(api: ApiProcess, text: string): Promise<string> {
  for (let i = 0; i < 50 && !output(api).includes(text); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  return output(api);
}

/** The first administrator of a deployment of many instances, started at once. */
describe('admin bootstrap with replicas', () => {
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => (database = await emptyServerDatabase()));
  afterEach(() => database.drop());

  it('PROSPECT_ADMIN_*: three instances at once all come up and make one admin, with no error line', async () => {
    const apis = await startAll({ DATABASE_URL: database.url, PROSPECT_ADMIN_EMAIL: 'Root@Example.com', PROSPECT_ADMIN_PASSWORD: 'correct horse battery' });
    try {
      expect(await adminEmails(database.url)).toEqual(['root@example.com']);
      for (const api of apis) expect(output(api)).not.toMatch(/"level":50|already exists/);
    } finally {
      await Promise.all(apis.map((api) => api.stop()));
    }
  });

  it('no admin yet: one setup code per deployment, printed by the instance that made it, kept by a restart; `setup-code` replaces it', async () => {
    const apis = await startAll({ DATABASE_URL: database.url });
    let code: string;
    try {
      const codes = apis.map((api) => CODE_LINE.exec(output(api))?.[1]).filter(Boolean);
      expect(codes).toHaveLength(1);
      code = codes[0]!;
      // The others say where it is, and how to get a new one.
      for (const api of apis.filter((a) => !output(a).includes(code))) {
        expect(await outputWith(api, 'A setup code was printed at')).toContain('`node apps/api/dist/main.js setup-code` prints a new one');
      }
    } finally {
      await Promise.all(apis.map((api) => api.stop()));
    }
    const restarted = await startApiProcess({ DATABASE_URL: database.url });
    try {
      expect(await outputWith(restarted, 'A setup code was printed at')).toContain('A setup code was printed at');
      expect(output(restarted)).not.toMatch(CODE_LINE);
    } finally {
      await restarted.stop();
    }
    const replaced = await runApiProcess({ DATABASE_URL: database.url, PUBLIC_URL: 'https://id.example.com' }, ['setup-code']);
    expect(replaced.code).toBe(0);
    expect(replaced.stdout).toMatch(/^New admin setup code \(the earlier one no longer works\): https:\/\/id\.example\.com\/signup\?setup_code=prss_[A-Za-z0-9_-]{43}\n$/);
    expect(replaced.stdout).not.toContain(code);
    // The earlier code ends with its replacement; the new one makes the administrator, once.
    const fresh = CODE_LINE.exec(replaced.stdout)![1]!;
    const app = await startTestApp({ database: { url: database.url, kind: 'server', drop: async () => undefined } });
    try {
      const signUp = (email: string, setupCode: string) => app.app.get(UsersService).createFirstAdmin({ email, name: 'First Admin', password: 'correct horse battery' }, setupCode);
      await expect(signUp('late@example.com', code)).rejects.toBeInstanceOf(InvalidSetupCodeError);
      await signUp('first@example.com', fresh);
      await expect(signUp('second@example.com', fresh)).rejects.toBeInstanceOf(InvalidSetupCodeError);
      expect(await adminEmails(database.url)).toEqual(['first@example.com']);
    } finally {
      await app.close();
    }
  });

  it('the administrator made through the setup link with no SMTP_URL approves an admin login once SMTP_URL is set (#49): the console’s link counts as the address’s proof', async () => {
    const shared = { url: database.url, kind: 'server' as const, drop: async () => undefined };
    const email = 'operator@example.com';
    const password = 'correct horse battery';
    // First start, no SMTP_URL: mail is a log line (the recipe's restart overwrites that log).
    const first = await startTestApp({ database: shared });
    try {
      const code = first.app.get(AdminSetupCodes).issued!;
      const web = webClient(first);
      expect((await signUp(web, { name: 'Operator', email, password, setup_code: code }, `/signup?setup_code=${code}`)).status).toBe(303);
      expect(await userByEmail(first, email)).toMatchObject({ role: 'admin', emailVerifiedAt: expect.any(Date) });
    } finally {
      await first.close();
    }

    // Restarted with SMTP_URL (REQUIRE_EMAIL_VERIFICATION on with it): the administrator approves
    // `prospect auth:login --scopes profile,tokens,admin,orgs` as before, no confirmation asked.
    const { api, smtp } = await startAppWithMail({ database: shared });
    try {
      expect(api.config.requireEmailVerification).toBe(true);
      const start = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin', 'orgs'] });
      const browser = await signInAs(api, email, password);
      const page = await browser.send('GET', `/device?user_code=${start.userCode}`);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('Confirm your e-mail address first');
      expect((await browser.send('POST', '/device/approve', { _csrf: browser.csrfFrom(page.text), user_code: start.userCode })).status).toBe(200);
      const authorized = (await poll(api, start.deviceCode)).body as { status: string; accessToken: string };
      expect(authorized.status).toBe('authorized');
      expect((await get(api, '/api/admin/users', authorized.accessToken)).status).toBe(200);
      // Nothing was mailed to confirm an address the setup link vouched for.
      await api.app.get(Mailer).settled();
      expect(smtp.to(email)).toEqual([]);
    } finally {
      await api.close();
    }
  });
});
