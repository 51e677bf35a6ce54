import { createHash } from 'node:crypto';
import { composeMail, Mailer } from '../../src/mail/mailer.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { MAILS_PER_RECIPIENT_PER_HOUR, RateLimits } from '../../src/rate-limits/rate-limits.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { expireRateLimit } from '../support/fixtures.js';

/**
 * Issue #31 item 7: unsolicited mails to one recipient are limited per hour
 * (RateLimits.mailToRecipient, called where such a mail is about to be queued).
 */
describe('mails to one recipient', () => {
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail()));
  afterAll(() => api?.close());

  const limits = () => api.app.get(RateLimits);
  const address = (name: string) => `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const refusalsCounted = async () => (await api.app.get(Metrics).rateLimited.get()).values.find((v) => v.labels.limit === 'mail:recipient')?.value ?? 0;

  it(`admits exactly ${MAILS_PER_RECIPIENT_PER_HOUR} an hour of 50 asked at once, counts the rest in the metrics, and keeps no address`, async () => {
    const to = address('victim');
    const before = await refusalsCounted();
    const answers = await Promise.all(Array.from({ length: 50 }, () => limits().mailToRecipient(to)));
    expect(answers.filter((may) => may)).toHaveLength(MAILS_PER_RECIPIENT_PER_HOUR);
    expect((await refusalsCounted()) - before).toBe(50 - MAILS_PER_RECIPIENT_PER_HOUR);
    // One counter per normalized address, under its hash.
    // sql-on-purpose: the counter's key at rest holds the address's hash, never the address
    const keys = (await api.dataSource.query(`SELECT key FROM rate_limits WHERE key LIKE 'mail:recipient:%'`)).map((row: { key: string }) => row.key as string);
    expect(keys).toContain(`mail:recipient:${createHash('sha256').update(to).digest('base64url')}`);
    expect(keys.join()).not.toContain('@');
  });

  it('counts an address however it is written, and each address apart', async () => {
    const to = address('bob');
    for (let i = 0; i < MAILS_PER_RECIPIENT_PER_HOUR; i++) expect(await limits().mailToRecipient(i % 2 ? to : ` ${to.toUpperCase()} `)).toBe(true);
    expect(await limits().mailToRecipient(to)).toBe(false);
    expect(await limits().mailToRecipient(`  ${to.replace('bob', 'BOB')}`)).toBe(false);
    expect(await limits().mailToRecipient(address('carol'))).toBe(true);
  });

  it('admits again once the hour has passed', async () => {
    const to = address('later');
    await Promise.all(Array.from({ length: MAILS_PER_RECIPIENT_PER_HOUR + 1 }, () => limits().mailToRecipient(to)));
    expect(await limits().mailToRecipient(to)).toBe(false);
    // The window ends (its row says so).
    await expireRateLimit(api, 'mail:recipient', to);
    expect(await limits().mailToRecipient(to)).toBe(true);
  });

  it('as a caller uses it: of 50 mails queued at once to one address, exactly the limit reach it through SMTP', async () => {
    const to = address('flooded');
    const mailer = api.app.get(Mailer);
    const queued = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        if (!(await limits().mailToRecipient(to))) return false;
        mailer.send(composeMail(to, `Someone tried to sign up to Prospect with your address (${i})`, { paragraphs: ['Hello,', 'Nothing was changed.'] }));
        return true;
      }),
    );
    expect(queued.filter(Boolean)).toHaveLength(MAILS_PER_RECIPIENT_PER_HOUR);
    await mailer.settled();
    expect(smtp.to(to)).toHaveLength(MAILS_PER_RECIPIENT_PER_HOUR);
  });
});
