import { ROUTES } from '@prospect/contract';
import { Mailer } from '../../src/mail/mailer.js';
import { RESETS_PER_ACCOUNT_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { eventually } from '../support/eventually.js';
import { FakeClock } from '../support/fake-clock.js';
import { countAuthEvents, createUser } from '../support/fixtures.js';
import { get } from '../support/http.js';
import { outboxRows } from '../support/mail-fixtures.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { signInAs, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'a brand new passphrase';

/** "Forgot your password?" end to end, with the mail captured by a real SMTP server in this process. */
describe('password reset by e-mail', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail({ clock, env: { MAIL_FROM: 'Prospect <no-reply@prospect.test>' } })));
  afterAll(() => api?.close());

  /** Asks for a link for `email` from a fresh browser; the page it answered with. */
  async function askForLink(email: string) {
    const web = webClient(api);
    const form = await web.send('GET', '/password/forgot');
    const res = await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email });
    await api.app.get(Mailer).settled();
    return res;
  }
  const linkIn = (text: string) => /^(http:\/\/\S+\/password\/reset\?token=prsp_[A-Za-z0-9_-]{43})$/m.exec(text)?.[1];

  it('mails a single-use link; setting the password signs every browser out, revokes CLI tokens if asked, and says so by mail', async () => {
    const user = await createUser(api);
    const elsewhere = await signInAs(api, user.email, PASSWORD); // another browser, signed in
    const cliToken = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;

    const asked = await askForLink(user.email);
    expect(asked.status).toBe(200);
    expect(asked.text).toContain(`If an account uses <strong>${user.email}</strong>, a link to choose a new password is on its way.`);
    const [mail] = smtp.to(user.email);
    expect(mail!.subject).toBe('Reset your Prospect password');
    expect(mail!.raw).toMatch(/^From: Prospect <no-reply@prospect\.test>/m);
    const link = linkIn(mail!.text)!;
    expect(link).toBeDefined(); // on a line of its own
    expect(mail!.html).toContain(`href="${link}"`);
    // sql-on-purpose: the link's token is stored only as its SHA-256
    const [{ n }] = await api.dataSource.query(`SELECT count(*)::int AS n FROM account_tokens WHERE token_hash = sha256(convert_to($1, 'UTF8'))`, [new URL(link).searchParams.get('token')]);
    expect(n).toBe(1);

    const browser = webClient(api);
    const page = await browser.send('GET', new URL(link).pathname + new URL(link).search);
    expect(page.status).toBe(200);
    const token = new URL(link).searchParams.get('token')!;
    const done = await browser.send('POST', '/password/reset', { _csrf: browser.csrfFrom(page.text), token, password: NEW_PASSWORD, password_again: NEW_PASSWORD, revoke_tokens: 'on' });
    expect(done).toMatchObject({ status: 303, location: '/login?password=reset' });
    expect((await browser.send('GET', '/login?password=reset')).text).toContain('Your password is changed, and every browser signed out.');

    expect((await elsewhere.send('GET', '/settings/tokens')).status).toBe(303); // signed out
    expect((await get(api, ROUTES.me, cliToken)).status).toBe(401);
    await expect(signInAs(api, user.email, PASSWORD)).rejects.toThrow();
    await signInAs(api, user.email, NEW_PASSWORD);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toEqual(['Reset your Prospect password', 'Your Prospect password was changed']);

    // Used once: the link is spent, on the page and on the form.
    expect((await browser.send('GET', new URL(link).pathname + new URL(link).search)).status).toBe(410);
    const again = await browser.send('POST', '/password/reset', { _csrf: browser.csrfFrom(page.text), token, password: 'yet another one!', password_again: 'yet another one!' });
    expect(again.status).toBe(410);
    expect(await countAuthEvents(api, { type: 'password.reset', userId: user.id })).toBe(1);
  });

  it('works in a real browser: from the sign-in page to the mailed link and a new password', async () => {
    const user = await createUser(api);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await page.goto(`${api.baseUrl}/login`);
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByLabel('E-mail').fill(user.email);
      await page.screenshot({ path: `${SCREENSHOTS}password-forgot-phone.png` });
      await page.getByRole('button', { name: 'Send the link' }).click();
      await expect(page.getByRole('status').textContent()).resolves.toContain('a link to choose a new password is on its way');
      await api.app.get(Mailer).settled();
      const link = linkIn(smtp.to(user.email).at(-1)!.text)!;
      await page.goto(link);
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('The same again').fill(NEW_PASSWORD);
      await page.screenshot({ path: `${SCREENSHOTS}password-reset-phone.png` });
      await page.getByRole('button', { name: 'Set the new password' }).click();
      await expect(page.getByRole('status').textContent()).resolves.toContain('Your password is changed');
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(NEW_PASSWORD);
      await Promise.all([page.waitForURL(/\/settings\/tokens/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    } finally {
      await browser.close();
    }
  });

  it('answers an unknown address exactly as a known one, and mails nobody', async () => {
    const known = await createUser(api);
    const before = smtp.mails.length;
    const forKnown = await askForLink(known.email);
    const forUnknown = await askForLink(known.email.replace('@', '-nobody@'));
    expect(forUnknown.status).toBe(forKnown.status);
    expect(forUnknown.text.replace(known.email.replace('@', '-nobody@'), 'X')).toBe(forKnown.text.replace(known.email, 'X'));
    expect(smtp.mails.length).toBe(before + 1);
  });

  it('refuses a link after 30 minutes, and one a newer reset made unusable', async () => {
    const user = await createUser(api);
    await askForLink(user.email);
    await askForLink(user.email);
    const [first, second] = smtp.to(user.email).map((m) => linkIn(m.text)!);
    const web = webClient(api);
    const page = await web.send('GET', new URL(second!).pathname + new URL(second!).search);
    await web.send('POST', '/password/reset', { _csrf: web.csrfFrom(page.text), token: new URL(second!).searchParams.get('token')!, password: NEW_PASSWORD, password_again: NEW_PASSWORD });
    expect((await web.send('GET', new URL(first!).pathname + new URL(first!).search)).status).toBe(410);

    const late = await createUser(api);
    await askForLink(late.email);
    clock.advanceSeconds(31 * 60);
    const [expired] = smtp.to(late.email).map((m) => linkIn(m.text)!);
    const gone = await web.send('GET', new URL(expired!).pathname + new URL(expired!).search);
    expect(gone.status).toBe(410);
    expect(gone.text).toContain('This link no longer works');
  });

  it(`sends one account at most ${RESETS_PER_ACCOUNT_PER_HOUR} links an hour, however many requests arrive at once`, async () => {
    const user = await createUser(api);
    const answers = await Promise.all(Array.from({ length: 20 }, () => askForLink(user.email)));
    expect(answers.filter((res) => res.status === 200)).toHaveLength(RESETS_PER_ACCOUNT_PER_HOUR);
    expect(answers.filter((res) => res.status === 429)).toHaveLength(20 - RESETS_PER_ACCOUNT_PER_HOUR);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email)).toHaveLength(RESETS_PER_ACCOUNT_PER_HOUR);
  });

  it('refuses bad input with a 4xx and changes nothing', async () => {
    const web = webClient(api);
    const form = await web.send('GET', '/password/forgot');
    for (const email of ['', 'not-an-address', `${'a'.repeat(320)}@example.com`]) {
      expect((await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email })).status).toBe(400);
    }
    expect((await web.send('POST', '/password/forgot', { email: 'a@example.com' })).status).toBe(403); // no CSRF token
    const user = await createUser(api);
    await askForLink(user.email);
    const link = linkIn(smtp.to(user.email)[0]!.text)!;
    const token = new URL(link).searchParams.get('token')!;
    const page = await web.send('GET', new URL(link).pathname + new URL(link).search);
    const post = (fields: Record<string, string>) => web.send('POST', '/password/reset', { _csrf: web.csrfFrom(page.text), ...fields });
    expect((await post({ token, password: 'short', password_again: 'short' })).status).toBe(400);
    expect((await post({ token, password: NEW_PASSWORD, password_again: 'something else' })).status).toBe(400);
    expect((await post({ token: 'prsp_forged', password: NEW_PASSWORD, password_again: NEW_PASSWORD })).status).toBe(410);
    expect((await web.send('GET', '/password/reset?token=%00')).status).toBe(400); // a NUL is refused before any page
    // The link still works: nothing above used it.
    expect((await post({ token, password: NEW_PASSWORD, password_again: NEW_PASSWORD })).status).toBe(303);
  });
});

describe('mail without SMTP_URL', () => {
  it('writes each mail to the log as one line with its recipient, subject and link', async () => {
    const api = await startTestApp();
    try {
      const user = await createUser(api);
      const web = webClient(api);
      const form = await web.send('GET', '/password/forgot');
      await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email: user.email });
      await api.app.get(Mailer).settled(); // the outbox's worker writes it
      const lines = api.logs().split('\n').filter((l) => l.includes('"context":"Mail"'));
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!).msg).toMatch(new RegExp(`^mail to ${user.email} \\(no SMTP_URL, so written here\\): "Reset your Prospect password" http://\\S+/password/reset\\?token=prsp_[A-Za-z0-9_-]{43}$`));
    } finally {
      await api.close();
    }
  });
});

describe('mail with the SMTP server down', () => {
  it('answers the request as usual, keeps the mail queued and tried again, and shuts down without waiting for it', async () => {
    const dead = await SmtpSink.start();
    await dead.stop(); // its port, now closed
    const api = await startTestApp({ env: { SMTP_URL: dead.url, MAIL_RETRY_BASE_SECONDS: '1' } });
    const user = await createUser(api);
    const web = webClient(api);
    const form = await web.send('GET', '/password/forgot');
    const res = await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email: user.email });
    expect(res.status).toBe(200);
    const outbox = () => outboxRows(api, user.email);
    expect(await eventually(async () => (await outbox())[0]?.attempts >= 2, 10_000)).toBe(true);
    // Not lost: waiting for its next try, with the reason.
    expect((await outbox())[0]).toMatchObject({ sent_at: null, given_up_at: null, last_error: expect.stringMatching(/ECONNREFUSED/) });
    const closing = Date.now();
    await api.close();
    expect(Date.now() - closing).toBeLessThan(4_000);
    const given = api.logs().split('\n').filter((l) => l.includes('"context":"MailOutbox"')).map((l) => JSON.parse(l).msg as string);
    expect(given).toContainEqual(expect.stringMatching(new RegExp(`^mail \\S+ to ${user.email} failed \\(connect ECONNREFUSED \\S+\\); trying again in \\d+ s$`)));
  });
});
