import { ROUTES } from '@prospect/contract';
import { Mailer } from '../../src/mail/mailer.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { everyAccount } from '../support/account-fixtures.js';
import { authEvents, authorizedPoll, countAuthEvents, createUser, userById } from '../support/fixtures.js';
import { get, post as apiPost } from '../support/http.js';
import { eventually } from '../support/eventually.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { postFrom, signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'a brand new passphrase';

/** /settings/account: a signed-in person changes their name and password, or deletes the account. */
describe('account settings', () => {
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail()));
  afterAll(() => api?.close());

  const post = (web: WebClient, path: string, form: Record<string, string>) => postFrom(web, '/settings/account', path, form);
  const nameOf = async (id: string) => (await userById(api, id))!.name;
  const emailOf = async (id: string) => (await userById(api, id))!.email;

  it('changes the name, refusing an empty or unsafe one without changing anything', async () => {
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    expect(await post(web, '/settings/account/name', { name: '  Ada King  ' })).toMatchObject({ status: 303, location: '/settings/account?done=name' });
    expect(await nameOf(user.id)).toBe('Ada King');
    expect((await web.send('GET', '/settings/account?done=name')).text).toContain('Your name is changed.');
    for (const name of ['', 'x'.repeat(101), 'Ada\u202eKing']) expect((await post(web, '/settings/account/name', { name })).status).toBe(400);
    expect(await nameOf(user.id)).toBe('Ada King');
    expect((await web.send('POST', '/settings/account/name', { name: 'Forged' })).status).toBe(403); // no CSRF token
    expect(await nameOf(user.id)).toBe('Ada King');
  });

  it('changes the password with the current one: other browsers signed out, this one kept, the owner told by mail', async () => {
    const user = await createUser(api);
    const here = await signInAs(api, user.email, PASSWORD);
    const elsewhere = await signInAs(api, user.email, PASSWORD);
    const wrong = await post(here, '/settings/account/password', { current_password: 'not my password', password: NEW_PASSWORD, password_again: NEW_PASSWORD });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('Your current password is not right.');
    expect((await post(here, '/settings/account/password', { current_password: PASSWORD, password: 'short', password_again: 'short' })).status).toBe(400);
    expect((await post(here, '/settings/account/password', { current_password: PASSWORD, password: NEW_PASSWORD, password_again: 'other' })).status).toBe(400);

    const done = await post(here, '/settings/account/password', { current_password: PASSWORD, password: NEW_PASSWORD, password_again: NEW_PASSWORD });
    expect(done).toMatchObject({ status: 303, location: '/settings/account?done=password' });
    expect((await here.send('GET', '/settings/account?done=password')).status).toBe(200); // still signed in
    expect((await elsewhere.send('GET', '/settings/account')).status).toBe(303); // signed out
    await expect(signInAs(api, user.email, PASSWORD)).rejects.toThrow();
    await signInAs(api, user.email, NEW_PASSWORD);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toEqual(['Your Prospect password was changed']);
    expect(await authEvents(api, { type: 'password.change', userId: user.id })).toHaveLength(1);
  });

  it('counts wrong current passwords like failed sign-ins, however many arrive at once', async () => {
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    const page = await web.send('GET', '/settings/account');
    const tries = await Promise.all(
      Array.from({ length: 12 }, () => web.send('POST', '/settings/account/password', { _csrf: web.csrfFrom(page.text), current_password: 'guess', password: NEW_PASSWORD, password_again: NEW_PASSWORD })),
    );
    expect(tries.filter((res) => res.status === 429).length).toBeGreaterThanOrEqual(7); // 5 failures block the account
    const right = await web.send('POST', '/settings/account/password', { _csrf: web.csrfFrom(page.text), current_password: PASSWORD, password: NEW_PASSWORD, password_again: NEW_PASSWORD });
    expect(right.status).toBe(429); // blocked: even the right one waits
  });

  it('deletes the account with its password: tokens, refresh tokens and every session end; the audit trail stays, anonymous', async () => {
    const user = await createUser(api);
    const here = await signInAs(api, user.email, PASSWORD);
    const elsewhere = await signInAs(api, user.email, PASSWORD);
    const { accessToken, refreshToken } = (await authorizedPoll(api, user)).body;
    expect((await get(api, ROUTES.me, accessToken)).status).toBe(200);

    const wrong = await post(here, '/settings/account/delete', { password: 'not my password' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('That password is not right.');
    expect((await here.send('POST', '/settings/account/delete', { password: PASSWORD })).status).toBe(403); // no CSRF token
    expect(await userById(api, user.id)).not.toBeNull();

    const done = await post(here, '/settings/account/delete', { password: PASSWORD });
    expect(done).toMatchObject({ status: 303, location: '/login?account=deleted' });
    expect((await here.send('GET', '/login?account=deleted')).text).toContain('Your account is deleted');
    expect((await here.send('GET', '/settings/account')).status).toBe(303);
    expect((await elsewhere.send('GET', '/settings/account')).status).toBe(303);
    expect((await get(api, ROUTES.me, accessToken)).status).toBe(401);
    expect((await apiPost(api, ROUTES.refresh, { refreshToken })).status).toBe(401);
    await expect(signInAs(api, user.email, PASSWORD)).rejects.toThrow();
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toEqual(['Your Prospect account was deleted']);

    for (const table of ['users', 'access_tokens', 'refresh_tokens', 'web_sessions']) {
      const column = table === 'users' ? 'id' : 'user_id';
      // sql-on-purpose: no row of the person is left at rest in any of these tables
      expect(await api.dataSource.query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [user.id])).toEqual([]);
    }
    // sql-on-purpose: no stored audit event names the person any more
    const trail = await api.dataSource.query(`SELECT user_id, ip, detail FROM auth_events WHERE detail::text LIKE $1 OR ip IS NOT NULL AND user_id = $2`, [`%${user.email}%`, user.id]);
    expect(trail).toEqual([]); // nothing left that names the person
    expect(await countAuthEvents(api, { type: 'account.delete' })).toBeGreaterThanOrEqual(1);

    // The address is free again.
    await createUser(api, { email: user.email });
  });

  it('keeps one administrator: of two deleting themselves at once, one goes and the other is told why not', async () => {
    const admins = [await createUser(api, { role: 'admin' }), await createUser(api, { role: 'admin' })];
    const browsers = await Promise.all(admins.map((admin) => signInAs(api, admin.email, PASSWORD)));
    const pages = await Promise.all(browsers.map((web) => web.send('GET', '/settings/account')));
    const answers = await Promise.all(
      browsers.map((web, i) => web.send('POST', '/settings/account/delete', { _csrf: web.csrfFrom(pages[i]!.text), password: PASSWORD })),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([303, 409]);
    expect(answers.find((res) => res.status === 409)!.text).toContain('You are the only administrator');
    expect((await everyAccount(api)).filter((account) => account.role === 'admin')).toHaveLength(1);
  });

  it('changes the address through a link mailed to the new one, telling the old one; a taken address gets nothing', async () => {
    const user = await createUser(api);
    // A token made on the tokens page lives on through the change; a CLI session (a grant) ends with it.
    const token = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct', scope: 'profile tokens' })).accessToken;
    const session = (await authorizedPoll(api, user)).body;
    expect((await get(api, ROUTES.me, token)).body.user.email).toBe(user.email); // cached now
    const web = await signInAs(api, user.email, PASSWORD);
    const newEmail = `moved-${Date.now()}@example.com`;

    expect((await post(web, '/settings/account/email', { email: newEmail, password: 'wrong password' })).status).toBe(400);
    expect((await post(web, '/settings/account/email', { email: 'not an address', password: PASSWORD })).status).toBe(400);
    expect((await post(web, '/settings/account/email', { email: user.email.toUpperCase(), password: PASSWORD })).status).toBe(400);
    const asked = await post(web, '/settings/account/email', { email: ` ${newEmail} `, password: PASSWORD });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain(`A link is on its way to <strong>${newEmail}</strong>`);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toEqual(['A change of your Prospect e-mail address was asked for']);
    const [confirmation] = smtp.to(newEmail);
    const link = new URL(/^(http:\/\/\S+\/email-change\?token=prse_\S+)$/m.exec(confirmation!.text)![1]!);
    expect(await emailOf(user.id)).toBe(user.email); // nothing changed yet

    const elsewhere = webClient(api); // the link opened in a browser that is not signed in
    const opened = await elsewhere.send('GET', link.pathname + link.search);
    expect(opened.status).toBe(200);
    expect(await emailOf(user.id)).toBe(user.email); // opening the link (as a mail scanner does) changes nothing
    const done = await elsewhere.send('POST', '/email-change', { _csrf: elsewhere.csrfFrom(opened.text), token: link.searchParams.get('token')! });
    expect(done.status).toBe(200);
    expect(done.text).toContain(`is now ${newEmail}`);
    expect(await emailOf(user.id)).toBe(newEmail);
    // Every cache forgets the old one: the users trigger's notification reaches the listener within the staleness bound.
    expect(await eventually(async () => (await get(api, ROUTES.me, token)).body.user.email === newEmail)).toBe(true);
    expect((await get(api, ROUTES.me, session.accessToken)).status).toBe(401);
    expect((await apiPost(api, ROUTES.refresh, { refreshToken: session.refreshToken })).status).toBe(401);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toContain('Your Prospect e-mail address was changed');
    await signInAs(api, newEmail, PASSWORD);
    await expect(signInAs(api, user.email, PASSWORD)).rejects.toThrow();
    expect((await elsewhere.send('GET', link.pathname + link.search)).status).toBe(410);
    expect((await elsewhere.send('GET', '/email-change?token=prse_garbage')).status).toBe(410);

    // An address with an account: the same answer, no mail goes there, and the old address is
    // told as for any request (telling only for a free address would say which are registered).
    const other = await createUser(api);
    const before = smtp.to(other.email).length;
    const web2 = await signInAs(api, newEmail, PASSWORD);
    const toldBefore = smtp.to(newEmail).length;
    const quiet = await post(web2, '/settings/account/email', { email: other.email, password: PASSWORD });
    expect(quiet.status).toBe(200);
    await api.app.get(Mailer).settled();
    expect(smtp.to(other.email)).toHaveLength(before);
    expect(smtp.to(newEmail).slice(toldBefore).map((m) => m.subject)).toEqual(['A change of your Prospect e-mail address was asked for']);
  });
});
