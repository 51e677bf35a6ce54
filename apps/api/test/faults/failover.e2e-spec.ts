import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { CLI_CLIENT_ID, IDEMPOTENCY_KEY_HEADER, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import supertest from 'supertest';
import { type ApiProcess, startApiProcess } from '../support/api-process.js';
import { accessTokensOfDeviceCode, countEvents, countTokensLabelled, outboxRows, seedToken, seedUsers } from '../support/direct-sql.js';
import { authorizationParams, pkce } from '../oauth/code-flow-support.js';
import { waitFor } from '../support/eventually.js';
import { SmtpSink } from '../support/smtp-sink.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { csrfFrom } from '../support/web-client.js';

/** The API's bound on each database wait: a request meets a dead primary no longer than this. */
const DATABASE_TIMEOUT_MS = 2_000;
/** The poll interval the replicas give (the lowest allowed), so device logins finish quickly. */
const POLL_INTERVAL_S = 1;
/** How long a client waits before sending a request again after a 503 or a reset. The CLI honours Retry-After (5 s); the load is denser. */
const RETRY_PAUSE_MS = 200;

type Kind = 'start' | 'approve-page' | 'approve' | 'poll' | 'refresh' | 'me' | 'issue' | 'reset-page' | 'reset' | 'authorize' | 'code';

interface Answer {
  kind: Kind;
  started: number;
  ended: number;
  status?: number;
  retryAfter?: string;
  /** Where a redirect sends the browser. */
  location?: string;
  /** The cookies it set, as a browser sends them back. */
  cookie?: string;
  /** A reset or a hang-up instead of an answer. */
  error?: string;
  body?: any;
}

const answers: Answer[] = [];
/** Set when the test ends however it ends: a client still retrying gives up (its replica is gone). */
let over = false;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One request (a connection of its own); every answer, or the error instead, is kept in `answers`. */
function call(
  kind: Kind,
  base: string,
  method: string,
  path: string,
  options: { json?: unknown; form?: Record<string, string>; token?: string; cookie?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const started = Date.now();
  return new Promise<Answer>((resolve) => {
    const body = options.json !== undefined ? JSON.stringify(options.json) : options.form ? new URLSearchParams(options.form).toString() : undefined;
    const req = http.request(`${base}${path}`, {
      method,
      // A connection of its own: Node's global agent keeps connections alive, and one the server
      // closes as idle just as a request goes out is a hang-up of the client's making, not the service's.
      agent: false,
      headers: {
        ...options.headers,
        ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.cookie ? { cookie: options.cookie } : {}),
      },
    });
    const done = (answer: Omit<Answer, 'kind' | 'started' | 'ended'>) => {
      const recorded = { kind, started, ended: Date.now(), ...answer };
      answers.push(recorded);
      resolve(recorded);
    };
    req.setTimeout(30_000, () => req.destroy(new Error('no answer in 30 s')));
    req.once('error', (err) => done({ error: err.message }));
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.once('error', (err) => done({ error: err.message }));
      res.once('end', () =>
        done({
          status: res.statusCode!,
          retryAfter: res.headers['retry-after'],
          location: res.headers.location,
          cookie: res.headers['set-cookie']?.map((c) => c.split(';')[0]).join('; '),
          body: res.headers['content-type']?.includes('json') && text ? JSON.parse(text) : text,
        }),
      );
    });
    req.end(body);
  });
}

/** Sends a request again while the service says it cannot serve now (503) or the connection broke, as a client that retries does. */
async function untilServed(send: () => Promise<Answer>): Promise<Answer> {
  for (;;) {
    if (over) throw new Error('the test is over');
    const answer = await send();
    if (answer.status !== undefined && answer.status !== 503) return answer;
    await pause(RETRY_PAUSE_MS);
  }
}

/**
 * A managed failover under load: the primary stops, the one address the replicas know moves to
 * a streaming standby, and the standby is promoted, while two replicas serve device logins
 * (started on one, approved on the other, polled on both), refresh rotations, token issuance
 * with an Idempotency-Key, code grants of the CLI's own client and password-reset mail. Nothing acknowledged is lost or done twice,
 * and nothing answers 500: 503 with Retry-After while no primary answers, then service again.
 *
 * The switch is a switchover as a managed service or Patroni does it: the old primary is stopped
 * first (a fast shutdown sends every WAL record to the standby before it exits), then the standby
 * is promoted, so asynchronous streaming loses no commit. The address moves to the standby
 * before its promotion, as a DNS name or an endpoint may: the replicas meet a server in recovery
 * (writes refused, 25006) and answer 503 for that too.
 */
describe('a primary failover under load', () => {
  let primary: ThrowawayPostgres;
  let standby: ThrowawayPostgres;
  let proxy: TcpProxy;
  let smtp: SmtpSink;
  const replicas: ApiProcess[] = [];
  let base: [string, string];

  beforeAll(async () => {
    primary = await ThrowawayPostgres.create();
    standby = await ThrowawayPostgres.standbyOf(primary);
    // The one address the replicas know: a managed service's endpoint, moved at the failover.
    const front = await TcpProxy.forUrl(primary.url);
    proxy = front.proxy;
    // A mail server that takes a moment to accept each mail: sends are under way when the primary stops.
    smtp = await SmtpSink.start({ delayMs: 300 });
    const env = {
      DATABASE_URL: front.url,
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
      DEVICE_POLL_INTERVAL_SECONDS: String(POLL_INTERVAL_S),
      SMTP_URL: smtp.url,
      REQUIRE_EMAIL_VERIFICATION: 'false',
      PASSWORD_RESETS_PER_IP_PER_HOUR: '100000',
      LOG_LEVEL: 'warn',
    };
    // One after the other: the second finds the migrations applied.
    replicas.push(await startApiProcess(env));
    replicas.push(await startApiProcess(env));
    base = [replicas[0]!.baseUrl, replicas[1]!.baseUrl];
  }, 180_000);

  afterAll(async () => {
    over = true;
    await Promise.all(replicas.map((replica) => replica.stop()));
    await proxy?.cut();
    await smtp?.stop();
    await primary?.destroy();
    await standby?.destroy();
  });

  it('loses nothing, does nothing twice, and answers 503 with Retry-After, never 500, while no primary answers', async () => {
    // The approvers, each with a browser session of their own (a person approves one login at a
    // time): signed up on the first replica, approving on either (the session is a row).
    const approver = async (n: number) => {
      const browser = supertest.agent(base[0]);
      const form = await browser.get('/signup').expect(200);
      const signedUp = await browser
        .post('/signup')
        .type('form')
        .send({ _csrf: csrfFrom(form.text), name: `Failover approver ${n}`, email: `approver-${n}-${Date.now()}@example.com`, password: 'correct horse battery' })
        .expect(303);
      return (signedUp.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
    };
    const approvers = [await approver(0), await approver(1), await approver(2)];
    const issuer = await seedToken(primary.url, 'Failover issuer');
    const mailRecipients = await seedUsers(primary.url, 200, 'Failover reset');

    let turn = 0;
    const replica = () => base[turn++ % 2]!;

    /** A device login as the CLI and a person do it: started on one replica, approved on the other, polled on both. */
    const logins: Array<{ deviceCode: string; approved: boolean; accessToken?: string; refreshToken?: string }> = [];
    async function deviceLogin(hostname: string, cookie: string) {
      const start = await untilServed(() => call('start', replica(), 'POST', ROUTES.deviceStart, { json: { clientName: 'prospect CLI', hostname } }));
      expect(start.status).toBe(200);
      const login: (typeof logins)[number] = { deviceCode: start.body.deviceCode, approved: false };
      logins.push(login);
      const page = await untilServed(() => call('approve-page', replica(), 'GET', `/device?user_code=${start.body.userCode}`, { cookie }));
      expect(page.status).toBe(200);
      // A 503 is answered as a browser's reload does: the same form sent again (an approval that went through shows the approval).
      const approved = await untilServed(() => call('approve', replica(), 'POST', '/device/approve', { cookie, form: { _csrf: csrfFrom(page.body), user_code: start.body.userCode } }));
      if (approved.status !== 200) throw new Error(`approve answered ${approved.status}: ${JSON.stringify(approved.body).slice(0, 1500)}`);
      login.approved = true;
      for (;;) {
        const poll = await untilServed(() => call('poll', replica(), 'POST', ROUTES.devicePoll, { json: { deviceCode: login.deviceCode } }));
        expect(poll.status).toBe(200);
        if (poll.body.status === 'authorized') {
          login.accessToken = poll.body.accessToken;
          login.refreshToken = poll.body.refreshToken;
          return login;
        }
        expect(['pending', 'slow_down']).toContain(poll.body.status);
        // The protocol's interval, as the CLI waits it.
        await pause(POLL_INTERVAL_S * 1000);
      }
    }

    // Sessions that refresh throughout, from device logins done before the load.
    const sessions: Array<Awaited<ReturnType<typeof deviceLogin>>> = [];
    for (const i of [0, 1, 2]) sessions.push(await deviceLogin(`refresher-${i}`, approvers[0]!));
    const chains = sessions.map((s) => ({ refreshToken: s.refreshToken!, accessToken: s.accessToken!, rotations: 0 }));

    let loading = true;
    // A worker's failed expectation ends the load at once and fails the waits below with it.
    const failures: unknown[] = [];
    const worker = (work: Promise<void>) =>
      work.catch((err: unknown) => {
        failures.push(err);
        loading = false;
      });
    const unlessFailed = (check: () => boolean | Promise<boolean>) => async () => {
      if (failures.length) throw failures[0];
      return check();
    };
    const issued: Array<{ label: string; key: string; token?: string }> = [];
    let resets = 0;
    /** Device logins, one after another. */
    async function deviceLogins(w: number) {
      for (let n = 0; loading; n++) await deviceLogin(`load-${w}-${n}`, approvers[w]!);
    }
    /** A session refreshing, then calling /me with its new access token; a lost answer is sent again with the same refresh token. */
    async function refreshes(chain: (typeof chains)[number]) {
      while (loading) {
        const refreshed = await untilServed(() => call('refresh', replica(), 'POST', ROUTES.refresh, { json: { refreshToken: chain.refreshToken } }));
        expect({ status: refreshed.status, body: refreshed.body }).toMatchObject({ status: 200, body: { accessToken: expect.any(String), refreshToken: expect.any(String) } });
        chain.refreshToken = refreshed.body.refreshToken;
        chain.accessToken = refreshed.body.accessToken;
        chain.rotations++;
        expect((await untilServed(() => call('me', replica(), 'GET', ROUTES.me, { token: chain.accessToken }))).status).toBe(200);
      }
    }
    /** Token issuance, each request with its Idempotency-Key, sent again with it until answered. */
    async function issuance(w: number) {
      for (let n = 0; loading; n++) {
        const request: (typeof issued)[number] = { label: `failover-${w}-${n}`, key: randomUUID() };
        issued.push(request);
        const answer = await untilServed(() =>
          call('issue', replica(), 'POST', ROUTES.issueToken, { json: { label: request.label }, token: issuer, headers: { [IDEMPOTENCY_KEY_HEADER]: request.key } }),
        );
        expect(answer.status).toBe(201);
        request.token = answer.body.accessToken;
      }
    }
    /** "Forgot your password?", one address after another: each committed request is one mail. */
    async function passwordResets() {
      while (loading && resets < mailRecipients.length) {
        const email = mailRecipients[resets++]!;
        const asked = await untilServed(async () => {
          // A fresh browser: the form's CSRF token goes with the cookie the page set.
          const page = await untilServed(() => call('reset-page', replica(), 'GET', '/password/forgot'));
          expect(page.status).toBe(200);
          return call('reset', replica(), 'POST', '/password/forgot', { cookie: page.cookie, form: { _csrf: csrfFrom(page.body), email } });
        });
        expect(asked.status).toBe(200);
      }
    }
    /**
     * `prospect auth:login --web`: the CLI's own client takes a code (no consent: it is first
     * party) and exchanges it. A code is never sent twice (a used code presented again revokes
     * what it gave): after a 503 or a reset the client starts over, as the CLI does.
     */
    const codeTokens: string[] = [];
    async function codeGrants(cookie: string) {
      const redirectUri = 'http://127.0.0.1:53682/callback';
      while (loading) {
        const { verifier, challenge } = pkce();
        const params = authorizationParams(CLI_CLIENT_ID, redirectUri, challenge, { scope: 'profile tokens' });
        const asked = await untilServed(() => call('authorize', replica(), 'GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, { cookie, headers: { 'sec-fetch-site': 'none' } }));
        expect(asked.status).toBe(303);
        const code = new URL(asked.location!).searchParams.get('code')!;
        const exchanged = await call('code', replica(), 'POST', OAUTH_ROUTES.token, {
          form: { grant_type: 'authorization_code', client_id: CLI_CLIENT_ID, code, redirect_uri: redirectUri, code_verifier: verifier },
        });
        if (exchanged.status === undefined || exchanged.status === 503) continue;
        expect({ status: exchanged.status, body: exchanged.body }).toMatchObject({ status: 200, body: { access_token: expect.any(String) } });
        codeTokens.push(exchanged.body.access_token);
      }
    }
    const workers = [deviceLogins(0), deviceLogins(1), ...chains.map(refreshes), issuance(0), issuance(1), codeGrants(approvers[2]!), passwordResets(), passwordResets(), passwordResets()].map(worker);

    const served = (kind: Kind, after = 0) => answers.filter((a) => a.kind === kind && a.started >= after && a.status !== undefined && a.status < 400).length;
    const KINDS: Kind[] = ['start', 'approve', 'poll', 'refresh', 'me', 'issue', 'reset', 'authorize', 'code'];
    await waitFor('every kind of request served before the switch', unlessFailed(() => KINDS.every((kind) => served(kind) >= 2)), 60_000);

    // The switch: the primary stops (fast: its connections end, its WAL reaches the standby), the
    // address moves to the standby, and the standby is promoted.
    const switchStarted = Date.now();
    const mailsBefore = smtp.mails.length;
    await primary.stop();
    proxy.retarget('127.0.0.1', standby.port);
    await standby.promote();
    const promoted = Date.now();
    // Mails the server accepted while no primary answered: their "sent" mark waited for the new one.
    const mailsAcceptedDuringSwitch = smtp.mails.length - mailsBefore;
    // Every kind served again by the new primary.
    await waitFor('every kind of request served after the promotion', unlessFailed(() => KINDS.every((kind) => served(kind, promoted) >= 2)), 60_000);
    const firstWriteAfter = Math.min(...answers.filter((a) => ['start', 'refresh', 'issue', 'code'].includes(a.kind) && a.started >= promoted && a.status! < 400).map((a) => a.ended));
    loading = false;
    await Promise.all(workers);
    if (failures.length) throw failures[0];

    // ── what was acknowledged is there, once ──────────────────────────────────
    const db = standby.url;
    // Every approved device login redeemed exactly once (one token), and its token valid.
    const approvedLogins = logins.filter((login) => login.approved);
    const redemptions = await Promise.all(approvedLogins.map((login) => accessTokensOfDeviceCode(db, login.deviceCode)));
    const loadLogins = approvedLogins.filter((login) => !sessions.includes(login));
    expect(loadLogins.map((login) => redemptions[approvedLogins.indexOf(login)])).toEqual(loadLogins.map(() => 1));
    for (const login of loadLogins) expect((await untilServed(() => call('me', replica(), 'GET', ROUTES.me, { token: login.accessToken }))).status).toBe(200);
    // No refresh family revoked: each chain refreshes once more, and its token works.
    for (const chain of chains) {
      const refreshed = await untilServed(() => call('refresh', replica(), 'POST', ROUTES.refresh, { json: { refreshToken: chain.refreshToken } }));
      expect(refreshed.status).toBe(200);
      expect((await untilServed(() => call('me', replica(), 'GET', ROUTES.me, { token: refreshed.body.accessToken }))).status).toBe(200);
    }
    // Nothing was taken for a stolen code or a reused refresh token: no family revoked.
    expect(await countEvents(db, ['device.replay', 'token.reuse', 'oauth.code_replay'])).toBe(0);
    // Every code exchanged is a working token.
    for (const token of codeTokens) expect((await untilServed(() => call('me', replica(), 'GET', ROUTES.me, { token }))).status).toBe(200);
    // One token per Idempotency-Key, and it works.
    for (const request of issued) {
      expect(await countTokensLabelled(db, request.label)).toBe(1);
      expect((await untilServed(() => call('me', replica(), 'GET', ROUTES.me, { token: request.token }))).status).toBe(200);
    }
    // Every committed mail sent, and received once.
    const asked = mailRecipients.slice(0, resets);
    await waitFor('every queued mail sent', async () => (await Promise.all(asked.map((email) => outboxRows(db, email)))).flat().every((row) => row.sent_at !== null), 90_000);
    const mails = await Promise.all(asked.map(async (email) => ({ email, committed: (await outboxRows(db, email)).length, received: smtp.to(email).length })));
    expect(mails.filter((m) => m.committed !== m.received)).toEqual([]);
    expect(mails.every((m) => m.committed >= 1)).toBe(true);

    // ── no 500, no reset: a 503 with Retry-After, or an answer ──────────────────
    const faults = answers.filter((a) => a.error !== undefined || (a.status! >= 500 && a.status !== 503) || (a.status === 503 && a.retryAfter !== '5'));
    expect(faults.map(({ kind, status, error, body }) => ({ kind, status, error, body: typeof body === 'string' ? body.slice(0, 200) : body }))).toEqual([]);
    expect(answers.filter((a) => a.status !== undefined && a.status >= 400 && a.status !== 503)).toEqual([]);
    for (const r of replicas) expect(r.child.exitCode).toBeNull();
    // No error line, no stack trace: a failover is no fault of ours. What was said (warnings), for the record.
    const logged = replicas.flatMap((r) => r.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string }));
    process.stdout.write(`failover log (warnings and errors):\n${logged.filter((line) => line.level >= 40).map((line) => `  ${line.level} ${line.msg}`).join('\n')}\n`);
    expect(logged.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);

    // ── the figures ──────────────────────────────────────────────────────────
    const during = answers.filter((a) => a.ended >= switchStarted && a.started <= firstWriteAfter);
    /** The longest time between two served answers of these kinds (the standby serves reads before its promotion; writes wait for it). */
    const longestGapOf = (kinds: Kind[]) => {
      const times = answers
        .filter((a) => kinds.includes(a.kind) && a.status !== undefined && a.status < 400)
        .map((a) => a.ended)
        .sort((x, y) => x - y);
      let gap = 0;
      for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
      return gap;
    };
    const figures = {
      requests: answers.length,
      duringSwitch: during.length,
      unavailable503: answers.filter((a) => a.status === 503).length,
      longestGapMs: longestGapOf(KINDS),
      longestWriteGapMs: longestGapOf(['start', 'approve', 'refresh', 'issue', 'reset', 'code']),
      promotionToFirstWriteMs: firstWriteAfter - promoted,
      stopToFirstWriteMs: firstWriteAfter - switchStarted,
      deviceLogins: loadLogins.length,
      refreshes: chains.reduce((n, c) => n + c.rotations, 0),
      tokensIssued: issued.length,
      codeGrants: codeTokens.length,
      mails: mails.reduce((n, m) => n + m.committed, 0),
      mailsAcceptedDuringSwitch,
      lost: 0,
      duplicated: 0,
      fiveHundreds: answers.filter((a) => a.status !== undefined && a.status >= 500 && a.status !== 503).length,
    };
    // The figures docs/operations.md records ("A database failover").
    process.stdout.write(`failover figures: ${JSON.stringify(figures)}\n`);
    expect(figures.promotionToFirstWriteMs).toBeLessThan(15_000);
  }, 300_000);
});
