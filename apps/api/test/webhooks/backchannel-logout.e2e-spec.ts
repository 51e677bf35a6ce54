import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEVICE_CODE_GRANT_TYPE, OAUTH_ROUTES } from '@prospect/contract';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { AdminUsersService } from '../../src/admin/admin-users.service.js';
import { ApiException } from '../../src/common/api-exception.js';
import { OAuthClientsService } from '../../src/oauth/oauth-clients.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../src/webhooks/webhook-sender.js';
import { waitFor } from '../support/eventually.js';
import { approve, createUser } from '../support/fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { signInAs } from '../support/web-client.js';

/** A client's back-channel logout endpoint: keeps each `logout_token` POSTed to it. */
async function startLogoutReceiver() {
  const tokens: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (req.headers['content-type'] === 'application/x-www-form-urlencoded' && form.get('logout_token')) tokens.push(form.get('logout_token')!);
      res.writeHead(200, { 'cache-control': 'no-store' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`,
    tokens,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** OpenID Connect Back-Channel Logout 1.0 (issue #46 item 4): a logout token for each way a grant ends. */
describe('back-channel logout', () => {
  let api: TestApp;
  let receiver: Awaited<ReturnType<typeof startLogoutReceiver>>;
  const clientId = `bcl-${Date.now().toString(36)}`;
  beforeAll(async () => {
    receiver = await startLogoutReceiver();
    api = await startTestApp({ env: { WEBHOOKS_ALLOW_INSECURE_URLS: 'true' } });
    const admin = await createUser(api, { role: 'admin' });
    await api.app.get(OAuthClientsService).register({ id: clientId, name: 'Partner app', allowedScopes: ['profile'], backchannelLogoutUri: receiver.url }, admin.id, null);
  });
  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });

  const form = (path: string, params: Record<string, string>) =>
    fetch(api.baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params) });

  /** A grant of the client for `user` (RFC 8628: started by the client, approved, redeemed): its tokens. */
  async function grant(user: { id: string }) {
    const start = (await (await form(OAUTH_ROUTES.deviceAuthorization, { client_id: clientId })).json()) as { device_code: string; user_code: string };
    await approve(api, start.user_code, user);
    const res = await form(OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: start.device_code, client_id: clientId });
    expect(res.status).toBe(200);
    return (await res.json()) as { access_token: string; refresh_token: string };
  }

  /** The next `count` logout tokens the client receives, each verified against the JWKS as a client would (jose). */
  async function nextLogoutToken(before: number, user: { id: string }, count = 1) {
    await waitFor('the logout tokens', () => receiver.tokens.length >= before + count);
    expect(receiver.tokens).toHaveLength(before + count);
    const jwks = createRemoteJWKSet(new URL(api.baseUrl + OAUTH_ROUTES.jwks));
    const ids = new Set<unknown>();
    for (const token of receiver.tokens.slice(before)) {
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: api.config.publicUrl, audience: clientId, typ: 'logout+jwt', maxTokenAge: '2 minutes' });
      expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'logout+jwt', kid: expect.any(String) });
      expect(payload).toEqual({ iss: api.config.publicUrl, aud: clientId, sub: user.id, iat: expect.any(Number), exp: expect.any(Number), jti: expect.any(String), events: { [BACKCHANNEL_LOGOUT_EVENT]: {} } });
      // §2.4: a logout token never carries a nonce.
      expect(payload).not.toHaveProperty('nonce');
      ids.add(payload.jti);
    }
    expect(ids.size).toBe(count);
  }

  it('says so in the discovery document', async () => {
    const config = (await (await fetch(api.baseUrl + '/.well-known/openid-configuration')).json()) as Record<string, unknown>;
    expect(config).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: false });
  });

  it('refuses a back-channel logout URI the webhook rules refuse', async () => {
    const admin = await createUser(api, { role: 'admin' });
    for (const uri of ['http://10.0.0.1/logout', 'https://169.254.169.254/x', 'ftp://127.0.0.1/x']) {
      const refused = await api.app.get(OAuthClientsService).register({ id: `bad-${Date.now().toString(36)}`, name: 'Bad', allowedScopes: ['profile'], backchannelLogoutUri: uri }, admin.id, null).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ApiException);
      expect((refused as ApiException).getStatus()).toBe(400);
    }
  });

  it('takes the URI on the admin’s client forms, under the same rules, and drops it when emptied', async () => {
    const admin = await createUser(api, { role: 'admin' });
    const web = await signInAs(api, admin.email, 'correct horse battery');
    const register = async (form: Record<string, string>) => {
      const page = await web.send('GET', '/admin/clients');
      return web.send('POST', '/admin/clients', { _csrf: web.csrfFrom(page.text), scopes: 'profile', ...form });
    };
    const id = `form-${Date.now().toString(36)}`;
    const refused = await register({ id, name: 'Form app', backchannel_logout_uri: 'https://169.254.169.254/logout' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('private or link-local');
    expect((await register({ id, name: 'Form app', backchannel_logout_uri: receiver.url })).status).toBe(303);
    expect((await api.app.get(OAuthClientsService).find(id))?.backchannelLogoutUri).toBe(receiver.url);
    const edit = await web.send('GET', `/admin/clients/${id}`);
    expect(edit.text).toContain(`value="${receiver.url}"`);
    expect((await web.send('POST', `/admin/clients/${id}`, { _csrf: web.csrfFrom(edit.text), name: 'Form app', scopes: 'profile', backchannel_logout_uri: '' })).status).toBe(303);
    expect((await api.app.get(OAuthClientsService).find(id))?.backchannelLogoutUri).toBeNull();
  });

  it('sends a signed logout token when the person signs the app out (its token revoked)', async () => {
    const user = await createUser(api);
    const tokens = await grant(user);
    const before = receiver.tokens.length;
    const res = await fetch(api.baseUrl + '/api/cli/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(res.status).toBe(204);
    await nextLogoutToken(before, user);
  });

  it('sends one when the client revokes its refresh token (RFC 7009)', async () => {
    const user = await createUser(api);
    const tokens = await grant(user);
    const before = receiver.tokens.length;
    expect((await form(OAUTH_ROUTES.revoke, { token: tokens.refresh_token, client_id: clientId })).status).toBe(200);
    await nextLogoutToken(before, user);
  });

  it('sends one for each grant when the person signs out everywhere', async () => {
    const user = await createUser(api);
    await grant(user);
    await grant(user);
    const before = receiver.tokens.length;
    await api.app.get(TokensService).revokeAllForUser(user.id, null);
    await nextLogoutToken(before, user, 2);
  });

  it('sends one when an administrator disables the person', async () => {
    const user = await createUser(api);
    const admin = await createUser(api, { role: 'admin' });
    await grant(user);
    const before = receiver.tokens.length;
    await api.app.get(AdminUsersService).update(user.id, { disabled: true }, admin.id, null);
    await nextLogoutToken(before, user);
  });

  it('sends one when the password changes (what AccountService.changePassword and a reset end)', async () => {
    const user = await createUser(api);
    await grant(user);
    const before = receiver.tokens.length;
    await api.app.get(TokensService).revokeGrantsOfUser(user.id, 'password changed', null);
    await nextLogoutToken(before, user);
    // Ended once: a second revocation of the same grants tells nobody again.
    await api.app.get(TokensService).revokeGrantsOfUser(user.id, 'password changed', null);
    await api.app.get(TokensService).revokeAllForUser(user.id, null);
    const other = await createUser(api);
    await grant(other);
    await api.app.get(TokensService).revokeGrantsOfUser(other.id, 'password changed', null);
    await nextLogoutToken(before + 1, other);
  });
});
