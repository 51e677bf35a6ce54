import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page, Request as PlaywrightRequest } from 'playwright-core';
import { Clock } from '../../src/common/clock.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { enrolTotp, totpCode } from '../support/account-flows.js';
import { createUser, deviceLoginToken } from '../support/fixtures.js';
import { get, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { signInAs } from '../support/web-client.js';

/** Real time that a test can move forward: openid-client checks the ID token's times against its own clock. */
class ShiftedClock extends Clock {
  offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

const PASSWORD = 'correct horse battery';
/** A Chrome extension's id (32 letters a-p) and what chrome.identity.getRedirectURL() answers for it. */
const EXTENSION_ID = 'bcdefghijklmnopabcdefghijklmnopa';
const EXTENSION_REDIRECT = `https://${EXTENSION_ID}.chromiumapp.org/`;
const EXTENSION_ORIGIN = `chrome-extension://${EXTENSION_ID}`;
/** A desktop tool's loopback redirect, registered without a port (RFC 8252: any port at the time of the request). */
const LOOPBACK_PORT = 51_234;
const LOOPBACK_REDIRECT = `http://127.0.0.1:${LOOPBACK_PORT}/callback`;

/**
 * The browser extension's door (issue #33) in Chromium: an unmodified OpenID Connect client
 * library through the consent page, the flow an extension runs with its chromiumapp.org redirect,
 * remembered consent and its revocation, prompt=none, a second factor and sudo mode on the way,
 * and CORS as a browser enforces it.
 */
describe('the authorization code flow in Chromium', () => {
  const clock = new ShiftedClock();
  let api: TestApp;
  let browser: Browser;
  let adminToken: string;

  beforeAll(async () => {
    [api, browser] = await Promise.all([startTestApp({ clock }), launchBrowser()]);
    const admin = await createUser(api, { role: 'admin' });
    adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    await register({ id: 'web-tool', name: 'Web Tool', allowedScopes: ['openid', 'profile', 'email'], redirectUris: ['http://127.0.0.1/callback'] });
    await register({
      id: 'prospect-extension',
      name: 'Prospect for Chrome',
      allowedScopes: ['openid', 'profile', 'email', 'tokens'],
      redirectUris: [EXTENSION_REDIRECT],
      allowedOrigins: [EXTENSION_ORIGIN],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  async function register(body: object) {
    const res = await request(api, 'POST', '/api/admin/clients', { json: body, token: adminToken });
    expect(res.status).toBe(201);
    return res.body;
  }

  /**
   * A browser of its own (cookies) that catches the navigation to the client's redirect URI:
   * nothing answers there (chromiumapp.org is what Chrome hands to the extension; the loopback
   * port has no server), so the request the browser made is the answer, read from its URL. A
   * navigation the page's CSP stopped would fail as ERR_BLOCKED_BY_CSP and log a violation.
   */
  async function browserCatching(redirectPrefix: string) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    /** The navigation to the client that `action` leads to. */
    const redirected = async (action: () => Promise<unknown>): Promise<URL> => {
      const toClient = (r: PlaywrightRequest) => r.url().startsWith(redirectPrefix);
      const [sent, failed] = await Promise.all([
        page.waitForEvent('request', { predicate: toClient, timeout: 10_000 }),
        page.waitForEvent('requestfailed', { predicate: toClient, timeout: 10_000 }),
        // Chromium's own error page comes in its place: the next navigation must not race it.
        page.waitForEvent('framenavigated', { predicate: (frame) => frame === page.mainFrame() && frame.url().startsWith('chrome-error:'), timeout: 10_000 }),
        // The navigation itself fails (nobody answers there): what matters is where it went.
        action().catch(() => undefined),
      ]);
      expect(failed.failure()?.errorText).not.toMatch(/BLOCKED_BY_CSP|BLOCKED_BY_CLIENT/);
      expect(violations).toEqual([]);
      return new URL(sent.url());
    };
    return { context, page, violations, redirected };
  }

  async function signIn(page: Page, email: string) {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  /** What an extension's service worker does: a PKCE pair and the authorization URL (as examples/browser-extension builds it). */
  async function extensionRequest(extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = new URL(api.baseUrl + OAUTH_ROUTES.authorize);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'prospect-extension',
      redirect_uri: EXTENSION_REDIRECT,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...extra,
    }).toString();
    return { url: url.href, verifier, state };
  }

  /** The service worker's exchange: a form POST from the extension's origin. */
  const exchange = (code: string, verifier: string, origin = EXTENSION_ORIGIN) =>
    request(api, 'POST', OAUTH_ROUTES.token, {
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'prospect-extension', code, redirect_uri: EXTENSION_REDIRECT, code_verifier: verifier }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    });

  it('an unmodified openid-client: discovery, code flow with PKCE through the consent page, ID token, userinfo, refresh with rotation, revocation; sub is the id /me answers', async () => {
    const person = await createUser(api, { name: 'Ada Lovelace' });
    const config = await oidc.discovery(new URL(api.baseUrl), 'web-tool', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    expect(config.serverMetadata()).toMatchObject({
      issuer: api.baseUrl,
      authorization_endpoint: api.baseUrl + OAUTH_ROUTES.authorize,
      userinfo_endpoint: api.baseUrl + OAUTH_ROUTES.userinfo,
      jwks_uri: api.baseUrl + OAUTH_ROUTES.jwks,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      id_token_signing_alg_values_supported: ['ES256'],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: LOOPBACK_REDIRECT,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });

    const { page, violations, redirected, context } = await browserCatching(LOOPBACK_REDIRECT);
    await page.goto(authorizationUrl.href);
    expect(new URL(page.url()).pathname).toBe('/login');
    await Promise.all([page.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), signIn(page, person.email)]);
    const main = await page.textContent('main');
    expect(main).toContain('Web Tool wants to sign you in');
    expect(main).toContain(`Signed in as Ada Lovelace (${person.email})`);
    expect(main).toContain('See your e-mail address and whether it is confirmed');
    await page.screenshot({ path: `${SCREENSHOTS}oauth-consent.png`, fullPage: true });
    const callback = await redirected(() => page.getByRole('button', { name: 'Approve' }).click());
    expect(callback.searchParams.get('iss')).toBe(api.baseUrl);

    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: api.baseUrl, sub: person.id, aud: 'web-tool', nonce, name: 'Ada Lovelace', email: person.email, email_verified: true, amr: ['pwd'] });
    expect(claims.auth_time).toEqual(expect.any(Number));
    expect(tokens.scope).toBe('profile openid email');
    // The same person the CLI signs in: /me answers the ID token's sub, with this token and with a device login's.
    expect((await get(api, ROUTES.me, tokens.access_token)).body.user.id).toBe(claims.sub);
    expect((await get(api, ROUTES.me, await deviceLoginToken(api, person))).body.user.id).toBe(claims.sub);
    expect(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).toEqual({ sub: person.id, name: 'Ada Lovelace', email: person.email, email_verified: true });

    // Refresh with rotation; an older generation again is a reuse that ends the family.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const third = await oidc.refreshTokenGrant(config, refreshed.refresh_token!);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await get(api, ROUTES.me, third.access_token)).status).toBe(401);

    // A second sign-in asks nothing (the consent is remembered), and is revoked by the client (RFC 7009).
    const again = oidc.buildAuthorizationUrl(config, { redirect_uri: LOOPBACK_REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    const second = await oidc.authorizationCodeGrant(config, await redirected(() => page.goto(again.href)), { pkceCodeVerifier: verifier, expectedState: state });
    await oidc.tokenRevocation(config, second.refresh_token!);
    expect((await get(api, ROUTES.me, second.access_token)).status).toBe(401);
    await expect(oidc.refreshTokenGrant(config, second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(violations).toEqual([]);
    await context.close();
  });

  it('the extension’s flow: its chromiumapp.org redirect caught, the code exchanged from its origin (CORS), consent remembered, then revoked under Connected apps', async () => {
    const person = await createUser(api, { name: 'Grace Hopper' });
    const { page, violations, redirected, context } = await browserCatching(EXTENSION_REDIRECT);
    const first = await extensionRequest({ prompt: 'none' });
    // Nobody signed in, prompt=none: an answer at once, nothing shown.
    const silent = await redirected(() => page.goto(first.url));
    expect(Object.fromEntries(silent.searchParams)).toMatchObject({ error: 'login_required', state: first.state, iss: api.baseUrl });

    const signInRequest = await extensionRequest();
    await page.goto(signInRequest.url);
    await Promise.all([page.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), signIn(page, person.email)]);
    expect(await page.textContent('main')).toContain('Prospect for Chrome wants to sign you in');
    const approved = await redirected(() => page.getByRole('button', { name: 'Approve' }).click());
    expect(approved.searchParams.get('state')).toBe(signInRequest.state);
    const exchanged = await exchange(approved.searchParams.get('code')!, signInRequest.verifier);
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('access-control-allow-origin')).toBe(EXTENSION_ORIGIN);
    const token = exchanged.body.access_token as string;
    expect((await get(api, ROUTES.me, token)).body.user.id).toBe(person.id);
    expect(decodeJwt(exchanged.body.id_token).sub).toBe(person.id);

    // Remembered: the next sign-in, silent or not, goes straight back with a code.
    for (const extra of [{}, { prompt: 'none' }] as Array<Record<string, string>>) {
      const next = await extensionRequest(extra);
      const back = await redirected(() => page.goto(next.url));
      expect(back.searchParams.get('code')).toMatch(/^prsc_/);
      expect((await exchange(back.searchParams.get('code')!, next.verifier)).status).toBe(200);
    }
    // More than was approved: prompt=none says consent_required.
    const more = await extensionRequest({ prompt: 'none', scope: 'openid tokens' });
    expect((await redirected(() => page.goto(more.url))).searchParams.get('error')).toBe('consent_required');

    // Another browser, signed out: the sign-in continues to the client by itself (the sign-in form's
    // page allows only this site as a form target, so the way out is a page that goes on, not a redirect).
    const elsewhere = await browserCatching(EXTENSION_REDIRECT);
    const fresh = await extensionRequest();
    await elsewhere.page.goto(fresh.url);
    const signedIn = await elsewhere.redirected(() => signIn(elsewhere.page, person.email));
    expect((await exchange(signedIn.searchParams.get('code')!, fresh.verifier)).status).toBe(200);
    await elsewhere.context.close();

    // Connected apps: listed with the tokens, disconnected, its sessions ended, and the next sign-in asks again.
    await page.goto(`${api.baseUrl}${ROUTES.tokensPage}`);
    expect(await page.textContent('#connected-apps + p + table')).toContain('Prospect for Chrome');
    expect(await page.textContent('main')).toContain('connected app');
    await page.screenshot({ path: `${SCREENSHOTS}oauth-connected-apps.png`, fullPage: true });
    await page.getByRole('button', { name: 'Disconnect Prospect for Chrome' }).click();
    expect(await page.textContent('main')).toContain('Disconnected Prospect for Chrome');
    expect((await get(api, ROUTES.me, token)).status).toBe(401);
    const afterRevoke = await extensionRequest();
    await page.goto(afterRevoke.url);
    expect(await page.textContent('main')).toContain('Prospect for Chrome wants to sign you in');
    expect(violations).toEqual([]);
    await context.close();
  });

  it('a second factor and sudo mode on the way: the sign-in asks for the code, an approval after sudo mode lapsed asks to confirm first', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, PASSWORD);
    const key = await enrolTotp(web);
    const { page, redirected, context } = await browserCatching(EXTENSION_REDIRECT);
    const req = await extensionRequest();
    await page.goto(req.url);
    await Promise.all([page.waitForURL((url) => url.pathname === '/login/code'), signIn(page, person.email)]);
    // The next step's code: enrolling used this one (a code is accepted once).
    await page.getByLabel('Code').fill(totpCode(key, clock.now().getTime() + 30_000));
    await Promise.all([page.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    const back = await redirected(() => page.getByRole('button', { name: 'Approve' }).click());
    const exchanged = await exchange(back.searchParams.get('code')!, req.verifier);
    expect(decodeJwt(exchanged.body.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);

    // Three hours later (sudo mode lasts two): asking again for consent confirms who it is first.
    clock.offsetMs += 3 * 3600 * 1000;
    try {
      const later = await extensionRequest({ prompt: 'consent' });
      await page.goto(later.url);
      expect(await page.textContent('main')).toContain('Confirm it’s you');
      await page.screenshot({ path: `${SCREENSHOTS}oauth-sudo.png`, fullPage: true });
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), page.getByRole('button', { name: 'Confirm' }).click()]);
      expect(await page.textContent('main')).toContain('wants to sign you in');
      const confirmed = await redirected(() => page.getByRole('button', { name: 'Approve' }).click());
      const id = decodeJwt((await exchange(confirmed.searchParams.get('code')!, later.verifier)).body.id_token);
      // The confirmation is the latest proof: auth_time is now (the shifted clock's), with the password.
      expect(id.amr).toEqual(['pwd']);
      expect(Math.abs((id.auth_time as number) - clock.now().getTime() / 1000)).toBeLessThan(60);
    } finally {
      clock.offsetMs = 0;
    }
    await context.close();
  });

  it('CORS as Chromium enforces it: a registered origin reads the answers, another cannot, and the authorization endpoint never answers one', async () => {
    // Two origins of their own on the loopback interface (a page there may call the API, also on it).
    const servers: Server[] = [];
    const origin = async () => {
      const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>probe</title>'));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://localhost:${(server.address() as AddressInfo).port}`;
    };
    const [allowed, foreign] = [await origin(), await origin()];
    await register({ id: 'spa-tool', name: 'SPA Tool', allowedScopes: ['openid'], redirectUris: ['https://spa.example.com/callback'], allowedOrigins: [allowed] });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const probe = async (from: string, path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) => {
        if (!page.url().startsWith(from)) await page.goto(`${from}/probe`);
        return page.evaluate(
          async ({ url, init }) => {
            try {
              return { read: true, status: (await fetch(url, init)).status };
            } catch {
              return { read: false, status: 0 };
            }
          },
          { url: api.baseUrl + path, init },
        );
      };
      const form = {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'spa-tool', code: 'prsc_x', redirect_uri: 'https://spa.example.com/callback', code_verifier: 'v'.repeat(43) }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      };
      expect(await probe(allowed, OAUTH_ROUTES.jwks)).toEqual({ read: true, status: 200 });
      expect(await probe(allowed, OAUTH_ROUTES.openidConfiguration)).toEqual({ read: true, status: 200 });
      expect(await probe(allowed, OAUTH_ROUTES.token, form)).toEqual({ read: true, status: 400 });
      // A call that needs a preflight (Authorization): the preflight passes, the answer is read.
      expect(await probe(allowed, OAUTH_ROUTES.userinfo, { headers: { authorization: 'Bearer prs_nope' } })).toEqual({ read: true, status: 401 });
      // Never on the authorization endpoint, even for a registered origin.
      expect(await probe(allowed, `${OAUTH_ROUTES.authorize}?client_id=spa-tool`)).toEqual({ read: false, status: 0 });
      for (const path of [OAUTH_ROUTES.jwks, OAUTH_ROUTES.openidConfiguration, OAUTH_ROUTES.metadata]) expect(await probe(foreign, path)).toEqual({ read: false, status: 0 });
      expect(await probe(foreign, OAUTH_ROUTES.token, form)).toEqual({ read: false, status: 0 });
    } finally {
      await context.close();
      for (const server of servers) server.close();
    }
    // Another client's origin passes a preflight (which names no client), but not spa-tool's own request: refused, and unreadable.
    const crossed = await request(api, 'POST', OAUTH_ROUTES.token, { body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'spa-tool', code: 'prsc_x', redirect_uri: 'x', code_verifier: 'v'.repeat(43) }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', origin: EXTENSION_ORIGIN } });
    expect(crossed.status).toBe(400);
    expect(crossed.body.error).toBe('invalid_client');
    expect(crossed.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('the ID token verifies with jose against the published JWKS (signature, iss, aud)', async () => {
    const person = await createUser(api);
    const { page, redirected, context } = await browserCatching(EXTENSION_REDIRECT);
    const req = await extensionRequest();
    await page.goto(req.url);
    await Promise.all([page.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), signIn(page, person.email)]);
    const back = await redirected(() => page.getByRole('button', { name: 'Approve' }).click());
    const { id_token } = (await exchange(back.searchParams.get('code')!, req.verifier)).body;
    const jwks = createRemoteJWKSet(new URL(api.baseUrl + OAUTH_ROUTES.jwks));
    const { payload, protectedHeader } = await jwtVerify(id_token, jwks, { issuer: api.baseUrl, audience: 'prospect-extension' });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload.sub).toBe(person.id);
    await context.close();
  });
});
