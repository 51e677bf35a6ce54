import { request as httpRequest, Agent } from 'node:http';
import net from 'node:net';
import { composeMail, Mailer } from '../../src/mail/mailer.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { type ApiProcess, startApiProcess } from '../support/api-process.js';
import { outboxRows } from '../support/direct-sql.js';
import { eventually } from '../support/eventually.js';
import { approve, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { post } from '../support/http.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { postFrom, signUp, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** A database of its own on a Postgres server, every API process of a test on it. */
async function serverDatabase() {
  const database = await emptyServerDatabase();
  return {
    url: database.url,
    /** As startTestApp takes it, kept after the app closes. */
    forApp: { url: database.url, kind: 'server' as const, drop: async () => undefined },
    outbox: (recipient?: string) => outboxRows(database.url, recipient),
    drop: () => database.drop(),
  };
}

/** Signs up through the sign-up form of `baseUrl` (a verification mail is queued); the page's status. */
const signUpAt = (baseUrl: string, email: string) => signUp(webClient(baseUrl), { name: 'New Person', email, password: PASSWORD });

/** Asks for a reset link through the form of `baseUrl`; the page. */
const forgotPassword = (baseUrl: string, email: string) => postFrom(webClient(baseUrl), '/password/forgot', '/password/forgot', { email });

/** A port free right now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const address = (name: string) => `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

/**
 * Issue #32: the outbox across processes (`node dist/main.js`) on one Postgres server: a mail
 * server that is down across a restart, one that stalls during shutdown, two replicas sharing
 * the queue. No mail is lost, none is sent twice, and shutdown stays within its grace.
 */
describe('the mail outbox across API processes', () => {
  const processes: ApiProcess[] = [];
  const start = async (env: Record<string, string>) => {
    const api = await startApiProcess(env);
    processes.push(api);
    return api;
  };
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((api) => api.stop('SIGKILL')));
  });

  it('delivers every verification, reset and invitation mail exactly once after the mail server was down across a restart', async () => {
    const db = await serverDatabase();
    const smtp = await SmtpSink.start();
    await smtp.stop(); // down from the start
    try {
      // The people and the admin's token, made in this process before any mail is queued.
      const setup = await startTestApp({ database: db.forApp });
      const resetting = await createUser(setup, { email: address('reset') });
      const admin = await createUser(setup, { role: 'admin' });
      const login = await startDeviceLogin(setup, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
      await approve(setup, login.userCode, admin);
      const adminToken = (await poll(setup, login.deviceCode)).body.accessToken as string;
      await setup.close();

      const env = { DATABASE_URL: db.url, SMTP_URL: smtp.url, MAIL_RETRY_BASE_SECONDS: '1', PASSWORD_RESETS_PER_IP_PER_HOUR: '1000' };
      const first = await start(env);
      const signingUp = address('signup');
      const invited = address('invited');
      const signedUp = await signUpAt(first.baseUrl, signingUp);
      expect(signedUp.status).toBe(200);
      expect(signedUp.text).toContain('Check your e-mail');
      expect((await forgotPassword(first.baseUrl, resetting.email)).text).toContain('is on its way');
      expect((await post(first.baseUrl, '/api/admin/users', { email: invited, name: 'Invited Person' }, adminToken)).status).toBe(201);
      const recipients = [signingUp, resetting.email, invited];

      // Each tried and failed while the server is down…
      const triedAndFailed = async () => {
        const rows = await db.outbox();
        return rows.length === 3 && rows.every((row) => row.attempts >= 1 && /ECONNREFUSED/.test(row.last_error ?? '') && !row.sent_at);
      };
      expect(await eventually(triedAndFailed, 10_000)).toBe(true);
      // …then the process restarts: what it held in memory is gone, the queue is not.
      expect(await first.stop('SIGTERM')).toBe(0);
      await start(env);
      expect((await db.outbox()).map((row) => row.recipient).sort()).toEqual([...recipients].sort());

      await smtp.restart();
      expect(await eventually(async () => (await db.outbox()).every((row) => row.sent_at !== null), 30_000)).toBe(true);
      for (const recipient of recipients) expect(smtp.to(recipient)).toHaveLength(1);
      expect(smtp.mails).toHaveLength(3);
      expect(smtp.to(signingUp)[0]!.subject).toBe('Confirm your e-mail address for Prospect');
      expect(smtp.to(resetting.email)[0]!.text).toMatch(/\/password\/reset\?token=prsp_/);
      expect(smtp.to(invited)[0]!.text).toMatch(/\/invitation\?token=prsi_/);
    } finally {
      await smtp.stop();
      await db.drop();
    }
  });

  it('exits within SHUTDOWN_GRACE_SECONDS while the mail server stalls after DATA; the mail, not marked sent, goes out from the next process', async () => {
    const db = await serverDatabase();
    const smtp = await SmtpSink.start({ mode: 'stall' });
    const metricsPort = await freePort();
    try {
      const first = await start({ DATABASE_URL: db.url, SMTP_URL: smtp.url, SHUTDOWN_GRACE_SECONDS: '3', METRICS_PORT: String(metricsPort) });
      // A scraper's keep-alive connection to the metrics port, open through the shutdown.
      const scraper = new Agent({ keepAlive: true });
      await new Promise<void>((resolve, reject) =>
        httpRequest({ host: '127.0.0.1', port: metricsPort, path: '/metrics', agent: scraper }, (res) => res.resume().on('end', resolve)).on('error', reject).end(),
      );
      const email = address('stalled');
      expect((await signUpAt(first.baseUrl, email)).status).toBe(200);
      expect(await eventually(() => smtp.stalled === 1, 10_000)).toBe(true); // the message is in; no answer comes

      const stopping = Date.now();
      expect(await first.stop('SIGTERM')).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(3_000);
      scraper.destroy();
      expect(first.stdout()).toContain('still being sent at shutdown: left to the next replica');
      const [row] = await db.outbox(email);
      expect(row).toMatchObject({ attempts: 1, sent_at: null, given_up_at: null, claimed_until: null, last_error: expect.stringContaining('not answered before the replica stopped') });
      // The metrics port went with the process: a replacement can listen on it.
      const replacement = net.createServer();
      await new Promise<void>((resolve, reject) => replacement.once('error', reject).listen(metricsPort, '127.0.0.1', resolve));
      await new Promise((resolve) => replacement.close(resolve));

      smtp.mode = 'accept';
      await start({ DATABASE_URL: db.url, SMTP_URL: smtp.url });
      expect(await eventually(async () => (await db.outbox(email))[0]?.sent_at !== null, 15_000)).toBe(true);
      expect(smtp.to(email)).toHaveLength(1);
      expect((await db.outbox(email))[0]!.attempts).toBe(2);
    } finally {
      await smtp.stop();
      await db.drop();
    }
  });

  it('sends 50 mails queued at once through two replicas on one database, each exactly once, each replica sending some', async () => {
    const db = await serverDatabase();
    // A slow server (200 ms a mail): one replica alone would take seconds, so both take part.
    const smtp = await SmtpSink.start({ delayMs: 200 });
    let here: TestApp | undefined;
    try {
      here = await startTestApp({ database: db.forApp, env: { SMTP_URL: smtp.url } });
      await start({ DATABASE_URL: db.url, SMTP_URL: smtp.url });
      const recipients = Array.from({ length: 50 }, (_, i) => address(`many${i}`));
      const mailer = here.app.get(Mailer);
      await here.app.get(UnitOfWork).run(async (tx) => {
        for (const [i, to] of recipients.entries()) await mailer.send(composeMail(to, `Mail ${i}`, { paragraphs: ['Hello,', `This is mail ${i}.`] }), tx);
      });

      expect(await eventually(async () => (await db.outbox()).every((row) => row.sent_at !== null), 30_000)).toBe(true);
      for (const to of recipients) expect(smtp.to(to)).toHaveLength(1);
      expect(smtp.mails).toHaveLength(50);
      expect((await db.outbox()).every((row) => row.attempts === 1)).toBe(true);
      const sentHere = (await here.app.get(Metrics).mails.get()).values.find((v) => v.labels.event === 'sent')?.value ?? 0;
      expect(sentHere).toBeGreaterThan(0);
      expect(sentHere).toBeLessThan(50); // the process sent the rest
    } finally {
      await here?.close();
      await smtp.stop();
      await db.drop();
    }
  });
});
