import { TokensService } from '../../src/tokens/tokens.service.js';
import { createUser, startDeviceLogin } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { webClient } from '../support/web-client.js';
import { createSecret, createServiceAccount, organizationWithOwner, secretPost } from './support.js';

/**
 * A service account's token as an attacker would use it (issue #45): every door made for people
 * refuses it, and the database itself refuses to make it a person, an admin, or give it a password.
 */
describe('a service account across doors', () => {
  let api: TestApp;
  let slug: string;
  let account: { id: string; clientId: string };
  let token: string;
  let otherSlug: string;
  beforeAll(async () => {
    api = await startTestApp();
    const org = await organizationWithOwner(api);
    slug = org.slug;
    account = await createServiceAccount(api, slug, org.owner.token);
    const secret = await createSecret(api, slug, org.owner.token, account.id);
    token = (await secretPost(api, account.clientId, secret.clientSecret)).body.access_token;
    otherSlug = (await organizationWithOwner(api)).slug;
  });
  afterAll(() => api?.close());

  const call = (method: string, path: string, json?: unknown) => request(api, method, path, { token, json });

  it.each([
    ['mint a person’s token', 'POST', '/api/cli/auth/token', {}],
    ['list its organizations as a person', 'GET', '/api/orgs', undefined],
    ['read its own organization’s members', 'GET', '/api/orgs/:slug/members', undefined],
    ['manage service accounts', 'POST', '/api/orgs/:slug/service-accounts', { name: 'child', scopes: ['profile'] }],
    ['act for another organization', 'GET', '/api/orgs/:other', undefined],
    ['create an organization', 'POST', '/api/orgs', { name: 'Mine', slug: 'mine-sa' }],
    ['use the administration API', 'GET', '/api/admin/users', undefined],
    ['read userinfo as a person', 'GET', '/oauth/userinfo', undefined],
    ['introspect tokens', 'POST', '/oauth/introspect', undefined],
  ])('cannot %s (403 before the route runs)', async (_what, method, template, json) => {
    const path = template.replace(':slug', slug).replace(':other', otherSlug);
    const res = await call(method, path, json);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ statusCode: 403, error: expect.any(String) });
  });

  it('cannot reach /settings nor approve a device login: a bearer token is no browser session', async () => {
    for (const page of ['/settings/account', '/settings/tokens', '/settings/security']) {
      const settings = await request(api, 'GET', page, { token });
      expect(settings.status).toBe(303);
      expect(settings.headers.get('location')).toMatch(/^\/login/);
    }
    const { userCode } = await startDeviceLogin(api);
    const page = await request(api, 'GET', `/device?user_code=${userCode}`, { token });
    expect(page.status).not.toBe(200);
  });

  it('cannot sign in to the site: it has no address and no password, and the database holds that', async () => {
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    const signIn = await web.send('POST', '/login', { _csrf: webClient(api).csrfFrom(form.text), email: '', password: '' });
    expect(signIn.status).not.toBe(303);
    // sql-on-purpose: the schema's CHECK, whatever the code does: no password, no admin, no address for a service account.
    for (const change of [`password_hash = 'x'`, `role = 'admin'`, `email = 'sa@example.com'`, `kind = 'person'`]) {
      await expect(api.dataSource.query(`UPDATE users SET ${change} WHERE id = $1`, [account.id])).rejects.toThrow(/users_kind_rules/);
    }
  });

  it('an administrator of the service cannot make it an admin, disable or delete it as a person, nor find it among people', async () => {
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile admin' })).accessToken;
    const asAdmin = (method: string, path: string, json?: unknown) => request(api, method, path, { token: adminToken, json });
    expect((await asAdmin('PATCH', `/api/admin/users/${account.id}`, { admin: true })).status).toBe(404);
    expect((await asAdmin('PATCH', `/api/admin/users/${account.id}`, { disabled: true })).status).toBe(404);
    expect((await asAdmin('GET', `/api/admin/users/${account.id}`)).status).toBe(404);
    const listed = await asAdmin('GET', '/api/admin/users?q=nightly');
    expect(JSON.stringify(listed.body)).not.toContain(account.id);
    // Its token still works: nothing above touched it.
    expect((await call('GET', '/api/cli/auth/me')).status).toBe(200);
  });

  it('is refused by the other grants: its client_id is no OAuth client', async () => {
    const res = await request(api, 'POST', '/oauth/device_authorization', {
      body: new URLSearchParams({ client_id: account.clientId }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.body).toMatchObject({ error: 'invalid_client' });
  });
});
