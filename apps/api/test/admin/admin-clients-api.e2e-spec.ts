import { DEVICE_CODE_GRANT_TYPE, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { AdminUsersService } from '../../src/admin/admin-users.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { clientById, clientIds, markClientDisabledOnly } from '../support/client-fixtures.js';
import { eventually } from '../support/eventually.js';
import { approve, authEvents, createUser } from '../support/fixtures.js';
import { get, request, type Target } from '../support/http.js';
import { type Replica, startReplica, startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';

const CLIENTS = '/api/admin/clients';

const form = (api: Target, path: string, params: Record<string, string>) =>
  request(api, 'POST', path, { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

/** The admin JSON API for OAuth clients: the /admin/clients page's operations, for scripts. */
describe('/api/admin/clients', () => {
  let api: TestApp;
  let replica: Replica;
  let admin: { id: string; email: string };
  let adminToken: string;
  let userToken: string;
  beforeAll(async () => {
    api = await startTestApp();
    replica = await startReplica(api);
    admin = await createUser(api, { role: 'admin' });
    adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct' })).accessToken;
    userToken = (await api.app.get(TokensService).issue({ userId: (await createUser(api)).id, origin: 'direct' })).accessToken;
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  const call = (method: string, path: string, json?: unknown, token = adminToken) => request(api, method, path, { json, token });
  /** The client's name, scopes and disabled time: what a refused change leaves as it was. */
  const settingsOf = async (id: string) => {
    const { name, allowedScopes, disabledAt } = (await clientById(api, id))!;
    return { name, allowedScopes, disabledAt };
  };

  /** `user` (a new person unless given) signed in through `clientId` by the device flow: its access and refresh tokens. */
  async function signIn(clientId: string, user?: { id: string }) {
    user ??= await createUser(api);
    const device = (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: clientId })).body;
    await approve(api, device.user_code, user);
    const tokens = (await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: clientId })).body;
    expect(tokens.access_token).toMatch(/^prs_/);
    return tokens as { access_token: string; refresh_token: string };
  }

  it('is for admins with the admin scope only', async () => {
    expect((await call('GET', CLIENTS, undefined, userToken)).status).toBe(403);
    expect((await request(api, 'GET', CLIENTS)).status).toBe(401);
    await call('POST', CLIENTS, { id: 'profile-only', name: 'Profile only', allowedScopes: ['profile'] });
    // An admin's token from a client granted `profile` alone cannot administer.
    const person = await createUser(api);
    const scoped = await signIn('profile-only', person);
    await api.app.get(AdminUsersService).update(person.id, { admin: true }, admin.id, null);
    const refused = await call('GET', CLIENTS, undefined, scoped.access_token);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('insufficient_scope');
  });

  it('registers, lists, renames and rescopes; refuses bad input with a 400 and writes nothing', async () => {
    const created = await call('POST', CLIENTS, { id: 'acme-sync', name: 'Acme Sync', allowedScopes: ['tokens', 'profile'] });
    expect(created.status).toBe(201);
    // Issue #33: a client also has a type and its code flow's redirect URIs and origins (none: device flow only).
    expect(created.body).toEqual({
      id: 'acme-sync',
      name: 'Acme Sync',
      allowedScopes: ['tokens', 'profile'],
      builtIn: false,
      disabled: false,
      createdAt: expect.any(String),
      type: 'public',
      redirectUris: [],
      allowedOrigins: [],
      // Issue #46: no back-channel logout unless registered.
      backchannelLogoutUri: null,
    });
    expect((await call('POST', CLIENTS, { id: 'acme-sync', name: 'Again', allowedScopes: ['profile'] })).status).toBe(409);
    for (const body of [
      { id: 'Bad Id', name: 'x', allowedScopes: ['profile'] },
      { id: 'no-scopes', name: 'x', allowedScopes: [] },
      { id: 'bad-scope', name: 'x', allowedScopes: ['billing:write'] },
      { id: 'bad-name', name: 'Acme\u001b[31m', allowedScopes: ['profile'] },
      { id: 'extra', name: 'x', allowedScopes: ['profile'], secret: 'no' },
      { id: 'no-name', allowedScopes: ['profile'] },
    ]) {
      const res = await call('POST', CLIENTS, body);
      expect(res.status).toBe(400);
      expect(await clientIds(api)).not.toContain(body.id); // the list: a lookup skips an id no client may have
    }
    const list = (await call('GET', CLIENTS)).body as Array<{ id: string }>;
    expect(list[0]).toMatchObject({ id: 'prospect-cli', builtIn: true, allowedScopes: ['profile', 'tokens', 'admin', 'orgs'] });
    expect(list.map((c) => c.id)).toContain('acme-sync');

    const renamed = await call('PATCH', `${CLIENTS}/acme-sync`, { name: 'Acme Sync 2', allowedScopes: ['profile'] });
    expect(renamed.body).toMatchObject({ name: 'Acme Sync 2', allowedScopes: ['profile'] });
    expect((await call('PATCH', `${CLIENTS}/acme-sync`, {})).status).toBe(400);
    expect((await call('PATCH', `${CLIENTS}/nobody`, { name: 'x' })).status).toBe(404);
    expect((await call('PATCH', `${CLIENTS}/prospect-cli`, { allowedScopes: ['profile'] })).status).toBe(400);
    expect((await call('PATCH', `${CLIENTS}/prospect-cli`, { disabled: true })).status).toBe(400);
    // One request, one transaction: a refused part leaves the rest unchanged.
    expect((await call('PATCH', `${CLIENTS}/prospect-cli`, { name: 'Renamed then refused', disabled: true })).status).toBe(400);
    expect((await clientById(api, 'prospect-cli'))!.name).not.toBe('Renamed then refused');
    expect((await call('DELETE', `${CLIENTS}/prospect-cli`)).status).toBe(400);
    const events = await authEvents(api, { typePrefix: 'oauth.client_', userId: admin.id });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['oauth.client_register', 'oauth.client_update']));
  });

  it('answers garbage with a 4xx and changes nothing', async () => {
    await call('POST', CLIENTS, { id: 'steady', name: 'Steady', allowedScopes: ['profile'] });
    const before = await settingsOf('steady');
    for (const body of ['{"disabled": "yes"}', '{"allowedScopes": "profile"}', '{"allowedScopes": ["profile", "profile", "profile", "profile"]}', '{"name": null}', '{"name": ', '[]', '{"id": "renamed"}']) {
      const res = await request(api, 'PATCH', `${CLIENTS}/steady`, { body, headers: { 'content-type': 'application/json' }, token: adminToken });
      expect(res.status).toBe(400);
    }
    for (const id of ['%00', 'a'.repeat(2_000), '..%2F..%2Fsteady', 'St%C3%A9ady']) {
      expect((await call('PATCH', `${CLIENTS}/${id}`, { name: 'x' })).status).toBe(404);
      expect((await call('DELETE', `${CLIENTS}/${id}`)).status).toBe(404);
    }
    expect(await settingsOf('steady')).toEqual(before);
  });

  it('disabling revokes every token and refresh family of the client at once, on every replica, even with refreshes racing it', async () => {
    await call('POST', CLIENTS, { id: 'warehouse', name: 'Warehouse', allowedScopes: ['profile'] });
    // One after another: approvals from one address at once would meet the wrong-code limit, which counts every try before the code is looked up.
    const sessions: Array<{ access_token: string; refresh_token: string }> = [];
    for (let i = 0; i < 12; i++) sessions.push(await signIn('warehouse'));
    // Both replicas have verified them (and cached them).
    for (const { access_token } of sessions) for (const target of [api, replica.target]) expect((await get(target, ROUTES.me, access_token)).status).toBe(200);
    const waiting = (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'warehouse' })).body;

    const [disabled, ...refreshes] = await Promise.all([
      call('PATCH', `${CLIENTS}/warehouse`, { disabled: true }),
      ...sessions.map((s) => form(replica.target, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'warehouse', refresh_token: s.refresh_token })),
    ]);
    expect(disabled.body).toMatchObject({ id: 'warehouse', disabled: true });
    // A refresh that won the race got a pair, which the disable then revoked with its family.
    const everyAccessToken = [...sessions.map((s) => s.access_token), ...refreshes.filter((r) => r.status === 200).map((r) => r.body.access_token as string)];
    for (const target of [api, replica.target]) {
      expect(await eventually(async () => (await Promise.all(everyAccessToken.map((t) => get(target, ROUTES.me, t)))).every((res) => res.status === 401), 1_000)).toBe(true);
    }
    expect((await form(api, OAUTH_ROUTES.token, { grant_type: 'refresh_token', client_id: 'warehouse', refresh_token: sessions[0]!.refresh_token })).body.error).toBe('invalid_client');
    expect((await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'warehouse' })).body.error).toBe('invalid_client');
    // The sign-in that was waiting can no longer be approved.
    expect((await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: waiting.device_code, client_id: 'warehouse' })).body.error).toBe('access_denied');

    const enabled = await call('PATCH', `${CLIENTS}/warehouse`, { disabled: false });
    expect(enabled.body.disabled).toBe(false);
    expect((await get(api, ROUTES.me, sessions[0]!.access_token)).status).toBe(401); // stays revoked
    await signIn('warehouse'); // signs in again
  });

  it('a sign-in approved just before its client was disabled (the race the cancel cannot see) redeems nothing', async () => {
    await call('POST', CLIENTS, { id: 'racing', name: 'Racing', allowedScopes: ['profile'] });
    const device = (await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'racing' })).body;
    await approve(api, device.user_code, await createUser(api));
    // As if the login had been inserted after the disable's cancel: only the client is disabled.
    await markClientDisabledOnly(api, 'racing');
    const poll = await form(api, OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: 'racing' });
    expect(poll.body).toMatchObject({ error: 'access_denied', error_description: 'This sign-in was cancelled.' });
    expect(await accessTokens(api, { clientId: 'racing' })).toEqual([]);
  });

  it('deleting revokes its tokens and removes it; its id is free again', async () => {
    await call('POST', CLIENTS, { id: 'short-lived', name: 'Short lived', allowedScopes: ['profile'] });
    const session = await signIn('short-lived');
    expect((await call('DELETE', `${CLIENTS}/short-lived`)).status).toBe(204);
    expect((await get(api, ROUTES.me, session.access_token)).status).toBe(401);
    expect(await clientById(api, 'short-lived')).toBeNull();
    expect((await call('DELETE', `${CLIENTS}/short-lived`)).status).toBe(404);
    expect((await form(api, OAUTH_ROUTES.deviceAuthorization, { client_id: 'short-lived' })).body.error).toBe('invalid_client');
    expect((await call('POST', CLIENTS, { id: 'short-lived', name: 'Born again', allowedScopes: ['profile'] })).status).toBe(201);
    const [deleted] = (await authEvents(api, { type: 'oauth.client_delete' })).map(({ user_id, detail }) => ({ user_id, detail }));
    expect(deleted).toEqual({ user_id: admin.id, detail: { clientId: 'short-lived' } });
  });
});
