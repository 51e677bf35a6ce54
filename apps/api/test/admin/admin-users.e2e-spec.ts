import { ROUTES } from '@prospect/contract';
import { Mailer } from '../../src/mail/mailer.js';
import { everyAccount } from '../support/account-fixtures.js';
import { approve, authEvents, authorizedPoll, createUser, deviceLoginToken, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import { get, post, request } from '../support/http.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { startReplica, type Replica, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const USERS = '/api/admin/users';

/** Administering people: /admin/users and /api/admin/users, with mail captured by a real SMTP server. */
describe('administering users', () => {
  let smtp: SmtpSink;
  let api: TestApp;
  let replica: Replica;
  let admin: { id: string; email: string };
  let adminToken: string;
  beforeAll(async () => {
    ({ api, smtp } = await startAppWithMail());
    replica = await startReplica(api, undefined, { SMTP_URL: smtp.url });
    admin = await createUser(api, { role: 'admin' });
    adminToken = await adminLoginToken(admin);
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  /** A device login that asks for administration (`prospect auth:login --scopes profile,tokens,admin`): it is never had by default. */
  async function adminLoginToken(user: { id: string }): Promise<string> {
    const login = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
    await approve(api, login.userCode, user);
    return (await poll(api, login.deviceCode)).body.accessToken;
  }
  const patch = (id: string, body: unknown, token = adminToken) => request(api, 'PATCH', `${USERS}/${id}`, { json: body, token });
  const events = async (type: string, accountId: string) => (await authEvents(api, { type, detail: { accountId } })).map(({ user_id }) => ({ user_id }));
  /** Posts an action form of a person's admin page, as the admin's browser. */
  async function act(web: WebClient, id: string, action: string, form: Record<string, string> = {}) {
    const page = await web.send('GET', `/admin/users/${id}`);
    return web.send('POST', `/admin/users/${id}/${action}`, { _csrf: web.csrfFrom(page.text), ...form });
  }

  it('lists and searches people with what an admin needs to see, on the page and in the API', async () => {
    const person = await createUser(api, { name: 'Zed Searchable' });
    await authorizedPoll(api, person); // one live CLI session
    const found = await get(api, `${USERS}?q=searchable`, adminToken);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ total: 1, page: 1, perPage: 50 });
    expect(found.body.users[0]).toMatchObject({
      id: person.id,
      email: person.email,
      name: 'Zed Searchable',
      admin: false,
      disabled: false,
      emailVerified: true,
      invited: false,
      lastSignInAt: null,
      activeCliSessions: 1,
    });
    // % and _ are searched for, not wildcards.
    expect((await get(api, `${USERS}?q=${encodeURIComponent('%')}`, adminToken)).body.total).toBe(0);

    const web = await signInAs(api, admin.email, PASSWORD);
    const page = await web.send('GET', '/admin/users?q=Searchable');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Zed Searchable');
    expect(page.text).toContain('1 matching “Searchable”');
    expect((await get(api, `${USERS}/${admin.id}`, adminToken)).body.lastSignInAt).not.toBeNull(); // signed in just now
  });

  it('refuses people who are not admins, and garbage, with 4xx and nothing changed', async () => {
    const person = await createUser(api);
    const token = await deviceLoginToken(api, person);
    expect((await get(api, USERS, token)).status).toBe(403);
    expect((await patch(admin.id, { disabled: true }, token)).status).toBe(403);
    const web = await signInAs(api, person.email, PASSWORD);
    expect((await web.send('GET', '/admin/users')).status).toBe(403);

    expect((await get(api, `${USERS}?page=abc`, adminToken)).status).toBe(400);
    expect((await get(api, `${USERS}?page=0`, adminToken)).status).toBe(400);
    expect((await get(api, `${USERS}?q=a&q=b`, adminToken)).status).toBe(400);
    expect((await get(api, `${USERS}/not-a-uuid`, adminToken)).status).toBe(400);
    expect((await get(api, `${USERS}/00000000-0000-4000-8000-000000000000`, adminToken)).status).toBe(404);
    expect((await patch(person.id, {})).status).toBe(400);
    expect((await patch(person.id, { disabled: 'yes' })).status).toBe(400);
    expect((await patch(person.id, { role: 'admin' })).status).toBe(400);
    expect((await post(api, USERS, { email: 'not an address', name: 'X' }, adminToken)).status).toBe(400);
    expect((await post(api, USERS, { email: 'x@example.com', name: 'bad\u0007name' }, adminToken)).status).toBe(400);
    expect((await get(api, `${USERS}/${person.id}`, adminToken)).body).toMatchObject({ disabled: false, admin: false });
    expect(await userByEmail(api, 'x@example.com')).toBeNull();
  });

  it('disables a person: every token, refresh token and session ends at once, on every replica; sign-in refused; enabled again', async () => {
    const person = await createUser(api);
    const { accessToken, refreshToken } = (await authorizedPoll(api, person)).body;
    const browser = await signInAs(api, person.email, PASSWORD);
    expect((await get(replica.target, ROUTES.me, accessToken)).status).toBe(200); // cached on the replica

    const disabled = await patch(person.id, { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ disabled: true, activeCliSessions: 0 });

    expect(await eventually(async () => (await get(replica.target, ROUTES.me, accessToken)).status === 401, 1_000)).toBe(true);
    const refused = await get(replica.target, ROUTES.me, accessToken);
    expect(refused.body.message).toContain('This account is disabled');
    expect(refused.headers.get('www-authenticate')).toContain('error_description="account disabled"');
    expect((await post(api, ROUTES.refresh, { refreshToken })).status).toBe(401);
    expect((await browser.send('GET', '/settings/tokens')).status).toBe(303); // signed out
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    const signIn = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: person.email, password: PASSWORD });
    expect(signIn.status).toBe(403);
    expect(signIn.text).toContain('This account is disabled');
    expect(await events('admin.user_disable', person.id)).toEqual([{ user_id: admin.id }]);

    expect((await patch(person.id, { disabled: false })).body).toMatchObject({ disabled: false });
    await signInAs(api, person.email, PASSWORD);
    expect((await get(api, ROUTES.me, accessToken)).status).toBe(401); // what was revoked stays revoked
    expect(await events('admin.user_enable', person.id)).toEqual([{ user_id: admin.id }]);
  });

  it('keeps an enabled administrator: not oneself, not the last, however many ask at once', async () => {
    const web = await signInAs(api, admin.email, PASSWORD);
    const own = await act(web, admin.id, 'disable');
    expect(own.status).toBe(400);
    expect(own.text).toContain('You cannot disable your own account.');
    const demote = await patch(admin.id, { admin: false });
    expect(demote.status).toBe(409);
    expect(demote.body.message).toContain('only administrator');

    // Two admins each removing the other at once: one of them stays.
    const second = await createUser(api, { role: 'admin' });
    const secondToken = await adminLoginToken(second);
    const answers = await Promise.all([patch(second.id, { admin: false }), patch(admin.id, { admin: false }, secondToken)]);
    // One wins; the other is refused as the last admin (409), or, when the winner committed before
    // its request was authenticated, as no longer an admin at all (403).
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    expect((await everyAccount(api)).filter((account) => account.role === 'admin' && account.disabledAt === null)).toHaveLength(1);
    if (answers[1]!.status === 200) {
      // The first admin was demoted: put things back for the other tests.
      await patch(admin.id, { admin: true }, secondToken);
    }
    expect((await patch(second.id, { admin: true })).body.admin).toBe(true);
    expect(await events('admin.user_role', second.id)).toHaveLength(2);

    // Both changes of one PATCH in one transaction: all or nothing.
    expect((await patch(admin.id, { disabled: true })).status).toBe(400); // not oneself, by the API either
    const both = await patch(second.id, { admin: false, disabled: true });
    expect(both.body).toMatchObject({ admin: false, disabled: true });
    expect((await patch(admin.id, { admin: false }, adminToken)).status).toBe(409);
    expect((await patch(second.id, { admin: true, disabled: false })).body).toMatchObject({ admin: true, disabled: false });
  });

  it('invites a person by mail: the link sets their password, verifies the address and signs them in, once', async () => {
    const web = await signInAs(api, admin.email, PASSWORD);
    const list = await web.send('GET', '/admin/users');
    const email = `invited-${Date.now()}@example.com`;
    const bad = await web.send('POST', '/admin/users/invite', { _csrf: web.csrfFrom(list.text), name: 'Ivy', email: 'nope' });
    expect(bad.status).toBe(400);
    const sent = await web.send('POST', '/admin/users/invite', { _csrf: web.csrfFrom(list.text), name: 'Ivy Invited', email });
    expect(sent).toMatchObject({ status: 303, location: `/admin/users?invited=${encodeURIComponent(email)}` });
    expect((await web.send('POST', '/admin/users/invite', { _csrf: web.csrfFrom(list.text), name: 'Again', email })).status).toBe(409);

    await api.app.get(Mailer).settled();
    const [mail] = smtp.to(email);
    expect(mail!.subject).toBe('You are invited to Prospect');
    const link = new URL(/^(http:\/\/\S+\/invitation\?token=prsi_\S+)$/m.exec(mail!.text)![1]!);
    const invited = (await get(api, `${USERS}?q=${encodeURIComponent(email)}`, adminToken)).body.users[0];
    expect(invited).toMatchObject({ invited: true, emailVerified: false });

    const browser = webClient(api);
    const page = await browser.send('GET', link.pathname + link.search);
    expect(page.status).toBe(200);
    const token = link.searchParams.get('token')!;
    expect((await browser.send('POST', '/invitation', { _csrf: browser.csrfFrom(page.text), token, password: 'short', password_again: 'short' })).status).toBe(400);
    const accepted = await browser.send('POST', '/invitation', { _csrf: browser.csrfFrom(page.text), token, password: 'my own passphrase', password_again: 'my own passphrase' });
    expect(accepted).toMatchObject({ status: 303, location: '/settings/tokens' });
    expect((await browser.send('GET', '/settings/tokens')).status).toBe(200);
    expect((await get(api, `${USERS}/${invited.id}`, adminToken)).body).toMatchObject({ invited: false, emailVerified: true });
    expect((await webClient(api).send('GET', link.pathname + link.search)).status).toBe(410); // once
    expect(await events('admin.user_invite', invited.id)).toEqual([{ user_id: admin.id }]);
  });

  it('sends a reset link and clears a sign-in block, each audited with the admin', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, admin.email, PASSWORD);
    expect(await act(web, person.id, 'reset-link')).toMatchObject({ status: 303, location: `/admin/users/${person.id}?done=reset-link` });
    await api.app.get(Mailer).settled();
    expect(smtp.to(person.email).map((m) => m.subject)).toEqual(['Reset your Prospect password']);
    expect(await events('admin.user_reset_link', person.id)).toEqual([{ user_id: admin.id }]);

    const stranger = webClient(api);
    const form = await stranger.send('GET', '/login');
    for (let i = 0; i < 5; i++) await stranger.send('POST', '/login', { _csrf: stranger.csrfFrom(form.text), email: person.email, password: 'wrong' });
    expect((await stranger.send('POST', '/login', { _csrf: stranger.csrfFrom(form.text), email: person.email, password: PASSWORD })).status).toBe(429);
    const cleared = await post(api, `${USERS}/${person.id}/clear-sign-in-block`, undefined, adminToken);
    expect(cleared).toMatchObject({ status: 200, body: { cleared: true } });
    expect((await stranger.send('POST', '/login', { _csrf: stranger.csrfFrom(form.text), email: person.email, password: PASSWORD })).status).toBe(303);
  });

  it('works in a real browser at desktop and phone width: search, a person, disable and enable', async () => {
    const person = await createUser(api, { name: 'Brook Browser' });
    const browser = await launchBrowser();
    try {
      for (const [label, viewport] of [['desktop', { width: 1280, height: 900 }], ['phone', { width: 390, height: 844 }]] as const) {
        const page = await browser.newPage({ viewport });
        await page.goto(`${api.baseUrl}/login?next=%2Fadmin%2Fusers`);
        await page.getByLabel('E-mail').fill(admin.email);
        await page.getByLabel('Password').fill(PASSWORD);
        await Promise.all([page.waitForURL(/\/admin\/users$/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
        await page.getByLabel('Find by name or e-mail').fill('Brook');
        await Promise.all([page.waitForURL(/q=Brook/), page.getByRole('button', { name: 'Search' }).click()]);
        expect(await page.getByRole('link', { name: 'Brook Browser' }).count()).toBe(1);
        expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}admin-users-${label}.png`, fullPage: true });

        await Promise.all([page.waitForURL(new RegExp(`/admin/users/${person.id}$`)), page.getByRole('link', { name: 'Brook Browser' }).click()]);
        const toggle = label === 'desktop' ? 'Disable this account' : 'Enable this account';
        await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: toggle }).click()]);
        await expect(page.getByRole('status').textContent()).resolves.toContain(label === 'desktop' ? 'Disabled' : 'Enabled');
        expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}admin-user-${label}.png`, fullPage: true });

        await page.goto(`${api.baseUrl}/settings/account`);
        expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}account-${label}.png`, fullPage: true });
        await page.close();
      }
    } finally {
      await browser.close();
    }
    expect((await get(api, `${USERS}/${person.id}`, adminToken)).body.disabled).toBe(false);
  });
});
