import { Mailer } from '../../src/mail/mailer.js';
import { UsersService } from '../../src/users/users.service.js';
import { hashPassword } from '../../src/users/password.js';
import { RECONFIRMATION_SECONDS } from '../../src/auth/sudo-rule.js';
import { latestLink } from '../support/account-flows.js';
import { FakeClock } from '../support/fake-clock.js';
import { userById } from '../support/fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { type Federation, PROVIDERS, signedInAs, signInThrough, startFederationWithMail } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';

const SUDO_SECONDS = 600;
const OLD_PASSWORD = 'a password from before the provider';

/**
 * The account page of a person who signs in through an identity provider: a change of how they
 * sign in (a password, the address, a deletion) is made just after re-confirming there (the sign-in
 * alone is not enough), never with a password they do not have; where the provider enforces the
 * domain it keeps the address and the password, and a password left from before is no proof.
 */
describe('the account page of a person who signs in through a provider', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let fed: Federation;
  beforeAll(async () => ({ fed, smtp } = await startFederationWithMail({ clock, env: { SUDO_SECONDS: String(SUDO_SECONDS) } })));
  afterAll(() => fed?.close());

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

  it('asks for no password it does not have: the account is deleted just after re-confirming at the provider, not on the sign-in alone', async () => {
    const { person, browser, user } = await providerPerson();
    expect(await fed.api.app.get(UsersService).hasPassword(user.id)).toBe(false);
    const shown = await page(browser);
    expect(shown.text).not.toContain('name="password" type="password" autocomplete="current-password"');
    expect(shown.text).toContain('Set the password');

    // Signed in a moment ago (sudo mode), yet asked: a provider may sign a person in without asking anything.
    const asked = await post(browser, 'delete', {});
    expect(asked.status).toBe(403);
    expect(asked.text).toContain('Confirm with Acme SSO');
    // Not a password it does not have, and not hours of sudo mode: the page says what it asks and for how long.
    expect(asked.text).not.toContain('id="sudo-password"');
    expect(asked.text).toContain('Please confirm with your identity provider; it counts for 10 minutes.');
    expect(await userById(fed.api, user.id)).not.toBeNull();

    expect(await confirmAtProvider(browser, person.sub)).toMatchObject({ status: 303, location: new URL('/settings/account', fed.api.baseUrl) });
    const deleted = await post(browser, 'delete', {});
    expect(deleted).toMatchObject({ status: 303, location: new URL('/login?account=deleted', fed.api.baseUrl) });
    expect(await userById(fed.api, user.id)).toBeNull();
  });

  it('sets a first password after re-confirming, which then is asked for like anyone’s; the session stays the provider’s', async () => {
    const { person, browser, user } = await providerPerson();
    const password = 'a first password of mine';
    await confirmAtProvider(browser, person.sub);
    // A re-confirmation stands for a few minutes, not for all of sudo mode.
    clock.advanceSeconds(Math.min(RECONFIRMATION_SECONDS, SUDO_SECONDS) + 1);
    expect((await post(browser, 'password', { password, password_again: password })).status).toBe(403);
    expect(await fed.api.app.get(UsersService).hasPassword(user.id)).toBe(false);

    await confirmAtProvider(browser, person.sub);
    const set = await post(browser, 'password', { password, password_again: password });
    expect(set).toMatchObject({ status: 303, location: new URL('/settings/account?done=password', fed.api.baseUrl) });
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
    // From now on the forms ask for it.
    expect((await page(browser)).text).toContain('id="delete-password"');
    expect((await post(browser, 'delete', {})).status).toBe(400);
    expect(await userById(fed.api, user.id)).not.toBeNull();

    // Signed in again under the new password as the same sign-in: still ended by its provider's.
    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { disabled: true })).status).toBe(200);
    try {
      expect(await signedInAs(browser, fed.api)).toBeNull();
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { disabled: false });
    }
  });

  it('where the provider enforces the domain, the address and password stay its own, and a password left from before proves nothing', async () => {
    const { person, browser, user } = await providerPerson();
    // A password from before the domain was enforced (every session ends with it: sign in again)…
    await fed.api.app.get(UsersService).changeWithAudit(user.id, { passwordHash: await hashPassword(OLD_PASSWORD) }, 'password.change', null);
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    // …and an address change asked for then, with it: its link is mailed.
    const moved = `moved${n}@example.com`;
    expect((await post(browser, 'email', { email: moved, password: OLD_PASSWORD })).status).toBe(200);
    const changeLink = await latestLink(fed.api, smtp, moved, '/email-change');
    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true })).status).toBe(200);
    try {
      // The link mailed before moves the address out of the domain no more.
      const linkPage = await browser.request(changeLink);
      const followed = await browser.request(`${fed.api.baseUrl}/email-change`, { form: { _csrf: HttpBrowser.csrfOf(linkPage.text), token: changeLink.searchParams.get('token')! } });
      expect(followed.status).toBe(403);
      expect(followed.text).toContain('Acme SSO manages your address now');
      expect((await userById(fed.api, user.id))?.email).toBe(person.email);

      const shown = await page(browser);
      expect(shown.text).toContain('Acme SSO manages your address and how you sign in');
      expect(shown.text).not.toContain('action="/settings/account/email"');
      expect(shown.text).not.toContain('action="/settings/account/password"');

      const elsewhere = `elsewhere${n}@example.com`;
      const noticesBefore = smtp.to(person.email).length;
      const address = await post(browser, 'email', { email: elsewhere, password: OLD_PASSWORD });
      expect(address.status).toBe(403);
      expect(address.text).toContain('managed by Acme SSO');
      const password = await post(browser, 'password', { current_password: OLD_PASSWORD, password: 'another password', password_again: 'another password' });
      expect(password.status).toBe(403);
      await fed.api.app.get(Mailer).settled();
      expect(smtp.to(elsewhere)).toEqual([]);
      expect(smtp.to(person.email)).toHaveLength(noticesBefore);

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
