import { ROUTES } from '@prospect/contract';
import { Mailer } from '../../src/mail/mailer.js';
import { VERIFICATION_MAILS_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { createUser, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** REQUIRE_EMAIL_VERIFICATION (on with SMTP_URL): sign-up that does not tell, and what an unverified address may not do. */
describe('e-mail verification', () => {
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail()));
  afterAll(() => api?.close());

  const mailsTo = async (email: string) => {
    await api.app.get(Mailer).settled();
    return smtp.to(email);
  };
  const linkIn = (text: string) => new URL(/^(http:\/\/\S+\/verify-email\?\S+)$/m.exec(text)![1]!);

  /** Follows a mailed link as a person does: its page, then "Confirm my address" (with the account's password when this browser is not signed in as it). */
  async function confirmLink(web: WebClient, link: URL, password?: string) {
    const page = await web.send('GET', link.pathname + link.search);
    if (page.status !== 200) return page;
    return web.send('POST', '/verify-email', {
      _csrf: web.csrfFrom(page.text),
      token: link.searchParams.get('token') ?? '',
      next: link.searchParams.get('next') ?? '',
      ...(password === undefined ? {} : { password }),
    });
  }

  async function signUp(email: string, next?: string): Promise<{ web: WebClient; res: Awaited<ReturnType<WebClient['send']>> }> {
    const web = webClient(api);
    const form = await web.send('GET', next ? `/signup?next=${encodeURIComponent(next)}` : '/signup');
    const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'New Person', email, password: 'a new passphrase', ...(next ? { next } : {}) });
    return { web, res };
  }

  it('answers a sign-up the same whether or not the address has an account, and tells the owner instead', async () => {
    const owner = await createUser(api, { name: 'Olive Owner' });
    const fresh = `fresh-${Date.now()}@example.com`;
    const forNew = await signUp(fresh);
    const forTaken = await signUp(owner.email);

    for (const { res } of [forNew, forTaken]) {
      expect(res.status).toBe(200);
      expect(res.text).toContain('Check your e-mail');
    }
    expect(Object.keys(forNew.res.headers).sort()).toEqual(Object.keys(forTaken.res.headers).sort());
    const strip = (html: string, email: string) => html.replaceAll(email, 'EMAIL');
    expect(strip(forNew.res.text, fresh)).toBe(strip(forTaken.res.text, owner.email));
    expect((await forNew.web.send('GET', '/settings/tokens')).status).toBe(303); // nobody is signed in by it

    expect((await mailsTo(fresh)).map((m) => m.subject)).toEqual(['Confirm your e-mail address for Prospect']);
    expect((await mailsTo(owner.email)).map((m) => m.subject)).toEqual(['Someone tried to sign up to Prospect with your address']);
    expect(await userByEmail(api, owner.email)).toMatchObject({ name: 'Olive Owner' }); // nothing changed
    expect(await userByEmail(api, fresh)).toMatchObject({ emailVerifiedAt: null });
  });

  it('lets an unverified person sign in, but not approve a device login or create a token, until the link is followed', async () => {
    const email = `unverified-${Date.now()}@example.com`;
    const start = await startDeviceLogin(api);
    const devicePage = `/device?user_code=${start.userCode}`;
    await signUp(email, devicePage);
    const [mail] = await mailsTo(email);
    const link = linkIn(mail!.text);
    expect(link.searchParams.get('next')).toBe(devicePage);

    // Signed in with the password, in another browser: the approval asks for the address first, the code kept.
    const web = await signInAs(api, email, 'a new passphrase');
    const gate = await web.send('GET', devicePage);
    expect(gate.status).toBe(403);
    expect(gate.text).toContain('Confirm your e-mail address first');
    expect(gate.text).toContain(`name="next" value="/device?user_code&#x3D;${start.userCode}"`);
    const approve = await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(gate.text), user_code: start.userCode });
    expect(approve.status).toBe(403);
    const tokens = await web.send('GET', '/settings/tokens');
    expect((await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(tokens.text), label: 'x' })).status).toBe(403);
    const viaApi = await web.agent.post(ROUTES.issueToken).set('x-csrf-token', web.csrfFrom(tokens.text)).send({});
    expect(viaApi.status).toBe(403);
    expect(await api.app.get(TokensService).listForUser((await userByEmail(api, email))!.id)).toEqual([]);
    expect((await poll(api, start.deviceCode)).body.status).toBe('pending');

    // Following the link in another browser: its page changes nothing by itself (a GET, as a
    // mail scanner sends), and confirming takes the account's password, then signs in and goes
    // back to the code.
    const elsewhere = webClient(api);
    const opened = await elsewhere.send('GET', link.pathname + link.search);
    expect(opened.status).toBe(200);
    expect(opened.text).toContain(email);
    expect(await userByEmail(api, email)).toMatchObject({ emailVerifiedAt: null });
    expect((await confirmLink(elsewhere, link, 'not the password')).status).toBe(401);
    const followed = await confirmLink(elsewhere, link, 'a new passphrase');
    expect(followed).toMatchObject({ status: 303, location: devicePage });
    const page = await elsewhere.send('GET', devicePage);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Your e-mail address is confirmed.');
    expect((await elsewhere.send('POST', '/device/approve', { _csrf: elsewhere.csrfFrom(page.text), user_code: start.userCode })).status).toBe(200);
    expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
    // The session signed in with the password before sees it too.
    expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
    expect((await webClient(api).send('GET', link.pathname + link.search)).status).toBe(410); // once
  });

  it('sends the link again on request, a few times an hour, and refuses garbage links', async () => {
    const user = await createUser(api, { emailVerified: false });
    const web = await signInAs(api, user.email, PASSWORD);
    const gate = await web.send('GET', '/device');
    expect(gate.status).toBe(403);
    const answers = await Promise.all(
      Array.from({ length: VERIFICATION_MAILS_PER_HOUR + 5 }, () => web.send('POST', '/verify-email/resend', { _csrf: web.csrfFrom(gate.text), next: '/device' })),
    );
    expect(answers.filter((res) => res.status === 200)).toHaveLength(VERIFICATION_MAILS_PER_HOUR);
    expect(answers.filter((res) => res.status === 429)).toHaveLength(5);
    expect(await mailsTo(user.email)).toHaveLength(VERIFICATION_MAILS_PER_HOUR);
    // A newer link does not end the older ones: each works until one is used.
    const links = (await mailsTo(user.email)).map((m) => linkIn(m.text));
    expect((await confirmLink(web, links[0]!)).status).toBe(303); // signed in as the account: no password asked
    expect((await webClient(api).send('GET', links[1]!.pathname + links[1]!.search)).status).toBe(410); // used up with the first

    for (const token of ['', 'prsv_short', 'x'.repeat(5000), 'prsp_' + 'a'.repeat(43)]) {
      expect((await webClient(api).send('GET', `/verify-email?token=${encodeURIComponent(token)}`)).status).toBe(410);
    }
    expect((await webClient(api).send('GET', '/verify-email?token=a&token=b')).status).toBe(410);
    expect((await webClient(api).send('POST', '/verify-email/resend', { next: '/device' })).status).toBe(303); // signed out: to sign-in
  });

  it('signs up at once without verification (REQUIRE_EMAIL_VERIFICATION=false), and then says when an address is taken', async () => {
    const open = await startTestApp({ database: api.database, env: { SMTP_URL: smtp.url, REQUIRE_EMAIL_VERIFICATION: 'false' } });
    try {
      const web = webClient(open);
      const form = await web.send('GET', '/signup');
      const email = `open-${Date.now()}@example.com`;
      const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'Open', email, password: 'a new passphrase' });
      expect(res.status).toBe(303);
      expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
      const again = webClient(open);
      const form2 = await again.send('GET', '/signup');
      expect((await again.send('POST', '/signup', { _csrf: again.csrfFrom(form2.text), name: 'Open', email, password: 'a new passphrase' })).status).toBe(409);
    } finally {
      await open.close();
    }
  });
});
