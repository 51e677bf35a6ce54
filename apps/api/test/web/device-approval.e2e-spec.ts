import { ROUTES } from '@prospect/contract';
import type { Browser, Page } from 'playwright-core';
import { FakeClock } from '../support/fake-clock.js';
import { poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { get } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS, signUpInPage } from '../support/browser.js';

/** A person in a real browser: sign up, approve or deny a CLI, manage tokens. */
describe('web pages in a real browser', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    api = await startTestApp({ clock });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  let n = 0;
  async function signUp(page: Page, startUrl: string) {
    n += 1;
    const email = `person${n}@example.com`;
    await page.goto(startUrl);
    // From the verification URL the login page offers sign-up, keeping where to return.
    await signUpInPage(page, { name: `Person ${n}`, email, password: 'correct horse battery' });
    return email;
  }

  it('signs up from the verification URL, keeps the code through the detour, approves, and the CLI gets the same person', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    // The pages' own CSP must not block anything they use (their stylesheet, the copy script).
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    const start = await startDeviceLogin(api);
    await page.goto(start.verificationUrl);
    await page.screenshot({ path: `${SCREENSHOTS}login.png` });
    const email = await signUp(page, start.verificationUrl);

    await expect(page.getByLabel('Code').textContent()).resolves.toBe(start.userCode);
    const text = await page.textContent('main');
    expect(text).toContain('prospect CLI 0.1.0');
    expect(text).toContain('laptop');
    expect(text).toContain('127.0.0.1');
    expect(text).toContain('exactly the one shown in your own terminal');
    await page.screenshot({ path: `${SCREENSHOTS}approve.png`, fullPage: true });

    await page.getByRole('button', { name: 'Approve' }).click();
    await expect(page.textContent('main')).resolves.toContain('Prospect CLI is signed in');
    await expect(page.textContent('main')).resolves.toContain('You can close this page and return to your terminal.');
    await page.screenshot({ path: `${SCREENSHOTS}approved.png` });

    const res = await poll(api, start.deviceCode);
    expect(res.body).toMatchObject({ status: 'authorized', user: { email } });
    const webUser = (await userByEmail(api, email))!;
    expect(res.body.user.id).toBe(webUser.id);
    expect(violations).toEqual([]);
    await page.close();
  });

  it('denies, and a code typed by hand in any case works; a used code gets a clear page', async () => {
    const page = await browser.newPage();
    await signUp(page, `${api.baseUrl}/signup`);
    const start = await startDeviceLogin(api);

    await page.goto(`${api.baseUrl}/device`);
    await page.screenshot({ path: `${SCREENSHOTS}enter-code.png` });
    await page.getByLabel('Code').fill(start.userCode.replace('-', ' ').toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect(page.getByLabel('Code').textContent()).resolves.toBe(start.userCode);
    await page.getByRole('button', { name: 'Deny' }).click();
    await expect(page.textContent('main')).resolves.toContain('Nothing was signed in');
    expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });

    const again = await page.goto(`${api.baseUrl}/device?user_code=${start.userCode}`);
    expect(again!.status()).toBe(409);
    await expect(page.textContent('main')).resolves.toContain('already used');
    await page.close();
  });

  it('says an expired code has expired', async () => {
    const page = await browser.newPage();
    await signUp(page, `${api.baseUrl}/signup`);
    const start = await startDeviceLogin(api);
    clock.advanceSeconds(601);
    const res = await page.goto(start.verificationUrl);
    expect(res!.status()).toBe(410);
    await expect(page.textContent('main')).resolves.toContain('This code has expired');
    await page.screenshot({ path: `${SCREENSHOTS}expired.png` });
    await page.close();
  });

  it('creates a token shown once, and revoking it makes /me refuse it', async () => {
    const page = await browser.newPage();
    await signUp(page, `${api.baseUrl}/signup`);
    await page.goto(`${api.baseUrl}/settings/tokens`);
    await page.getByLabel('Label').fill('build server');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = await page.getByLabel('Token', { exact: true }).inputValue();
    expect(token).toMatch(/^prs_/);
    // The whole login command, in a field that selects and copies at any width.
    expect(await page.getByLabel('Login command').inputValue()).toBe(`prospect auth:login --api-url ${api.baseUrl} --token -`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: `${SCREENSHOTS}tokens-phone.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.screenshot({ path: `${SCREENSHOTS}tokens.png`, fullPage: true });
    // At desktop width the table has room: every date on one line, the login command whole in its field.
    // (In the page's own JavaScript: these tests are compiled without the DOM's types.)
    const dateLines = await page.evaluate<number[]>(`[...document.querySelectorAll('td.when')].map((cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      return range.getClientRects().length;
    })`);
    expect(dateLines).toEqual([1, 1, 1]);
    expect(await page.evaluate<boolean>(`(() => { const field = document.getElementById('login-command'); return field.scrollWidth <= field.clientWidth; })()`)).toBe(true);
    // The header's links look alike but for the page you are on.
    const navStyles = await page.evaluate<Array<{ current: boolean; look: string }>>(`[...document.querySelectorAll('header nav a, header nav button')].map((item) => ({
      current: item.getAttribute('aria-current') === 'page',
      look: getComputedStyle(item).color + ' ' + getComputedStyle(item).textDecorationLine + ' ' + getComputedStyle(item).fontSize,
    }))`);
    expect(navStyles.filter((style) => style.current)).toHaveLength(1);
    expect(new Set(navStyles.filter((style) => !style.current).map((style) => style.look)).size).toBe(1);
    expect((await get(api, ROUTES.me, token)).status).toBe(200);

    await page.goto(`${api.baseUrl}/settings/tokens`);
    expect(await page.content()).not.toContain(token);
    // Revoking asks first, without JavaScript: a page with what stops working and the button.
    await page.getByRole('link', { name: 'Revoke build server' }).click();
    await expect(page.textContent('main')).resolves.toContain('Revoke “build server”?');
    await page.screenshot({ path: `${SCREENSHOTS}revoke-confirm.png` });
    await page.getByRole('button', { name: 'Revoke' }).click();
    await expect(page.textContent('main')).resolves.toContain('Revoked “build server”');
    expect((await get(api, ROUTES.me, token)).status).toBe(401);
    expect(await page.getByRole('link', { name: 'Revoke build server' }).count()).toBe(0); // no longer listed
    await page.close();
  });

  it('refuses a forged approval without the CSRF token', async () => {
    const page = await browser.newPage();
    await signUp(page, `${api.baseUrl}/signup`);
    const start = await startDeviceLogin(api);
    // The browser sends the session cookie, as a cross-site form would try to.
    const res = await page.request.post(`${api.baseUrl}/device/approve`, { form: { user_code: start.userCode } });
    expect(res.status()).toBe(403);
    expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'pending' });
    await page.close();
  });

  it('refuses to be framed, so Approve cannot be clickjacked', async () => {
    const page = await browser.newPage();
    await signUp(page, `${api.baseUrl}/signup`);
    const start = await startDeviceLogin(api);
    const direct = await page.goto(start.verificationUrl);
    expect(direct!.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(direct!.headers()['x-frame-options']).toBe('DENY');

    await page.setContent(`<iframe id="f" src="${start.verificationUrl}" width="400" height="400"></iframe>`);
    await page.waitForTimeout(500);
    const framed = page.frames().find((f) => f !== page.mainFrame());
    const framedText = framed ? await framed.textContent('body').catch(() => '') : '';
    expect(framedText).not.toContain('Approve');
    await page.close();
  });
});
