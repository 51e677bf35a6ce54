import { type DeviceStartResponse, ROUTES } from '@prospect/contract';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { Mailer } from '../../src/mail/mailer.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { poll, startDeviceLogin } from '../support/fixtures.js';
import { client, request } from '../support/http.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS, signUpInPage } from '../support/browser.js';

const PASSWORD = 'correct horse battery';
const CLI_AGENT = 'prospect-cli/0.1.0 (linux; node 20.20.2)';
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/**
 * Issue #36's page nits, in Chromium at desktop and phone width: what a person sees (the rendered
 * text, not the markup) on the approval and consent pages, the tokens page, People and the
 * invitation page. Screenshots land in SCREENSHOTS as nits-<page>-<width>.png.
 */
describe('page nits (issue #36) in a real browser', () => {
  let api: TestApp;
  let smtp: SmtpSink;
  let browser: Browser;
  /** The first admin, signed up with the setup code (the account People said had never signed in). */
  let admin: BrowserContext;
  const adminEmail = 'first-admin@example.com';
  /** A person who is not an administrator, signed up in the browser. */
  let person: BrowserContext;
  const personEmail = 'plain-person@example.com';

  beforeAll(async () => {
    smtp = await SmtpSink.start();
    [api, browser] = await Promise.all([startTestApp({ env: { SMTP_URL: smtp.url, REQUIRE_EMAIL_VERIFICATION: 'false' } }), launchBrowser()]);
    const setupCode = [...api.logs().matchAll(/signup\?setup_code=(prss_[A-Za-z0-9_-]+)/g)].at(-1)?.[1];
    expect(setupCode).toBeDefined();
    admin = await browser.newContext();
    await signUp(await admin.newPage(), `/signup?setup_code=${setupCode}`, 'First Admin', adminEmail);
    person = await browser.newContext();
    await signUp(await person.newPage(), '/signup', 'Plain Person', personEmail);
    expect((await api.app.get(UsersService).findByEmail(adminEmail))?.role).toBe('admin');
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await smtp?.stop();
  });

  async function signUp(page: Page, path: string, name: string, email: string) {
    await page.goto(`${api.baseUrl}${path}`);
    await signUpInPage(page, { name, email, password: PASSWORD });
    await page.close();
  }

  async function open(context: BrowserContext, width: (typeof WIDTHS)[number], path: string): Promise<Page> {
    const page = await context.newPage();
    await page.setViewportSize({ width: width.width, height: width.height });
    await page.goto(`${api.baseUrl}${path}`);
    return page;
  }

  const shoot = (page: Page, name: string, width: (typeof WIDTHS)[number]) => page.screenshot({ path: `${SCREENSHOTS}nits-${name}-${width.name}.png`, fullPage: true });
  /** What the person sees: rendered text only (a closed <details> shows none of its content). */
  const seen = (page: Page) => page.locator('main').innerText();
  /** Nothing wider than the window: no sideways scrolling on a phone. */
  const fitsWidth = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
  /** A rendered colour, as the browser computed it (CSS variables resolved). */
  const colourOf = (locator: Locator) => locator.evaluate((el) => (el.ownerDocument.defaultView as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color);

  describe.each(WIDTHS)('at $name width ($width px)', (width) => {
    it('approval page: plain-language scopes, no admin line for a non-admin, the client named once with what is checked', async () => {
      // As the CLI starts it: a name for itself and its User-Agent.
      const started = await client(api).post(ROUTES.deviceStart).set('user-agent', CLI_AGENT).send({ clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
      expect(started.status).toBe(200);
      const login = started.body as DeviceStartResponse;
      const page = await open(person, width, `/device?user_code=${login.userCode}`);
      const text = await seen(page);
      expect(text).toContain('Prospect CLI wants to sign in as you');
      expect(await page.locator('ul.scopes li').allInnerTexts()).toEqual(['See your name and e-mail address', 'Create tokens that act as you']);
      expect(text).not.toMatch(/administ/i);
      // No raw scope tags in sight; the names are folded away as a technical detail.
      expect(await page.locator('main code:visible').count()).toBe(0);
      // One name for the client: the registered one. What it calls itself is no second "name" row.
      expect(await page.locator('dl.request dt').allInnerTexts()).toEqual(['Computer', 'Program', 'IP address', 'Started']);
      expect(text).not.toContain('Calls itself');
      expect(await page.locator('dl.request dd').nth(1).innerText()).toBe(CLI_AGENT);
      expect(text).not.toContain('prospect CLI 0.1.0');
      expect(text).toContain('Prospect CLI is the name registered with Prospect; the computer and program are what it says about itself.');
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'approve-non-admin', width);
      await page.getByText('Technical details').click();
      const details = await page.locator('details.technical').innerText();
      expect(details).toContain('prospect-cli');
      expect(details).toContain('prospect CLI 0.1.0');
      expect(details).toMatch(/profile\s+tokens/);
      expect(details).not.toContain('admin');
      await shoot(page, 'approve-non-admin-details', width);
      await page.close();
    });

    it('approval page for an administrator: the admin scope in words, and how long it lasts', async () => {
      const login = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
      const page = await open(admin, width, `/device?user_code=${login.userCode}`);
      expect(await page.locator('ul.scopes li').allInnerTexts()).toEqual([
        'See your name and e-mail address',
        'Create tokens that act as you',
        'Administer this Prospect as you: people, applications and their sessions',
      ]);
      expect(await seen(page)).toContain(`Administering lasts ${api.config.adminGrantSeconds / 3600} hours from your approval`);
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'approve-admin', width);
      await page.close();
    });

    it('consent page: scopes in words, no raw tags, the client named in its heading', async () => {
      const clientId = `nits-tool-${width.name}`;
      const adminUser = (await api.app.get(UsersService).findByEmail(adminEmail))!;
      const adminToken = (await api.app.get(TokensService).issue({ userId: adminUser.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
      const registered = await request(api, 'POST', '/api/admin/clients', {
        json: { id: clientId, name: 'Nits Tool', allowedScopes: ['openid', 'profile', 'email'], redirectUris: ['http://127.0.0.1/callback'] },
        token: adminToken,
      });
      expect(registered.status).toBe(201);
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1/callback',
        scope: 'openid profile email',
        state: 'nits',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
      const page = await open(person, width, `/oauth/authorize?${query}`);
      const text = await seen(page);
      expect(text).toContain('Nits Tool wants to sign you in');
      expect(await page.locator('ul.scopes li').allInnerTexts()).toEqual([
        'Sign you in with your Prospect account',
        'See your name and e-mail address',
        'See your e-mail address and whether it is confirmed',
      ]);
      expect(await page.locator('ul.scopes code:visible').count()).toBe(0);
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'consent', width);
      await page.close();
    });

    it('tokens page: a device session says how long it is renewable and how long its access token lasts; sign-out everywhere is calm until asked', async () => {
      const login = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: `laptop-${width.name}` });
      const approval = await open(person, width, `/device?user_code=${login.userCode}`);
      await approval.getByRole('button', { name: 'Approve' }).click();
      await approval.waitForURL((url) => url.pathname === '/device/approve');
      await approval.close();
      expect((await poll(api, login.deviceCode)).body.status).toBe('authorized');

      const page = await open(person, width, '/settings/tokens');
      const text = await seen(page);
      const minutes = Math.round(api.config.accessTokenTtlSeconds / 60);
      // As `prospect auth:login` words it: "the access token lasts 60 minutes and is renewed automatically".
      expect(text).toContain(`its access token lasts ${minutes} minutes and is renewed automatically`);
      const row = page.locator('tr', { hasText: `laptop-${width.name}` });
      expect(await row.locator('td[data-label="Ends"]').innerText()).toMatch(/^renewable until\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      expect(text).not.toMatch(/Expires\s+\d{4}/);

      // Sign out everywhere: a heading and a quiet control; the red button only once opened.
      expect(text).toContain('Sign out everywhere');
      const danger = page.getByRole('button', { name: 'Sign out everywhere now' });
      expect(await danger.isVisible()).toBe(false);
      const summary = page.locator('details.confirm > summary');
      const calm = await colourOf(summary);
      expect(calm).toBe('rgb(28, 30, 33)'); // the text colour, not --bad
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'tokens', width);
      await summary.click();
      expect(await danger.isVisible()).toBe(true);
      expect(await colourOf(danger)).toBe('rgb(180, 35, 24)'); // --bad
      await shoot(page, 'tokens-sign-out-open', width);
      await page.close();
    });

    it('People: the signed-in admin and a person who signed up show when they last signed in, not "never"', async () => {
      const page = await open(admin, width, '/admin/users');
      for (const email of [adminEmail, personEmail]) {
        const cell = page.locator('tr', { hasText: email }).locator('td[data-label="Last sign-in"]');
        expect(await cell.innerText()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      }
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'people', width);
      await page.close();
    });
  });

  it('invitation page names the address being set up, and accepting it counts as a sign-in', async () => {
    const email = 'invited-ivy@example.com';
    const list = await open(admin, WIDTHS[0], '/admin/users');
    await list.getByLabel('Name', { exact: true }).fill('Ivy Invited');
    await list.getByLabel('E-mail address').fill(email);
    await Promise.all([list.waitForURL((url) => url.searchParams.has('invited')), list.getByRole('button', { name: 'Send the invitation' }).click()]);
    await api.app.get(Mailer).settled();
    const link = /^(http:\/\/\S+\/invitation\?token=prsi_\S+)$/m.exec(smtp.to(email)[0]!.text)![1]!;
    const invitedLink = new URL(link);

    for (const width of WIDTHS) {
      const context = await browser.newContext();
      const page = await open(context, width, invitedLink.pathname + invitedLink.search);
      expect(await seen(page)).toContain(`You are setting up the account for ${email}`);
      expect(await page.getByLabel('E-mail address').inputValue()).toBe(email);
      expect(await fitsWidth(page)).toBe(true);
      await shoot(page, 'invitation', width);
      if (width.name === 'phone') {
        await page.getByLabel('Password', { exact: true }).fill('my own passphrase');
        await page.getByLabel('The same again').fill('my own passphrase');
        await Promise.all([page.waitForURL((url) => url.pathname === '/settings/tokens'), page.getByRole('button', { name: 'Set my password' }).click()]);
      }
      await context.close();
    }
    await list.reload();
    expect(await list.locator('tr', { hasText: email }).locator('td[data-label="Last sign-in"]').innerText()).toMatch(/UTC$/);
    await list.close();
  });
});
