import { Mailer } from '../../src/mail/mailer.js';
import { UsersService } from '../../src/users/users.service.js';
import { hashPassword } from '../../src/users/password.js';
import { FakeClock } from '../support/fake-clock.js';
import { userById } from '../support/fixtures.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { type Federation, PROVIDERS, signedInAs, signInThrough, startFederation } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';

const SUDO_SECONDS = 600;
const OLD_PASSWORD = 'a password from before the provider';

/**
 * The account page of a person who signs in through an identity provider: a change of how they
 * sign in (a password, the address, a deletion) is confirmed in sudo mode there, never with a
 * password they do not have; where the provider enforces the domain it keeps the address and the
 * password, and a password left from before is no proof.
 */
describe('the account page of a person who signs in through a provider', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let fed: Federation;
  beforeAll(async () => {
    smtp = await SmtpSink.start();
    fed = await startFederation({ clock, env: { SMTP_URL: smtp.url, SUDO_SECONDS: String(SUDO_SECONDS) } });
  });
  afterAll(async () => {
    await fed?.close();
    await smtp?.stop();
  });

  let n = 0;
  /** A person at the provider who signs in through it in a browser of their own: their account is made then, without a password. */
  async function providerPerson() {
    n += 1;
    const person = { sub: `page-${n}`, email: `page${n}@acme.test`, email_verified: true, name: `Page ${n}`, amr: ['pwd'] };
    fed.idp.users.set(person.sub, person);
    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, '/login/sso/acme', person.sub)).status).toBe(303);
    const user = (await fed.api.app.get(UsersService).findByEmail(person.email))!;
    return { person, browser, user };
  }
  const page = (browser: HttpBrowser) => browser.request(`${fed.api.baseUrl}/settings/account`);
  /** Posts a form of the account page, with its CSRF token. */
  async function post(browser: HttpBrowser, path: string, form: Record<string, string>) {
    const token = HttpBrowser.csrfOf((await page(browser)).text);
    return browser.request(`${fed.api.baseUrl}/settings/account/${path}`, { form: { _csrf: token, ...form } });
  }
  const confirmAtProvider = (browser: HttpBrowser, sub: string) => signInThrough(browser, fed.api, '/sudo/sso/acme?next=%2Fsettings%2Faccount', sub);

  it('asks for no password it does not have: the account is deleted in sudo mode, confirmed at the provider', async () => {
    const { person, browser, user } = await providerPerson();
    expect(await fed.api.app.get(UsersService).hasPassword(user.id)).toBe(false);
    const shown = await page(browser);
    expect(shown.text).not.toContain('name="password" type="password" autocomplete="current-password"');
    expect(shown.text).toContain('Set the password');

    clock.advanceSeconds(SUDO_SECONDS + 1);
    const asked = await post(browser, 'delete', {});
    expect(asked.status).toBe(403);
    expect(asked.text).toContain('Confirm with Acme SSO');
    expect(await userById(fed.api, user.id)).not.toBeNull();

    expect(await confirmAtProvider(browser, person.sub)).toMatchObject({ status: 303, location: new URL('/settings/account', fed.api.baseUrl) });
    const deleted = await post(browser, 'delete', {});
    expect(deleted).toMatchObject({ status: 303, location: new URL('/login?account=deleted', fed.api.baseUrl) });
    expect(await userById(fed.api, user.id)).toBeNull();
  });

  it('sets a first password in sudo mode, which then signs in and is asked for like anyone’s', async () => {
    const { person, browser, user } = await providerPerson();
    clock.advanceSeconds(SUDO_SECONDS + 1);
    const password = 'a first password of mine';
    expect((await post(browser, 'password', { password, password_again: password })).status).toBe(403);
    expect(await fed.api.app.get(UsersService).hasPassword(user.id)).toBe(false);

    await confirmAtProvider(browser, person.sub);
    const set = await post(browser, 'password', { password, password_again: password });
    expect(set).toMatchObject({ status: 303, location: new URL('/settings/account?done=password', fed.api.baseUrl) });
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
    // From now on the forms ask for it, sudo mode or not.
    expect((await page(browser)).text).toContain('id="delete-password"');
    expect((await post(browser, 'delete', {})).status).toBe(400);
    expect(await userById(fed.api, user.id)).not.toBeNull();
  });

  it('where the provider enforces the domain, the address and password stay its own, and a password left from before proves nothing', async () => {
    const { person, browser, user } = await providerPerson();
    // A password from before the domain was enforced (every session ends with it: sign in again).
    await fed.api.app.get(UsersService).changeWithAudit(user.id, { passwordHash: await hashPassword(OLD_PASSWORD) }, 'password.change', null);
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true })).status).toBe(200);
    try {
      const shown = await page(browser);
      expect(shown.text).toContain('Acme SSO manages your address and how you sign in');
      expect(shown.text).not.toContain('action="/settings/account/email"');
      expect(shown.text).not.toContain('action="/settings/account/password"');

      const elsewhere = `elsewhere${n}@example.com`;
      const address = await post(browser, 'email', { email: elsewhere, password: OLD_PASSWORD });
      expect(address.status).toBe(403);
      expect(address.text).toContain('managed by Acme SSO');
      const password = await post(browser, 'password', { current_password: OLD_PASSWORD, password: 'another password', password_again: 'another password' });
      expect(password.status).toBe(403);
      await fed.api.app.get(Mailer).settled();
      expect([...smtp.to(elsewhere), ...smtp.to(person.email)]).toEqual([]);

      clock.advanceSeconds(SUDO_SECONDS + 1);
      const withOldPassword = await post(browser, 'delete', { password: OLD_PASSWORD });
      expect(withOldPassword.status).toBe(403);
      expect(withOldPassword.text).toContain('Confirm with Acme SSO');
      expect(await userById(fed.api, user.id)).not.toBeNull();

      await confirmAtProvider(browser, person.sub);
      expect((await post(browser, 'delete', {})).status).toBe(303);
      expect(await userById(fed.api, user.id)).toBeNull();
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
  });
});
