import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { userByEmail } from '../support/fixtures.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import { markDomainVerified, organizationId } from '../support/verified-domain-fixtures.js';
import { type Federation, startFederation } from '../federation/support/federation.js';
import { CLIENT_ID, CLIENT_SECRET } from '../federation/support/test-provider.js';

/**
 * An organization's identity providers in Chromium (issue #44): its admin registers the
 * organization's provider on /orgs/{slug}/identity-providers with the keyboard, tests its
 * connection (the discovery answer shown), and a person of the organization's enforced domain
 * typing their address on /login is sent to that provider and signed in.
 */
describe('identity providers of an organization, in a browser', () => {
  let fed: Federation;
  let browser: Browser;
  beforeAll(async () => {
    fed = await startFederation({ configure: false, providerIds: ['globex-sso'] });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await fed?.close();
  });

  async function freshPage(): Promise<{ context: BrowserContext; page: Page; violations: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    return { context, page, violations };
  }

  async function signInWithPassword(page: Page, email: string) {
    await page.goto(`${fed.api.baseUrl}/login`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await Promise.all([page.waitForURL((url) => url.pathname !== '/login'), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
  }

  it('an admin registers the provider and tests its connection; a person of the enforced domain is sent to it from /login', async () => {
    const owner = await personWithToken(fed.api);
    const admin = await personWithToken(fed.api);
    const slug = await createOrganization(fed.api, owner, 'Globex');
    await addMember(fed.api, slug, owner.id, admin, 'admin');
    await markDomainVerified(fed.api, await organizationId(fed.api, slug, owner.id), 'globex.test', { enforceSso: true });

    const { context, page, violations } = await freshPage();
    await signInWithPassword(page, admin.email);
    await page.goto(`${fed.api.baseUrl}/orgs/${slug}/identity-providers`);
    await expect(page.textContent('main')).resolves.toContain('globex.test');
    // The register form, filled and sent with the keyboard.
    await page.locator('#issuer').focus();
    await page.keyboard.type(fed.idp.issuer);
    await page.keyboard.press('Tab'); // the tenant, for Microsoft only
    await page.keyboard.press('Tab');
    await page.keyboard.type('globex-sso');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Globex SSO');
    await page.keyboard.press('Tab');
    await page.keyboard.type(CLIENT_ID);
    await page.keyboard.press('Tab');
    await page.keyboard.type(CLIENT_SECRET);
    await page.keyboard.press('Tab'); // scopes: the default
    await page.keyboard.press('Tab');
    await page.keyboard.type('globex.test');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space'); // create accounts
    await page.keyboard.press('Tab'); // the acr values: none; Enter in a field sends the form
    await page.screenshot({ path: `${SCREENSHOTS}org-identity-providers-form.png`, fullPage: true });
    await Promise.all([page.waitForURL('**/identity-providers?created=globex-sso'), page.keyboard.press('Enter')]);
    await expect(page.textContent('main')).resolves.toContain(`${fed.api.baseUrl}/login/sso/globex-sso/callback`);

    await page.getByRole('button', { name: 'Test connection' }).focus();
    await Promise.all([page.waitForURL('**/identity-providers/globex-sso/test'), page.keyboard.press('Enter')]);
    const answer = page.getByRole('status');
    await expect(answer.textContent()).resolves.toContain('The provider answered');
    await expect(answer.textContent()).resolves.toContain(`${fed.idp.issuer}/token`);
    await page.screenshot({ path: `${SCREENSHOTS}org-identity-providers-tested.png`, fullPage: true });
    expect(violations).toEqual([]);
    await context.close();

    // A person of globex.test types their address: no password is asked, the organization's provider signs them in.
    fed.idp.users.set('gus', { sub: 'gus', email: 'gus@globex.test', email_verified: true, name: 'Gus Globex' });
    const person = await freshPage();
    await person.page.goto(`${fed.api.baseUrl}/login`);
    await person.page.getByLabel('E-mail').fill('gus@globex.test');
    await person.page.getByLabel('Password').fill('whatever is typed here');
    await person.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await person.page.waitForURL((url) => url.origin === fed.idp.issuer && url.pathname.startsWith('/interaction/'));
    await person.page.getByLabel('Username').fill('gus');
    await Promise.all([person.page.waitForURL('**/settings/tokens'), person.page.getByRole('button', { name: 'Sign in' }).click()]);
    await expect(person.page.textContent('header')).resolves.toContain('gus@globex.test');
    expect(await userByEmail(fed.api, 'gus@globex.test')).not.toBeNull();
    expect(person.violations).toEqual([]);
    await person.context.close();
  });
});
