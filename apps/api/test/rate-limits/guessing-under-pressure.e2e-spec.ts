import { ROUTES } from '@prospect/contract';
import { DeviceApprovalService } from '../../src/device-login/device-approval.service.js';
import { DeviceLoginService } from '../../src/device-login/device-login.service.js';
import { USER_CODE_TRIES_PER_MINUTE } from '../../src/rate-limits/rate-limits.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { authEvents, countAuthEvents, createUser, forgetRateLimits, poll, startDeviceLogin } from '../support/fixtures.js';
import { errorBody, get, post, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';

/** How many answers had each status: compared whole, so that a failure shows every status there was. */
const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {});
import { signIn, signInAs, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const WRONG_CODE = 'BCDF-GHJK';

/** Issue #19: every limit on a guessable value holds when many requests come at once. */
describe('guessing under pressure', () => {
  let api: TestApp;
  beforeAll(async () => {
    // 500 requests at once queue for a pool of 4: on a busy machine the last would outlive the
    // default 5 s database budget and answer 503 (as it should), which is not what these tests count.
    api = await startTestApp({ env: { SIGNIN_PER_IP_PER_HOUR: '20', DATABASE_TIMEOUT_MS: '30000' } });
  });
  afterAll(() => api.close());

  const countEvents = (type: string, userId?: string) => countAuthEvents(api, { type, userId });
  /** Each test starts with no counters: they are keyed by the same address (127.0.0.1) throughout. */
  beforeEach(() => forgetRateLimits(api));

  /** A signed-in person's browser with the approval page's CSRF token. */
  const approver = async () => {
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    const csrf = web.csrfFrom((await web.send('GET', '/device')).text);
    return { user, web, csrf };
  };

  describe('wrong user codes', () => {
    it('500 parallel wrong codes on Approve look up no more than the limit, and the real code sent meanwhile is refused, not approved', async () => {
      const { user, web, csrf } = await approver();
      const real = await api.app.get(DeviceLoginService).start({ clientName: 'victim CLI', hostname: 'victim' }, '10.0.0.9');
      let firstRefusal!: () => void;
      const refused = new Promise<void>((resolve) => (firstRefusal = resolve));
      const guesses = Array.from({ length: 500 }, () =>
        web.send('POST', '/device/approve', { _csrf: csrf, user_code: WRONG_CODE }).then((res) => {
          if (res.status === 429) firstRefusal();
          return res.status;
        }),
      );
      // The limit is used up once any guess is refused: the real code, sent while the rest are in flight, must wait too.
      await refused;
      const realTry = await web.send('POST', '/device/approve', { _csrf: csrf, user_code: real.userCode });
      const statuses = await Promise.all(guesses);

      expect(realTry.status).toBe(429);
      expect(tally(statuses)).toEqual({ 404: USER_CODE_TRIES_PER_MINUTE, 429: 500 - USER_CODE_TRIES_PER_MINUTE });
      expect(await countEvents('web.code_failed', user.id)).toBe(USER_CODE_TRIES_PER_MINUTE);
      expect(await countEvents('device.approve', user.id)).toBe(0);
      expect((await poll(api, real.deviceCode)).body).toEqual({ status: 'pending' });
    });

    it('counts the lookup page the same way, with a Retry-After within the minute', async () => {
      const { user, web } = await approver();
      const statuses = await Promise.all(Array.from({ length: 100 }, () => web.send('GET', `/device?user_code=${WRONG_CODE}`)));
      expect(tally(statuses.map((r) => r.status))).toEqual({ 404: USER_CODE_TRIES_PER_MINUTE, 429: 100 - USER_CODE_TRIES_PER_MINUTE });
      const limited = statuses.find((r) => r.status === 429)!;
      expect(limited.text).toContain('Too many wrong codes');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(await countEvents('web.code_failed', user.id)).toBe(USER_CODE_TRIES_PER_MINUTE);
    });

    it('are limited per address across people: a second account on the same address gets no new tries', async () => {
      const first = await approver();
      await Promise.all(Array.from({ length: 20 }, () => first.web.send('POST', '/device/deny', { _csrf: first.csrf, user_code: WRONG_CODE })));
      const second = await approver();
      expect((await second.web.send('GET', `/device?user_code=${WRONG_CODE}`)).status).toBe(429);
    });

    it('never limit a person approving their own logins: a right code gives its point back', async () => {
      const { user, web, csrf } = await approver();
      for (let i = 0; i < 3 * USER_CODE_TRIES_PER_MINUTE; i++) {
        const login = await startDeviceLogin(api);
        expect((await web.send('GET', `/device?user_code=${login.userCode}`)).status).toBe(200);
        expect((await web.send('POST', '/device/approve', { _csrf: csrf, user_code: login.userCode })).status).toBe(200);
      }
      expect(await countEvents('device.approve', user.id)).toBe(3 * USER_CODE_TRIES_PER_MINUTE);
    });
  });

  describe('sign-in: no lockout of the rightful owner (device cookies)', () => {
    /** The owner's browser: signed in once (so it holds a device cookie for the account), then signed out. */
    const ownersBrowser = async (email: string) => {
      const web = webClient(api);
      expect((await signIn(web, email, PASSWORD)).status).toBe(303);
      const page = await web.send('GET', '/settings/tokens');
      expect((await web.send('POST', '/logout', { _csrf: web.csrfFrom(page.text) })).status).toBe(303);
      return web;
    };

    it('lets the owner sign in from a browser that signed in before while an attacker hammers the account and uses up the address', async () => {
      const owner = await createUser(api);
      const browser = await ownersBrowser(owner.email);

      const attacker = webClient(api);
      const form = await attacker.send('GET', '/login');
      const attempts = await Promise.all(
        Array.from({ length: 200 }, () => attacker.send('POST', '/login', { _csrf: attacker.csrfFrom(form.text), email: owner.email, password: 'wrong guess' })),
      );
      // Counted before the password is checked: no more than 5 guesses reach it, however many come at once.
      expect(attempts.filter((r) => r.status === 401)).toHaveLength(5);
      expect(attempts.filter((r) => r.status === 429)).toHaveLength(195);
      // A browser that never signed in to the account is blocked, even with the right password…
      expect((await signIn(webClient(api), owner.email, PASSWORD)).status).toBe(429);
      // …and the 200 attempts have used up the address's failed sign-ins (SIGNIN_PER_IP_PER_HOUR) for every account.
      expect((await signIn(webClient(api), `fresh-${Date.now()}@example.com`, 'x')).status).toBe(429);

      // The owner's browser still signs in, with the right password.
      expect((await signIn(browser, owner.email, PASSWORD)).status).toBe(303);
      expect(await countEvents('web.login', owner.id)).toBe(2);
    });

    it('limits failures per device cookie: a stolen or shared cookie gets 5 tries, then waits', async () => {
      const owner = await createUser(api);
      const browser = await ownersBrowser(owner.email);
      const form = await browser.send('GET', '/login');
      const attempts = await Promise.all(
        Array.from({ length: 50 }, () => browser.send('POST', '/login', { _csrf: browser.csrfFrom(form.text), email: owner.email, password: 'wrong guess' })),
      );
      expect(attempts.filter((r) => r.status === 401)).toHaveLength(5);
      expect(attempts.filter((r) => r.status === 429)).toHaveLength(45);
      // Those were the cookie's failures, not the account's: another browser that knows the password is not blocked.
      expect((await signIn(webClient(api), owner.email, PASSWORD)).status).toBe(303);
    });

    it("trusts a device cookie only for its own account, and never a forged one", async () => {
      const [victim, other] = [await createUser(api), await createUser(api)];
      const otherBrowser = await ownersBrowser(other.email);
      const form = await otherBrowser.send('GET', '/login');
      const attempts = await Promise.all(
        Array.from({ length: 10 }, () => otherBrowser.send('POST', '/login', { _csrf: otherBrowser.csrfFrom(form.text), email: victim.email, password: 'wrong guess' })),
      );
      // A cookie for another account counts as none: these are the victim account's failures.
      expect(attempts.filter((r) => r.status === 401)).toHaveLength(5);
      expect((await signIn(webClient(api), victim.email, PASSWORD)).status).toBe(429);

      const forged = webClient(api);
      const forgedForm = await forged.send('GET', '/login');
      const cookie = { Cookie: `prospect_device=${Buffer.alloc(64, 7).toString('base64url')}` };
      expect((await forged.send('POST', '/login', { _csrf: forged.csrfFrom(forgedForm.text), email: victim.email, password: PASSWORD }, cookie)).status).toBe(429);
    });

    it('an admin clears an account block with the JSON API; others may not; bad input is a 400', async () => {
      const owner = await createUser(api);
      const admin = await createUser(api, { role: 'admin' });
      const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', label: 'ops', ip: null, ttlSeconds: 3600 })).accessToken;
      const userToken = (await api.app.get(TokensService).issue({ userId: owner.id, origin: 'direct', label: 'me', ip: null, ttlSeconds: 3600 })).accessToken;
      const attacker = webClient(api);
      for (let i = 0; i < 5; i++) await signIn(attacker, owner.email, 'wrong guess');
      expect((await signIn(webClient(api), owner.email, PASSWORD)).status).toBe(429);

      expect((await post(api, ROUTES.adminClearSignInBlock, { email: owner.email }, userToken)).body).toEqual(errorBody(403, 'forbidden'));
      expect((await post(api, ROUTES.adminClearSignInBlock, { email: owner.email })).status).toBe(401);
      for (const body of [{}, { email: 42 }, { email: owner.email, extra: 1 }, { email: 'x'.repeat(400) }]) {
        expect((await post(api, ROUTES.adminClearSignInBlock, body, adminToken)).body).toEqual(errorBody(400, 'invalid_request'));
      }
      const cleared = await post(api, ROUTES.adminClearSignInBlock, { email: owner.email.toUpperCase() }, adminToken);
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({ cleared: true });
      expect((await signIn(webClient(api), owner.email, PASSWORD)).status).toBe(303);
      expect((await post(api, ROUTES.adminClearSignInBlock, { email: owner.email }, adminToken)).body).toEqual({ cleared: false });
      const [event] = (await authEvents(api, { type: 'admin.clear_sign_in_block' })).map(({ user_id, detail }) => ({ user_id, detail }));
      expect(event).toEqual({ user_id: admin.id, detail: { accountId: owner.id, cleared: true } });
    });
  });

  describe('text a person reads: no control characters, no bidi controls', () => {
    const HOSTILE = {
      escape: 'laptop\u001b[2J',
      bell: 'laptop\u0007',
      newline: 'laptop\r\nApproved: yes',
      osc: 'laptop\u001b]0;title\u0007',
      'right-to-left override': 'evil\u202Egnp.exe',
      'isolate': 'host\u2066x\u2069',
    };

    it.each(Object.entries(HOSTILE))('refuses a %s in clientName, hostname and token labels (400 naming the field, nothing written)', async (_, text) => {
      const before = await countEvents('device.start');
      for (const field of ['clientName', 'hostname']) {
        const res = await post(api, ROUTES.deviceStart, { [field]: text });
        expect(res.body).toEqual(errorBody(400, 'invalid_request'));
        expect(res.body.message).toContain(field);
        expect(res.body.message).toContain('bidirectional');
      }
      expect(await countEvents('device.start')).toBe(before);

      const user = await createUser(api);
      const token = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct', label: null, ip: null, ttlSeconds: 3600 })).accessToken;
      const issued = await post(api, ROUTES.issueToken, { label: text }, token);
      expect(issued.body).toEqual(errorBody(400, 'invalid_request'));
      expect(issued.body.message).toContain('label');
      expect(await countEvents('token.issue', user.id)).toBe(1);
    });

    it('keeps right-to-left names that use the invisible direction marks', async () => {
      const res = await post(api, ROUTES.deviceStart, { clientName: 'עברית\u200f CLI', hostname: 'host' });
      expect(res.status).toBe(200);
    });

    it('refuses them in the names and addresses of sign-up, the tokens page and OAuth clients', async () => {
      const web = webClient(api);
      const form = await web.send('GET', '/signup');
      const signup = (name: string, email: string) =>
        web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name, email, password: PASSWORD });
      expect((await signup('Mallory\u202E', `m${Date.now()}@example.com`)).text).toContain('cannot contain control characters, invisible characters or bidirectional text controls');
      const badEmail = await signup('Mallory', `m\u202E${Date.now()}@example.com`);
      expect(badEmail.status).toBe(400);
      expect(badEmail.text).toContain('Please enter a valid e-mail address');

      const user = await createUser(api);
      const owner = await signInAs(api, user.email, PASSWORD);
      const page = await owner.send('GET', '/settings/tokens');
      const created = await owner.send('POST', '/settings/tokens', { _csrf: owner.csrfFrom(page.text), label: 'ci\u2067', expires_in_days: '30' });
      expect(created.status).toBe(400);
      expect(created.text).toContain('A label cannot contain control characters, invisible characters or bidirectional text controls');

      const admin = await createUser(api, { role: 'admin' });
      const adminWeb = await signInAs(api, admin.email, PASSWORD);
      const clients = await adminWeb.send('GET', '/admin/clients');
      const registered = await adminWeb.send('POST', '/admin/clients', { _csrf: adminWeb.csrfFrom(clients.text), id: 'acme-sync', name: 'Acme\u202ESync' });
      expect(registered.status).toBe(400);
      expect(registered.text).toContain('cannot contain control characters, invisible characters or bidirectional text controls');
      expect(await countEvents('oauth.client_register')).toBe(0);
    });
  });
});

/** Issue #19: every state transition of device login and token issuance is one statement, so racing requests agree. */
describe('state transitions under concurrency', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ env: { DEVICE_START_PER_IP_PER_MINUTE: '30', SIGNUP_PER_IP_PER_HOUR: '3' } });
  });
  afterAll(() => api.close());

  const devices = () => api.app.get(DeviceLoginService);
  const approvals = () => api.app.get(DeviceApprovalService);

  it('device-login starts: 100 at once from one address, exactly the limit succeed', async () => {
    const statuses = await Promise.all(Array.from({ length: 100 }, async () => (await post(api, ROUTES.deviceStart, {})).status));
    expect(tally(statuses)).toEqual({ 200: 30, 429: 70 });
    expect(await deviceLogins(api)).toHaveLength(30);
  });

  it('sign-ups: 20 at once from one address, exactly the limit create an account', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const web = webClient(api);
        const form = await web.send('GET', '/signup');
        return (await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'N', email: `racer${i}-${Date.now()}@example.com`, password: PASSWORD })).status;
      }),
    );
    expect(tally(statuses)).toEqual({ 303: 3, 429: 17 });
  });

  const eventsOf = async (userCode: string) => {
    const [login] = await deviceLogins(api, { userCode });
    const events = await authEvents(api, { typePrefix: 'device.', detail: { deviceLoginId: login.id } });
    return { status: login.status, events: events.map((e) => e.type).filter((type) => type !== 'device.start') };
  };

  // Each person in a browser of their own (an address each): the race is between decisions, not with the wrong-code limit.
  it('approve and deny racing on one login from ten people: exactly one decision, by one person, audited once', async () => {
    const login = await devices().start({}, '10.0.0.1');
    const people = await Promise.all(Array.from({ length: 10 }, () => createUser(api)));
    const outcomes = await Promise.allSettled(people.map((p, i) => approvals().decideFor({ userId: p.id, ip: `192.0.2.${i + 1}`, credentialEpoch: 0, amr: ['pwd'], secondFactor: false }, login.userCode, i % 2 ? 'approve' : 'deny')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const { status, events } = await eventsOf(login.userCode);
    expect(events).toEqual([status === 'approved' ? 'device.approve' : 'device.deny']);
  });

  it('a cancel racing the approvals always ends the login: no token is ever issued for it', async () => {
    const login = await devices().start({}, '10.0.0.1');
    const people = await Promise.all(Array.from({ length: 5 }, () => createUser(api)));
    await Promise.allSettled([...people.map((p, i) => approvals().decideFor({ userId: p.id, ip: `192.0.2.${i + 1}`, credentialEpoch: 0, amr: ['pwd'], secondFactor: false }, login.userCode, 'approve')), devices().cancel(login.deviceCode, null)]);
    const { status, events } = await eventsOf(login.userCode);
    expect(status).toBe('cancelled');
    // Cancelled before any approval, or after the one approval that won.
    expect([['device.cancel'], ['device.approve', 'device.cancel']]).toContainEqual(events);
    expect((await poll(api, login.deviceCode)).body).toEqual({ status: 'denied' });
    const [cancelled] = await deviceLogins(api, { userCode: login.userCode });
    expect(await accessTokens(api, { grantId: cancelled.id })).toHaveLength(0);
  });

  it('token issuance: 50 at once are 50 distinct tokens, each with its audit event; 50 logouts of one token revoke it once', async () => {
    const user = await createUser(api);
    const tokens = api.app.get(TokensService);
    const caller = (await tokens.issue({ userId: user.id, origin: 'direct', label: null, ip: null, ttlSeconds: 3600 })).accessToken;
    const issued = await Promise.all(Array.from({ length: 50 }, () => post(api, ROUTES.issueToken, { label: 'parallel' }, caller)));
    expect(issued.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(issued.map((r) => r.body.accessToken)).size).toBe(50);
    expect(await countAuthEvents(api, { type: 'token.issue', userId: user.id })).toBe(51);

    const target = issued[0]!.body.accessToken as string;
    const logouts = await Promise.all(Array.from({ length: 50 }, () => request(api, 'POST', ROUTES.logout, { token: target })));
    expect(logouts.filter((r) => r.status === 204).length).toBeGreaterThanOrEqual(1);
    expect(logouts.every((r) => r.status === 204 || r.status === 401)).toBe(true);
    expect(await countAuthEvents(api, { type: 'token.revoke', userId: user.id })).toBe(1);
    expect((await get(api, ROUTES.me, target)).status).toBe(401);
  });
});
