import type { Browser, BrowserContext, Page } from 'playwright-core';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { createUser, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { events, type Federation, PROVIDERS, startFederation } from './support/federation.js';

/**
 * Sign-in through a team's own OpenID provider in Chromium (issue #34): a real provider
 * (node-oidc-provider on localhost, another site than the API's 127.0.0.1) with its own sign-in
 * page. First sign-in with sign-up, a second one, a device login approved through the provider,
 * an enforced domain typed in the e-mail field, linking an existing account with its password,
 * and the account page of a person without a password.
 */
describe('sign-in through an identity provider, in a browser', () => {
  let fed: Federation;
  let browser: Browser;
  beforeAll(async () => {
    fed = await startFederation();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await fed?.close();
  });

  /** A fresh browser profile (no cookies at the API or the provider), with the pages' CSP violations collected. */
  async function freshPage(): Promise<{ context: BrowserContext; page: Page; violations: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    return { context, page, violations };
  }

  /** On the provider's own sign-in page: type the username and sign in; back at the API. */
  async function signInAtProvider(page: Page, username: string) {
    await page.waitForURL((url) => url.origin === fed.idp.issuer && url.pathname.startsWith('/interaction/'));
    await page.getByLabel('Username').fill(username);
    await Promise.all([page.waitForURL((url) => url.origin === new URL(fed.api.baseUrl).origin), page.getByRole('button', { name: 'Sign in' }).click()]);
  }

  const accountId = async (email: string) => (await userByEmail(fed.api, email))?.id;

  it('a first sign-in with “Continue with Acme SSO” makes the account; after signing out, the next one is the same account', async () => {
    fed.idp.users.set('ann', { sub: 'ann', email: 'ann@acme.test', email_verified: true, name: 'Ann Acme' });
    const { context, page, violations } = await freshPage();
    await page.goto(`${fed.api.baseUrl}/login`);
    await page.screenshot({ path: `${SCREENSHOTS}sso-login.png` });
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await signInAtProvider(page, 'ann');
    await page.waitForURL('**/settings/tokens');
    await expect(page.textContent('header')).resolves.toContain('ann@acme.test');
    await expect(page.textContent('main')).resolves.toContain('your account was made with Acme SSO');
    await page.screenshot({ path: `${SCREENSHOTS}sso-first-sign-in.png`, fullPage: true });
    const first = await accountId('ann@acme.test');
    expect(first).toBeDefined();

    await page.locator('header').getByRole('button', { name: /Sign out/ }).click();
    await page.waitForURL('**/login');
    // The provider remembers Ann: the way back needs no typing there.
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await page.waitForURL('**/settings/tokens');
    await expect(page.textContent('header')).resolves.toContain('ann@acme.test');
    expect(await accountId('ann@acme.test')).toBe(first);
    expect((await events(fed.api, 'federation.login')).filter((e) => e.user_id === first)).toHaveLength(2);
    expect(violations).toEqual([]);
    await context.close();
  });

  it('approves a device login through the provider: the CLI’s poll is authorized as the same person', async () => {
    fed.idp.users.set('dev', { sub: 'dev', email: 'dev@acme.test', email_verified: true, name: 'Dev Acme' });
    const start = await startDeviceLogin(fed.api);
    const { context, page } = await freshPage();
    await page.goto(start.verificationUrl);
    await page.waitForURL('**/login?**');
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await signInAtProvider(page, 'dev');
    await page.waitForURL('**/device?**');
    await expect(page.getByLabel('Code').textContent()).resolves.toBe(start.userCode);
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect(page.textContent('main')).resolves.toContain('is signed in');
    const res = await poll(fed.api, start.deviceCode);
    expect(res.body).toMatchObject({ status: 'authorized', user: { email: 'dev@acme.test' } });
    expect(res.body.user.id).toBe(await accountId('dev@acme.test'));
    await context.close();
  });

  it('an enforced domain typed in the e-mail field goes straight to the provider; its password is not asked', async () => {
    fed.idp.users.set('eve', { sub: 'eve', email: 'eve@acme.test', email_verified: true, name: 'Eve Acme' });
    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true })).status).toBe(200);
    try {
      const { context, page, violations } = await freshPage();
      await page.goto(`${fed.api.baseUrl}/login`);
      await page.getByLabel('E-mail').fill('eve@acme.test');
      await page.getByLabel('Password').fill('whatever is typed here');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await signInAtProvider(page, 'eve');
      await page.waitForURL('**/settings/tokens');
      await expect(page.textContent('header')).resolves.toContain('eve@acme.test');
      expect(violations).toEqual([]);
      await context.close();
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
  });

  it('links an existing account only after its password, in the same browser', async () => {
    const existing = await createUser(fed.api, { email: 'liz@acme.test', name: 'Liz' });
    fed.idp.users.set('liz', { sub: 'liz', email: 'liz@acme.test', email_verified: true, name: 'Liz Acme' });
    const { context, page } = await freshPage();
    await page.goto(`${fed.api.baseUrl}/login`);
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await signInAtProvider(page, 'liz');
    await page.waitForURL('**/login/link');
    await expect(page.textContent('main')).resolves.toContain('liz@acme.test already has a Prospect account');
    await page.screenshot({ path: `${SCREENSHOTS}sso-link.png`, fullPage: true });
    // Not signed in, and not linked, before the proof.
    expect(await federatedLinksOf(fed.api, { subject: 'liz' })).toEqual([]);
    await page.getByLabel('Password').fill('not her password');
    await page.getByRole('button', { name: 'Link with the password' }).click();
    await expect(page.textContent('main')).resolves.toContain('That password is not the one of this account');
    expect(await federatedLinksOf(fed.api, { subject: 'liz' })).toEqual([]);

    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Link with the password' }).click();
    await page.waitForURL('**/settings/tokens');
    await expect(page.textContent('main')).resolves.toContain('Acme SSO is linked to your account');
    expect((await federatedLinksOf(fed.api, { subject: 'liz' })).map((link) => link.userId)).toEqual([existing.id]);

    // From now on the provider signs her in.
    await page.locator('header').getByRole('button', { name: /Sign out/ }).click();
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await page.waitForURL('**/settings/tokens');
    await expect(page.textContent('header')).resolves.toContain('liz@acme.test');
    await context.close();
  });

  it('the account page asks a person who signs in only through the provider for no password, and deletes the account once they confirm there', async () => {
    fed.idp.users.set('dee', { sub: 'dee', email: 'dee@acme.test', email_verified: true, name: 'Dee Acme' });
    const { context, page, violations } = await freshPage();
    await page.goto(`${fed.api.baseUrl}/login`);
    await page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
    await signInAtProvider(page, 'dee');
    await page.waitForURL('**/settings/tokens');
    const id = await accountId('dee@acme.test');

    await page.goto(`${fed.api.baseUrl}/settings/account`);
    expect(await page.getByLabel('Your password').count()).toBe(0);
    expect(await page.getByLabel('Current password').count()).toBe(0);
    await expect(page.textContent('main')).resolves.toContain('You sign in with your identity provider');
    await page.screenshot({ path: `${SCREENSHOTS}sso-account-page.png`, fullPage: true });
    // The sign-in is not enough: the provider is asked again (it shows its sign-in page), then back here.
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await expect(page.textContent('main')).resolves.toContain('Confirm it’s you');
    await page.screenshot({ path: `${SCREENSHOTS}sso-account-delete-confirm.png`, fullPage: true });
    await page.getByRole('link', { name: 'Confirm with Acme SSO' }).click();
    await signInAtProvider(page, 'dee');
    await page.waitForURL('**/settings/account');
    await Promise.all([page.waitForURL('**/login?account=deleted'), page.getByRole('button', { name: 'Delete my account' }).click()]);
    expect(await userByEmail(fed.api, 'dee@acme.test')).toBeNull();
    expect(id).toBeDefined();
    expect(violations).toEqual([]);
    await context.close();
  });
});
