import { DEVICE_CODE_GRANT_TYPE, OAUTH_ROUTES, ROUTES, TOKEN_EXCHANGE_GRANT_TYPE } from '@prospect/contract';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { Clock } from '../../src/common/clock.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { approvalPage, approve, createUser, deny, registerClient } from '../support/fixtures.js';
import { get, post, request, type JsonResponse } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';
import { launchBrowser, SCREENSHOTS, signUpInPage } from '../support/browser.js';

/** Real time that a test can move forward: the OAuth client polls on its own timers. */
class ShiftedClock extends Clock {
  offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/** RFC 6749 §5.2 as the tests expect it: 400, no-store, `error` and `error_description`. */
function expectOAuthError(res: JsonResponse, error: string, status = 400) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error });
  expect(res.body.error_description).toEqual(expect.any(String));
  expect(res.headers.get('cache-control')).toBe('no-store');
}

const form = (api: TestApp, path: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  request(api, 'POST', path, { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });

describe('OAuth 2.0 surface', () => {
  const clock = new ShiftedClock();
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock, env: { DEVICE_POLL_INTERVAL_SECONDS: '2' } });
  });
  afterAll(() => api.close());

  describe('an unmodified openid-client (v6), as any standard client would use it', () => {
    let browser: Browser;
    let page: Page;
    let config: oidc.Configuration;
    beforeAll(async () => {
      browser = await launchBrowser();
      page = await browser.newPage();
      config = await oidc.discovery(new URL(api.baseUrl), 'prospect-cli', undefined, oidc.None(), {
        algorithm: 'oauth2',
        // The test server speaks http on loopback; production is https.
        execute: [oidc.allowInsecureRequests],
      });
    });
    afterAll(async () => {
      await browser?.close();
    });

    /** A person approving the code in Chromium: signs up the first time, then is signed in. */
    async function approveInBrowser(verificationUriComplete: string) {
      await page.goto(verificationUriComplete);
      if (page.url().includes('/login')) {
        await signUpInPage(page, { name: 'Grace Hopper', email: 'grace@example.com', password: 'correct horse battery' });
      }
      await page.screenshot({ path: `${SCREENSHOTS}oauth-approve.png`, fullPage: true });
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect(page.textContent('main')).resolves.toContain('You can close this page');
    }

    async function deviceFlow() {
      const device = await oidc.initiateDeviceAuthorization(config, { scope: 'profile' });
      expect(device.verification_uri_complete).toBe(`${api.baseUrl}/device?user_code=${device.user_code}`);
      const polling = oidc.pollDeviceAuthorizationGrant(config, device);
      await approveInBrowser(device.verification_uri_complete!);
      return polling;
    }

    it('discovers the server (RFC 8414)', () => {
      const metadata = config.serverMetadata();
      expect(metadata.issuer).toBe(api.baseUrl);
      expect(metadata.device_authorization_endpoint).toBe(api.baseUrl + OAUTH_ROUTES.deviceAuthorization);
      expect(metadata.token_endpoint).toBe(api.baseUrl + OAUTH_ROUTES.token);
    });

    it('signs in with the device flow approved in the browser, refreshes, detects a reuse that revokes the family, and revokes', async () => {
      const tokens = await deviceFlow();
      expect(tokens).toMatchObject({ token_type: 'bearer', access_token: expect.stringMatching(/^prs_/), refresh_token: expect.stringMatching(/^prsr_/), scope: 'profile' });
      expect(tokens.expiresIn()).toBeGreaterThan(3590);
      const me = await get(api, ROUTES.me, tokens.access_token);
      expect(me.body.user.email).toBe('grace@example.com');

      // A refresh: a new pair; the old refresh token is used up.
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.access_token).not.toBe(tokens.access_token);
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
      expect((await get(api, ROUTES.me, refreshed.access_token)).status).toBe(200);

      // The old refresh token again while its successor is unused (that answer may have been lost): the same pair.
      expect((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).refresh_token).toBe(refreshed.refresh_token);
      // Once the successor is used, the old one again is a reuse, and the whole family is revoked.
      const third = await oidc.refreshTokenGrant(config, refreshed.refresh_token!);
      await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
      expect((await get(api, ROUTES.me, third.access_token)).status).toBe(401);
      await expect(oidc.refreshTokenGrant(config, third.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

      // A second sign-in, revoked by the client (RFC 7009): its refresh token and access token stop working.
      const second = await deviceFlow();
      await oidc.tokenRevocation(config, second.refresh_token!);
      expect((await get(api, ROUTES.me, second.access_token)).status).toBe(401);
      await expect(oidc.refreshTokenGrant(config, second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    });
  });

  describe('GET /.well-known/oauth-authorization-server', () => {
    it('publishes the endpoints, the grants and public clients, JSON even to a browser', async () => {
      const res = await request(api, 'GET', OAUTH_ROUTES.metadata, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        issuer: api.baseUrl,
        revocation_endpoint: api.baseUrl + OAUTH_ROUTES.revoke,
        introspection_endpoint: api.baseUrl + OAUTH_ROUTES.introspect,
        // Issue #33: the code flow (PKCE S256 only) and confidential clients joined the device flow.
        authorization_endpoint: api.baseUrl + OAUTH_ROUTES.authorize,
        // Issue #45: service accounts use the client credentials grant, with private_key_jwt among the ways to authenticate.
        grant_types_supported: ['authorization_code', DEVICE_CODE_GRANT_TYPE, 'refresh_token', 'client_credentials', TOKEN_EXCHANGE_GRANT_TYPE],
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
        revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      });
    });
  });

  describe('POST /oauth/device_authorization (RFC 8628 §3.1)', () => {
    it('answers the RFC fields', async () => {
      const res = await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli' });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(res.body).sort()).toEqual(['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete']);
      expect(res.body).toMatchObject({ verification_uri: `${api.baseUrl}/device`, expires_in: 600, interval: 2 });
      // The client's registered name stands for it on the approval page; it says nothing of itself.
      const login = await approvalPage(api, res.body.user_code, await createUser(api));
      expect(login).toMatchObject({ clientDisplayName: 'Prospect CLI', clientName: null, hostname: null });
    });

    it('refuses an unknown client, a missing client_id, a bad scope and a body that is not a form', async () => {
      expectOAuthError(await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'nobody-knows' }), 'invalid_client');
      expectOAuthError(await form(api, OAUTH_ROUTES.deviceAuthorization, {}), 'invalid_request');
      expectOAuthError(await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli', scope: 'a\tb' }), 'invalid_request');
      const json = await request(api, 'POST', OAUTH_ROUTES.deviceAuthorization, { json: { client_id: 'prospect-cli' } });
      expectOAuthError(json, 'invalid_request');
      expect(json.body.error_description).toMatch(/form-encoded/);
    });
  });

  describe('POST /oauth/token (RFC 6749 §5, RFC 8628 §3.4–3.5)', () => {
    const start = async () => (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli' })).body;
    const redeem = (deviceCode: string, clientId = 'prospect-cli') =>
      form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode, client_id: clientId });

    it('names every state of a device code: pending, slow_down, denied, expired, used, unknown', async () => {
      const user = await createUser(api);
      const pending = await start();
      expectOAuthError(await redeem(pending.device_code), 'authorization_pending');
      expectOAuthError(await redeem(pending.device_code), 'slow_down');

      const denied = await start();
      await deny(api, denied.user_code, user);
      expectOAuthError(await redeem(denied.device_code), 'access_denied');

      const approved = await start();
      await approve(api, approved.user_code, user);
      const ok = await redeem(approved.device_code);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('cache-control')).toBe('no-store');
      expect(ok.headers.get('pragma')).toBe('no-cache');
      // Asked for nothing: all the client may have but `admin`, which is only had when asked for.
      expect(ok.body).toEqual({ access_token: expect.stringMatching(/^prs_/), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.stringMatching(/^prsr_/), scope: 'profile tokens orgs' });
      clock.offsetMs += 61_000; // past the reply window: a replay
      expectOAuthError(await redeem(approved.device_code), 'invalid_grant');

      clock.offsetMs += 600_000;
      expectOAuthError(await redeem(pending.device_code), 'expired_token');
      expectOAuthError(await redeem(`prsd_${'x'.repeat(43)}`), 'invalid_grant');
      expectOAuthError(await redeem('garbage'), 'invalid_grant');
    });

    it('refuses a device code of another client, an unknown client, an unknown grant type and a missing one', async () => {
      const device = await start();
      await registerClient(api, { id: 'other-tool', name: 'Other tool' });
      expectOAuthError(await redeem(device.device_code, 'other-tool'), 'invalid_grant');
      expectOAuthError(await redeem(device.device_code, 'nobody-knows'), 'invalid_client');
      expectOAuthError(await form(api, OAUTH_ROUTES.token, { grant_type: 'password', username: 'a', password: 'b' }), 'unsupported_grant_type');
      expectOAuthError(await form(api, OAUTH_ROUTES.token, { device_code: device.device_code }), 'invalid_request');
      expectOAuthError(await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, client_id: 'prospect-cli' }), 'invalid_request');
      expectOAuthError(await form(api, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'prospect-cli', refresh_token: 'nope' }), 'invalid_grant');
    });

    it('a known path with the wrong method is 405 with Allow, still as JSON', async () => {
      const res = await request(api, 'GET', OAUTH_ROUTES.token, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body.error_description).toEqual(expect.any(String));
    });
  });

  describe('POST /oauth/revoke (RFC 7009) and POST /oauth/introspect (RFC 7662)', () => {
    let adminToken: string;
    let userToken: string;
    beforeAll(async () => {
      const admin = await createUser(api, { role: 'admin' });
      const user = await createUser(api);
      adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct' })).accessToken;
      userToken = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;
    });
    const introspect = (token: string, bearer?: string) =>
      form(api, OAUTH_ROUTES.introspect, { token }, bearer ? { authorization: `Bearer ${bearer}` } : {});
    const signIn = async () => {
      const user = await createUser(api);
      const device = (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli', scope: 'profile' })).body;
      await approve(api, device.user_code, user);
      const tokens = (await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: 'prospect-cli' })).body;
      return { user, tokens };
    };

    it('scopes mean something: unknown or unallowed ones are invalid_scope; a token does what it was granted, and says so', async () => {
      // The issue's example: nothing of it is a scope here.
      const bogus = await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'prospect-cli', scope: 'admin billing:write users:delete' });
      expectOAuthError(bogus, 'invalid_scope');
      expect(bogus.body.error_description).toBe('Unknown scope: billing:write users:delete (scopes_supported lists them).');
      // other-tool may ask for `profile` only (a client's allowed scopes unless an admin chose more).
      await registerClient(api, { id: 'other-tool', name: 'Other tool' });
      expectOAuthError(await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'other-tool', scope: 'profile tokens' }), 'invalid_scope');
      // `orgs` is any person's, but only a client allowed it may ask for it (issue #44).
      const orgs = await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'other-tool', scope: 'profile orgs' });
      expectOAuthError(orgs, 'invalid_scope');
      expect(orgs.body.error_description).toBe('Not allowed to other-tool: orgs.');
      const user = await createUser(api);
      const device = (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'other-tool' })).body;
      const shown = await approvalPage(api, device.user_code, user);
      expect(shown.scopes).toEqual([{ name: 'profile', words: 'See your name and e-mail address' }]);
      await approve(api, device.user_code, user);
      const tokens = (await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: 'other-tool' })).body;
      expect(tokens.scope).toBe('profile');
      const me = await get(api, ROUTES.me, tokens.access_token);
      expect(me.status).toBe(200);
      expect(me.headers.get('x-oauth-scopes')).toBe('profile');
      // Creating a token needs `tokens`: 403 with the RFC 6750 challenge naming it, and nothing issued.
      const issue = await post(api, ROUTES.issueToken, { label: 'from other-tool' }, tokens.access_token);
      expect(issue.status).toBe(403);
      expect(issue.body).toMatchObject({ error: 'insufficient_scope', message: expect.stringContaining('“tokens”') });
      expect(issue.headers.get('www-authenticate')).toBe('Bearer realm="prospect", error="insufficient_scope", scope="tokens"');
      expect((await introspect(tokens.access_token, adminToken)).body).toMatchObject({ client_id: 'other-tool', scope: 'profile' });
      expect((await form(api, OAUTH_ROUTES.introspect, { token: tokens.access_token }, { authorization: `Bearer ${tokens.access_token}` })).status).toBe(403);
      expect(await accessTokens(api, { label: 'from other-tool' })).toHaveLength(0);
      // Published for clients to read.
      expect((await get(api, OAUTH_ROUTES.metadata)).body.scopes_supported).toEqual(['profile', 'tokens', 'admin', 'openid', 'email', 'orgs']);
    });

    it('revoking an unknown token is a 200, as the RFC says', async () => {
      expect((await form(api, OAUTH_ROUTES.revoke, { token: 'prs_unknown' })).status).toBe(200);
      expect((await form(api, OAUTH_ROUTES.revoke, { token: `prsr_${'x'.repeat(43)}` })).status).toBe(200);
      expectOAuthError(await form(api, OAUTH_ROUTES.revoke, {}), 'invalid_request');
    });

    it('revoking an access token of a device login revokes its family; a token of another client is refused', async () => {
      const { tokens } = await signIn();
      expectOAuthError(await form(api, OAUTH_ROUTES.revoke, { token: tokens.access_token, client_id: 'other-tool' }), 'unauthorized_client');
      expect((await get(api, ROUTES.me, tokens.access_token)).status).toBe(200);
      expect((await form(api, OAUTH_ROUTES.revoke, { token: tokens.access_token, client_id: 'prospect-cli' })).status).toBe(200);
      expect((await get(api, ROUTES.me, tokens.access_token)).status).toBe(401);
      expectOAuthError(await form(api, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'prospect-cli', refresh_token: tokens.refresh_token }), 'invalid_grant');
    });

    it('introspection needs an admin bearer token', async () => {
      const res = await introspect(userToken);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await introspect(adminToken, userToken)).status).toBe(403);
    });

    it('a refresh may ask for the scope granted, never more (invalid_scope); a token_type_hint it does not know is ignored', async () => {
      const { tokens } = await signIn();
      const refresh = (refreshToken: string, scope: string) =>
        form(api, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'prospect-cli', refresh_token: refreshToken, scope });
      expectOAuthError(await refresh(tokens.refresh_token, 'profile admin'), 'invalid_scope');
      const same = await refresh(tokens.refresh_token, 'profile');
      expect(same.status).toBe(200);
      expect(same.body.scope).toBe('profile');
      expect((await form(api, OAUTH_ROUTES.revoke, { token: same.body.refresh_token, token_type_hint: 'something_else' })).status).toBe(200);
      expect((await get(api, ROUTES.me, same.body.access_token)).status).toBe(401);
    });

    it('answers active, sub, client_id, exp, iat, token_type and username; {active: false} alone for a dead token', async () => {
      const { user, tokens } = await signIn();
      const now = Math.floor(clock.now().getTime() / 1000);
      const access = await introspect(tokens.access_token, adminToken);
      expect(access.status).toBe(200);
      expect(access.headers.get('cache-control')).toBe('no-store');
      expect(access.body).toEqual({ active: true, sub: user.id, username: user.email, client_id: 'prospect-cli', token_type: 'Bearer', scope: 'profile', iat: expect.any(Number), exp: expect.any(Number) });
      expect(access.body.iat).toBeGreaterThanOrEqual(now - 1);
      expect(access.body.exp - access.body.iat).toBe(3600);
      expect((await introspect(tokens.refresh_token, adminToken)).body).toMatchObject({ active: true, token_type: 'refresh_token', sub: user.id });
      // A token created directly has the CLI's scopes, and says so.
      expect((await introspect(userToken, adminToken)).body).toMatchObject({ active: true, client_id: 'prospect-cli', token_type: 'Bearer', scope: 'profile tokens admin orgs' });
      // …and labels the session on the tokens page, refreshed or not.
      const refreshed = (await form(api, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'prospect-cli', refresh_token: tokens.refresh_token })).body;
      const [session] = (await api.app.get(TokensService).listForUser(user.id)).filter((t) => t.origin === 'device');
      expect(session!.label).toBe('Prospect CLI');
      tokens.refresh_token = refreshed.refresh_token;
      tokens.access_token = refreshed.access_token;

      await form(api, OAUTH_ROUTES.revoke, { token: tokens.refresh_token });
      expect((await introspect(tokens.access_token, adminToken)).body).toEqual({ active: false });
      expect((await introspect(tokens.refresh_token, adminToken)).body).toEqual({ active: false });
      expect((await introspect('garbage', adminToken)).body).toEqual({ active: false });
    });
  });
});
