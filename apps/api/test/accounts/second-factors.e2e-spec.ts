import { Secret, TOTP } from 'otpauth';
import { PasskeysService } from '../../src/accounts/passkeys.service.js';
import { Mailer } from '../../src/mail/mailer.js';
import { countPasskeys, countRecoveryCodes } from '../support/account-fixtures.js';
import { FakeClock } from '../support/fake-clock.js';
import { authorizedPoll, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { ROUTES } from '@prospect/contract';
import type { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { postFrom, signIn, signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** An authenticator app's code for `key` (as the page shows it) at the fake clock's time. */
const codeFor = (key: string, clock: FakeClock) => new TOTP({ secret: Secret.fromBase32(key.replace(/\s/g, '')), period: 30 }).generate({ timestamp: clock.now().getTime() });

/** TOTP and recovery codes for the web sign-in, sudo mode, and the security log. */
describe('second factors', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail({ clock })));
  afterAll(() => api?.close());


  /** Sets up the app for `email` in a signed-in browser; the key and the recovery codes. */
  async function enrol(web: WebClient): Promise<{ key: string; codes: string[] }> {
    const begun = await postFrom(web, '/settings/security', '/settings/security/totp');
    expect(begun.status).toBe(200);
    const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
    expect(begun.text).toContain('src="data:image/png;base64,');
    const wrong = await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: '000000' === codeFor(key, clock) ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    const done = await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: codeFor(key, clock) });
    expect(done.status).toBe(200);
    const codes = [...done.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
    expect(codes).toHaveLength(10);
    return { key, codes };
  }

  /** The password step; the browser, half signed in. */
  async function passwordStep(email: string) {
    const web = webClient(api);
    const res = await signIn(web, email, PASSWORD, { next: '/settings/tokens' });
    expect(res).toMatchObject({ status: 303, location: '/login/code' });
    return web;
  }
  const sendCode = async (web: WebClient, code: string) => postFrom(web, '/login/code', '/login/code', { code });

  it('sets up an app: the key is sealed at rest, the codes hashed, and every sign-in then asks for a code, each accepted once', async () => {
    const user = await createUser(api);
    const { key, codes } = await enrol(await signInAs(api, user.email, PASSWORD));
    // sql-on-purpose: the app's key is stored only sealed
    const [factor] = await api.dataSource.query(`SELECT key_sealed FROM totp_factors WHERE user_id = $1`, [user.id]);
    expect(factor.key_sealed.toString('latin1')).not.toContain(key.replace(/\s/g, ''));
    // sql-on-purpose: the recovery codes are stored only as their hashes
    const stored = JSON.stringify(await api.dataSource.query(`SELECT encode(code_hash, 'escape') AS h FROM recovery_codes WHERE user_id = $1`, [user.id]));
    for (const code of codes) expect(stored).not.toContain(code);

    const web = await passwordStep(user.email);
    expect((await web.send('GET', '/settings/tokens')).status).toBe(303); // not signed in yet
    const replayed = await sendCode(web, codeFor(key, clock)); // the code that confirmed the set-up, same 30 s
    expect(replayed.status).toBe(401);
    clock.advanceSeconds(30);
    const code = codeFor(key, clock);
    expect(await sendCode(web, code)).toMatchObject({ status: 303, location: '/settings/tokens' });
    expect((await web.send('GET', '/settings/tokens')).status).toBe(200);

    // The same code in another sign-in, at once: refused.
    expect((await sendCode(await passwordStep(user.email), code)).status).toBe(401);
    // One step of drift either way is fine.
    clock.advanceSeconds(30);
    const early = new TOTP({ secret: Secret.fromBase32(key.replace(/\s/g, '')), period: 30 }).generate({ timestamp: clock.now().getTime() + 30_000 });
    expect((await sendCode(await passwordStep(user.email), early)).status).toBe(303);
  });

  it('takes a recovery code once, mails the owner, and lists it all in the security log', async () => {
    const user = await createUser(api);
    const { codes } = await enrol(await signInAs(api, user.email, PASSWORD));
    const web = await passwordStep(user.email);
    expect(await sendCode(web, codes[3]!.toUpperCase().replace('-', ' '))).toMatchObject({ status: 303 });
    expect((await sendCode(await passwordStep(user.email), codes[3]!)).status).toBe(401);
    await api.app.get(Mailer).settled();
    expect(smtp.to(user.email).map((m) => m.subject)).toContain('A Prospect recovery code was used');

    const log = await web.send('GET', '/settings/security');
    expect(log.text).toContain('9 of 10 recovery codes are left');
    for (const line of ['Signed in', 'Set up an authenticator app', 'Used a recovery code', 'Failed sign-in', 'wrong second-factor code', 'with a recovery code']) {
      expect(log.text).toContain(line);
    }
    const fresh = await postFrom(web, '/settings/security', '/settings/security/recovery-codes');
    expect(fresh.status).toBe(200);
    expect((await sendCode(await passwordStep(user.email), codes[4]!)).status).toBe(401); // the old ones are gone
  });

  it('counts wrong codes per account, however many arrive at once; the half-signed-in state lasts minutes', async () => {
    const user = await createUser(api);
    const { key } = await enrol(await signInAs(api, user.email, PASSWORD));
    const web = await passwordStep(user.email);
    const page = await web.send('GET', '/login/code');
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => web.send('POST', '/login/code', { _csrf: web.csrfFrom(page.text), code: String(100000 + i) })));
    expect(answers.filter((res) => res.status === 401).length).toBeLessThanOrEqual(5);
    expect(answers.filter((res) => res.status === 429).length).toBeGreaterThanOrEqual(7);
    clock.advanceSeconds(30);
    expect((await sendCode(web, codeFor(key, clock))).status).toBe(429); // even the right one waits

    clock.advanceSeconds(16 * 60);
    const slow = await passwordStep(user.email);
    const form = await slow.send('GET', '/login/code');
    clock.advanceSeconds(6 * 60);
    expect(await slow.send('POST', '/login/code', { _csrf: slow.csrfFrom(form.text), code: codeFor(key, clock) })).toMatchObject({ status: 303, location: '/login?code=expired' });
    expect(await slow.send('GET', '/login/code')).toMatchObject({ status: 303, location: '/login?code=expired' });
    for (const garbage of ['', 'x'.repeat(5000), '12345', 'abcde-fghij-klmno']) {
      const web2 = await passwordStep(user.email);
      expect((await sendCode(web2, garbage)).status).toBeGreaterThanOrEqual(400);
      clock.advanceSeconds(15 * 60); // past the wrong-code block
    }
  });

  it('ending every session of a person ends a half-finished sign-in too', async () => {
    const user = await createUser(api);
    const signedIn = await signInAs(api, user.email, PASSWORD);
    const { key } = await enrol(signedIn);
    const halfway = await passwordStep(user.email);
    expect((await halfway.send('GET', '/login/code')).status).toBe(200);
    expect((await postFrom(signedIn, '/settings/tokens', '/logout/everywhere')).status).toBe(303);
    expect(await halfway.send('GET', '/login/code')).toMatchObject({ status: 303, location: '/login?code=expired' });
    clock.advanceSeconds(30);
    expect((await sendCode(halfway, codeFor(key, clock))).status).toBe(403); // its session, and so its form, are gone
  });

  it('sudo mode: after SUDO_SECONDS, approving asks again in place and keeps the code', async () => {
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    clock.advanceSeconds(2 * 3600 + 1);
    const start = await startDeviceLogin(api);
    const page = await web.send('GET', `/device?user_code=${start.userCode}`);
    expect(page.status).toBe(200);
    const asked = await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(page.text), user_code: start.userCode });
    expect(asked.status).toBe(403);
    expect(asked.text).toContain('Confirm it’s you');
    expect(asked.text).toContain(`name="next" value="/device?user_code&#x3D;${start.userCode}"`);
    expect((await poll(api, start.deviceCode)).body.status).toBe('pending');
    expect((await web.send('POST', '/sudo', { _csrf: web.csrfFrom(asked.text), password: 'wrong', next: `/device?user_code=${start.userCode}` })).status).toBe(401);
    const confirmed = await web.send('POST', '/sudo', { _csrf: web.csrfFrom(asked.text), password: PASSWORD, next: `/device?user_code=${start.userCode}` });
    expect(confirmed).toMatchObject({ status: 303, location: `/device?user_code=${start.userCode}` });
    const again = await web.send('GET', confirmed.location!);
    expect((await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(again.text), user_code: start.userCode })).status).toBe(200);
    expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
    // The tokens page too; and a browser may not mint tokens through the API outside sudo mode.
    clock.advanceSeconds(2 * 3600 + 1);
    expect((await postFrom(web, '/settings/tokens', '/settings/tokens', { label: 'x' })).status).toBe(403);
    const tokensPage = await web.send('GET', '/settings/tokens');
    expect((await web.agent.post('/api/cli/auth/token').set('x-csrf-token', web.csrfFrom(tokensPage.text)).send({})).status).toBe(403);
  });

  it('an admin removes a lost app: the person signs in with the password alone', async () => {
    const admin = await createUser(api, { role: 'admin' });
    const user = await createUser(api);
    await enrol(await signInAs(api, user.email, PASSWORD));
    const adminWeb = await signInAs(api, admin.email, PASSWORD);
    expect((await postFrom(adminWeb, `/admin/users/${user.id}`, `/admin/users/${user.id}/second-factor/remove`)).status).toBe(303);
    await signInAs(api, user.email, PASSWORD); // no code asked
    expect(await countRecoveryCodes(api, user.id)).toBe(0);
  });

  it('a removed app ends the grants approved while it guarded the account; a token made on the tokens page stays', async () => {
    const admin = await createUser(api, { role: 'admin' });
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    await enrol(web);
    const grant = (await authorizedPoll(api, user)).body;
    const direct = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct', label: 'kept' })).accessToken;
    expect((await get(api, ROUTES.me, grant.accessToken)).status).toBe(200);
    const adminWeb = await signInAs(api, admin.email, PASSWORD);
    expect((await postFrom(adminWeb, `/admin/users/${user.id}`, `/admin/users/${user.id}/second-factor/remove`)).status).toBe(303);
    expect((await get(api, ROUTES.me, grant.accessToken)).status).toBe(401);
    expect((await post(api, ROUTES.refresh, { refreshToken: grant.refreshToken })).status).toBe(401);
    expect((await get(api, ROUTES.me, direct)).status).toBe(200);
  });

  it('in a real browser: set up the app with its QR page, then sign in with a code, at phone width', async () => {
    const user = await createUser(api);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await page.goto(`${api.baseUrl}/login?next=%2Fsettings%2Fsecurity`);
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL(/\/settings\/security$/);
      await Promise.all([page.waitForLoadState(), page.getByRole('button', { name: 'Set up an authenticator app' }).click()]);
      const key = (await page.locator('code.totp-key').textContent())!;
      await page.screenshot({ path: `${SCREENSHOTS}security-enrol-phone.png`, fullPage: true });
      await page.getByLabel('Code from the app').fill(codeFor(key, clock));
      await Promise.all([page.waitForLoadState(), page.getByRole('button', { name: 'Turn it on' }).click()]);
      expect(await page.getByRole('list', { name: 'Recovery codes' }).locator('li').count()).toBe(10);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await page.screenshot({ path: `${SCREENSHOTS}security-codes-phone.png`, fullPage: true });

      await page.context().clearCookies();
      clock.advanceSeconds(30);
      await page.goto(`${api.baseUrl}/login`);
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL(/\/login\/code$/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      await page.screenshot({ path: `${SCREENSHOTS}login-code-phone.png`, fullPage: true });
      await page.getByLabel('Code').fill(codeFor(key, clock));
      await Promise.all([page.waitForURL(/\/settings\/tokens$/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      await page.goto(`${api.baseUrl}/settings/security`);
      await page.screenshot({ path: `${SCREENSHOTS}security-phone.png`, fullPage: true });
    } finally {
      await browser.close();
    }
  });

  it('in a real browser: sudo mode asks again on the approval page, and the code survives', async () => {
    const user = await createUser(api);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await page.goto(`${api.baseUrl}/login`);
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL(/\/settings\/tokens$/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      clock.advanceSeconds(2 * 3600 + 1);

      const start = await startDeviceLogin(api);
      await page.goto(`${api.baseUrl}/device?user_code=${start.userCode}`);
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect(page.textContent('main')).resolves.toContain('Confirm it’s you');
      await page.screenshot({ path: `${SCREENSHOTS}sudo-phone.png`, fullPage: true });
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL(new RegExp(`/device\\?user_code=${start.userCode}$`)), page.getByRole('button', { name: 'Confirm' }).click()]);
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect(page.textContent('main')).resolves.toContain('is signed in');
      expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
    } finally {
      await browser.close();
    }
  });

  // Last: a second app in this process takes over passport's process-wide sign-in strategy.
  it('REQUIRE_SECOND_FACTOR: a person without one is led to set it up before anything else', async () => {
    const strict = await startTestApp({ clock, database: api.database, env: { REQUIRE_SECOND_FACTOR: 'true' } });
    try {
      const user = await createUser(strict);
      const web = webClient(strict);
      const form = await web.send('GET', '/login');
      expect((await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: user.email, password: PASSWORD })).status).toBe(303);
      expect(await web.send('GET', '/settings/tokens')).toMatchObject({ status: 303, location: '/settings/security' });
      const security = await web.send('GET', '/settings/security');
      expect(security.text).toContain('asks everyone for a second factor');
      const begun = await web.send('POST', '/settings/security/totp', { _csrf: web.csrfFrom(security.text) });
      const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
      expect((await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: codeFor(key, clock) })).status).toBe(200);
      expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
    } finally {
      await strict.close();
    }
  });
});

/** Passkeys in Chromium with the DevTools Protocol's virtual authenticator (WebAuthn needs a host name: the pages are reached at localhost). */
describe('passkeys', () => {
  let api: TestApp;
  let site: string;
  beforeAll(async () => {
    api = await startTestApp();
    site = api.baseUrl.replace('127.0.0.1', 'localhost');
  });
  afterAll(() => api?.close());

  it('refuses garbage on every passkey route with a 4xx, and writes nothing', async () => {
    const user = await createUser(api);
    const web = await signInAs(api, user.email, PASSWORD);
    const page = await web.send('GET', '/settings/security');
    const headers = { accept: 'application/json' };
    const csrf = web.csrfFrom(page.text);
    for (const response of ['', 'not json', '{"id":1}', '{"id":"x","response":{}}', `{"id":"${'a'.repeat(10_000)}"}`]) {
      expect((await web.send('POST', '/settings/security/passkeys', { _csrf: csrf, response, name: 'x' }, headers)).status).toBe(400);
      expect((await web.send('POST', '/login/passkey', { _csrf: csrf, response }, headers)).status).toBe(401);
    }
    await web.send('POST', '/settings/security/passkeys/options', { _csrf: csrf }, headers);
    expect((await web.send('POST', '/settings/security/passkeys', { _csrf: csrf, response: '{"id":"abc","rawId":"abc","type":"public-key","response":{}}', name: 'x' }, headers)).status).toBe(400);
    expect((await web.send('POST', '/settings/security/passkeys/options', {}, headers)).status).toBe(403); // no CSRF token
    expect((await web.send('POST', '/settings/security/passkeys/00000000-0000-4000-8000-000000000000/remove', { _csrf: csrf })).status).toBe(303);
    expect((await web.send('POST', '/settings/security/passkeys/not-a-uuid/remove', { _csrf: csrf })).status).toBe(400);
    expect(await countPasskeys(api)).toBe(0);
  });

  it('registers a passkey, signs in with it alone, and asks for it after the password', async () => {
    const user = await createUser(api, { name: 'Pat Passkey' });
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
      });
      const signInWithPassword = async () => {
        await page.goto(`${site}/login?next=%2Fsettings%2Fsecurity`);
        await page.getByLabel('E-mail').fill(user.email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      };
      await signInWithPassword();
      await page.waitForURL(/\/settings\/security$/);
      await page.getByLabel('Name for a new passkey').fill('Test laptop');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.waitForURL(/done=passkey-added/);
      expect(await page.getByRole('textbox', { name: 'Name of this passkey' }).inputValue()).toBe('Test laptop');
      await page.screenshot({ path: `${SCREENSHOTS}security-passkeys-desktop.png`, fullPage: true });

      // Signed out: the passkey alone signs in.
      await context.clearCookies();
      await page.goto(`${site}/login?next=%2Fsettings%2Ftokens`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.waitForURL(/\/settings\/tokens$/);

      // The password now leads to a second step, which the passkey answers.
      await context.clearCookies();
      await signInWithPassword();
      await page.waitForURL(/\/login\/code$/);
      await page.screenshot({ path: `${SCREENSHOTS}login-passkey-step-desktop.png`, fullPage: true });
      await page.getByRole('button', { name: 'Use a passkey' }).click();
      await page.waitForURL(/\/settings\/security$/);
      expect(await page.locator('table.log').textContent()).toContain('with a passkey');

      const [passkey] = await api.app.get(PasskeysService).list(user.id);
      expect(passkey!.lastUsedAt).not.toBeNull();
      await context.close();
    } finally {
      await browser.close();
    }
  });
});
