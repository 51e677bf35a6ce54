import { Mailer } from '../../src/mail/mailer.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { MAILS_PER_RECIPIENT_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { eventually } from '../support/eventually.js';
import { countAccountTokensOf } from '../support/account-fixtures.js';
import { approve, createUser, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { dropMailsTo, markMailSentDaysAgo, outboxRows, queueMailWaitingAnHour } from '../support/mail-fixtures.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { webClient } from '../support/web-client.js';

const MAIL = '/api/admin/mail';
const USERS = '/api/admin/users';

/** An admin's token with `admin` (asked for at the device login, as `prospect auth:login --scopes profile,tokens,admin` does). */
async function adminToken(api: TestApp): Promise<string> {
  const admin = await createUser(api, { role: 'admin' });
  const login = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
  await approve(api, login.userCode, admin);
  return (await poll(api, login.deviceCode)).body.accessToken;
}

const address = (name: string) => `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
const mailCount = async (api: TestApp, event: string) => (await api.app.get(Metrics).mails.get()).values.find((v) => v.labels.event === event)?.value ?? 0;

/** Issue #32: the mail outbox in one process (real Postgres, a real SMTP server). */
describe('the mail outbox', () => {
  describe('with a mail server that answers', () => {
    let smtp: SmtpSink;
    let api: TestApp;
    let token: string;
    beforeAll(async () => {
      ({ api, smtp } = await startAppWithMail());
      token = await adminToken(api);
    });
    afterAll(() => api?.close());

    it('sends a queued mail once, counts it, and erases its body (the link) once sent', async () => {
      const user = await createUser(api);
      const queued = await mailCount(api, 'queued');
      const sent = await mailCount(api, 'sent');
      const web = webClient(api);
      const form = await web.send('GET', '/password/forgot');
      const page = await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email: user.email });
      expect(page.text).toContain('is on its way');
      await api.app.get(Mailer).settled();
      expect(smtp.to(user.email)).toHaveLength(1);
      expect(smtp.to(user.email)[0]!.text).toMatch(/\/password\/reset\?token=prsp_/);
      const [row] = await outboxRows(api, user.email);
      expect(row).toMatchObject({ attempts: 1, text: null, html: null, link: null, given_up_at: null, last_error: null });
      expect(row.sent_at).not.toBeNull();
      expect((await mailCount(api, 'queued')) - queued).toBe(1);
      expect((await mailCount(api, 'sent')) - sent).toBe(1);
    });

    it('queues a link and its mail in one transaction: when the mail cannot be queued, the page is an error and no link exists', async () => {
      const user = await createUser(api);
      const invited = address('invited');
      const links = () => countAccountTokensOf(api, user.id);
      // The outbox refuses every new row, as a full disk or a broken table would.
      // sql-on-purpose: a CHECK constraint that refuses every write
      await api.dataSource.query(`ALTER TABLE mail_outbox ADD CONSTRAINT refuse_for_test CHECK (false) NOT VALID`);
      try {
        const web = webClient(api);
        const form = await web.send('GET', '/password/forgot');
        const page = await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email: user.email });
        expect(page.status).toBe(500);
        expect(page.text).not.toContain('on its way');
        expect(await links()).toBe(0);

        const invitation = await post(api, USERS, { email: invited, name: 'Never Invited' }, token);
        expect(invitation.status).toBe(500);
        expect(await userByEmail(api, invited)).toBeNull();
      } finally {
        // sql-on-purpose: the fault injected above ends
        await api.dataSource.query(`ALTER TABLE mail_outbox DROP CONSTRAINT refuse_for_test`);
      }
      // Asked again once the outbox takes rows: one link, one mail.
      const web = webClient(api);
      const form = await web.send('GET', '/password/forgot');
      expect((await web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email: user.email })).text).toContain('is on its way');
      await api.app.get(Mailer).settled();
      expect(await links()).toBe(1);
      expect(smtp.to(user.email)).toHaveLength(1);
    });

    it(`drops the "someone tried to sign up" mails past ${MAILS_PER_RECIPIENT_PER_HOUR} an hour to one address, with a log line, answering the same`, async () => {
      const owner = await createUser(api);
      const tries = MAILS_PER_RECIPIENT_PER_HOUR + 3;
      for (let i = 0; i < tries; i++) {
        const web = webClient(api);
        const form = await web.send('GET', '/signup');
        const page = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'Someone Else', email: owner.email, password: 'another passphrase' });
        expect(page.status).toBe(200);
        expect(page.text).toContain('Check your e-mail');
      }
      await api.app.get(Mailer).settled();
      expect(smtp.to(owner.email).map((mail) => mail.subject)).toEqual(Array(MAILS_PER_RECIPIENT_PER_HOUR).fill('Someone tried to sign up to Prospect with your address'));
      const masked = `${owner.email[0]}***@example.com`;
      const dropped = api.logs().split('\n').filter((line) => line.includes(`sign-up attempt mail to ${masked} not queued`));
      expect(dropped).toHaveLength(tries - MAILS_PER_RECIPIENT_PER_HOUR);
      expect(dropped.join('\n')).not.toContain(owner.email);
    });

    it('deletes sent mails after 3 days in the retention purge, and keeps the ones waiting', async () => {
      const sent = address('old');
      const waiting = address('waiting');
      await api.app.get(Mailer).send({ to: sent, subject: 'Old', text: 'old', html: '<p>old</p>' });
      await api.app.get(Mailer).settled();
      await markMailSentDaysAgo(api, sent, 4);
      await queueMailWaitingAnHour(api, waiting);
      try {
        await api.app.get(RetentionService).purge();
        expect(await outboxRows(api, sent)).toEqual([]);
        expect(await outboxRows(api, waiting)).toHaveLength(1);
        // The age of the oldest waiting mail is a metric (read from the outbox at each scrape).
        const metrics = await api.app.get(Metrics).registry.getSingleMetricAsString('prospect_mail_oldest_waiting_seconds');
        expect(Number(/^prospect_mail_oldest_waiting_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(0);
      } finally {
        await dropMailsTo(api, waiting);
      }
    });
  });

  describe('with a mail server that is down, then refuses', () => {
    let smtp: SmtpSink;
    let api: TestApp;
    let token: string;
    beforeAll(async () => {
      smtp = await SmtpSink.start();
      await smtp.stop();
      // Given up 3.6 s after it was queued; tried after 1 s, 2 s, then at the bound.
      api = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_RETRY_BASE_SECONDS: '1', MAIL_GIVE_UP_HOURS: '0.001' } });
      token = await adminToken(api);
    });
    afterAll(async () => {
      await api?.close();
      await smtp?.stop();
    });

    it('tries a mail again with backoff, gives it up after MAIL_GIVE_UP_HOURS with the reason, and an admin sees it in GET /api/admin/mail', async () => {
      const invited = address('pat');
      const failed = await mailCount(api, 'failed');
      expect((await post(api, USERS, { email: invited, name: 'Pat' }, token)).status).toBe(201);

      // Waiting, tried and failed: the admin sees it as the oldest waiting.
      expect(await eventually(async () => (await outboxRows(api, invited))[0]?.last_error !== null, 5_000)).toBe(true);
      const waiting = await get(api, MAIL, token);
      expect(waiting.status).toBe(200);
      expect(waiting.headers.get('cache-control')).toBe('no-store');
      expect(waiting.body.oldestWaiting).toMatchObject({ to: 'p***@example.com', subject: 'You are invited to Prospect', attempts: expect.any(Number), lastError: expect.stringMatching(/ECONNREFUSED/) });
      expect(waiting.body.counts.waiting + waiting.body.counts.sending).toBeGreaterThanOrEqual(1);

      expect(await eventually(async () => (await outboxRows(api, invited))[0]?.given_up_at !== null, 15_000)).toBe(true);
      const [row] = await outboxRows(api, invited);
      expect(row.attempts).toBeGreaterThanOrEqual(3);
      expect(row).toMatchObject({ sent_at: null, text: null, html: null, link: null, last_error: expect.stringMatching(/^connect ECONNREFUSED/) });
      expect((await mailCount(api, 'failed')) - failed).toBe(1);

      const state = await get(api, MAIL, token);
      expect(state.body.counts).toMatchObject({ waiting: 0, sending: 0, givenUp: 1 });
      expect(state.body.oldestWaiting).toBeNull();
      expect(state.body.givenUp).toEqual([
        {
          id: row.id,
          to: 'p***@example.com',
          subject: 'You are invited to Prospect',
          queuedAt: expect.any(String),
          givenUpAt: expect.any(String),
          attempts: row.attempts,
          reason: expect.stringMatching(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/),
        },
      ]);
      expect(JSON.stringify(state.body)).not.toContain(invited);
      expect(smtp.mails).toEqual([]);
    });

    it('gives a mail the server refuses for good (5xx) up at once, with the reason and no address in it', async () => {
      await smtp.restart();
      smtp.mode = 'reject';
      const invited = address('quinn');
      expect((await post(api, USERS, { email: invited, name: 'Quinn' }, token)).status).toBe(201);
      await api.app.get(Mailer).settled();
      const [row] = await outboxRows(api, invited);
      expect(row).toMatchObject({ attempts: 1, sent_at: null, last_error: expect.stringContaining('550') });
      const state = await get(api, MAIL, token);
      expect(state.body.givenUp[0]).toMatchObject({ id: row.id, to: 'q***@example.com', attempts: 1, reason: expect.stringContaining('550') });
      expect(state.body.givenUp[0].reason).toContain('q***@example.com');
      expect(JSON.stringify(state.body)).not.toContain(invited);
    });

    it('is for administrators only', async () => {
      const person = await createUser(api);
      const login = await startDeviceLogin(api);
      await approve(api, login.userCode, person);
      const personsToken = (await poll(api, login.deviceCode)).body.accessToken as string;
      expect((await get(api, MAIL, personsToken)).status).toBe(403);
      expect((await get(api, MAIL)).status).toBe(401);
    });
  });
});
