import http from 'node:http';
import net from 'node:net';
import { presetIssuer, ROUTES } from '@prospect/contract';
import { IdentityProvidersService } from '../../src/federation/identity-providers.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { createUser, hasPassword, userByEmail } from '../support/fixtures.js';
import { get, post, request } from '../support/http.js';
import { signInAs, type WebClient } from '../support/web-client.js';
import { acmeProvider, events, type Federation, PROVIDERS, signedInAs, signInThrough, startFederation } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';
import { CLIENT_SECRET, TestProvider } from './support/test-provider.js';

/** A loopback port nothing listens on (listened on, then closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  const port = await listenOnLoopback(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listenOnLoopback(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Identity providers as admins configure them (issue #34): the JSON API, its pages, and "last verified at the provider" on /admin/users. */
describe('identity providers for admins', () => {
  let fed: Federation;
  let second: TestProvider;
  let adminPages: WebClient;
  beforeAll(async () => {
    fed = await startFederation({ providerIds: ['acme', 'beta', 'gamma'] });
    second = await TestProvider.start(['beta', 'gamma'].map((id) => `${fed.api.baseUrl}/login/sso/${id}/callback`));
    adminPages = await signInAs(fed.api, fed.admin.email, 'correct horse battery');
  });
  afterAll(async () => {
    await second?.close();
    await fed?.close();
  });

  const providers = () => fed.api.app.get(IdentityProvidersService);
  const postPage = async (page: string, path: string, form: Record<string, string>) => {
    const text = (await adminPages.send('GET', page)).text;
    return adminPages.send('POST', path, { _csrf: adminPages.csrfFrom(text), ...form });
  };

  it('is for admins only, and refuses what cannot be a provider with a 4xx that says why', async () => {
    const userToken = (await fed.api.app.get(TokensService).issue({ userId: (await createUser(fed.api)).id, origin: 'direct' })).accessToken;
    expect((await request(fed.api, 'GET', PROVIDERS, { token: userToken })).status).toBe(403);
    expect((await request(fed.api, 'GET', PROVIDERS)).status).toBe(401);

    const base = { ...acmeProvider(second), id: 'beta', emailDomains: ['beta.test'] };
    const refusals: Array<[unknown, number, RegExp]> = [
      [{ ...base, issuer: 'http://sso.example.com' }, 400, /https/],
      [{ ...base, issuer: 'https://user:pw@sso.example.com' }, 400, /plain URL/],
      [{ ...base, id: 'link' }, 400, /path of the sign-in pages/],
      [{ ...base, id: 'Bad Id' }, 400, /id/],
      [{ ...base, issuer: undefined, preset: 'microsoft' }, 400, /tenant/],
      [{ ...base, issuer: undefined, preset: 'microsoft', tenant: 'common' }, 400, /tenant/],
      [{ ...base, preset: 'google' }, 400, /preset fills in the issuer/],
      [{ ...base, scopes: ['email'] }, 400, /openid/],
      [{ ...base, emailDomains: [] }, 400, /emailDomains/],
      [{ ...base, clientSecret: undefined }, 400, /clientSecret/],
      [{ ...base, extra: true }, 400, /extra/],
      [{ ...base, issuer: 'http://127.0.0.1:1' }, 400, /Could not read the OpenID configuration of http:\/\/127\.0\.0\.1:1/],
      [{ ...base, id: 'acme' }, 409, /exists already/],
      [{ ...base, emailDomains: ['acme.test'] }, 409, /acme\.test belongs to the identity provider acme/],
      [{ ...base, issuer: fed.idp.issuer }, 409, /issuer/],
      // The same issuer written otherwise: its discovery document names it as acme's does.
      [{ ...base, issuer: `${fed.idp.issuer}/` }, 409, /issuer/],
    ];
    for (const [body, status, message] of refusals) {
      const res = await fed.call('POST', PROVIDERS, body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), status]);
      expect(res.body.message).toMatch(message);
    }
    expect((await providers().list()).map((provider) => provider.id)).not.toContain('beta');
    // The presets only fill in the issuer.
    expect(presetIssuer('google')).toBe('https://accounts.google.com');
    expect(presetIssuer('microsoft', 'contoso.onmicrosoft.com')).toBe('https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0');
  });

  it('answers one message for every network failure, and refuses Prospect itself and private addresses before connecting (issue #43, finding 8)', async () => {
    const base = { ...acmeProvider(second), id: 'delta', emailDomains: ['delta.test'] };
    const register = (issuer: string) => fed.call('POST', PROVIDERS, { ...base, issuer });
    // Three things a scan of the server's loopback would tell apart: nothing listening, a listener that hangs up, one that answers an error.
    const nothing = await closedPort();
    const hangsUp = net.createServer((socket) => socket.destroy());
    const errorStatus = http.createServer((_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}'));
    const notFound = http.createServer((_req, res) => res.writeHead(404).end('Not Found'));
    const ports = await Promise.all([hangsUp, errorStatus, notFound].map(listenOnLoopback));
    try {
      const messages: string[] = [];
      for (const port of [nothing, ...ports]) {
        const issuer = `http://127.0.0.1:${port}`;
        const res = await register(issuer);
        expect([issuer, res.status]).toEqual([issuer, 400]);
        messages.push(String(res.body.message).replaceAll(issuer, '<issuer>'));
      }
      expect(new Set(messages)).toEqual(new Set([messages[0]]));
      expect(messages[0]).toMatch(/^Could not read the OpenID configuration of <issuer>/);
    } finally {
      for (const server of [hangsUp, errorStatus, notFound]) server.close();
    }

    // Prospect cannot be its own upstream, whichever loopback name it is reached by.
    for (const issuer of [fed.api.baseUrl, fed.api.baseUrl.replace('127.0.0.1', 'localhost')]) {
      const res = await register(issuer);
      expect([issuer, res.status]).toEqual([issuer, 400]);
      expect(res.body.message).toMatch(/is this Prospect server itself/);
    }
    // Private and link-local addresses: refused from the address alone, before any connection (a connection to most of these would wait for the 10 s timeout).
    for (const issuer of ['https://10.0.0.1', 'https://172.16.5.4', 'https://192.168.1.1', 'https://100.64.0.1', 'https://169.254.169.254', 'https://[fd00::1]', 'https://[fe80::1]', 'https://[::ffff:10.0.0.1]', `https://0.0.0.0:${nothing}`]) {
      const res = await register(issuer);
      expect([issuer, res.status]).toEqual([issuer, 400]);
      expect(res.body.message).toMatch(/private or link-local address.*FEDERATION_ALLOW_PRIVATE_ISSUERS=true/);
    }
    expect((await providers().list()).map((provider) => provider.id)).not.toContain('delta');
  });

  it('keeps the client secret sealed and never shows it; answers the redirect URI to register; documents the API', async () => {
    const created = await fed.call('POST', PROVIDERS, { ...acmeProvider(second), id: 'beta', displayName: 'Beta ID', emailDomains: ['Beta.test', 'beta.test'], scopes: ['openid', 'email'] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: 'beta',
      displayName: 'Beta ID',
      issuer: second.issuer,
      clientId: 'prospect',
      scopes: ['openid', 'email'],
      emailDomains: ['beta.test'],
      enforce: false,
      allowSignUp: true,
      mfaAcrValues: [],
      disabled: false,
      redirectUri: `${fed.api.baseUrl}/login/sso/beta/callback`,
      protocol: 'openid',
      linkedAccounts: 0,
      createdAt: expect.any(String),
      organization: null,
    });
    // The acr values that stand for a second factor there: named exactly, never guessed (issue #43).
    const acr = await fed.call('PATCH', `${PROVIDERS}/beta`, { mfaAcrValues: ['urn:okta:loa:2fa:any'] });
    expect(acr.body.mfaAcrValues).toEqual(['urn:okta:loa:2fa:any']);
    expect((await fed.call('PATCH', `${PROVIDERS}/beta`, { mfaAcrValues: ['two words'] })).status).toBe(400);
    expect(JSON.stringify((await fed.call('GET', PROVIDERS)).body)).not.toContain(CLIENT_SECRET);
    // sql-on-purpose: the client secret is stored only sealed
    const [row] = await fed.api.dataSource.query(`SELECT * FROM identity_providers WHERE id = 'beta'`);
    expect(Buffer.from(row.client_secret_sealed).includes(Buffer.from(CLIENT_SECRET))).toBe(false);
    expect(JSON.stringify(row)).not.toContain(CLIENT_SECRET);
    expect(fed.api.logs()).not.toContain(CLIENT_SECRET);
    expect(row.metadata.issuer).toBe(second.issuer);

    // A wrong secret is refused by the provider's token endpoint; the right one signs in again.
    second.users.set('bea', { sub: 'bea', email: 'bea@beta.test', email_verified: true });
    expect((await fed.call('PATCH', `${PROVIDERS}/beta`, { clientSecret: 'not-the-secret' })).status).toBe(200);
    const browser = new HttpBrowser();
    const misconfigured = await signInThrough(browser, fed.api, '/login/sso/beta', 'bea');
    expect(misconfigured.status).toBe(502);
    expect(misconfigured.text).toContain('Ask an administrator');
    expect((await events(fed.api, 'federation.login_refused')).at(-1)!.detail.reason).toMatch(/invalid_client|refused the client/);
    await fed.call('PATCH', `${PROVIDERS}/beta`, { clientSecret: CLIENT_SECRET });
    expect((await signInThrough(browser, fed.api, '/login/sso/beta', 'bea')).status).toBe(303);
    expect(await signedInAs(browser, fed.api)).toBe('bea@beta.test');
    expect((await fed.call('GET', `${PROVIDERS}/beta`)).body.linkedAccounts).toBe(1);
    expect((await fed.call('GET', `${PROVIDERS}/nope`)).status).toBe(404);

    const docs = (await request(fed.api, 'GET', '/api/docs-json')).body;
    expect(Object.keys(docs.paths)).toEqual(expect.arrayContaining(['/api/admin/identity-providers', '/api/admin/identity-providers/{id}']));
  });

  it('deleting a provider ends its sessions and links; the accounts stay, without a password', async () => {
    second.users.set('gus', { sub: 'gus', email: 'gus@gamma.test', email_verified: true });
    await fed.call('DELETE', `${PROVIDERS}/beta`);
    expect((await fed.call('POST', PROVIDERS, { ...acmeProvider(second), id: 'gamma', emailDomains: ['gamma.test'] })).status).toBe(201);
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/gamma', 'gus');
    expect(await signedInAs(browser, fed.api)).toBe('gus@gamma.test');

    expect((await fed.call('DELETE', `${PROVIDERS}/gamma`)).status).toBe(204);
    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect(await federatedLinksOf(fed.api, { providerId: 'gamma' })).toEqual([]);
    const gus = await userByEmail(fed.api, 'gus@gamma.test');
    expect(gus).not.toBeNull();
    expect(await hasPassword(fed.api, gus!.id)).toBe(false);
    expect((await fed.call('DELETE', `${PROVIDERS}/gamma`)).status).toBe(404);
    expect((await events(fed.api, 'admin.identity_provider_delete')).at(-1)).toMatchObject({ user_id: fed.admin.id, detail: { providerId: 'gamma', sessions: 1 } });
  });

  it('the page adds, disables, enables and deletes a provider, showing the redirect URI to register', async () => {
    const page = await adminPages.send('GET', '/admin/identity-providers');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`${fed.api.baseUrl}/login/sso/acme/callback`);
    expect(page.text).not.toContain(CLIENT_SECRET);

    const refused = await postPage('/admin/identity-providers', '/admin/identity-providers', { preset: 'generic', id: 'beta', displayName: 'Beta ID', issuer: 'http://sso.example.com', clientId: 'prospect', clientSecret: CLIENT_SECRET, emailDomains: 'beta.test' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('https');
    const added = await postPage('/admin/identity-providers', '/admin/identity-providers', {
      preset: 'generic',
      id: 'beta',
      displayName: 'Beta ID',
      issuer: second.issuer,
      clientId: 'prospect',
      clientSecret: CLIENT_SECRET,
      emailDomains: 'beta.test, beta-two.test',
      allowSignUp: 'on',
    });
    expect(added.status).toBe(303);
    const shown = await adminPages.send('GET', added.location!);
    expect(shown.text).toContain('Register this redirect URI at the provider');
    expect(shown.text).toContain(`${fed.api.baseUrl}/login/sso/beta/callback`);
    // No scopes typed: the default, with offline_access as this provider offers it (its refresh token serves the leaver check).
    expect((await fed.call('GET', `${PROVIDERS}/beta`)).body).toMatchObject({ emailDomains: ['beta.test', 'beta-two.test'], allowSignUp: true, enforce: false, scopes: ['openid', 'email', 'profile', 'offline_access'] });

    expect((await postPage('/admin/identity-providers', '/admin/identity-providers/beta/disable', {})).status).toBe(303);
    expect((await fed.call('GET', `${PROVIDERS}/beta`)).body.disabled).toBe(true);
    expect((await postPage('/admin/identity-providers', '/admin/identity-providers/beta/enable', {})).status).toBe(303);
    const edited = await postPage('/admin/identity-providers', '/admin/identity-providers/beta', { displayName: 'Beta', clientId: 'prospect', scopes: 'openid email profile', emailDomains: 'beta.test', enforce: 'on' });
    expect(edited.status).toBe(303);
    expect((await fed.call('GET', `${PROVIDERS}/beta`)).body).toMatchObject({ displayName: 'Beta', enforce: true, allowSignUp: false, emailDomains: ['beta.test'], disabled: false });
    expect((await postPage('/admin/identity-providers', '/admin/identity-providers/beta/delete', { confirm: 'nope' })).status).toBe(400);
    expect((await postPage('/admin/identity-providers', '/admin/identity-providers/beta/delete', { confirm: 'beta' })).status).toBe(303);
    expect((await fed.call('GET', `${PROVIDERS}/beta`)).status).toBe(404);
  });

  it('/admin/users shows when the provider last verified each person, and an admin unlinks one', async () => {
    fed.idp.users.set('una', { sub: 'una', email: 'una@acme.test', email_verified: true, name: 'Una' });
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/acme', 'una');
    const una = (await userByEmail(fed.api, 'una@acme.test'))!;
    // Una's CLI, approved in the session the provider signed in.
    const start = await post(fed.api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
    const approval = await browser.request(`${fed.api.baseUrl}/device?user_code=${start.body.userCode}`);
    expect((await browser.request(`${fed.api.baseUrl}/device/approve`, { form: { _csrf: HttpBrowser.csrfOf(approval.text), user_code: start.body.userCode } })).status).toBe(200);
    const cli = (await post(fed.api, ROUTES.devicePoll, { deviceCode: start.body.deviceCode })).body;
    expect((await get(fed.api, ROUTES.me, cli.accessToken)).status).toBe(200);

    const list = await adminPages.send('GET', '/admin/users?q=una%40acme.test');
    expect(list.text).toContain('Last verified at the provider');
    expect(list.text).toMatch(/Acme SSO: \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    // Made by the provider, without a password, but not an invitation waiting.
    expect(list.text).not.toContain('>invited<');
    const person = await adminPages.send('GET', `/admin/users/${una.id}`);
    expect(person.text).toContain('Unlink Acme SSO');
    const [link] = await providers().linksOf([una.id]);
    const unlinked = await adminPages.send('POST', `/admin/users/${una.id}/links/${link.id}/unlink`, { _csrf: adminPages.csrfFrom(person.text) });
    expect(unlinked.status).toBe(303);
    expect(await providers().linksOf([una.id])).toEqual([]);
    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect((await events(fed.api, 'federation.unlink')).at(-1)).toMatchObject({ user_id: una.id, detail: { providerId: 'acme', by: fed.admin.id, sessions: 1, grants: 1 } });
    // What the session approved ends with the link.
    expect((await get(fed.api, ROUTES.me, cli.accessToken)).status).toBe(401);
    expect((await post(fed.api, ROUTES.refresh, { refreshToken: cli.refreshToken })).status).toBe(401);
    // Unlinked, the address has an account the provider must now prove again.
    const again = await signInThrough(new HttpBrowser(), fed.api, '/login/sso/acme', 'una');
    expect(again.location?.pathname).toBe('/login/link');
  });
});

describe('identity providers inside the company network (FEDERATION_ALLOW_PRIVATE_ISSUERS=true, issue #43)', () => {
  it('lets discovery connect to a private address; Prospect itself stays refused', async () => {
    const fed = await startFederation({ configure: false, env: { FEDERATION_ALLOW_PRIVATE_ISSUERS: 'true' } });
    try {
      const base = { ...acmeProvider(fed.idp), id: 'inside', emailDomains: ['inside.test'] };
      // 0.0.0.0 reaches this host: past the address rules, the connection itself is refused (nothing listens), at once.
      const nothing = await closedPort();
      const inside = await fed.call('POST', PROVIDERS, { ...base, issuer: `https://0.0.0.0:${nothing}` });
      expect(inside.status).toBe(400);
      expect(inside.body.message).toMatch(/^Could not read the OpenID configuration of https:\/\/0\.0\.0\.0:\d+: no OpenID provider answered there/);
      expect((await fed.call('POST', PROVIDERS, { ...base, issuer: fed.api.baseUrl })).body.message).toMatch(/is this Prospect server itself/);
      // The loopback provider of the tests still registers.
      expect((await fed.call('POST', PROVIDERS, base)).status).toBe(201);
    } finally {
      await fed.close();
    }
  });
});
