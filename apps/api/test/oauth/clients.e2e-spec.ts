import { TokensService } from '../../src/tokens/tokens.service.js';
import { clientById } from '../support/client-fixtures.js';
import { authEvents, createUser } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { postFrom, signInAs } from '../support/web-client.js';

const CLIENTS = '/api/admin/clients';
const EXTENSION_ID = 'abcdefghijklmnopabcdefghijklmnop';

/**
 * Clients of the code flow as an admin registers them (issue #33): redirect URIs and allowed
 * origins checked as the code flow compares them, public or confidential, a confidential client's
 * secret shown once and kept hashed, on the JSON API and the admin pages alike.
 */
describe('OAuth clients of the code flow', () => {
  let api: TestApp;
  let adminToken: string;
  let admin: { id: string; email: string };

  beforeAll(async () => {
    api = await startTestApp();
    admin = await createUser(api, { role: 'admin' });
    adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
  });
  afterAll(() => api.close());

  const call = (method: string, path: string, json?: unknown) => request(api, method, path, { json, token: adminToken });

  describe('POST and PATCH /api/admin/clients', () => {
    it('registers an extension’s client: its chromiumapp.org redirect, its origin, public by default, no secret', async () => {
      const created = await call('POST', CLIENTS, {
        id: 'prospect-extension',
        name: 'Prospect for Chrome',
        allowedScopes: ['openid', 'profile', 'email'],
        redirectUris: [`https://${EXTENSION_ID}.chromiumapp.org/`],
        allowedOrigins: [`chrome-extension://${EXTENSION_ID}`],
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ type: 'public', redirectUris: [`https://${EXTENSION_ID}.chromiumapp.org/`], allowedOrigins: [`chrome-extension://${EXTENSION_ID}`] });
      expect(created.body).not.toHaveProperty('clientSecret');
      expect(await clientById(api, 'prospect-extension')).toMatchObject({
        type: 'public',
        redirectUris: [`https://${EXTENSION_ID}.chromiumapp.org/`],
        allowedOrigins: [`chrome-extension://${EXTENSION_ID}`],
      });
      // sql-on-purpose: no secret is stored for a public client, not even a hash
      expect(await api.dataSource.query(`SELECT secret_hash FROM oauth_clients WHERE id = 'prospect-extension'`)).toEqual([{ secret_hash: null }]);
      const [event] = await authEvents(api, { type: 'oauth.client_register', detail: { clientId: 'prospect-extension' } });
      expect(event.detail).toMatchObject({ type: 'public', redirectUris: `https://${EXTENSION_ID}.chromiumapp.org/` });
    });

    it('refuses redirect URIs and origins the code flow could not compare exactly or must not trust, and writes nothing', async () => {
      const bad: Array<Record<string, unknown>> = [
        { redirectUris: ['https://*.example.com/callback'] },
        { redirectUris: [`https://${EXTENSION_ID}.chromiumapp.org`] },
        { redirectUris: ['https://app.example.com/callback#done'] },
        { redirectUris: ['http://app.example.com/callback'] },
        { redirectUris: ['http://localhost:8080/callback'] },
        { redirectUris: ['https://user:pass@app.example.com/callback'] },
        { redirectUris: ['javascript:alert(1)'] },
        { redirectUris: ['callback'] },
        { redirectUris: Array.from({ length: 11 }, (_, i) => `https://app.example.com/${i}`) },
        { allowedOrigins: ['https://app.example.com/'] },
        { allowedOrigins: ['http://app.example.com'] },
        { allowedOrigins: ['chrome-extension://not-an-id'] },
        { allowedOrigins: ['*'] },
        { type: 'secret-keeping' },
      ];
      for (const change of bad) {
        const res = await call('POST', CLIENTS, { id: 'refused-client', name: 'Refused', allowedScopes: ['openid'], ...change });
        expect({ change, status: res.status, error: res.body.error }).toEqual({ change, status: 400, error: 'invalid_request' });
      }
      expect(await clientById(api, 'refused-client')).toBeNull();
      // What the code flow does take: loopback on any port, a private-use scheme, an https origin.
      const good = await call('POST', CLIENTS, {
        id: 'desktop-tool',
        name: 'Desktop tool',
        allowedScopes: ['openid'],
        redirectUris: ['http://127.0.0.1/callback', 'http://[::1]:8080/cb', 'com.example.desktop:/oauth'],
        allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
      });
      expect(good.status).toBe(201);
    });

    it("changes redirect URIs and origins in one PATCH; never gives an admin client a code flow, nor changes the built-in client's loopback", async () => {
      await call('POST', CLIENTS, { id: 'editable', name: 'Editable', allowedScopes: ['openid'] });
      const patched = await call('PATCH', `${CLIENTS}/editable`, { redirectUris: ['https://app.example.com/cb'], allowedOrigins: ['https://app.example.com'] });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ redirectUris: ['https://app.example.com/cb'], allowedOrigins: ['https://app.example.com'] });
      expect((await call('PATCH', `${CLIENTS}/editable`, { redirectUris: ['https://app.example.com/cb*'] })).status).toBe(400);
      expect((await clientById(api, 'editable'))?.redirectUris).toEqual(['https://app.example.com/cb']);
      for (const id of ['prospect-cli', 'editable']) {
        const res = await call('PATCH', `${CLIENTS}/${id}`, id === 'editable' ? { allowedScopes: ['openid', 'admin'] } : { redirectUris: ['https://app.example.com/cb'] });
        expect(res.status).toBe(400);
      }
      expect((await clientById(api, 'prospect-cli'))?.redirectUris).toEqual(['http://127.0.0.1/callback']);
      // Its name is still the administrator's to change.
      expect((await call('PATCH', `${CLIENTS}/prospect-cli`, { name: 'Prospect CLI (ours)' })).status).toBe(200);
    });

    it('a confidential client cannot start a device login (the device flow is for public clients)', async () => {
      await call('POST', CLIENTS, { id: 'backend', name: 'Backend', type: 'confidential', allowedScopes: ['profile'] });
      const res = await request(api, 'POST', '/oauth/device_authorization', { body: 'client_id=backend', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'unauthorized_client' });
    });
  });

  describe('the admin pages', () => {
    it('register a confidential client with its redirect URIs, show its secret once, and make a new one once', async () => {
      const web = await signInAs(api, admin.email, 'correct horse battery');
      const registered = await postFrom(web, '/admin/clients', '/admin/clients', {
        id: 'partner-app',
        name: 'Partner App',
        scopes: 'openid',
        type: 'confidential',
        redirect_uris: 'https://partner.example.com/callback\r\nhttp://127.0.0.1/callback\r\n',
        allowed_origins: '',
      });
      expect(registered.status).toBe(303);
      const shown = await web.send('GET', registered.location!);
      const secret = /id="client-secret" class="token" type="text" readonly value="(prsk_[A-Za-z0-9_-]{43})"/.exec(shown.text)?.[1];
      expect(secret).toBeDefined();
      // sql-on-purpose: the secret is stored only as its hash
      const [row] = await api.dataSource.query(`SELECT secret_hash = sha256($1::bytea) AS hashed, redirect_uris FROM oauth_clients WHERE id = 'partner-app'`, [secret]);
      expect(row).toEqual({ hashed: true, redirect_uris: ['https://partner.example.com/callback', 'http://127.0.0.1/callback'] });
      // Once: the page again has no secret.
      expect((await web.send('GET', registered.location!)).text).not.toContain(secret);

      const page = await web.send('GET', '/admin/clients/partner-app');
      expect(page.text).toContain('https://partner.example.com/callback\nhttp://127.0.0.1/callback</textarea>');
      const rotated = await web.send('POST', '/admin/clients/partner-app/secret', { _csrf: web.csrfFrom(page.text) });
      expect(rotated).toMatchObject({ status: 303, location: '/admin/clients/partner-app?done=secret' });
      const next = /readonly value="(prsk_[A-Za-z0-9_-]{43})"/.exec((await web.send('GET', rotated.location!)).text)?.[1];
      expect(next).toBeDefined();
      expect(next).not.toBe(secret);
      expect((await web.send('GET', rotated.location!)).text).not.toContain(next);
    });

    it('refuses a bad redirect URI or admin with redirect URIs with a 400 page that keeps what was typed', async () => {
      const web = await signInAs(api, admin.email, 'correct horse battery');
      const wildcard = await postFrom(web, '/admin/clients', '/admin/clients', { id: 'wild-app', name: 'Wild', scopes: 'openid', type: 'public', redirect_uris: 'https://*.example.com/cb', allowed_origins: '' });
      expect(wildcard.status).toBe(400);
      expect(wildcard.text).toContain('The redirect URI https://*.example.com/cb must not contain');
      expect(wildcard.text).toContain('>https://*.example.com/cb</textarea>');
      const form = await web.send('GET', '/admin/clients');
      const admins = await web.send('POST', '/admin/clients', { _csrf: web.csrfFrom(form.text), id: 'admin-app', name: 'Admin', scopes: ['openid', 'admin'], type: 'public', redirect_uris: 'https://app.example.com/cb', allowed_origins: '' });
      expect(admins.status).toBe(400);
      expect(admins.text).toContain('cannot be allowed “admin”');
      expect(await clientById(api, 'wild-app')).toBeNull();
      expect(await clientById(api, 'admin-app')).toBeNull();
    });
  });
});
