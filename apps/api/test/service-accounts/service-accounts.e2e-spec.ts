import { randomUUID } from 'node:crypto';
import { MeResponseSchema } from '@prospect/contract';
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { CLIENT_AUTH_FAILURES_PER_IP_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { authEvents, createUser } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createSecret, createServiceAccount, organizationWithOwner, secretPost, ShiftedClock } from './support.js';

/** Service accounts and the client credentials grant (issue #45), with an unmodified openid-client (v6). */
describe('service accounts', () => {
  let api: TestApp;
  const clock = new ShiftedClock();
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api?.close());

  const me = (token: string) => request(api, 'GET', '/api/cli/auth/me', { token });
  const discover = (clientId: string, auth: oidc.ClientAuth) => oidc.discovery(new URL(api.baseUrl), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
  const assertionFor = (clientId: string, key: CryptoKey, kid: string, claims: Record<string, unknown> = {}, expiresIn = '60s') =>
    new SignJWT({ jti: randomUUID(), iss: clientId, sub: clientId, aud: `${api.baseUrl}/oauth/token`, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuedAt(clock.now())
      .setExpirationTime(new Date(clock.now().getTime() + (expiresIn === '60s' ? 60_000 : Number.parseInt(expiresIn) * 1000)))
      .sign(key);
  const assertionPost = (clientAssertion: string, extra: Record<string, string> = {}) =>
    request(api, 'POST', '/oauth/token', {
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: clientAssertion,
        ...extra,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

  it('discovery lists the grant, private_key_jwt and its algorithms', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const { body } = await request(api, 'GET', path);
      expect(body.grant_types_supported).toContain('client_credentials');
      expect(body.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_basic', 'client_secret_post', 'private_key_jwt']));
      expect(body.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'RS256']));
    }
  });

  it('openid-client’s clientCredentialsGrant with ClientSecretBasic obtains a token; /me shows the service account', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token);
    expect(account).toEqual({ id: expect.any(String), clientId: expect.stringMatching(/^psa_/), name: 'nightly sync', scopes: ['profile', 'orgs'] });
    const secret = await createSecret(api, slug, owner.token, account.id);
    expect(secret).toEqual({ id: expect.any(String), clientSecret: expect.stringMatching(/^prsa_/), expiresAt: null });

    const config = await discover(account.clientId, oidc.ClientSecretBasic(secret.clientSecret));
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.expires_in).toBeGreaterThan(3500);
    expect(tokens.expires_in).toBeLessThanOrEqual(3600);
    expect(tokens.scope).toBe('profile orgs');
    const narrower = await oidc.clientCredentialsGrant(config, { scope: 'profile' });
    expect(narrower.scope).toBe('profile');
    await expect(oidc.clientCredentialsGrant(config, { scope: 'profile tokens' })).rejects.toMatchObject({ error: 'invalid_scope' });

    const res = await me(tokens.access_token);
    expect(res.status).toBe(200);
    const organization = (await request(api, 'GET', `/api/orgs/${slug}`, { token: owner.token })).body;
    expect(MeResponseSchema.parse(res.body)).toEqual({
      user: { id: account.id, email: null, name: 'nightly sync' },
      kind: 'service_account',
      organization: { id: organization.id, slug, name: organization.name },
      expiresAt: expect.any(String),
    });

    // Last use, time and address, in the list (never the secret); the organization's log has it all.
    const listed = (await request(api, 'GET', `/api/orgs/${slug}/service-accounts`, { token: owner.token })).body;
    expect(listed).toEqual([expect.objectContaining({ id: account.id, disabled: false, keys: [], secrets: [expect.objectContaining({ id: secret.id, lastUsedIp: expect.any(String), lastUsedAt: expect.any(String) })] })]);
    expect(JSON.stringify(listed)).not.toContain(secret.clientSecret);
    const types = (await authEvents(api, { typePrefix: 'org.service', detail: { serviceAccountId: account.id } })).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['org.service_account_create', 'org.service_account_secret_create', 'org.service_account_new_address']));
    // The same address again is no new address.
    expect(types.filter((t) => t === 'org.service_account_new_address')).toHaveLength(1);
  });

  it('client_secret_post works too; a wrong secret is invalid_client', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, ['profile']);
    const secret = await createSecret(api, slug, owner.token, account.id);
    const ok = await secretPost(api, account.clientId, secret.clientSecret);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ access_token: expect.stringMatching(/^prs_/), token_type: 'Bearer', expires_in: expect.any(Number), scope: 'profile' });
    const wrong = await secretPost(api, account.clientId, 'prsa_' + 'x'.repeat(43));
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ error: 'invalid_client' });
    const unknown = await secretPost(api, 'psa_nobody', secret.clientSecret);
    expect(unknown.body).toMatchObject({ error: 'invalid_client' });
  });

  it('openid-client’s PrivateKeyJwt obtains a token; a replayed jti, a wrong audience and a long-lived assertion are refused', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, ['profile']);
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const added = await request(api, 'POST', `/api/orgs/${slug}/service-accounts/${account.id}/keys`, { json: { jwk: { ...(await exportJWK(publicKey)), kid: 'ci-1' } }, token: owner.token });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ id: expect.any(String), kid: 'ci-1' });
    // A private key is never taken.
    const leaked = await request(api, 'POST', `/api/orgs/${slug}/service-accounts/${account.id}/keys`, { json: { jwk: await exportJWK(privateKey) }, token: owner.token });
    expect(leaked.status).toBe(400);

    const config = await discover(account.clientId, oidc.PrivateKeyJwt({ key: privateKey, kid: 'ci-1' }));
    const tokens = await oidc.clientCredentialsGrant(config);
    expect((await me(tokens.access_token)).body).toMatchObject({ kind: 'service_account', user: { id: account.id } });

    const assertion = await assertionFor(account.clientId, privateKey, 'ci-1');
    expect((await assertionPost(assertion)).status).toBe(200);
    const replay = await assertionPost(assertion);
    expect(replay.status).toBe(400);
    expect(replay.body).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('used already') });

    const wrongAudience = await assertionPost(await assertionFor(account.clientId, privateKey, 'ci-1', { aud: 'https://elsewhere.example/token' }));
    expect(wrongAudience.body).toMatchObject({ error: 'invalid_client' });
    const longLived = await assertionPost(await assertionFor(account.clientId, privateKey, 'ci-1', {}, '3600'));
    expect(longLived.body).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('too long') });
    const otherKey = (await generateKeyPair('ES256')).privateKey;
    expect((await assertionPost(await assertionFor(account.clientId, otherKey, 'ci-1'))).body).toMatchObject({ error: 'invalid_client' });
  });

  it('disabling the account, narrowing its scopes, or deleting its secret ends its tokens at the next request', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token);
    const secret = await createSecret(api, slug, owner.token, account.id);
    const token = async () => (await secretPost(api, account.clientId, secret.clientSecret)).body.access_token as string;
    const path = `/api/orgs/${slug}/service-accounts/${account.id}`;

    const first = await token();
    expect((await me(first)).status).toBe(200);
    expect((await request(api, 'PATCH', path, { json: { disabled: true }, token: owner.token })).body).toMatchObject({ disabled: true });
    expect((await me(first)).status).toBe(401);
    expect((await secretPost(api, account.clientId, secret.clientSecret)).body).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('disabled') });
    await request(api, 'PATCH', path, { json: { disabled: false }, token: owner.token });

    const second = await token();
    expect((await request(api, 'PATCH', path, { json: { scopes: ['profile'] }, token: owner.token })).body).toMatchObject({ scopes: ['profile'] });
    expect((await me(second)).status).toBe(401);
    const third = await token();
    expect((await me(third)).status).toBe(200);

    expect((await request(api, 'DELETE', `${path}/secrets/${secret.id}`, { token: owner.token })).status).toBe(204);
    expect((await me(third)).status).toBe(401);
    expect((await secretPost(api, account.clientId, secret.clientSecret)).body).toMatchObject({ error: 'invalid_client' });
  });

  it('deleting the organization ends its service accounts and their tokens', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token);
    const secret = await createSecret(api, slug, owner.token, account.id);
    const token = (await secretPost(api, account.clientId, secret.clientSecret)).body.access_token as string;
    const { OrganizationsService } = await import('../../src/organizations/organizations.service.js');
    const organizations = api.app.get(OrganizationsService);
    const membership = (await organizations.membership(slug, owner.id, null))!;
    await organizations.delete({ userId: owner.id, ip: null, organization: membership }, { via: 'web-session', confirmedAt: clock.now().getTime() });
    expect((await me(token)).status).toBe(401);
    expect((await secretPost(api, account.clientId, secret.clientSecret)).body).toMatchObject({ error: 'invalid_client' });
  });

  it('only the organization’s admins manage its service accounts; another organization’s cannot be reached', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const other = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token);
    // Another organization's owner: not a member here (404), and the account is not theirs by id either.
    expect((await request(api, 'GET', `/api/orgs/${slug}/service-accounts`, { token: other.owner.token })).status).toBe(404);
    expect((await request(api, 'PATCH', `/api/orgs/${other.slug}/service-accounts/${account.id}`, { json: { disabled: true }, token: other.owner.token })).status).toBe(404);
    // A scope a service account may never hold is bad input.
    for (const scopes of [['admin'], ['tokens'], ['openid'], ['email']]) {
      expect((await request(api, 'POST', `/api/orgs/${slug}/service-accounts`, { json: { name: 'x', scopes }, token: owner.token })).status).toBe(400);
    }
  });

  it('introspection names the service account as the client, with no username', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, ['profile']);
    const secret = await createSecret(api, slug, owner.token, account.id);
    const token = (await secretPost(api, account.clientId, secret.clientSecret)).body.access_token as string;
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile admin' })).accessToken;
    const res = await request(api, 'POST', '/oauth/introspect', { token: adminToken, body: `token=${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.body).toEqual({ active: true, sub: account.id, client_id: account.clientId, token_type: 'Bearer', iat: expect.any(Number), exp: expect.any(Number), scope: 'profile' });
  });

  it('failed client authentications are counted per address before the check: the hammering address waits, the CI elsewhere does not', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, ['profile']);
    const secret = await createSecret(api, slug, owner.token, account.id);
    // The client ID is public (it sits in CI workflow files): an attacker who knows it hammers from one address.
    const attacker = { 'x-forwarded-for': '203.0.113.66' };
    const wrong = 'prsa_' + 'y'.repeat(43);
    const answers = await Promise.all(Array.from({ length: CLIENT_AUTH_FAILURES_PER_IP_PER_HOUR + 10 }, () => secretPost(api, account.clientId, wrong, {}, attacker)));
    expect(answers.filter((r) => r.status === 400)).toHaveLength(CLIENT_AUTH_FAILURES_PER_IP_PER_HOUR);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
    const limited = await secretPost(api, account.clientId, secret.clientSecret, {}, attacker);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The service account's own CI, from its own address, is not the one locked out.
    const ci = await secretPost(api, account.clientId, secret.clientSecret, {}, { 'x-forwarded-for': '198.51.100.7' });
    expect(ci.status).toBe(200);
  });

  it('an expired secret is refused', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token);
    const secret = await createSecret(api, slug, owner.token, account.id, 1);
    const res = await secretPost(api, account.clientId, secret.clientSecret);
    expect(res.status).toBe(200);
    // The token never outlives its secret.
    expect(res.body.expires_in).toBeLessThanOrEqual(3600);
    clock.advanceSeconds(2 * 86_400);
    expect((await me(res.body.access_token)).status).toBe(401);
    expect((await secretPost(api, account.clientId, secret.clientSecret)).body).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('expired') });
  });
});
