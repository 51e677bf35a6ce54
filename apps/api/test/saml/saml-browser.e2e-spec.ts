import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { userByEmail } from '../support/fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { verifiedTeam } from './support/saml-fixtures.js';
import { SamlIdp } from './support/saml-idp.js';

/**
 * SAML in Chromium (issue #47): an organization's admin connects its IdP on /orgs/{slug}/saml
 * (the SP's values shown to copy, the IdP's metadata pasted), turns on sign-up and enforcement,
 * runs "Test sign-in" (the IdP's answer shown, nobody signed in); then a person of the domain
 * types their address on /login and goes through the IdP (HTTP-Redirect, then its form posting
 * to the ACS) to end signed in.
 */
describe('SAML in a browser', () => {
  let api: TestApp;
  let idp: SamlIdp;
  let browser: Browser;
  beforeAll(async () => {
    api = await startTestApp();
    idp = await SamlIdp.start();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await idp?.close();
    await api?.close();
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

  it('an admin connects the IdP and tests it; a person of the domain signs in SP-initiated from /login', async () => {
    const { admin, slug } = await verifiedTeam(api, 'Initech', 'initech.test');

    const { context, page, violations } = await freshPage();
    await page.goto(`${api.baseUrl}/login`);
    await page.getByLabel('E-mail').fill(admin.email);
    await page.getByLabel('Password').fill('correct horse battery');
    await Promise.all([page.waitForURL((url) => url.pathname !== '/login'), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);

    await page.goto(`${api.baseUrl}/orgs/${slug}/saml`);
    await expect(page.getByRole('link', { name: 'SAML' }).getAttribute('aria-current')).resolves.toBe('page');
    await expect(page.getByLabel('ACS URL (Single sign-on URL, Reply URL; HTTP-POST)').inputValue()).resolves.toBe(`${api.baseUrl}/saml/${slug}/acs`);
    await expect(page.getByLabel('Entity ID (Audience URI, Identifier)').inputValue()).resolves.toBe(`${api.baseUrl}/saml/${slug}/metadata`);
    await page.getByLabel('IdP metadata XML').fill(idp.metadataXml());
    await Promise.all([page.waitForURL('**/saml?done=saved'), page.getByRole('button', { name: 'Connect' }).click()]);
    await expect(page.textContent('main')).resolves.toContain(idp.entityId);

    await page.getByLabel('A first sign-in of someone of your verified domains makes their account and membership').check();
    await page.getByLabel('People of your verified domains sign in only through SAML (no password, reset mail or passkey)').check();
    await Promise.all([page.waitForURL('**/saml?done=policy'), page.getByRole('button', { name: 'Save the policy' }).click()]);
    await page.screenshot({ path: `${SCREENSHOTS}org-saml.png`, fullPage: true });

    // Test sign-in: off to the IdP, whose form posts back; the answer is shown, nobody signed in.
    idp.next = { nameId: 'tester@initech.test', authnContextClassRef: 'urn:test:ctx' };
    await Promise.all([page.waitForURL(`**/saml/${slug}/acs`), page.getByRole('link', { name: 'Test sign-in' }).click()]);
    await expect(page.getByRole('heading', { name: 'Test sign-in worked' }).isVisible()).resolves.toBe(true);
    await expect(page.textContent('main')).resolves.toContain('urn:test:ctx');
    await expect(page.textContent('main')).resolves.toContain('in a verified domain');
    await page.screenshot({ path: `${SCREENSHOTS}org-saml-tested.png`, fullPage: true });
    expect(await userByEmail(api, 'tester@initech.test')).toBeNull();
    expect(violations).toEqual([]);
    await context.close();

    // A person of initech.test types their address: no password is asked; the IdP signs them in.
    idp.next = { nameId: 'peter@initech.test', attributes: { displayName: 'Peter Gibbons' } };
    const person = await freshPage();
    await person.page.goto(`${api.baseUrl}/login?next=%2Fsettings%2Faccount`);
    await person.page.getByLabel('E-mail').fill('peter@initech.test');
    await person.page.getByLabel('Password').fill('whatever is typed here');
    await Promise.all([person.page.waitForURL('**/settings/account'), person.page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await expect(person.page.textContent('header')).resolves.toContain('peter@initech.test');
    expect(idp.requests.at(-1)).toMatchObject({ acsUrl: `${api.baseUrl}/saml/${slug}/acs` });
    expect(await userByEmail(api, 'peter@initech.test')).toMatchObject({ name: 'Peter Gibbons' });
    await person.page.screenshot({ path: `${SCREENSHOTS}saml-signed-in.png`, fullPage: true });
    expect(person.violations).toEqual([]);
    await person.context.close();
  });
});
