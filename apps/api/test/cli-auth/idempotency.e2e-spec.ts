import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER, ROUTES } from '@prospect/contract';
import { RetentionService } from '../../src/retention/retention.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { authEvents, createUser, onApprovalPage, poll, startDeviceLogin } from '../support/fixtures.js';
import { errorBody, get, type JsonResponse, request } from '../support/http.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens, idempotencyKeysOf } from '../support/token-fixtures.js';

/**
 * Issue #32, item 5: a replay is harmless. `POST /api/cli/auth/token` with an Idempotency-Key
 * (draft-ietf-httpapi-idempotency-key-header) answers the same key, from the same credential with
 * the same body, within a day, with the same token, and makes no second one.
 */
describe('POST /api/cli/auth/token with an Idempotency-Key', () => {
  const clock = new FakeClock();
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api.close());

  /** A person and a token of theirs that may make tokens, as `prospect auth:login --token` holds one. */
  async function caller() {
    const user = await createUser(api);
    const { accessToken } = await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    return { user, token: accessToken };
  }

  const issue = (token: string, key: string | string[] | undefined, json: object = { label: 'ci' }): Promise<JsonResponse> =>
    request(api, 'POST', ROUTES.issueToken, { json, token, headers: key === undefined ? {} : ({ [IDEMPOTENCY_KEY_HEADER]: key } as Record<string, string>) });

  /** Tokens of `userId` other than the caller's own: those POST /token made. */
  const madeFor = async (userId: string, callerToken: string) => {
    const callerTokenId = (await api.app.get(TokensService).describe(callerToken))?.id;
    return (await accessTokens(api, { userId })).filter((token) => token.id !== callerTokenId).length;
  };

  const sfString = (key: string) => `"${key}"`;

  it('the same key sent again answers the same token, which works, and makes no second one', async () => {
    const { user, token } = await caller();
    const key = sfString(randomUUID());
    const first = await issue(token, key);
    expect(first.status).toBe(201);
    const again = await issue(token, key);
    expect({ status: again.status, body: again.body }).toEqual({ status: 201, body: first.body });
    expect(await madeFor(user.id, token)).toBe(1);
    expect((await get(api, ROUTES.me, first.body.accessToken)).status).toBe(200);
  });

  it('a bare key (no quotes) is the same key as its sf-string', async () => {
    const { user, token } = await caller();
    const key = randomUUID();
    const first = await issue(token, key);
    const quoted = await issue(token, sfString(key));
    expect([first.status, quoted.status]).toEqual([201, 201]);
    expect(quoted.body.accessToken).toBe(first.body.accessToken);
    expect(await madeFor(user.id, token)).toBe(1);
  });

  it('another key, or none, makes another token', async () => {
    const { user, token } = await caller();
    const a = await issue(token, sfString(randomUUID()));
    const b = await issue(token, sfString(randomUUID()));
    const none = await issue(token, undefined);
    expect([a.status, b.status, none.status]).toEqual([201, 201, 201]);
    expect(new Set([a.body.accessToken, b.body.accessToken, none.body.accessToken]).size).toBe(3);
    expect(await madeFor(user.id, token)).toBe(3);
  });

  it('the same key with another body is a 422 and makes nothing', async () => {
    const { user, token } = await caller();
    const key = sfString(randomUUID());
    expect((await issue(token, key, { label: 'ci', expiresInSeconds: 3600 })).status).toBe(201);
    for (const body of [{ label: 'laptop', expiresInSeconds: 3600 }, { label: 'ci' }, {}]) {
      const other = await issue(token, key, body);
      expect({ status: other.status, body: other.body }).toEqual({ status: 422, body: errorBody(422, 'invalid_request') });
      expect(other.body.message).toMatch(/Idempotency-Key was already used with a different request/);
    }
    // The body, not its spelling: the same fields in another order are the same request.
    expect((await issue(token, key, { expiresInSeconds: 3600, label: 'ci' })).status).toBe(201);
    expect(await madeFor(user.id, token)).toBe(1);
  });

  it('the key is per credential: another token of the same person, or another person, with the same key gets a token of its own', async () => {
    const { user, token } = await caller();
    const { accessToken: secondToken } = await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    const someoneElse = await caller();
    const key = sfString(randomUUID());
    const mine = await issue(token, key);
    const mySecond = await issue(secondToken, key);
    const theirs = await issue(someoneElse.token, key);
    expect([mine.status, mySecond.status, theirs.status]).toEqual([201, 201, 201]);
    expect(new Set([mine.body.accessToken, mySecond.body.accessToken, theirs.body.accessToken]).size).toBe(3);
    expect(theirs.body.user.id).toBe(someoneElse.user.id);
  });

  it('20 at once with one key: exactly one token; every answer is it, or a 409 "in progress" with Retry-After', async () => {
    const { user, token } = await caller();
    const key = sfString(randomUUID());
    const answers = await Promise.all(Array.from({ length: 20 }, () => issue(token, key)));
    const made = answers.filter((res) => res.status === 201);
    const busy = answers.filter((res) => res.status !== 201);
    expect(made.length).toBeGreaterThanOrEqual(1);
    expect(new Set(made.map((res) => res.body.accessToken)).size).toBe(1);
    for (const res of busy) {
      expect({ status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') }).toEqual({ status: 409, body: errorBody(409, 'conflict'), retryAfter: '1' });
      expect(res.body.message).toMatch(/in progress/);
    }
    expect(await madeFor(user.id, token)).toBe(1);
    // Sent again once the winner is done, each of the refused gets its token.
    const retried = await Promise.all(busy.map(() => issue(token, key)));
    expect(retried.map((res) => res.body.accessToken)).toEqual(busy.map(() => made[0]!.body.accessToken));
    expect(await madeFor(user.id, token)).toBe(1);
  });

  it('a replica that dies after its commit: the request sent again gets the token the lost answer carried, and only that one exists', async () => {
    const { user, token } = await caller();
    const dying = new TcpProxy('127.0.0.1', Number(new URL(api.baseUrl).port));
    await dying.start();
    try {
      const key = sfString(randomUUID());
      const dropped = dying.dropAnswerTo(`POST ${ROUTES.issueToken} `);
      const lost = await fetch(`http://127.0.0.1:${dying.port}${ROUTES.issueToken}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', [IDEMPOTENCY_KEY_HEADER]: key },
        body: JSON.stringify({ label: 'ci' }),
      }).then(
        () => 'answered',
        () => 'lost',
      );
      await dropped;
      expect(lost).toBe('lost');
      expect(await madeFor(user.id, token)).toBe(1);
      const again = await issue(token, key);
      expect(again.status).toBe(201);
      expect((await get(api, ROUTES.me, again.body.accessToken)).status).toBe(200);
      expect(await madeFor(user.id, token)).toBe(1);
    } finally {
      await dying.cut();
    }
  });

  it('the database alone does not reveal the token: neither it nor the key is stored in the clear', async () => {
    const { user, token } = await caller();
    const key = `visible-key-${randomUUID()}`;
    const made = await issue(token, sfString(key));
    // sql-on-purpose: nothing of the token or the key is stored in the clear, in any column
    const rows: Array<Record<string, unknown>> = await api.dataSource.query(`SELECT * FROM idempotency_keys WHERE user_id = $1`, [user.id]);
    expect(rows).toHaveLength(1);
    const stored = Buffer.concat(Object.values(rows[0]!).map((value) => (Buffer.isBuffer(value) ? value : Buffer.from(String(value)))));
    for (const secret of [made.body.accessToken as string, key, token]) expect(stored.includes(Buffer.from(secret))).toBe(false);
  });

  it(`malformed keys are a 400 and make nothing`, async () => {
    const { user, token } = await caller();
    const malformed = ['""', '"   "', `"${'k'.repeat(256)}"`, 'two words', '"unterminated', '"bad\\escape"', 'a,b'];
    for (const key of malformed) {
      const res = await issue(token, key);
      expect({ key, status: res.status, body: res.body }).toEqual({ key, status: 400, body: errorBody(400, 'invalid_request') });
      expect(res.body.message).toMatch(/Idempotency-Key must be sent once/);
    }
    // Sent twice: the two values arrive joined, and are refused rather than one of them picked.
    expect((await issue(token, [sfString(randomUUID()), sfString(randomUUID())])).status).toBe(400);
    // 255 characters is the most.
    expect((await issue(token, sfString('k'.repeat(255)))).status).toBe(201);
    expect(await madeFor(user.id, token)).toBe(1);
  });

  it('after the window (24 h) the key is forgotten: a new token, and the retention job deletes what was kept', async () => {
    const { user, token } = await caller();
    const key = sfString(randomUUID());
    const first = await issue(token, key);
    clock.advanceSeconds(23 * 3600);
    expect((await issue(token, key)).body.accessToken).toBe(first.body.accessToken);
    clock.advanceSeconds(3600 + 1);
    const later = await issue(token, key);
    expect(later.status).toBe(201);
    expect(later.body.accessToken).not.toBe(first.body.accessToken);
    expect(await madeFor(user.id, token)).toBe(2);

    const other = await caller();
    await issue(other.token, sfString(randomUUID()));
    clock.advanceSeconds(24 * 3600 + 1);
    await api.app.get(RetentionService).purge();
    expect(await idempotencyKeysOf(api, [user.id, other.user.id])).toEqual([]);
  });
});

/**
 * Issue #32, item 5: an Approve presented again by the browser that made it, after it went through
 * (a retry, a reload, a second click), answers the approved page, not 409 "already used"; anyone
 * else, and the other decision, are still refused.
 */
describe('the device approval page, its form sent again', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api.close());

  /** A person signed up in a cookie-keeping browser, on the approval page of `userCode`: the form's fields. */
  async function browserOn(userCode: string) {
    const { web, fields } = await onApprovalPage(api, userCode, 'Approver');
    return {
      approve: () => web.send('POST', '/device/approve', fields),
      deny: () => web.send('POST', '/device/deny', fields),
    };
  }

  const status = (html: string) => /role="status">([^<]*)</.exec(html)?.[1];
  const decisionEvents = async (userCode: string) => {
    const [login] = await deviceLogins(api, { userCode });
    const events = await authEvents(api, { typePrefix: 'device.', detail: { deviceLoginId: login.id } });
    return events.map((event) => event.type).filter((type) => type === 'device.approve' || type === 'device.deny');
  };

  it('Approve again by the same person: the approved page (also once the terminal has its token); another person, or Deny, is refused', async () => {
    const login = await startDeviceLogin(api);
    const approver = await browserOn(login.userCode);
    const someoneElse = await browserOn(login.userCode);

    const first = await approver.approve();
    expect(first.status).toBe(200);
    expect(status(first.text)).toBe('You approved the sign-in. You can close this page and return to your terminal.');
    const again = await approver.approve();
    expect(again.status).toBe(200);
    expect(status(again.text)).toBe('You approved this sign-in: your approval had already gone through. You can close this page and return to your terminal.');

    // The terminal takes its token; the approval is still this person's.
    expect((await poll(api, login.deviceCode)).body.status).toBe('authorized');
    const afterRedeemed = await approver.approve();
    expect(afterRedeemed.status).toBe(200);
    expect(status(afterRedeemed.text)).toMatch(/^You approved this sign-in/);

    const other = await someoneElse.approve();
    expect(other.status).toBe(409);
    expect(other.text).toContain('This code was already used');
    const changedMind = await approver.deny();
    expect(changedMind.status).toBe(409);
    expect(changedMind.text).toContain('This code was already used');

    // Decided once, audited once.
    expect(await decisionEvents(login.userCode)).toEqual(['device.approve']);
    expect((await poll(api, login.deviceCode)).body.status).toBe('authorized');
  });

  it('Deny again by the same person: the denied page; an Approve after it is refused', async () => {
    const login = await startDeviceLogin(api);
    const person = await browserOn(login.userCode);
    expect((await person.deny()).status).toBe(200);
    const again = await person.deny();
    expect(again.status).toBe(200);
    expect(status(again.text)).toBe('You denied this sign-in: your answer had already gone through. Nothing was signed in to Prospect CLI. You can close this page.');
    expect((await person.approve()).status).toBe(409);
    expect(await decisionEvents(login.userCode)).toEqual(['device.deny']);
    expect((await poll(api, login.deviceCode)).body).toEqual({ status: 'denied' });
  });
});
