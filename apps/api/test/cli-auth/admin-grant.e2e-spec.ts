import { ADMIN_LOGIN_COMMAND, CLI_DEFAULT_SCOPES, DEVICE_CODE_GRANT_TYPE, OAUTH_ROUTES, ROUTES, SCOPES } from '@prospect/contract';
import { Secret, TOTP } from 'otpauth';
import { AppConfig, ConfigError } from '../../src/config/app-config.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { FakeClock } from '../support/fake-clock.js';
import { approve, authEvents, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, type JsonResponse, post, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';
import { signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const HOUR = 3600;
const USERS = '/api/admin/users';

/** An authenticator app's code for `key` (as the page shows it) at the fake clock's time. */
const codeFor = (key: string, clock: FakeClock) => new TOTP({ secret: Secret.fromBase32(key.replace(/\s/g, '')), period: 30 }).generate({ timestamp: clock.now().getTime() });

/** Sets up an authenticator app in a signed-in browser (as the security page does); its key. */
async function enrolTotp(web: WebClient, clock: FakeClock): Promise<string> {
  const security = await web.send('GET', '/settings/security');
  const begun = await web.send('POST', '/settings/security/totp', { _csrf: web.csrfFrom(security.text) });
  const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
  expect((await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: codeFor(key, clock) })).status).toBe(200);
  return key;
}

/**
 * Issue #31, item 4: `admin` is asked for (`prospect auth:login --scopes profile,tokens,admin,orgs`),
 * approved in sudo mode, and lasts ADMIN_GRANT_SECONDS after the approval.
 */
describe('the admin grant', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  let admin: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    api = await startTestApp({ clock });
    admin = await createUser(api, { role: 'admin' });
  });
  afterAll(() => api?.close());

  const ADMIN_SCOPES = ['profile', 'tokens', 'admin', 'orgs'];
  const start = (scopes?: string[]) => startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', ...(scopes ? { scopes } : {}) });
  const refresh = (refreshToken: string) => post(api, ROUTES.refresh, { refreshToken });
  const scopesOf = async (token: string) => (await get(api, ROUTES.me, token)).headers.get('x-oauth-scopes');
  const mint = (token: string, body: object = {}) => post(api, ROUTES.issueToken, body, token);
  /** The administration API's refusal of a token without a fresh `admin`: RFC 6750 §3.1, and how to get one. */
  function expectAdminRefused(res: JsonResponse) {
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('insufficient_scope');
    expect(res.body.message).toContain(ADMIN_LOGIN_COMMAND);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer realm="prospect", error="insufficient_scope", scope="admin", error_description="administration needs a fresh admin grant: sign in again with prospect auth:login --scopes profile,tokens,admin,orgs"`,
    );
  }

  it('ADMIN_GRANT_SECONDS is 12 hours unless set, and a whole number of seconds', () => {
    expect(api.config.adminGrantSeconds).toBe(43_200);
    expect(AppConfig.fromEnv({ ADMIN_GRANT_SECONDS: '900' }).adminGrantSeconds).toBe(900);
    expect(() => AppConfig.fromEnv({ ADMIN_GRANT_SECONDS: 'a day' })).toThrow(ConfigError);
    expect(() => AppConfig.fromEnv({ ADMIN_GRANT_SECONDS: '0' })).toThrow(/ADMIN_GRANT_SECONDS/);
  });

  it('an administrator’s CLI login that does not ask for admin has none, and the admin API says how to sign in for it', async () => {
    const login = await start();
    await approve(api, login.userCode, admin);
    const session = (await poll(api, login.deviceCode)).body;
    expect(await scopesOf(session.accessToken)).toBe('profile, tokens, orgs');
    expectAdminRefused(await get(api, USERS, session.accessToken));
    const [row] = await deviceLogins(api, { userCode: login.userCode });
    expect(row).toMatchObject({ scope: 'profile tokens orgs', admin_until: null });
    // The OAuth door to the same client: asking for nothing is not asking for admin either.
    const form = (path: string, params: Record<string, string>) =>
      request(api, 'POST', path, { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const device = (await form(OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli' })).body;
    await approve(api, device.user_code, admin);
    const tokens = (await form(OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: 'prospect-cli' })).body;
    expect(tokens.scope).toBe('profile tokens orgs');
    expectAdminRefused(await get(api, USERS, tokens.access_token));
  });

  it('refuses a start asking for a scope that does not exist, one the CLI may not have, or none', async () => {
    for (const scopes of [['profile', 'billing:write'], [], 'admin', ['profile', 'openid'], ['email']]) {
      const res = await post(api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', scopes });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it('a login that asks for admin is approved in sudo mode only: its page asks first, then comes back to the approval', async () => {
    const web = await signInAs(api, admin.email, PASSWORD);
    clock.advanceSeconds(2 * HOUR + 1); // sudo mode (SUDO_SECONDS) from the sign-in is over
    const plain = await start();
    const plainPage = await web.send('GET', `/device?user_code=${plain.userCode}`);
    expect(plainPage.status).toBe(200); // its button asks, as before
    // What the CLI asks for by default, each in words: `orgs` too (issue #44), `admin` not.
    for (const scope of CLI_DEFAULT_SCOPES) expect(plainPage.text).toContain(SCOPES[scope]);
    expect(plainPage.text).not.toContain('Administer this Prospect');

    const login = await start(ADMIN_SCOPES);
    const asked = await web.send('GET', `/device?user_code=${login.userCode}`);
    expect(asked.status).toBe(403);
    expect(asked.text).toContain('Confirm it’s you');
    expect(asked.text).not.toContain('action="/device/approve"');
    expect(asked.text).toContain(`name="next" value="/device?user_code&#x3D;${login.userCode}"`);
    // Pressing the button of a page loaded earlier asks too.
    expect((await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(asked.text), user_code: login.userCode })).status).toBe(403);
    expect((await poll(api, login.deviceCode)).body.status).toBe('pending');

    const confirmed = await web.send('POST', '/sudo', { _csrf: web.csrfFrom(asked.text), password: PASSWORD, next: `/device?user_code=${login.userCode}` });
    expect(confirmed).toMatchObject({ status: 303, location: `/device?user_code=${login.userCode}` });
    const page = await web.send('GET', confirmed.location!);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Administering lasts 12 hours from your approval');
    const approvedAt = clock.now().getTime();
    expect((await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(page.text), user_code: login.userCode })).status).toBe(200);

    const [row] = await deviceLogins(api, { userCode: login.userCode });
    expect(row.status).toBe('approved');
    expect(row.admin_until!.getTime()).toBe(approvedAt + 12 * HOUR * 1000);
    const [approval] = await authEvents(api, { type: 'device.approve', detail: { deviceLoginId: row.id } });
    expect(approval.detail).toEqual({ deviceLoginId: row.id, adminUntil: expect.any(String) });
    const session = (await poll(api, login.deviceCode)).body;
    expect(await scopesOf(session.accessToken)).toBe('profile, tokens, admin, orgs');
    expect((await get(api, USERS, session.accessToken)).status).toBe(200);
  });

  it('admin lasts ADMIN_GRANT_SECONDS from the approval: tokens expire by then, a later refresh keeps the rest without admin, and the admin API says to sign in again', async () => {
    const bob = await createUser(api);
    const login = await start(ADMIN_SCOPES);
    await approve(api, login.userCode, admin);
    const approvedAt = clock.now().getTime();
    const first = (await poll(api, login.deviceCode)).body;
    expect(Date.parse(first.expiresAt)).toBe(approvedAt + HOUR * 1000);

    clock.advanceSeconds(11.5 * HOUR);
    const late = (await refresh(first.refreshToken)).body;
    expect(await scopesOf(late.accessToken)).toBe('profile, tokens, admin, orgs');
    // Half an hour of admin is left: the access token lives that long, not its usual hour.
    expect(Date.parse(late.expiresAt)).toBe(approvedAt + 12 * HOUR * 1000);
    expect((await get(api, USERS, late.accessToken)).status).toBe(200);
    expect((await mint(late.accessToken, { userEmail: bob.email, label: 'while fresh' })).status).toBe(201);

    clock.advanceSeconds(0.5 * HOUR + 1);
    expect((await get(api, ROUTES.me, late.accessToken)).status).toBe(401); // expired with the grant's admin
    const after = (await refresh(late.refreshToken)).body;
    expect(await scopesOf(after.accessToken)).toBe('profile, tokens, orgs');
    expect(Date.parse(after.expiresAt)).toBe(clock.now().getTime() + HOUR * 1000);
    expectAdminRefused(await get(api, USERS, after.accessToken));
    expectAdminRefused(await request(api, 'PATCH', `${USERS}/${bob.id}`, { json: { admin: true }, token: after.accessToken }));
    const forBob = await mint(after.accessToken, { userEmail: bob.email, label: 'stale' });
    expect(forBob.status).toBe(403);
    expect(forBob.body.error).toBe('insufficient_scope');
    expect(forBob.body.message).toContain(ADMIN_LOGIN_COMMAND);
    const own = await mint(after.accessToken, { label: 'still mine' });
    expect(own.status).toBe(201);
    expect(await scopesOf(own.body.accessToken)).toBe('profile, tokens, orgs');
    // What introspection says of the session agrees (asked with a token an administrator made on the site).
    const siteToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    const introspected = await request(api, 'POST', OAUTH_ROUTES.introspect, {
      body: new URLSearchParams({ token: after.refreshToken }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      token: siteToken,
    });
    expect(introspected.body).toMatchObject({ active: true, scope: 'profile tokens orgs' });
  });

  it('administration through the API is audited with the grant that did it: promoting, removing a second factor, inviting', async () => {
    const login = await start(ADMIN_SCOPES);
    await approve(api, login.userCode, admin);
    const session = (await poll(api, login.deviceCode)).body;
    const { id: tokenId, grantId } = (await api.app.get(TokensService).describe(session.accessToken))!;
    const grant = { tokenId, deviceLoginId: grantId };
    const carol = await createUser(api);
    await enrolTotp(await signInAs(api, carol.email, PASSWORD), clock);

    expect((await request(api, 'PATCH', `${USERS}/${carol.id}`, { json: { admin: true }, token: session.accessToken })).status).toBe(200);
    expect((await request(api, 'DELETE', `${USERS}/${carol.id}/second-factor`, { token: session.accessToken })).status).toBe(204);
    const invited = await post(api, USERS, { email: `invited-${Date.now()}@example.com`, name: 'Invited' }, session.accessToken);
    expect(invited.status).toBe(201);

    const events = (await authEvents(api, { type: 'admin.api_action', detail: { tokenId: grant.tokenId } })).map(({ user_id, detail }) => ({ user_id, detail }));
    expect(events).toEqual([
      { user_id: admin.id, detail: { action: 'promote', accountId: carol.id, ...grant } },
      { user_id: admin.id, detail: { action: 'remove_second_factor', accountId: carol.id, ...grant } },
      { user_id: admin.id, detail: { action: 'invite', accountId: invited.body.id, ...grant } },
    ]);
  });
});

/**
 * Issue #31, item 6 (the API's half): REQUIRE_SECOND_FACTOR holds for the API as seen through a
 * web session exactly as for the pages. An app of its own: passport's sign-in strategy is the
 * process's, so it starts once the one above has stopped.
 */
describe('REQUIRE_SECOND_FACTOR through the API', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock, env: { REQUIRE_SECOND_FACTOR: 'true' } });
  });
  afterAll(() => api?.close());

  const mintInBrowser = (web: WebClient, csrf: string) => web.agent.post(ROUTES.issueToken).set('x-csrf-token', csrf).send({ label: 'through the API' });
  const tokensOf = async (userId: string) => (await accessTokens(api, { userId })).length;

  it('a person who must still set up a second factor makes no token through the API with their session, as the pages let them do nothing else', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, PASSWORD);
    expect(await web.send('GET', '/settings/tokens')).toMatchObject({ status: 303, location: '/settings/security' });
    const security = await web.send('GET', '/settings/security');
    const refused = await mintInBrowser(web, web.csrfFrom(security.text));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ statusCode: 403, error: 'forbidden', message: expect.stringContaining('second factor') });
    expect(await tokensOf(person.id)).toBe(0);

    await enrolTotp(web, clock);
    const page = await web.send('GET', '/settings/tokens');
    expect(page.status).toBe(200);
    expect((await mintInBrowser(web, web.csrfFrom(page.text))).status).toBe(201);
  });

  it('a browser halfway through signing in (its second step not taken) makes no token either', async () => {
    const person = await createUser(api);
    const signedIn = await signInAs(api, person.email, PASSWORD);
    await enrolTotp(signedIn, clock);
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    expect(await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: person.email, password: PASSWORD })).toMatchObject({ status: 303, location: '/login/code' });
    const step = await web.send('GET', '/login/code');
    const refused = await mintInBrowser(web, web.csrfFrom(step.text));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/Finish signing in/);
    expect(await tokensOf(person.id)).toBe(0);
  });
});
