import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { decodeJwt } from 'jose';
import { FakeClock } from '../support/fake-clock.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { grants } from '../support/grant-fixtures.js';
import { authEvents, createUser, registerClient } from '../support/fixtures.js';
import { get, request, type JsonResponse } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens, authorizationCodes } from '../support/token-fixtures.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { postFrom, signInAs, type WebClient, webClient } from '../support/web-client.js';
import { approveIn, pkce, tokenRequest as tokenRequestTo } from './code-flow-support.js';

const PASSWORD = 'correct horse battery';
const REDIRECT = 'https://tool.example.com/callback';

/** RFC 6749 §5.2 as the tests expect it: the status, `error`, a description, never cached. */
function expectOAuthError(res: JsonResponse, error: string, status = 400) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error });
  expect(res.body.error_description).toEqual(expect.any(String));
  expect(res.headers.get('cache-control')).toBe('no-store');
}

/**
 * The authorization code grant's rules over HTTP (issue #33): every refusal the issue lists, the
 * binding of a code to its client, redirect URI, PKCE verifier and account state, confidential
 * clients, and the controls that end a code grant's tokens as they end a device grant's.
 */
describe('the authorization code grant', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  let adminToken: string;

  beforeAll(async () => {
    api = await startTestApp({ clock });
    const admin = await createUser(api, { role: 'admin' });
    adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    for (const id of ['tool', 'other-tool', 'to-disable']) {
      await registerClient({ id, name: `The ${id}`, allowedScopes: ['openid', 'profile', 'email', 'tokens'], redirectUris: [REDIRECT, 'http://127.0.0.1/cb'] });
    }
  });
  afterAll(() => api.close());

  const registerClient = async (body: object) => {
    const res = await request(api, 'POST', '/api/admin/clients', { json: body, token: adminToken });
    expect(res.status).toBe(201);
    return res.body;
  };

  const authorizePath = (params: Record<string, string>) => `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params).toString()}`;
  const standard = (client = 'tool', challenge = pkce().challenge, extra: Record<string, string> = {}) => ({
    response_type: 'code',
    client_id: client,
    redirect_uri: REDIRECT,
    scope: 'openid profile email',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'xyz',
    nonce: 'n-0S6_WzA2Mj',
    ...extra,
  });
  /** GET /oauth/authorize as a browser that typed the address (Sec-Fetch-Site: none): a redirect when it answers the client. */
  const authorize = (web: WebClient, params: Record<string, string>) => web.send('GET', authorizePath(params), undefined, { 'sec-fetch-site': 'none' });

  /** Approves `params` on the consent page (or finds it remembered); where the browser is sent. */
  const approve = approveIn;
  const tokenRequest = (params: Record<string, string>, headers: Record<string, string> = {}) => tokenRequestTo(api, params, headers);
  const exchange = (code: string, verifier: string, client = 'tool', redirectUri = REDIRECT) =>
    tokenRequest({ grant_type: 'authorization_code', client_id: client, code, redirect_uri: redirectUri, code_verifier: verifier });
  const refresh = (refreshToken: string, client = 'tool') => tokenRequest({ grant_type: 'refresh_token', client_id: client, refresh_token: refreshToken });

  /** A person signed in in a browser, with a code for `tool` and its verifier. */
  async function signedInWithCode(client = 'tool', extra: Record<string, string> = {}) {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, PASSWORD);
    const { verifier, challenge } = pkce();
    const back = await approve(web, standard(client, challenge, extra));
    return { person, web, verifier, code: back.searchParams.get('code')!, back };
  }

  describe('GET /oauth/authorize', () => {
    it('answers a code with state and iss (RFC 9207) to the exact redirect URI, and a loopback one on any port (RFC 8252)', async () => {
      const { back, code } = await signedInWithCode();
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(Object.fromEntries(back.searchParams)).toEqual({ code: expect.stringMatching(/^prsc_[A-Za-z0-9_-]{43}$/), state: 'xyz', iss: api.baseUrl });
      expect(code).toBeTruthy();
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      for (const port of ['51234', '8080']) {
        const loopback = await approve(web, standard('tool', pkce().challenge, { redirect_uri: `http://127.0.0.1:${port}/cb` }));
        expect(loopback.href).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/cb\\?code=prsc_`));
      }
    });

    it('refuses a loopback redirect whose port is not a port (0, 65536, 99999) with the bad-redirect page, and writes no code (issue #43, finding 7)', async () => {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      // Consent given once, so the next requests would issue a code at once, without the consent page.
      await approve(web, standard('tool', pkce().challenge, { redirect_uri: 'http://127.0.0.1:51234/cb' }));
      const codesBefore = await authorizationCodes(api, { userId: person.id });
      for (const port of ['0', '65536', '99999']) {
        const res = await authorize(web, standard('tool', pkce().challenge, { redirect_uri: `http://127.0.0.1:${port}/cb` }));
        expect({ port, status: res.status, location: res.location }).toEqual({ port, status: 400, location: undefined });
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.text).toContain('This sign-in link is not valid');
        // The consent page's answer runs the same checks.
        const answer = await web.send('POST', `${OAUTH_ROUTES.authorize}/consent`, {
          ...standard('tool', pkce().challenge, { redirect_uri: `http://127.0.0.1:${port}/cb` }),
          _csrf: web.csrfFrom((await web.send('GET', '/settings/tokens')).text),
          decision: 'approve',
        });
        expect({ port, status: answer.status, location: answer.location }).toEqual({ port, status: 400, location: undefined });
      }
      expect(await authorizationCodes(api, { userId: person.id })).toEqual(codesBefore);
    });

    it('never redirects for an unknown client, a disabled one, a missing redirect URI or one off by a character: a page says so', async () => {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const disabled = await registerClient({ id: 'soon-disabled', name: 'Soon disabled', allowedScopes: ['openid'], redirectUris: [REDIRECT] });
      await request(api, 'PATCH', `/api/admin/clients/${disabled.id}`, { json: { disabled: true }, token: adminToken });
      const noCodeFlow = await registerClient({ id: 'device-only', name: 'Device only', allowedScopes: ['profile'] });
      for (const params of [
        standard('nobody-knows'),
        standard('soon-disabled'),
        standard(noCodeFlow.id),
        standard('tool', undefined, { redirect_uri: 'https://tool.example.com/callbacks' }),
        standard('tool', undefined, { redirect_uri: 'https://tool.example.com/callback/' }),
        standard('tool', undefined, { redirect_uri: 'https://tool.example.co/callback' }),
        standard('tool', undefined, { redirect_uri: 'http://127.0.0.1:9/other' }),
        { ...standard('tool'), redirect_uri: '' },
      ]) {
        const res = await authorize(web, params);
        expect({ client: params.client_id, redirect: params.redirect_uri, status: res.status, location: res.location }).toEqual({ client: params.client_id, redirect: params.redirect_uri, status: 400, location: undefined });
        expect(res.headers['content-type']).toMatch(/^text\/html/);
      }
      expect((await authorize(web, standard('nobody-knows'))).text).toContain('No application “nobody-knows” is registered');
    });

    it('answers every other error at the redirect URI with state and iss: response_type=token, missing or plain PKCE, admin, an unknown scope, prompt none with others', async () => {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const cases: Array<[Record<string, string>, string]> = [
        [{ response_type: 'token' }, 'unsupported_response_type'],
        [{ response_type: 'code id_token' }, 'unsupported_response_type'],
        [{ code_challenge: '' }, 'invalid_request'],
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge_method: '' }, 'invalid_request'],
        [{ code_challenge: 'too-short' }, 'invalid_request'],
        [{ scope: 'openid admin' }, 'invalid_scope'],
        [{ scope: 'openid billing' }, 'invalid_scope'],
        [{ prompt: 'none login' }, 'invalid_request'],
        [{ request: 'eyJ...' }, 'request_not_supported'],
        [{ max_age: 'soon' }, 'invalid_request'],
      ];
      for (const [change, error] of cases) {
        const params = Object.fromEntries(Object.entries({ ...standard(), ...change }).filter(([, v]) => v !== ''));
        const res = await authorize(web, params);
        expect(res.status).toBe(303);
        const location = new URL(res.location!);
        expect({ change, at: `${location.origin}${location.pathname}`, error: location.searchParams.get('error'), state: location.searchParams.get('state'), iss: location.searchParams.get('iss') }).toEqual({
          change,
          at: REDIRECT,
          error,
          state: 'xyz',
          iss: api.baseUrl,
        });
      }
      // Nothing was issued for any of them.
      expect(await authorizationCodes(api, { userId: person.id })).toHaveLength(0);
    });

    it('a client of the code flow cannot be allowed admin', async () => {
      const res = await request(api, 'POST', '/api/admin/clients', { json: { id: 'greedy', name: 'Greedy', allowedScopes: ['openid', 'admin'], redirectUris: [REDIRECT] }, token: adminToken });
      expect(res.status).toBe(400);
      expect(res.body.message).toContain('never grants administration');
      const patched = await request(api, 'PATCH', '/api/admin/clients/tool', { json: { allowedScopes: ['openid', 'admin'] }, token: adminToken });
      expect(patched.status).toBe(400);
    });

    it('a signed-out browser signs in first and comes back; prompt=none answers login_required; prompt=login and max_age ask to confirm', async () => {
      const anonymous = webClient(api);
      const out = await authorize(anonymous, standard('tool', undefined, { prompt: 'login' }));
      expect(out.status).toBe(303);
      const next = new URL(out.location!, api.baseUrl).searchParams.get('next')!;
      expect(next).toMatch(/^\/oauth\/authorize\?response_type=code&client_id=tool&/);
      expect(next).not.toContain('prompt=login');
      const silent = new URL((await authorize(anonymous, standard('tool', undefined, { prompt: 'none' }))).location!);
      expect(silent.searchParams.get('error')).toBe('login_required');

      const { web } = await signedInWithCode();
      for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Array<Record<string, string>>) {
        clock.advanceSeconds(1);
        const res = await authorize(web, standard('tool', undefined, extra));
        expect(res.status).toBe(403);
        expect(res.text).toContain('Confirm it’s you');
        expect(res.text).not.toContain('prompt=login');
        expect(res.text).not.toContain('max_age');
      }
      const tooOld = new URL((await authorize(web, standard('tool', undefined, { prompt: 'none', max_age: '0' }))).location!);
      expect(tooOld.searchParams.get('error')).toBe('login_required');
    });

    it('a login_hint for another account shows who is signed in, and prompt=none then says login_required', async () => {
      const { web, person } = await signedInWithCode();
      const page = await authorize(web, standard('tool', undefined, { login_hint: 'someone-else@example.com' }));
      expect(page.status).toBe(200);
      expect(page.text).toContain('asked to sign in <strong>someone-else@example.com</strong>');
      expect((await authorize(web, standard('tool', undefined, { login_hint: person.email.toUpperCase(), prompt: 'none' }))).status).toBe(303);
      const silent = new URL((await authorize(web, standard('tool', undefined, { login_hint: 'someone-else@example.com', prompt: 'none' }))).location!);
      expect(silent.searchParams.get('error')).toBe('login_required');
    });

    it('“Not you?” signs this browser out and sends it to sign in, then on with the same request', async () => {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const params = standard('other-tool');
      const page = await authorize(web, params);
      expect(page.text).toContain('Not you? Sign in as someone else');
      const switched = await web.send('POST', `${OAUTH_ROUTES.authorize}/switch`, { ...params, _csrf: web.csrfFrom(page.text) });
      expect(switched.status).toBe(303);
      const next = new URL(switched.location!, api.baseUrl);
      expect(next.pathname).toBe('/login');
      expect(next.searchParams.get('next')).toMatch(/^\/oauth\/authorize\?response_type=code&client_id=other-tool&/);
      // Signed out: the same request now asks to sign in.
      expect((await authorize(web, params)).location).toMatch(/^\/login\?next=/);
    });

    it('the consent page says each scope in words, `orgs` too, in its order (issue #44)', async () => {
      await registerClient({ id: 'org-tool', name: 'The org tool', allowedScopes: ['openid', 'profile', 'tokens', 'orgs'], redirectUris: [REDIRECT] });
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const page = await authorize(web, standard('org-tool', pkce().challenge, { scope: 'tokens orgs openid profile' }));
      expect(page.status).toBe(200);
      const listed = /<ul class="scopes">(.*?)<\/ul>/.exec(page.text)![1]!.split('</li>').filter(Boolean).map((item) => item.replace('<li>', ''));
      expect(listed).toEqual(['Sign you in with your Prospect account', 'See your name and e-mail address', 'See your organizations and act in them with your role', 'Create tokens that act as you']);
    });

    it('Deny sends access_denied back; consent and exchange are in the security log', async () => {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const params = standard('other-tool');
      const page = await authorize(web, params);
      const denied = await web.send('POST', `${OAUTH_ROUTES.authorize}/consent`, { ...params, _csrf: web.csrfFrom(page.text), decision: 'deny' });
      expect(Object.fromEntries(new URL(denied.location!).searchParams)).toMatchObject({ error: 'access_denied', state: 'xyz', iss: api.baseUrl });
      const { verifier, challenge } = pkce();
      const code = (await approve(web, standard('tool', challenge))).searchParams.get('code')!;
      expect((await exchange(code, verifier)).status).toBe(200);
      const events = (await authEvents(api, { typePrefix: 'oauth.', userId: person.id })).map((e) => ({ type: e.type, client: e.detail.clientId }));
      expect(events).toEqual([
        { type: 'oauth.consent', client: 'tool' },
        { type: 'oauth.code_exchange', client: 'tool' },
      ]);
    });
  });

  describe('POST /oauth/token with grant_type=authorization_code', () => {
    it('exchanges a code once, for a token family that refreshes with rotation and an ID token with the nonce', async () => {
      const { code, verifier, person } = await signedInWithCode();
      const res = await exchange(code, verifier);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.body).toEqual({
        access_token: expect.stringMatching(/^prs_/),
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: expect.stringMatching(/^prsr_/),
        scope: 'profile openid email',
        id_token: expect.any(String),
      });
      expect(decodeJwt(res.body.id_token)).toMatchObject({ sub: person.id, aud: 'tool', nonce: 'n-0S6_WzA2Mj', iss: api.baseUrl });
      const [issued] = await accessTokens(api, { secret: res.body.access_token });
      const [grant] = await grants(api, { id: issued.grant_id! });
      expect({ scope: issued.scope, grant_type: grant.grant_type, client_id: grant.client_id }).toEqual({ scope: 'profile openid email', grant_type: 'authorization_code', client_id: 'tool' });
      // The grant is a record of its own: who, how the sign-in proved them and when, in which session; no stand-in device login.
      expect(grant).toMatchObject({ user_id: person.id, amr: ['pwd'], auth_time: expect.any(Date), web_session: expect.any(String), revoked_at: null });
      expect(await deviceLogins(api, { id: grant.id })).toEqual([]);
      const renewed = await refresh(res.body.refresh_token);
      expect(renewed.status).toBe(200);
      expect(renewed.body.scope).toBe('profile openid email');
      expect((await get(api, ROUTES.me, renewed.body.access_token)).body.user.id).toBe(person.id);
    });

    it('a code used twice is refused, and every token it gave is revoked', async () => {
      const { code, verifier } = await signedInWithCode();
      const first = await exchange(code, verifier);
      const renewed = (await refresh(first.body.refresh_token)).body;
      expectOAuthError(await exchange(code, verifier), 'invalid_grant');
      expect((await get(api, ROUTES.me, first.body.access_token)).status).toBe(401);
      expect((await get(api, ROUTES.me, renewed.access_token)).status).toBe(401);
      expectOAuthError(await refresh(renewed.refresh_token), 'invalid_grant');
    });

    it('refuses a wrong verifier, a code of another client, another redirect URI, and a code after 60 seconds', async () => {
      const { code, verifier } = await signedInWithCode();
      expectOAuthError(await exchange(code, pkce().verifier), 'invalid_grant');
      expectOAuthError(await exchange(code, verifier, 'other-tool'), 'invalid_grant');
      expectOAuthError(await exchange(code, verifier, 'tool', 'http://127.0.0.1/cb'), 'invalid_grant');
      expectOAuthError(await tokenRequest({ grant_type: 'authorization_code', client_id: 'tool', code, redirect_uri: REDIRECT }), 'invalid_request');
      expectOAuthError(await exchange('prsc_nope', verifier), 'invalid_grant');
      // None of those used it up: it still works once, within its minute.
      expect((await exchange(code, verifier)).status).toBe(200);

      const late = await signedInWithCode();
      clock.advanceSeconds(61);
      const expired = await exchange(late.code, late.verifier);
      expectOAuthError(expired, 'invalid_grant');
      expect(expired.body.error_description).toContain('expired');
    });

    it('a disabled client: no authorization, no exchange (invalid_client), its codes used up and its grants revoked', async () => {
      const { code, verifier, web } = await signedInWithCode('to-disable');
      const other = await signedInWithCode('to-disable');
      const tokens = (await exchange(other.code, other.verifier, 'to-disable')).body;
      expect((await request(api, 'PATCH', '/api/admin/clients/to-disable', { json: { disabled: true }, token: adminToken })).status).toBe(200);
      expectOAuthError(await exchange(code, verifier, 'to-disable'), 'invalid_client');
      expect((await get(api, ROUTES.me, tokens.access_token)).status).toBe(401);
      expectOAuthError(await refresh(tokens.refresh_token, 'to-disable'), 'invalid_client');
      expect((await authorize(web, standard('to-disable'))).status).toBe(400);
      // Enabled again: what was revoked and used up stays so.
      expect((await request(api, 'PATCH', '/api/admin/clients/to-disable', { json: { disabled: false }, token: adminToken })).status).toBe(200);
      expectOAuthError(await exchange(code, verifier, 'to-disable'), 'invalid_grant');
      expectOAuthError(await refresh(tokens.refresh_token, 'to-disable'), 'invalid_grant');
    });

    it('a code is bound to the account state: a new password between issue and exchange refuses it', async () => {
      const { code, verifier, web } = await signedInWithCode();
      const changed = await postFrom(web, '/settings/account', '/settings/account/password', { current_password: PASSWORD, password: 'another horse battery', password_again: 'another horse battery' });
      expect(changed.status).toBe(303);
      const refused = await exchange(code, verifier);
      expectOAuthError(refused, 'invalid_grant');
      expect(refused.body.error_description).toContain('has changed');
    });
  });

  describe('the same controls as every grant', () => {
    it('disabling the person, "sign out everywhere" with tokens and revoking the connected app end the grant', async () => {
      const ends: Array<[string, (person: { id: string }, web: WebClient) => Promise<unknown>]> = [
        ['disabled', (person) => request(api, 'PATCH', `/api/admin/users/${person.id}`, { json: { disabled: true }, token: adminToken })],
        ['sign out everywhere', (_person, web) => postFrom(web, ROUTES.tokensPage, '/logout/everywhere', { revoke_tokens: 'on' })],
        ['connected app revoked', (_person, web) => postFrom(web, ROUTES.tokensPage, '/settings/tokens/apps/tool/revoke')],
      ];
      for (const [what, end] of ends) {
        const { code, verifier, person, web } = await signedInWithCode();
        const tokens = (await exchange(code, verifier)).body;
        // A second code, not exchanged yet.
        const { verifier: v2, challenge: c2 } = pkce();
        const pending = (await approve(web, standard('tool', c2))).searchParams.get('code')!;
        await end(person, web);
        expect({ what, me: (await get(api, ROUTES.me, tokens.access_token)).status }).toEqual({ what, me: 401 });
        expectOAuthError(await refresh(tokens.refresh_token), 'invalid_grant');
        expect({ what, pending: (await exchange(pending, v2)).body.error }).toEqual({ what, pending: 'invalid_grant' });
      }
    });

    it('userinfo: sub always, name with profile, email with email; openid required', async () => {
      const person = await createUser(api, { name: 'Only Openid' });
      const web = await signInAs(api, person.email, PASSWORD);
      const { verifier, challenge } = pkce();
      const code = (await approve(web, standard('tool', challenge, { scope: 'openid email' }))).searchParams.get('code')!;
      const token = (await exchange(code, verifier)).body.access_token;
      const info = await get(api, OAUTH_ROUTES.userinfo, token);
      expect(info.body).toEqual({ sub: person.id, email: person.email, email_verified: true });
      expect((await request(api, 'POST', OAUTH_ROUTES.userinfo, { token })).body).toEqual(info.body);
      const { verifier: v2, challenge: c2 } = pkce();
      const profileOnly = (await exchange((await approve(web, standard('tool', c2, { scope: 'profile' }))).searchParams.get('code')!, v2)).body;
      expect(profileOnly.id_token).toBeUndefined();
      const refused = await get(api, OAUTH_ROUTES.userinfo, profileOnly.access_token);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('insufficient_scope');
      expect((await get(api, OAUTH_ROUTES.userinfo)).status).toBe(401);
    });
  });

  describe('confidential clients', () => {
    it('get a secret once, kept hashed, and authenticate with client_secret_basic or client_secret_post; a new secret ends the old', async () => {
      const created = await registerClient({ id: 'server-app', name: 'Server App', type: 'confidential', allowedScopes: ['openid'], redirectUris: [REDIRECT] });
      expect(created).toMatchObject({ type: 'confidential', clientSecret: expect.stringMatching(/^prsk_[A-Za-z0-9_-]{43}$/), redirectUris: [REDIRECT] });
      const secret = created.clientSecret as string;
      // sql-on-purpose: the secret is stored only as its hash
      const [row] = await api.dataSource.query(`SELECT secret_hash = sha256($1::bytea) AS hashed FROM oauth_clients WHERE id = 'server-app'`, [secret]);
      expect(row.hashed).toBe(true);
      // sql-on-purpose: nothing of the secret is stored in the clear, in any column
      expect(JSON.stringify(await api.dataSource.query(`SELECT * FROM oauth_clients`))).not.toContain(secret.slice(5));
      expect((await request(api, 'GET', '/api/admin/clients', { token: adminToken })).body.find((c: { id: string }) => c.id === 'server-app')).not.toHaveProperty('clientSecret');

      const basic = (id: string, password: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(password)}`).toString('base64')}`;
      const codeFor = async () => {
        const person = await createUser(api);
        const web = await signInAs(api, person.email, PASSWORD);
        const { verifier, challenge } = pkce();
        return { verifier, code: (await approve(web, standard('server-app', challenge, { scope: 'openid' }))).searchParams.get('code')! };
      };
      const viaBasic = await codeFor();
      const params = (c: { code: string; verifier: string }) => ({ grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier });
      expect((await tokenRequest(params(viaBasic), { authorization: basic('server-app', secret) })).status).toBe(200);
      const viaPost = await codeFor();
      expectOAuthError(await tokenRequest({ ...params(viaPost), client_id: 'server-app' }), 'invalid_client', 401);
      const wrong = await tokenRequest(params(viaPost), { authorization: basic('server-app', `prsk_${'x'.repeat(43)}`) });
      expectOAuthError(wrong, 'invalid_client', 401);
      expect(wrong.headers.get('www-authenticate')).toBe('Basic realm="prospect"');
      expect((await tokenRequest({ ...params(viaPost), client_id: 'server-app', client_secret: secret })).status).toBe(200);

      const rotated = await request(api, 'POST', '/api/admin/clients/server-app/secret', { token: adminToken });
      expect(rotated.body.clientSecret).toMatch(/^prsk_/);
      const afterRotation = await codeFor();
      expectOAuthError(await tokenRequest({ ...params(afterRotation), client_id: 'server-app', client_secret: secret }), 'invalid_client');
      expect((await tokenRequest(params(afterRotation), { authorization: basic('server-app', rotated.body.clientSecret) })).status).toBe(200);
      // A public client has no secret to rotate, and sends none.
      expect((await request(api, 'POST', '/api/admin/clients/tool/secret', { token: adminToken })).status).toBe(400);
      const publicOne = await signedInWithCode();
      expectOAuthError(await tokenRequest({ grant_type: 'authorization_code', client_id: 'tool', client_secret: 'anything', code: publicOne.code, redirect_uri: REDIRECT, code_verifier: publicOne.verifier }), 'invalid_client');
    });
  });
});

describe('the authorization code grant under REQUIRE_SECOND_FACTOR, and under REQUIRE_EMAIL_VERIFICATION', () => {
  const params = () => ({ response_type: 'code', client_id: 'tool', redirect_uri: REDIRECT, scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' });
  const appWith = async (env: Record<string, string>) => {
    const api = await startTestApp({ env });
    await registerClient(api, { id: 'tool', name: 'Tool', allowedScopes: ['openid', 'profile'], redirectUris: [REDIRECT] });
    return api;
  };

  it('a person without a second factor sets one up first; prompt=none says interaction_required', async () => {
    const api = await appWith({ REQUIRE_SECOND_FACTOR: 'true' });
    try {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, PASSWORD);
      const res = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params())}`);
      expect({ status: res.status, location: res.location }).toEqual({ status: 303, location: '/settings/security' });
      const silent = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams({ ...params(), prompt: 'none' })}`, undefined, { 'sec-fetch-site': 'none' });
      expect(new URL(silent.location!).searchParams.get('error')).toBe('interaction_required');
      expect(await authorizationCodes(api)).toHaveLength(0);
    } finally {
      await api.close();
    }
  });

  it('a person whose address is not proven proves it first, and the consent form refuses them too', async () => {
    const api = await appWith({ REQUIRE_EMAIL_VERIFICATION: 'true' });
    try {
      const person = await createUser(api, { emailVerified: false });
      const web = await signInAs(api, person.email, PASSWORD);
      const res = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params())}`);
      expect(res.status).toBe(403);
      expect(res.text).toContain('Confirm your e-mail address');
      const answer = await web.send('POST', `${OAUTH_ROUTES.authorize}/consent`, { ...params(), _csrf: web.csrfFrom(res.text), decision: 'approve' });
      expect(answer.status).toBe(403);
      expect(await authorizationCodes(api)).toHaveLength(0);
    } finally {
      await api.close();
    }
  });
});
