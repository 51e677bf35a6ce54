import { CLI_CLIENT_ID, DevicePollResponseSchema, DeviceStartResponseSchema, OAUTH_ROUTES, ROUTES, USER_CODE_ALPHABET } from '@prospect/contract';
import { UndecidableDeviceLoginError } from '../../src/device-login/device-approval.service.js';
import { REPLY_WINDOW_SECONDS } from '../../src/device-login/device-login.service.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { FakeClock } from '../support/fake-clock.js';
import { approvalPage, approve, countAuthEvents, createUser, deny, poll, startDeviceLogin } from '../support/fixtures.js';
import { client, errorBody, get, post, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';

describe('device login (seed §3.1)', () => {
  const clock = new FakeClock();
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api.close());

  describe('POST /api/cli/auth/device/start', () => {
    it('returns the codes, the verification URL carrying the user code, the interval and the lifetime', async () => {
      const res = await post(api, ROUTES.deviceStart, { clientName: 'prospect CLI', hostname: 'laptop' });
      expect(res.status).toBe(200);
      const body = DeviceStartResponseSchema.parse(res.body);
      expect(Object.keys(res.body).sort()).toEqual(['deviceCode', 'expiresInSeconds', 'intervalSeconds', 'userCode', 'verificationUrl']);
      expect(body.userCode).toMatch(new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`));
      expect(body.verificationUrl).toBe(`${api.baseUrl}/device?user_code=${body.userCode}`);
      expect(body.deviceCode).toMatch(/^prsd_[A-Za-z0-9_-]{43}$/);
      expect(body).toMatchObject({ intervalSeconds: 5, expiresInSeconds: 600 });
    });

    it('without PUBLIC_URL, sends people to the address the client used (127.0.0.1 or localhost), never to a malformed Host', async () => {
      const port = new URL(api.baseUrl).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
        const res = await request(api, 'POST', ROUTES.deviceStart, { json: {}, headers: { host } });
        expect(res.body.verificationUrl).toBe(`http://${host}/device?user_code=${res.body.userCode}`);
      }
      for (const host of ['evil.example/path', 'a b', `x@127.0.0.1:${port}`]) {
        const res = await request(api, 'POST', ROUTES.deviceStart, { json: {}, headers: { host } });
        expect(res.body.verificationUrl).toBe(`${api.config.publicUrl}/device?user_code=${res.body.userCode}`);
      }
      const oauth = await client(api).post(OAUTH_ROUTES.deviceAuthorization).set('host', `localhost:${port}`).type('form').send({ client_id: CLI_CLIENT_ID });
      expect(oauth.body).toMatchObject({ verification_uri: `http://localhost:${port}/device`, verification_uri_complete: expect.stringMatching(`^http://localhost:${port}/device\\?user_code=`) });

      // With PUBLIC_URL set, it is the address, whatever Host a request carries.
      const saved = { publicUrl: api.config.publicUrl, publicUrlSet: api.config.publicUrlSet };
      Object.assign(api.config, { publicUrl: 'https://id.example.com', publicUrlSet: true });
      try {
        const res = await request(api, 'POST', ROUTES.deviceStart, { json: {}, headers: { host: `localhost:${port}` } });
        expect(res.body.verificationUrl).toBe(`https://id.example.com/device?user_code=${res.body.userCode}`);
      } finally {
        Object.assign(api.config, saved);
      }
    });

    it('accepts no body at all', async () => {
      await client(api).post(ROUTES.deviceStart).expect(200);
    });

    it('gives every login its own codes', async () => {
      const starts = await Promise.all(Array.from({ length: 20 }, () => startDeviceLogin(api)));
      expect(new Set(starts.map((s) => s.deviceCode)).size).toBe(20);
      expect(new Set(starts.map((s) => s.userCode)).size).toBe(20);
    });
  });

  describe('POST /api/cli/auth/device/poll', () => {
    it('is pending until the person approves, then authorized with a token for that person', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'pending' });

      await approve(api, start.userCode, user);
      clock.advanceSeconds(5);
      const res = await poll(api, start.deviceCode);
      expect(res.status).toBe(200);
      const body = DevicePollResponseSchema.parse(res.body);
      expect(body).toEqual({
        status: 'authorized',
        accessToken: expect.stringMatching(/^prs_[A-Za-z0-9_-]{43}$/),
        refreshToken: expect.stringMatching(/^prsr_[A-Za-z0-9_-]{43}$/),
        expiresAt: new Date(clock.now().getTime() + 3600 * 1000).toISOString(),
        user: { id: user.id, email: user.email, name: user.name },
      });

      const me = await get(api, ROUTES.me, res.body.accessToken);
      expect(me.body.user.id).toBe(user.id);
    });

    it('is denied when the person refuses', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await deny(api, start.userCode, user);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
      clock.advanceSeconds(5);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
    });

    it('is denied once the login has expired, approved or not', async () => {
      const user = await createUser(api);
      const pending = await startDeviceLogin(api);
      const approved = await startDeviceLogin(api);
      await approve(api, approved.userCode, user);
      clock.advanceSeconds(600);
      expect((await poll(api, pending.deviceCode)).body).toEqual({ status: 'denied' });
      expect((await poll(api, approved.deviceCode)).body).toEqual({ status: 'denied' });
    });

    it('is cancelled by the terminal: denied to its polls, no longer approvable, idempotent, audited', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      for (let i = 0; i < 2; i++) expect((await post(api, ROUTES.deviceCancel, { deviceCode: start.deviceCode })).status).toBe(204);
      expect((await post(api, ROUTES.deviceCancel, { deviceCode: `prsd_${'x'.repeat(43)}` })).status).toBe(204); // unknown: the same answer
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
      await expect(approve(api, start.userCode, user)).rejects.toMatchObject({ reason: 'cancelled' });
      expect(await countAuthEvents(api, { type: 'device.cancel' })).toBe(1);
    });

    it('answers a poll retried after a lost answer with the same token, for a minute', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      const first = await poll(api, start.deviceCode);
      expect(first.body.status).toBe('authorized');
      clock.advanceSeconds(REPLY_WINDOW_SECONDS - 1);
      const again = await poll(api, start.deviceCode);
      expect(again.body).toEqual(first.body);
      expect(await countAuthEvents(api, { type: 'token.issue', userId: user.id, detail: { origin: 'device' } })).toBe(1);
    });

    it('erases the sealed answer when its window ends', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
      // sql-on-purpose: whether the sealed answer is still stored (a sealed column)
      const sealed = () => api.dataSource.query(`SELECT reply_sealed FROM device_logins WHERE user_code = $1`, [start.userCode.replace('-', '')]);
      expect((await sealed())[0].reply_sealed).not.toBeNull();
      clock.advanceSeconds(REPLY_WINDOW_SECONDS);
      await api.app.get(RetentionService).eraseSealedAnswers();
      expect((await sealed())[0].reply_sealed).toBeNull();
    });

    it('hands nothing out again once the token was revoked, even within the window', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      const first = await poll(api, start.deviceCode);
      expect((await post(api, ROUTES.logout, undefined, first.body.accessToken)).status).toBe(204);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
    });

    it('redeems a device code once: polls after the reply window are denied and revoke the token it issued', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      const first = await poll(api, start.deviceCode);
      expect(first.body.status).toBe('authorized');
      expect((await get(api, ROUTES.me, first.body.accessToken)).status).toBe(200);

      clock.advanceSeconds(REPLY_WINDOW_SECONDS);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
      const me = await get(api, ROUTES.me, first.body.accessToken);
      expect(me.status).toBe(401);
      expect(me.headers.get('www-authenticate')).toContain('error_description="token revoked"');
    });

    it('issues exactly one token when 50 polls race, and answers each of them with it', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      const results = await Promise.all(Array.from({ length: 50 }, () => poll(api, start.deviceCode)));
      expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
      expect(new Set(results.map((r) => r.body.accessToken)).size).toBe(1);
      expect(results.every((r) => r.body.status === 'authorized')).toBe(true);
      const [login] = await deviceLogins(api, { userCode: start.userCode });
      expect(await accessTokens(api, { grantId: login.id })).toHaveLength(1);
    });

    it('answers slow_down (429, Retry-After) to polls faster than the interval, forgiving 1 s of jitter', async () => {
      const start = await startDeviceLogin(api);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'pending' }); // the first poll is never throttled

      clock.advanceSeconds(2);
      const tooFast = await poll(api, start.deviceCode);
      expect(tooFast.status).toBe(429);
      expect(tooFast.body).toEqual(errorBody(429, 'slow_down'));
      expect(tooFast.headers.get('retry-after')).toBe('5');

      // A throttled poll does not restart the clock: 4 s after the last answered poll is within the jitter.
      clock.advanceSeconds(2);
      expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'pending' });
      clock.advanceSeconds(3.9);
      expect((await poll(api, start.deviceCode)).status).toBe(429);
      clock.advanceSeconds(1.1);
      expect((await poll(api, start.deviceCode)).status).toBe(200);
    });

    it.each([
      ['an unknown device code', { deviceCode: `prsd_${'A'.repeat(43)}` }],
      ['a malformed device code', { deviceCode: 'not-a-code' }],
      ['a user code in place of the device code', { deviceCode: 'BCDF-GHJK' }],
    ])('refuses %s with 400', async (_, body) => {
      const res = await post(api, ROUTES.devicePoll, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorBody(400, 'invalid_request'));
    });
  });

  describe('deciding (the approval page calls these)', () => {
    it('binds the login to the person who approved it, whoever started it', async () => {
      const approver = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, approver);
      const res = await poll(api, start.deviceCode);
      expect(res.body.user.id).toBe(approver.id);
    });

    it('accepts the code in any letter case, with or without the hyphen or spaces', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      const typed = ` ${start.userCode.replace('-', ' ').toLowerCase()} `;
      await expect(approvalPage(api, typed, user)).resolves.toMatchObject({ userCode: start.userCode, clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
      await approve(api, typed, user);
      expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
    });

    it('refuses to decide a login twice, either way', async () => {
      const user = await createUser(api);
      const other = await createUser(api);
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, user);
      await expect(approve(api, start.userCode, other)).rejects.toMatchObject({ reason: 'decided' });
      await expect(deny(api, start.userCode, other)).rejects.toMatchObject({ reason: 'decided' });
      expect((await poll(api, start.deviceCode)).body.user.id).toBe(user.id);
    });

    it('refuses to decide an expired login or an unknown code', async () => {
      const user = await createUser(api);
      const start = await startDeviceLogin(api);
      clock.advanceSeconds(601);
      await expect(approve(api, start.userCode, user)).rejects.toEqual(new UndecidableDeviceLoginError('expired'));
      await expect(approve(api, 'BCDF-GHJK', user)).rejects.toMatchObject({ reason: 'unknown' });
      await expect(approve(api, 'not a code', user)).rejects.toMatchObject({ reason: 'unknown' });
    });
  });
});

describe('device login turned off (DEVICE_LOGIN_ENABLED=false)', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ env: { DEVICE_LOGIN_ENABLED: 'false' } });
  });
  afterAll(() => api.close());

  it('answers 404 on start and poll, pointing to the browser login and token login, whatever the body', async () => {
    for (const [path, body] of [
      [ROUTES.deviceStart, {}],
      [ROUTES.devicePoll, { deviceCode: 'x' }],
      [ROUTES.devicePoll, { nonsense: true }],
    ] as const) {
      const res = await post(api, path, body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(errorBody(404, 'not_found'));
      expect(res.body.message).toContain('/settings/tokens');
      expect(res.body.message).toContain('prospect auth:login --web');
    }
  });
});
