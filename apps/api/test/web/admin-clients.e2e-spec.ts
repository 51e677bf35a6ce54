import type { Browser, Page } from 'playwright-core';
import { DeviceLoginService } from '../../src/device-login/device-login.service.js';
import { clientById, clientIds } from '../support/client-fixtures.js';
import { countAuthEvents, createUser, startDeviceLogin } from '../support/fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { signInAs, type WebClient, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** The admin page for public OAuth clients, and the approval page naming the client that asks. */
describe('OAuth clients pages', () => {
  let api: TestApp;
  let admin: { id: string; email: string };
  beforeAll(async () => {
    api = await startTestApp();
    admin = await createUser(api, { role: 'admin' });
  });
  afterAll(() => api.close());

  const asAdmin = () => signInAs(api, admin.email, PASSWORD);
  const asPerson = async () => signInAs(api, (await createUser(api)).email, PASSWORD);

  /** Posts the registration form with the CSRF token of a fresh copy of the page. */
  async function register(web: WebClient, form: Record<string, string | string[]>) {
    const page = await web.send('GET', '/admin/clients');
    return web.send('POST', '/admin/clients', { _csrf: web.csrfFrom(page.text), scopes: 'profile', ...form });
  }

  describe('GET /admin/clients', () => {
    it('lists the built-in client, says what a public client is and where the discovery document is', async () => {
      const res = await (await asAdmin()).send('GET', '/admin/clients');
      expect(res.status).toBe(200);
      expect(res.text).toMatch(
        /<td data-label="Name"><a href="\/admin\/clients\/prospect-cli"><strong>Prospect CLI<\/strong><\/a><br><code>prospect-cli<\/code><\/td><td data-label="Scopes"><code>profile<\/code> <code>tokens<\/code> <code>admin<\/code> <code>orgs<\/code> <\/td><td data-label="Registered">Built in<\/td>/,
      );
      expect(res.text).toContain('signs people in with the OAuth device flow');
      // Every scope may be offered to a client, `orgs` (issue #44) too, unchecked until chosen.
      expect(res.text).toContain('<input type="checkbox" name="scopes" value="orgs"> <span>See your organizations and act in them with your role <code>orgs</code></span>');
      expect(res.text).toContain('it has no secret');
      expect(res.text).toContain(`<code>${api.config.publicUrl}/.well-known/oauth-authorization-server</code>`);
    });

    it('sends signed-out visitors to sign in and back', async () => {
      const web = webClient(api);
      const page = await web.send('GET', '/admin/clients');
      expect(page.status).toBe(303);
      expect(page.location).toBe('/login?next=%2Fadmin%2Fclients');
      const form = await web.send('GET', '/login');
      const post = await web.send('POST', '/admin/clients', { _csrf: web.csrfFrom(form.text), id: 'anonymous-client', name: 'Anonymous' });
      expect(post.location).toBe('/login?next=%2Fadmin%2Fclients');
      expect(await clientIds(api)).not.toContain('anonymous-client');
    });

    it('refuses a signed-in person who is not an admin with a 403 page, and links the page for admins only', async () => {
      const person = await asPerson();
      const page = await person.send('GET', '/admin/clients', undefined, { accept: 'text/html' });
      expect(page.status).toBe(403);
      expect(page.text).toContain('Administrators only');
      const tokens = await person.send('GET', '/settings/tokens');
      expect(tokens.text).not.toContain('href="/admin/clients"');
      const post = await person.send('POST', '/admin/clients', { _csrf: person.csrfFrom(tokens.text), id: 'not-an-admin', name: 'Sneaky' });
      expect(post.status).toBe(403);
      expect(await clientIds(api)).not.toContain('not-an-admin');

      const adminPage = (await (await asAdmin()).send('GET', '/settings/tokens')).text;
      expect(adminPage).toContain('<a href="/admin/clients" aria-label="OAuth clients">');
      expect(adminPage).toContain('<a href="/admin/users">People</a>');
      expect(tokens.text).not.toContain('href="/admin/users"');
    });
  });

  describe('POST /admin/clients', () => {
    it('registers a client, redirects, confirms once, and the list then shows it with who registered it', async () => {
      const web = await asAdmin();
      const res = await register(web, { id: 'acme-sync', name: '  Acme Sync  ' });
      expect(res.status).toBe(303);
      expect(res.location).toBe('/admin/clients?registered=acme-sync');
      const after = await web.send('GET', res.location!);
      expect(after.text).toContain('Registered “Acme Sync” with the id <code>acme-sync</code>; it can start device logins now.');
      expect(after.text).toMatch(new RegExp(`<a href="/admin/clients/acme-sync"><strong>Acme Sync</strong></a><br><code>acme-sync</code></td><td data-label="Scopes"><code>profile</code> </td><td data-label="Registered">by ${admin.email}<br><span class="muted">\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</span></td>`));
      expect(after.text.indexOf('prospect-cli')).toBeLessThan(after.text.indexOf('<code>acme-sync</code></td>')); // built-in first
      expect((await web.send('GET', '/admin/clients')).text).not.toContain('Registered “Acme Sync”');

      expect(await clientById(api, 'acme-sync')).toMatchObject({ name: 'Acme Sync', builtIn: false, createdByUserId: admin.id });
      expect(await countAuthEvents(api, { type: 'oauth.client_register', userId: admin.id })).toBe(1);
    });

    it('refuses a taken id with a 409 page, keeping what was typed', async () => {
      const web = await asAdmin();
      expect((await register(web, { id: 'taken.client', name: 'First' })).status).toBe(303);
      const again = await register(web, { id: 'taken.client', name: 'Second' });
      expect(again.status).toBe(409);
      expect(again.text).toContain('A client with the id “taken.client” already exists. Please choose another id.');
      expect(again.text).toContain('value="taken.client"');
      expect(again.text).toContain('value="Second"');
      expect((await register(web, { id: 'prospect-cli', name: 'Impostor' })).status).toBe(409);
      expect((await clientById(api, 'prospect-cli'))!.name).toBe('Prospect CLI');
    });

    it.each(['', 'ab', 'Acme', '-acme', 'acme sync', 'acme/sync', 'é-client', 'a'.repeat(65)])('refuses the client id %j with a 400 page naming the rule', async (id) => {
      const before = await clientIds(api);
      const res = await register(await asAdmin(), { id, name: 'Some tool' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('The client id must be 3 to 64 lower-case letters, digits, ".", "_" or "-", the first one a letter or digit.'.replace(/"/g, '&quot;'));
      expect(res.text).toContain('value="Some tool"');
      expect(await clientIds(api)).toEqual(before);
    });

    it.each([
      ['', 'Please enter a display name (at most 100 characters).'],
      ['x'.repeat(101), 'Please enter a display name (at most 100 characters).'],
      ['Acme\u001b[31m', 'A display name cannot contain control characters, invisible characters or bidirectional text controls.'],
    ])('refuses the display name %j with a 400 page', async (name, message) => {
      const res = await register(await asAdmin(), { id: 'named-badly', name });
      expect(res.status).toBe(400);
      expect(res.text).toContain(message);
      expect(await clientIds(api)).not.toContain('named-badly');
    });

    it('registers the scopes a client may ask for, and refuses none or one it does not define', async () => {
      expect((await register(await asAdmin(), { id: 'scoped-tool', name: 'Scoped', scopes: ['tokens', 'profile'] })).status).toBe(303);
      expect((await clientById(api, 'scoped-tool'))!.allowedScopes).toBe('profile tokens');
      for (const scopes of [[], ['billing:write'], ['profile', 'users:delete']]) {
        const res = await register(await asAdmin(), { id: 'unscoped-tool', name: 'Unscoped', scopes });
        expect(res.status).toBe(400);
        expect(res.text).toContain('Please choose at least one of the scopes offered');
      }
      expect(await clientIds(api)).not.toContain('unscoped-tool');
    });

    it('refuses a registration without the CSRF token, or with another session’s', async () => {
      const web = await asAdmin();
      const without = await web.send('POST', '/admin/clients', { id: 'forged-client', name: 'Forged' });
      expect(without.status).toBe(403);
      expect(without.text).toContain('Request refused');
      const other = await asAdmin();
      const otherPage = await other.send('GET', '/admin/clients');
      expect((await web.send('POST', '/admin/clients', { _csrf: other.csrfFrom(otherPage.text), id: 'forged-client', name: 'Forged' })).status).toBe(403);
      expect(await clientIds(api)).not.toContain('forged-client');
    });
  });

  describe('/admin/clients/{id}', () => {
    const edit = async (web: WebClient, id: string, path = '', form: Record<string, string | string[]> = {}) => {
      const page = await web.send('GET', `/admin/clients/${id}`);
      return web.send('POST', `/admin/clients/${id}${path}`, { _csrf: web.csrfFrom(page.text), ...form });
    };

    it('renames a client and changes its scopes, refusing bad input without changing anything', async () => {
      const web = await asAdmin();
      expect((await register(web, { id: 'edit-me', name: 'Edit me' })).status).toBe(303);
      const saved = await edit(web, 'edit-me', '', { name: 'Edited', scopes: ['profile', 'tokens'] });
      expect(saved).toMatchObject({ status: 303, location: '/admin/clients/edit-me?done=saved' });
      const page = await web.send('GET', saved.location!);
      expect(page.text).toContain('<h1>Edited</h1>');
      expect(page.text).toContain('Saved. New sign-ins ask within these scopes');
      expect(page.text).toMatch(/value="tokens" checked/);
      const refusals: Array<[Record<string, string | string[]>, string]> = [
        [{ name: 'Edited again', scopes: [] }, 'Please choose at least one of the scopes offered'],
        [{ name: 'Bad\u0007', scopes: ['profile'] }, 'A display name cannot contain control characters'],
        [{ name: '', scopes: ['profile'] }, 'Please enter a display name'],
      ];
      for (const [form, message] of refusals) {
        const refused = await edit(web, 'edit-me', '', form);
        expect(refused.status).toBe(400);
        expect(refused.text).toContain(message);
      }
      expect(await clientById(api, 'edit-me')).toMatchObject({ name: 'Edited', allowedScopes: 'profile tokens' });
      // The built-in client is renamed only: its scopes are not on its form, and no post changes them.
      await edit(web, 'prospect-cli', '', { name: 'Prospect CLI', scopes: ['profile'] });
      expect((await clientById(api, 'prospect-cli'))!.allowedScopes).toBe('profile tokens admin orgs');
      expect((await web.send('GET', '/admin/clients/prospect-cli')).text).not.toContain('Disable');
    });

    it('disables and enables a client, deletes it after asking, and is for admins only', async () => {
      const web = await asAdmin();
      await register(web, { id: 'toggle-me', name: 'Toggle me' });
      expect((await edit(web, 'toggle-me', '/disable')).location).toBe('/admin/clients/toggle-me?done=disabled');
      expect((await web.send('GET', '/admin/clients/toggle-me')).text).toContain('Disabled since');
      expect((await web.send('GET', '/admin/clients')).text).toMatch(/Toggle me<\/strong><\/a> <span class="badge">disabled<\/span>/);
      expect((await edit(web, 'toggle-me', '/enable')).location).toBe('/admin/clients/toggle-me?done=enabled');
      const confirm = await web.send('GET', '/admin/clients/toggle-me/delete');
      expect(confirm.text).toContain('Delete “Toggle me”?');
      const deleted = await web.send('POST', '/admin/clients/toggle-me/delete', { _csrf: web.csrfFrom(confirm.text) });
      expect(deleted.location).toBe('/admin/clients?deleted=toggle-me');
      expect((await web.send('GET', deleted.location!)).text).toContain('Deleted the client <code>toggle-me</code>');
      expect((await web.send('GET', '/admin/clients/toggle-me')).status).toBe(404);
      expect((await web.send('POST', '/admin/clients/prospect-cli/delete', { _csrf: web.csrfFrom(confirm.text) })).status).toBe(400);
      // Not an admin, or no CSRF token: nothing happens.
      await register(web, { id: 'kept-client', name: 'Kept' });
      expect((await (await asPerson()).send('GET', '/admin/clients/kept-client')).status).toBe(403);
      expect((await web.send('POST', '/admin/clients/kept-client/disable', {})).status).toBe(403);
      expect(await clientById(api, 'kept-client')).toMatchObject({ disabledAt: null });
    });
  });

  describe('the approval page', () => {
    it('names the built-in client for a device login started by the custom route, with what the CLI said beneath', async () => {
      const start = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
      const page = await (await asPerson()).send('GET', `/device?user_code=${start.userCode}`);
      expect(page.status).toBe(200);
      expect(page.text).toContain('<h1 class="asker"><strong>Prospect CLI</strong> wants to sign in as you</h1>');
      // What it says about itself (no User-Agent here: the name it sent), under its own label, once.
      expect(page.text).toContain('<dt>Program</dt><dd>prospect CLI 0.1.0</dd>');
      expect(page.text).not.toContain('Calls itself');
      expect(page.text).toContain('<dt>Computer</dt><dd>laptop</dd>');
    });

    it('names a registered client by its registered name, escaped, however it describes itself', async () => {
      expect((await register(await asAdmin(), { id: 'my-client', name: 'Acme <Sync>' })).status).toBe(303);
      const start = await api.app.get(DeviceLoginService).start({ clientName: 'Prospect CLI', hostname: 'box' }, null, null, { id: 'my-client', scope: 'profile' });
      const page = await (await asPerson()).send('GET', `/device?user_code=${start.userCode}`);
      expect(page.status).toBe(200);
      expect(page.text).toContain('<strong>Acme &lt;Sync&gt;</strong> wants to sign in as you');
      expect(page.text).not.toContain('<Sync>');
      // A registered client that calls itself "Prospect CLI": the page says which name is registered and which it only says.
      expect(page.text).toContain('<dt>Program</dt><dd>Prospect CLI</dd>');
      expect(page.text).toContain('Acme &lt;Sync&gt; is the name registered with Prospect; the computer and program are what it says about itself.');
    });
  });

  describe('in a real browser', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(() => browser?.close());

    /** Fails on anything wider than the viewport: a phone would scroll sideways. */
    const expectNoSidewaysScroll = async (page: Page) =>
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(page.viewportSize()!.width);

    it('registers a client from the admin page, readable at desktop and phone width, and the approval page names it', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const violations: string[] = [];
      page.on('console', (msg) => {
        if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) violations.push(msg.text());
      });
      await page.goto(`${api.baseUrl}/admin/clients`);
      await page.getByLabel('E-mail').fill(admin.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL((url) => url.pathname === '/admin/clients'), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);

      // The browser checks the id's rule before sending it.
      await page.getByLabel('Client id').fill('Warehouse Sync');
      await expect(page.locator('#client-id:invalid').count()).resolves.toBe(1);
      await page.getByLabel('Client id').fill('warehouse-sync');
      await expect(page.locator('#client-id:invalid').count()).resolves.toBe(0);
      await page.getByLabel('Display name').fill('Warehouse Sync for the Northern European Sales Team (nightly jobs)');
      await Promise.all([page.waitForURL(/registered=warehouse-sync/), page.getByRole('button', { name: 'Register client' }).click()]);
      await expect(page.getByRole('status').textContent()).resolves.toContain('Registered “Warehouse Sync for the Northern European Sales Team (nightly jobs)” with the id warehouse-sync');
      await expect(page.getByRole('link', { name: 'OAuth clients' }).count()).resolves.toBe(1);
      await page.screenshot({ path: `${SCREENSHOTS}admin-clients.png`, fullPage: true });
      await expectNoSidewaysScroll(page);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: `${SCREENSHOTS}admin-clients-phone.png`, fullPage: true });
      await expectNoSidewaysScroll(page);
      // On a phone the admin's header links (six with Organizations and People) go under the brand, all on one line of their own.
      const tops = await Promise.all(['CLI tokens', 'Organizations', 'OAuth clients'].map(async (name) => (await page.getByRole('link', { name, exact: true }).boundingBox())!.y));
      tops.push((await page.getByRole('button', { name: /Sign out/ }).boundingBox())!.y);
      expect(Math.max(...tops) - Math.min(...tops)).toBeLessThan(8);

      const start = await api.app.get(DeviceLoginService).start({ clientName: 'warehouse-sync 2.3.1', hostname: 'etl-runner-07.internal.example.com' }, '10.0.0.7', 'warehouse-sync/2.3.1 (linux)', {
        id: 'warehouse-sync',
        scope: 'profile tokens',
      });
      // A taken id comes back as the page with the error above the form, what was typed kept.
      await page.getByLabel('Client id').fill('prospect-cli');
      await page.getByLabel('Display name').fill('Prospect CLI (fork)');
      await page.getByRole('button', { name: 'Register client' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toBe('A client with the id “prospect-cli” already exists. Please choose another id.');
      await expect(page.getByLabel('Display name').inputValue()).resolves.toBe('Prospect CLI (fork)');
      await page.screenshot({ path: `${SCREENSHOTS}admin-clients-taken-phone.png` });

      await page.goto(start.verificationUrl);
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Warehouse Sync for the Northern European Sales Team (nightly jobs) wants to sign in as you');
      await page.screenshot({ path: `${SCREENSHOTS}approve-registered-client-phone.png`, fullPage: true });
      await expectNoSidewaysScroll(page);
      // Approved, the page names the client and speaks of no terminal: it is not the CLI.
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Warehouse Sync for the Northern European Sales Team (nightly jobs) is signed in');
      await expect(page.getByRole('status').textContent()).resolves.toBe('You approved the sign-in. You can close this page.');
      await page.screenshot({ path: `${SCREENSHOTS}approved-registered-client-phone.png`, fullPage: true });
      await expectNoSidewaysScroll(page);
      // Its used code's page names it too, without the CLI's command.
      await page.goto(start.verificationUrl);
      await expect(page.locator('main').textContent()).resolves.toContain('This request from Warehouse Sync for the Northern European Sales Team (nightly jobs) was already approved or denied.');
      await expect(page.locator('main').textContent()).resolves.not.toContain('prospect auth:login');
      // Its own page: name, scopes, disable and delete, readable on a phone.
      await page.goto(`${api.baseUrl}/admin/clients/warehouse-sync`);
      await expect(page.getByRole('button', { name: /^Disable / }).count()).resolves.toBe(1);
      await page.screenshot({ path: `${SCREENSHOTS}admin-client-phone.png`, fullPage: true });
      await expectNoSidewaysScroll(page);
      expect(violations).toEqual([]);
      await page.close();
    });
  });
});
