import type { OrgRole } from '@prospect/contract';
import type { Browser, Page } from 'playwright-core';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { FakeClock } from '../support/fake-clock.js';
import { createUser } from '../support/fixtures.js';
import { addMember, createOrganization, orgsToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { postFrom, signInAs, type WebClient, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** The /orgs pages (issue #44 items 7 and 9): a person's organizations, one organization's members, roles, leaving, deleting and its log. */
describe('/orgs pages', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api?.close());

  const organizations = () => api.app.get(OrganizationsService);
  const roleOf = async (slug: string, userId: string): Promise<OrgRole | undefined> => (await organizations().membership(slug, userId, null))?.role;

  /** A person with an account, signed in in a web client. */
  async function person(name?: string) {
    const user = await createUser(api, name ? { name } : {});
    return { ...user, web: await signInAs(api, user.email, PASSWORD) };
  }

  /** An organization with an owner, an admin and a member, each signed in. */
  async function team() {
    const owner = await person();
    const slug = await createOrganization(api, { token: await orgsToken(api, owner.id) });
    const admin = await person();
    const member = await person();
    await addMember(api, slug, owner.id, admin, 'admin');
    await addMember(api, slug, owner.id, member, 'member');
    return { slug, owner, admin, member };
  }

  const page = (web: WebClient, path: string) => web.send('GET', path, undefined, { accept: 'text/html' });

  describe('signed out', () => {
    it('sends people to sign in and back', async () => {
      const web = webClient(api);
      expect(await web.send('GET', '/orgs')).toMatchObject({ status: 303, location: '/login?next=%2Forgs' });
      expect(await web.send('GET', '/orgs/acme-sales')).toMatchObject({ status: 303, location: '/login?next=%2Forgs%2Facme-sales' });
    });
  });

  describe('GET and POST /orgs', () => {
    it('creates an organization with a slug made from the name, then lists it with the role; the header links the page', async () => {
      const ada = await person();
      const empty = await page(ada.web, '/orgs');
      expect(empty.status).toBe(200);
      expect(empty.text).toContain('You are not in an organization yet.');
      expect(empty.text).toContain('<a href="/orgs" aria-label="Organizations" aria-current="page">');
      expect((await page(ada.web, '/settings/account')).text).toContain('<a href="/orgs" aria-label="Organizations">');

      const created = await postFrom(ada.web, '/orgs', '/orgs', { name: '  Ünïcode Sales & Co  ', slug: '' });
      expect(created).toMatchObject({ status: 303, location: '/orgs/unicode-sales-co' });
      const shown = await page(ada.web, created.location!);
      expect(shown.text).toContain('“Ünïcode Sales &amp; Co” is created, and you are its owner.');
      expect(shown.text).toContain('<h1>Ünïcode Sales &amp; Co</h1>');
      expect(await roleOf('unicode-sales-co', ada.id)).toBe('owner');
      expect((await page(ada.web, created.location!)).text).not.toContain('is created'); // said once

      const typed = await postFrom(ada.web, '/orgs', '/orgs', { name: 'Second', slug: 'second-team' });
      expect(typed).toMatchObject({ status: 303, location: '/orgs/second-team' });
      const list = await page(ada.web, '/orgs');
      expect(list.text).toMatch(/<a href="\/orgs\/second-team"><strong>Second<\/strong><\/a><\/td><td data-label="Slug"><code>second-team<\/code><\/td><td data-label="Your role">Owner<\/td>/);
      expect(list.text).toContain('<a href="/orgs/unicode-sales-co">');
    });

    it('shows what is wrong in the form, with what was typed, never a JSON error', async () => {
      const ada = await person();
      const bad = await postFrom(ada.web, '/orgs', '/orgs', { name: 'Acme', slug: 'Not A Slug!' });
      expect(bad.status).toBe(400);
      expect(bad.headers['content-type']).toMatch(/text\/html/);
      expect(bad.text).toContain('<p class="error" role="alert" id="org-slug-error">“not a slug!” cannot be an organization’s address');
      expect(bad.text).toContain('value="Not A Slug!"');
      expect(bad.text).toContain('value="Acme"');

      const noName = await postFrom(ada.web, '/orgs', '/orgs', { name: '   ', slug: 'fine-slug' });
      expect(noName.status).toBe(400);
      expect(noName.text).toContain('id="org-name-error">Please enter a name');

      await postFrom(ada.web, '/orgs', '/orgs', { name: 'Taken', slug: 'taken-slug' });
      const other = await person();
      const taken = await postFrom(other.web, '/orgs', '/orgs', { name: 'Mine', slug: 'taken-slug' });
      expect(taken.status).toBe(409);
      expect(taken.text).toContain('The address “taken-slug” is taken by another organization: choose another slug.');
      expect(await roleOf('taken-slug', other.id)).toBeUndefined();

      // A form without this session's CSRF token does nothing.
      const forged = await ada.web.send('POST', '/orgs', { name: 'Forged', slug: 'forged-org' });
      expect(forged.status).toBe(403);
      expect(await roleOf('forged-org', ada.id)).toBeUndefined();
    });
  });

  describe('GET /orgs/{slug}', () => {
    it('is the site’s 404 page for a non-member, as for an organization that does not exist, and its forms do nothing for them', async () => {
      const { slug, member } = await team();
      const outsider = await person();
      const refused = await page(outsider.web, `/orgs/${slug}`);
      const missing = await page(outsider.web, '/orgs/no-such-org');
      expect(refused.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(refused.text).toContain('Page not found');
      expect(refused.text).toBe(missing.text); // nothing tells the two apart
      expect(refused.text).not.toContain(member.email);
      const tried = await postFrom(outsider.web, '/orgs', `/orgs/${slug}/members/${member.id}/remove`);
      expect(tried.status).toBe(404);
      expect(await roleOf(slug, member.id)).toBe('member');
    });

    it('shows a member the members and roles, without the controls, the sub-pages or the log', async () => {
      const { slug, owner, admin, member } = await team();
      const seen = await page(member.web, `/orgs/${slug}`);
      expect(seen.status).toBe(200);
      for (const who of [owner, admin, member]) expect(seen.text).toContain(who.email);
      expect(seen.text).toContain('your role: Member');
      expect(seen.text).not.toContain('<select');
      expect(seen.text).not.toContain('/remove"');
      expect(seen.text).not.toContain(`/orgs/${slug}/invitations`);
      expect(seen.text).not.toContain('Security log');
      expect(seen.text).not.toContain('Delete the organization');
      expect(seen.text).toContain(`action="/orgs/${slug}/leave"`);
    });

    it('shows an admin selects for members and admins, without the owner role or the owner’s row, and the sub-pages', async () => {
      const { slug, owner, admin, member } = await team();
      const seen = (await page(admin.web, `/orgs/${slug}`)).text;
      expect(seen).toContain(`<select id="role-${member.id}"`);
      expect(seen).toContain(`<select id="role-${admin.id}"`);
      expect(seen).not.toContain(`<select id="role-${owner.id}"`);
      expect(seen).not.toContain('<option value="owner"');
      expect(seen).toContain(`action="/orgs/${slug}/members/${member.id}/remove"`);
      expect(seen).not.toContain(`action="/orgs/${slug}/members/${owner.id}/remove"`);
      for (const sub of ['invitations', 'domains', 'identity-providers']) expect(seen).toContain(`href="/orgs/${slug}/${sub}"`);
      expect(seen).not.toContain('Delete the organization');
      const ownerSees = (await page(owner.web, `/orgs/${slug}`)).text;
      expect(ownerSees).toContain('<option value="owner"');
      expect(ownerSees).toContain('Delete the organization');
    });
  });

  describe('roles and members', () => {
    it('changes a role, says so once, and records it in the log the admins read', async () => {
      const { slug, owner, member } = await team();
      const changed = await postFrom(owner.web, `/orgs/${slug}`, `/orgs/${slug}/members/${member.id}/role`, { role: 'admin' });
      expect(changed).toMatchObject({ status: 303, location: `/orgs/${slug}` });
      expect(await roleOf(slug, member.id)).toBe('admin');
      const after = (await page(owner.web, `/orgs/${slug}`)).text;
      expect(after).toContain(`${member.email} is an admin now.`);
      expect(after).toMatch(new RegExp(`<td data-label="Who">${owner.email}</td><td data-label="What">Changed ${member.email}’s role from member to admin</td><td data-label="From">`));
      // The one who is an admin now reads the log too.
      expect((await page(member.web, `/orgs/${slug}`)).text).toContain('Security log');
    });

    it('shows the service’s refusal when an admin names an owner or changes one, and changes nothing', async () => {
      const { slug, owner, admin, member } = await team();
      const named = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/members/${member.id}/role`, { role: 'owner' });
      expect(named.status).toBe(403);
      expect(named.text).toContain('<p class="error" role="alert">Only an owner of');
      expect(named.text).toContain('may name owners; you are an admin.');
      const demoted = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/members/${owner.id}/role`, { role: 'member' });
      expect(demoted.status).toBe(403);
      expect(await roleOf(slug, member.id)).toBe('member');
      expect(await roleOf(slug, owner.id)).toBe('owner');
      const nonsense = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/members/${member.id}/role`, { role: 'emperor' });
      expect(nonsense.status).toBe(400);
      expect(nonsense.text).toContain('Choose a role');
    });

    it('removes a member, whose page is then the 404 page, and refuses a member removing anyone', async () => {
      const { slug, owner, admin, member } = await team();
      const tried = await postFrom(member.web, `/orgs/${slug}`, `/orgs/${slug}/members/${admin.id}/remove`);
      expect(tried.status).toBe(403);
      expect(tried.text).toContain('may remove members; you are a member.');
      const removed = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/members/${member.id}/remove`);
      expect(removed).toMatchObject({ status: 303, location: `/orgs/${slug}` });
      expect((await page(admin.web, `/orgs/${slug}`)).text).toContain(`${member.email} is no longer a member.`);
      expect(await roleOf(slug, member.id)).toBeUndefined();
      expect((await page(member.web, `/orgs/${slug}`)).status).toBe(404);
      // The log still names who was removed.
      expect((await page(owner.web, `/orgs/${slug}`)).text).toContain(`Removed ${member.email} (member)`);
    });

    it('lets a member leave, and shows the last owner why they cannot, refusing the form too', async () => {
      const { slug, owner, member } = await team();
      const ownerPage = (await page(owner.web, `/orgs/${slug}`)).text;
      expect(ownerPage).toContain('You are the only owner, so you cannot leave');
      expect(ownerPage).toMatch(/<button type="button" class="danger" disabled aria-describedby="leave-why">/);
      expect(ownerPage).not.toContain(`action="/orgs/${slug}/leave"`);
      const refused = await postFrom(owner.web, `/orgs/${slug}`, `/orgs/${slug}/leave`);
      expect(refused.status).toBe(409);
      expect(refused.text).toContain('You are the last owner of');
      expect(await roleOf(slug, owner.id)).toBe('owner');

      const left = await postFrom(member.web, `/orgs/${slug}`, `/orgs/${slug}/leave`);
      expect(left).toMatchObject({ status: 303, location: '/orgs' });
      const list = (await page(member.web, '/orgs')).text;
      expect(list).toContain('You left “Acme Sales”.');
      expect(list).not.toContain(`href="/orgs/${slug}"`);
      expect((await page(owner.web, `/orgs/${slug}`)).text).toMatch(/Left the organization \(was member\)/);
    });

    it('renames it for admins, with a bad name shown in the form', async () => {
      const { slug, admin, member } = await team();
      const renamed = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/name`, { name: 'Acme Field Sales' });
      expect(renamed).toMatchObject({ status: 303, location: `/orgs/${slug}` });
      expect((await page(member.web, `/orgs/${slug}`)).text).toContain('<h1>Acme Field Sales</h1>');
      const bad = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/name`, { name: '' });
      expect(bad.status).toBe(400);
      expect(bad.text).toContain('id="rename-error">Please enter a name');
      const byMember = await postFrom(member.web, `/orgs/${slug}`, `/orgs/${slug}/name`, { name: 'Mine now' });
      expect(byMember.status).toBe(403);
    });

    it('pages the log, newest first', async () => {
      const { slug, owner } = await team();
      const org = (await organizations().membership(slug, owner.id, null))!;
      for (let i = 1; i <= 26; i += 1) await organizations().rename({ userId: owner.id, ip: '203.0.113.9', organization: org }, `Name ${i}`);
      const first = (await page(owner.web, `/orgs/${slug}`)).text;
      expect(first).toContain('Renamed it “Name 26”');
      expect(first).toContain('<td data-label="From">203.0.113.9</td>');
      expect(first).not.toContain('Created the organization');
      expect(first).toContain(`href="/orgs/${slug}?page=2#log">Older →`);
      const second = (await page(owner.web, `/orgs/${slug}?page=2`)).text;
      expect(second).toContain('Created the organization');
      expect(second).toContain(`href="/orgs/${slug}?page=1#log">← Newer`);
      expect(second.indexOf('Renamed it “Name 1”')).toBeLessThan(second.indexOf('Created the organization'));
    });
  });

  describe('deleting', () => {
    it('asks the owner to type the slug and to confirm it is them, then deletes it and says so on /orgs', async () => {
      const { slug, owner, admin } = await team();
      const byAdmin = await postFrom(admin.web, `/orgs/${slug}`, `/orgs/${slug}/delete`, { confirm: slug });
      expect(byAdmin.status).toBe(403);
      const untyped = await postFrom(owner.web, `/orgs/${slug}`, `/orgs/${slug}/delete`, { confirm: 'something else' });
      expect(untyped.status).toBe(400);
      expect(untyped.text).toContain(`Type ${slug} to confirm`);

      clock.advanceSeconds(2 * 3600 + 1); // sudo mode from the sign-in has lapsed
      const asked = await postFrom(owner.web, `/orgs/${slug}`, `/orgs/${slug}/delete`, { confirm: slug });
      expect(asked.status).toBe(403);
      expect(asked.text).toContain('Confirm it’s you');
      expect(asked.text).toContain('Deleting an organization ends everything it owns, for every member.');
      expect(asked.text).toContain(`name="next" value="/orgs/${slug}"`);
      expect(await roleOf(slug, owner.id)).toBe('owner');
      const confirmed = await owner.web.send('POST', '/sudo', { _csrf: owner.web.csrfFrom(asked.text), password: PASSWORD, next: `/orgs/${slug}` });
      expect(confirmed).toMatchObject({ status: 303, location: `/orgs/${slug}` });

      const deleted = await postFrom(owner.web, confirmed.location!, `/orgs/${slug}/delete`, { confirm: slug });
      expect(deleted).toMatchObject({ status: 303, location: '/orgs' });
      expect((await page(owner.web, '/orgs')).text).toContain('“Acme Sales” is deleted, with everything it owned.');
      expect(await roleOf(slug, owner.id)).toBeUndefined();
      expect((await page(admin.web, `/orgs/${slug}`)).status).toBe(404);
    });
  });

  /**
   * In Chromium: create an organization from the form (the slug suggested as the name is typed),
   * change a member's role with the keyboard alone, and screenshots of both pages at desktop and
   * phone width in SCREENSHOTS (org-*.png) for a person to look at.
   */
  describe('in a browser', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(() => browser?.close());

    const fitsWidth = (p: Page) => p.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
    const focusedId = (p: Page) => p.evaluate<string>('document.activeElement ? document.activeElement.id || document.activeElement.textContent : ""');

    it('creates an organization and changes a role by keyboard only', async () => {
      const owner = await createUser(api, { name: 'Grace Hopper', email: 'grace@northwind.example' });
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const tab = await context.newPage();
      await tab.goto(`${api.baseUrl}/login?next=%2Forgs`);
      await tab.getByLabel('E-mail').fill(owner.email);
      await tab.getByLabel('Password').fill(PASSWORD);
      await Promise.all([tab.waitForURL(/\/orgs$/), tab.getByRole('button', { name: 'Sign in', exact: true }).click()]);

      await tab.getByLabel('Name', { exact: true }).fill('Northwind Traders');
      expect(await tab.getByLabel('Slug', { exact: true }).inputValue()).toBe('northwind-traders');
      await tab.screenshot({ path: `${SCREENSHOTS}org-list-empty.png`, fullPage: true });
      await Promise.all([tab.waitForURL(/\/orgs\/northwind-traders$/), tab.getByRole('button', { name: 'Create organization' }).click()]);
      await expect(tab.locator('main').innerText()).resolves.toContain('“Northwind Traders” is created, and you are its owner.');

      const linus = await createUser(api, { name: 'Linus Member', email: 'linus@northwind.example' });
      const ida = await createUser(api, { name: 'Ida Admin', email: 'ida@northwind.example' });
      await addMember(api, 'northwind-traders', owner.id, linus, 'member');
      await addMember(api, 'northwind-traders', owner.id, ida, 'admin');
      await tab.reload();

      // Keyboard only: Tab to Linus's role, the arrow key to the next role, Tab to its Save, Enter.
      await tab.locator('body').focus();
      for (let i = 0; i < 60 && (await focusedId(tab)) !== `role-${linus.id}`; i += 1) await tab.keyboard.press('Tab');
      expect(await focusedId(tab)).toBe(`role-${linus.id}`);
      await tab.keyboard.press('ArrowDown');
      expect(await tab.locator(`#role-${linus.id}`).inputValue()).toBe('admin');
      await tab.keyboard.press('Tab');
      expect(await tab.evaluate<string>('document.activeElement.getAttribute("aria-label")')).toBe(`Save the role of ${linus.email}`);
      // The page it comes back to has the same URL as this one: what tells it has come is its notice.
      await tab.keyboard.press('Enter');
      await tab.getByText(`${linus.email} is an admin now.`).waitFor();
      expect(await roleOf('northwind-traders', linus.id)).toBe('admin');
      // The focus ring shows where the keyboard is.
      await tab.locator(`#role-${ida.id}`).focus();
      expect(await tab.evaluate<string>(`getComputedStyle(document.getElementById('role-${ida.id}')).outlineStyle`)).toBe('solid');

      await tab.screenshot({ path: `${SCREENSHOTS}org-page.png`, fullPage: true });
      expect(await fitsWidth(tab)).toBe(true);
      await tab.goto(`${api.baseUrl}/orgs`);
      await tab.screenshot({ path: `${SCREENSHOTS}org-list.png`, fullPage: true });
      await tab.setViewportSize({ width: 390, height: 844 });
      expect(await fitsWidth(tab)).toBe(true);
      await tab.screenshot({ path: `${SCREENSHOTS}org-list-phone.png`, fullPage: true });
      await tab.goto(`${api.baseUrl}/orgs/northwind-traders`);
      await tab.screenshot({ path: `${SCREENSHOTS}org-page-phone.png`, fullPage: true });
      expect(await fitsWidth(tab)).toBe(true);
      await context.close();
    });

    /** The page's alert: its text, and whether it is in view without scrolling, where the page opens. */
    const alertSeen = async (p: Page) => {
      const alert = p.getByRole('alert');
      const box = (await alert.boundingBox())!;
      const viewport = p.viewportSize()!;
      return { text: await alert.innerText(), inView: (await p.evaluate<number>('window.scrollY')) === 0 && box.y >= 0 && box.y + box.height <= viewport.height };
    };

    it('a refused webhook or service-account form keeps what was typed, its error in view at the top of the card', async () => {
      const owner = await createUser(api, { name: 'Ada Owner' });
      const slug = await createOrganization(api, { token: await orgsToken(api, owner.id) }, 'Formwise');
      for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
        const context = await browser.newContext({ viewport });
        const tab = await context.newPage();
        await tab.goto(`${api.baseUrl}/login?next=${encodeURIComponent(`/orgs/${slug}/webhooks`)}`);
        await tab.getByLabel('E-mail').fill(owner.email);
        await tab.getByLabel('Password').fill(PASSWORD);
        await Promise.all([tab.waitForURL(/\/webhooks$/), tab.getByRole('button', { name: 'Sign in', exact: true }).click()]);

        // A private address is refused by the service: the URL and the types stay to be corrected.
        await tab.getByLabel('Endpoint URL').fill('https://10.1.2.3/prospect-events');
        await tab.getByLabel('Event types').fill('member.added, member.removed');
        await tab.getByRole('button', { name: 'Add the webhook' }).click();
        await tab.getByRole('alert').waitFor();
        expect(await alertSeen(tab)).toEqual({ text: expect.stringContaining('is a private or link-local address'), inView: true });
        expect(await tab.getByLabel('Endpoint URL').inputValue()).toBe('https://10.1.2.3/prospect-events');
        expect(await tab.getByLabel('Event types').inputValue()).toBe('member.added, member.removed');
        await tab.screenshot({ path: `${SCREENSHOTS}org-webhooks-refused-${viewport.width}.png`, fullPage: true });

        // A service account's name of spaces only, one scope unchecked: both as they were.
        await tab.goto(`${api.baseUrl}/orgs/${slug}/service-accounts`);
        await tab.getByLabel('Name', { exact: true }).fill('   ');
        await tab.locator('input[name="scopes"][value="orgs"]').uncheck();
        await tab.getByRole('button', { name: 'Create', exact: true }).click();
        await tab.getByRole('alert').waitFor();
        expect(await alertSeen(tab)).toEqual({ text: expect.stringContaining('Give it a name'), inView: true });
        expect(await tab.getByLabel('Name', { exact: true }).inputValue()).toBe('   ');
        expect(await tab.locator('input[name="scopes"][value="orgs"]').isChecked()).toBe(false);
        expect(await tab.locator('input[name="scopes"][value="profile"]').isChecked()).toBe(true);
        await context.close();
      }
    });

    it('a refused issuer to trust keeps what was typed, its form open, its error in view', async () => {
      const owner = await createUser(api, { name: 'Ida Owner' });
      const slug = await createOrganization(api, { token: await orgsToken(api, owner.id) }, 'Trustwise');
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const tab = await context.newPage();
      await tab.goto(`${api.baseUrl}/login?next=${encodeURIComponent(`/orgs/${slug}/service-accounts`)}`);
      await tab.getByLabel('E-mail').fill(owner.email);
      await tab.getByLabel('Password').fill(PASSWORD);
      await Promise.all([tab.waitForURL(/\/service-accounts$/), tab.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      await tab.getByLabel('Name', { exact: true }).fill('nightly sync');
      await Promise.all([tab.waitForURL(/done=created/), tab.getByRole('button', { name: 'Create', exact: true }).click()]);

      await tab.getByText('Trust an issuer (CI without a stored secret)…').click();
      await tab.getByLabel('Issuer', { exact: true }).fill('https://token.actions.githubusercontent.com');
      await tab.getByLabel(/^Conditions/).fill('repository=acme/api\niss=https://elsewhere.example');
      await tab.getByRole('button', { name: 'Trust this issuer' }).click();
      await tab.getByRole('alert').waitFor();
      expect(await alertSeen(tab)).toEqual({ text: expect.stringContaining('checked by the exchange itself'), inView: true });
      expect(await tab.getByLabel('Issuer', { exact: true }).inputValue()).toBe('https://token.actions.githubusercontent.com');
      expect(await tab.getByLabel(/^Conditions/).inputValue()).toBe('repository=acme/api\niss=https://elsewhere.example');
      await tab.screenshot({ path: `${SCREENSHOTS}org-service-accounts-refused.png`, fullPage: true });
      await context.close();
    });
  });
});
