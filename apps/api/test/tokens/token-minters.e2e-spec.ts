import { DEVICE_CODE_GRANT_TYPE, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { eventually } from '../support/eventually.js';
import { FakeClock } from '../support/fake-clock.js';
import { approve, authEvents, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, post, request, type Target } from '../support/http.js';
import { startReplica, startTestApp, type Replica, type TestApp } from '../support/test-app.js';
import { accessTokens, refreshTokens } from '../support/token-fixtures.js';
import { signInAs } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const DAY = 24 * 3600;

/**
 * Issue #31, item 3: a token never exceeds its minter. Made with a bearer token, it has at most
 * that token's scopes and lifetime, belongs to the same person unless the minter acts with a fresh
 * admin grant, and is revoked with the grant that made it, on every replica.
 */
describe('tokens made with tokens', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  let replica: Replica;
  let admin: Awaited<ReturnType<typeof createUser>>;
  /** A token made on the site by an administrator: it may use the administration API. */
  let adminApiToken: string;
  beforeAll(async () => {
    api = await startTestApp({ clock });
    replica = await startReplica(api);
    admin = await createUser(api, { role: 'admin' });
    adminApiToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  const mint = (token: string, body: object = {}) => post(api, ROUTES.issueToken, body, token);
  const form = (path: string, params: Record<string, string>) =>
    request(api, 'POST', path, { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  /** What the API says a token may do (every bearer answer says it, a refusal too). */
  const scopesOf = async (token: string) => (await get(api, ROUTES.me, token)).headers.get('x-oauth-scopes');
  const statusOn = async (target: Target, token: string) => (await get(target, ROUTES.me, token)).status;

  /** `prospect auth:login` approved by `user`: the session's first pair. */
  async function cliSession(user: { id: string }, scopes?: string[]): Promise<{ accessToken: string; refreshToken: string }> {
    const start = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', ...(scopes ? { scopes } : {}) });
    await approve(api, start.userCode, user);
    const res = await poll(api, start.deviceCode);
    expect(res.body.status).toBe('authorized');
    return res.body;
  }

  /** A public client registered through the administration API, and a session of it approved by `user` (the OAuth device flow). */
  async function clientSession(clientId: string, allowedScopes: string[], user: { id: string }): Promise<string> {
    const registered = await request(api, 'POST', '/api/admin/clients', { json: { id: clientId, name: `Tool ${clientId}`, allowedScopes }, token: adminApiToken });
    expect(registered.status).toBe(201);
    const device = (await form(OAUTH_ROUTES.deviceAuthorization, { client_id: clientId })).body;
    await approve(api, device.user_code, user);
    const tokens = await form(OAUTH_ROUTES.token, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: device.device_code, client_id: clientId });
    expect(tokens.status).toBe(200);
    return tokens.body.access_token;
  }

  /** The absolute end of the session (refresh family) that `accessToken` belongs to. */
  const familyEndOf = async (accessToken: string) => {
    const { grantId } = (await api.app.get(TokensService).describe(accessToken))!;
    const ends = (await refreshTokens(api, { grantId: grantId! })).map((token) => token.family_expires_at.getTime());
    return new Date(Math.max(...ends)).toISOString();
  };

  it('a token of a client allowed only `tokens` makes a token with `tokens` alone, never one for someone else, and none outliving its session', async () => {
    const bob = await createUser(api);
    const narrow = await clientSession('narrow-tool', ['tokens'], admin);
    expect((await get(api, '/api/admin/users', narrow)).status).toBe(403);

    // Capped rather than refused: the request names no scopes, so it asks for a token like its own.
    const made = await mint(narrow, { label: 'wider?', expiresInSeconds: 365 * DAY });
    expect(made.status).toBe(201);
    const onAdmin = await get(api, '/api/admin/users', made.body.accessToken);
    expect(onAdmin.status).toBe(403);
    expect(onAdmin.body.error).toBe('insufficient_scope');
    expect(onAdmin.headers.get('x-oauth-scopes')).toBe('tokens');
    // No longer than the session it was made with can live: its refresh family's absolute end (90 days), not a year.
    expect(made.body.expiresAt).toBe(await familyEndOf(narrow));
    const [row] = await accessTokens(api, { label: 'wider?' });
    expect(row).toMatchObject({ scope: 'tokens', minted_by_token_id: null, minted_by_grant_id: expect.any(String) });

    const forBob = await mint(narrow, { userEmail: bob.email, expiresInSeconds: 365 * DAY });
    expect(forBob.status).toBe(403);
    expect(forBob.body.error).toBe('insufficient_scope');
    expect(forBob.headers.get('www-authenticate')).toContain('scope="admin"');
    expect(await accessTokens(api, { userId: bob.id })).toHaveLength(0);
  });

  it('a token made with a token has at most its scopes and lives no longer than it; it dies with it, and not the other way round', async () => {
    const carol = await createUser(api);
    const parent = await api.app.get(TokensService).issue({ userId: carol.id, origin: 'direct', ttlSeconds: 3600, scope: 'profile tokens' });
    const child = await mint(parent.accessToken, { label: 'child', expiresInSeconds: 30 * DAY });
    expect(child.status).toBe(201);
    expect(child.body.expiresAt).toBe(parent.expiresAt.toISOString());
    expect(await scopesOf(child.body.accessToken)).toBe('profile, tokens'); // no `orgs`: its maker has none
    // `orgs` is handed on like any scope the maker has (issue #44), and only then.
    const orgsParent = await api.app.get(TokensService).issue({ userId: carol.id, origin: 'direct', ttlSeconds: 3600, scope: 'tokens orgs' });
    expect(await scopesOf((await mint(orgsParent.accessToken, { label: 'orgs child' })).body.accessToken)).toBe('tokens, orgs');
    const grandchild = (await mint(child.body.accessToken, { label: 'grandchild' })).body.accessToken as string;
    const sibling = (await mint(parent.accessToken, { label: 'sibling' })).body.accessToken as string;

    // The child revoked: what it made goes with it; its maker and its sibling stay.
    expect((await request(api, 'POST', ROUTES.logout, { token: child.body.accessToken })).status).toBe(204);
    expect(await statusOn(api, grandchild)).toBe(401);
    expect(await statusOn(api, parent.accessToken)).toBe(200);
    expect(await statusOn(api, sibling)).toBe(200);
    expect((await get(api, ROUTES.me, grandchild)).headers.get('www-authenticate')).toContain('token revoked');

    expect((await request(api, 'POST', ROUTES.logout, { token: parent.accessToken })).status).toBe(204);
    expect(await statusOn(api, sibling)).toBe(401);
    const events = await authEvents(api, { type: 'token.revoke', userId: carol.id });
    expect(events.map((e) => e.detail)).toEqual([
      { tokenId: expect.any(String), mintedTokens: 1 },
      { tokenId: expect.any(String), reason: 'the token it was made with was revoked' },
      { tokenId: parent.id, mintedTokens: 1 },
      { tokenId: expect.any(String), reason: 'the token it was made with was revoked' },
    ]);
  });

  it('a token made with a CLI session dies with the session, with what it made in turn, on every replica: a logout', async () => {
    const dave = await createUser(api);
    const session = await cliSession(dave);
    const made = (await mint(session.accessToken, { label: 'made' })).body.accessToken as string;
    const madeByMade = (await mint(made, { label: 'made by made' })).body.accessToken as string;
    // Verified once on the replica, so its cache holds them.
    for (const token of [made, madeByMade]) expect(await statusOn(replica.target, token)).toBe(200);

    expect((await request(api, 'POST', ROUTES.logout, { token: session.accessToken })).status).toBe(204);
    for (const token of [made, madeByMade]) {
      expect(await statusOn(api, token)).toBe(401);
      expect(await eventually(async () => (await statusOn(replica.target, token)) === 401, 2_000)).toBe(true);
    }
    const [family] = await authEvents(api, { type: 'token.revoke_family', userId: dave.id });
    expect(family.detail).toMatchObject({ reason: 'revoked', accessTokens: 1, mintedTokens: 2 });
  });

  it('… when its refresh token is reused, and when the session is revoked on the tokens page', async () => {
    const erin = await createUser(api);
    const refresh = (refreshToken: string) => post(api, ROUTES.refresh, { refreshToken });

    const stolen = await cliSession(erin);
    const made = (await mint(stolen.accessToken, { label: 'made before the theft' })).body.accessToken as string;
    const next = (await refresh(stolen.refreshToken)).body;
    expect((await refresh(next.refreshToken)).status).toBe(200);
    expect(await statusOn(api, made)).toBe(200);
    expect((await refresh(stolen.refreshToken)).status).toBe(401); // a reuse: the family is revoked
    expect(await statusOn(api, made)).toBe(401);

    const session = await cliSession(erin);
    const madeAgain = (await mint(session.accessToken, { label: 'made again' })).body.accessToken as string;
    const web = await signInAs(api, erin.email, PASSWORD);
    const { id } = (await api.app.get(TokensService).describe(session.accessToken))!; // the session, as the tokens page lists it
    const confirm = await web.send('GET', `/settings/tokens/${id}/revoke`);
    expect(confirm.status).toBe(200);
    expect((await web.send('POST', `/settings/tokens/${id}/revoke`, { _csrf: web.csrfFrom(confirm.text) })).status).toBe(303);
    expect(await statusOn(api, madeAgain)).toBe(401);
  });

  it('a token made with a client’s session dies when the client is disabled, and when it is deleted', async () => {
    const frank = await createUser(api);
    const disabledLater = await clientSession('tool-disabled', ['profile', 'tokens'], frank);
    const madeA = (await mint(disabledLater, { label: 'made with a client disabled later' })).body.accessToken as string;
    const deletedLater = await clientSession('tool-deleted', ['profile', 'tokens'], frank);
    const madeB = (await mint(deletedLater, { label: 'made with a client deleted later' })).body.accessToken as string;
    expect(await statusOn(replica.target, madeA)).toBe(200);
    expect(await statusOn(api, madeB)).toBe(200);

    expect((await request(api, 'PATCH', '/api/admin/clients/tool-disabled', { json: { disabled: true }, token: adminApiToken })).status).toBe(200);
    expect(await statusOn(api, madeA)).toBe(401);
    expect(await eventually(async () => (await statusOn(replica.target, madeA)) === 401, 2_000)).toBe(true);

    expect((await request(api, 'DELETE', '/api/admin/clients/tool-deleted', { token: adminApiToken })).status).toBe(204);
    expect(await statusOn(api, madeB)).toBe(401);
  });

  it('an administrator with a fresh admin grant makes a token for someone else: without admin, audited with the grant, ended with it', async () => {
    const grace = await createUser(api);
    const session = await cliSession(admin, ['profile', 'tokens', 'admin']);
    const made = await mint(session.accessToken, { userEmail: grace.email, label: 'for grace', expiresInSeconds: 365 * DAY });
    expect(made.status).toBe(201);
    expect(made.body.user.id).toBe(grace.id);
    expect(await scopesOf(made.body.accessToken)).toBe('profile, tokens');
    const [row] = await accessTokens(api, { userId: grace.id });
    const sessionId = (await api.app.get(TokensService).describe(session.accessToken))!.grantId;
    expect(row).toMatchObject({ origin: 'admin', minted_by_grant_id: sessionId });
    const [issued] = await authEvents(api, { type: 'token.issue', detail: { tokenId: row.id } });
    expect(issued.detail).toEqual({ tokenId: row.id, origin: 'admin', issuedBy: admin.id, mintedByTokenId: expect.any(String), mintedByDeviceLoginId: sessionId });

    // The administrator's session ends: so does the token it made for grace (an event in her log says why).
    expect((await request(api, 'POST', ROUTES.logout, { token: session.accessToken })).status).toBe(204);
    expect(await statusOn(api, made.body.accessToken)).toBe(401);
    const [ended] = await authEvents(api, { type: 'token.revoke', userId: grace.id });
    expect(ended.detail).toEqual({ tokenId: row.id, reason: 'the session it was made with was revoked' });

    // Signing out everywhere (or being disabled) ends what an administrator's tokens made for others too.
    const other = await cliSession(admin, ['profile', 'tokens', 'admin']);
    const again = (await mint(other.accessToken, { userEmail: grace.email, label: 'again' })).body.accessToken as string;
    expect(await statusOn(api, again)).toBe(200);
    await api.app.get(TokensService).revokeAllForUser(admin.id, null);
    expect(await statusOn(api, again)).toBe(401);
    adminApiToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
  });

  it('a token being made while its maker is revoked is revoked with it, or never made', async () => {
    const heidi = await createUser(api);
    for (let round = 0; round < 3; round++) {
      const parent = (await api.app.get(TokensService).issue({ userId: heidi.id, origin: 'direct', scope: 'profile tokens' })).accessToken;
      const answers = await Promise.all([
        ...Array.from({ length: 10 }, (_, i) => mint(parent, { label: `racing ${round}.${i}` })),
        request(api, 'POST', ROUTES.logout, { token: parent }),
        ...Array.from({ length: 10 }, (_, i) => mint(parent, { label: `racing late ${round}.${i}` })),
      ]);
      const made = answers.filter((res) => res.status === 201).map((res) => res.body.accessToken as string);
      expect(answers.every((res) => [201, 204, 401].includes(res.status))).toBe(true);
      for (const token of made) expect(await statusOn(api, token)).toBe(401);
    }
  });

  it('says which grant made a token: the tokens page, and /me', async () => {
    const ivan = await createUser(api);
    const session = await cliSession(ivan);
    const made = (await mint(session.accessToken, { label: 'from the laptop' })).body.accessToken as string;
    const madeByMade = (await mint(made, { label: 'from ci' })).body.accessToken as string;
    const web = await signInAs(api, ivan.email, PASSWORD);
    const page = await web.send('GET', '/settings/tokens');
    const created = await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(page.text), label: 'on the site', expires_in_days: '30' });
    expect(created.status).toBe(303);
    const listed = (await web.send('GET', '/settings/tokens')).text;
    const originOf = (name: string) => new RegExp(`<strong>${name}</strong>.*?<td data-label="Origin">([^<]+)</td>`, 's').exec(listed)?.[1];
    expect(originOf('from the laptop')).toBe('made with the Prospect CLI session on laptop');
    expect(originOf('from ci')).toBe('made with token “from the laptop”');
    expect(originOf('on the site')).toBe('made on this site');
    expect(originOf('prospect CLI 0.1.0 on laptop')).toBe('device login');

    expect((await get(api, ROUTES.me, made)).body.madeWith).toBe('the Prospect CLI session on laptop');
    expect((await get(api, ROUTES.me, madeByMade)).body.madeWith).toBe('token “from the laptop”');
    expect((await get(api, ROUTES.me, session.accessToken)).body).not.toHaveProperty('madeWith');
  });

  it('a token made in a signed-in browser has the person’s scopes, never `admin` unasked (issue #43, finding 5)', async () => {
    const judy = await createUser(api);
    for (const [person, scopes] of [
      [judy, 'profile, tokens, orgs'],
      [admin, 'profile, tokens, orgs'],
    ] as const) {
      const web = await signInAs(api, person.email, PASSWORD);
      const page = await web.send('GET', '/settings/tokens');
      const made = await web.agent.post(ROUTES.issueToken).set('x-csrf-token', web.csrfFrom(page.text)).send({ label: 'from the browser' });
      expect(made.status).toBe(201);
      expect(await scopesOf(made.body.accessToken)).toBe(scopes);
      const [row] = await accessTokens(api, { userId: person.id, label: 'from the browser' });
      expect(row).toMatchObject({ minted_by_token_id: null, minted_by_grant_id: null });
    }
  });

  it('every token that carries `admin` ends within ADMIN_GRANT_SECONDS, wherever it is made (issue #43, finding 5)', async () => {
    const web = await signInAs(api, admin.email, PASSWORD);
    const page = await web.send('GET', '/settings/tokens');
    expect(page.text).toContain('name="admin"');
    const yearLong = async (label: string, extra: Record<string, string>) => {
      const made = await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(page.text), label, expires_in_days: '365', ...extra });
      expect(made.status).toBe(303);
      const [row] = await accessTokens(api, { userId: admin.id, label });
      return { scope: row.scope, hours: (new Date(row.expires_at).getTime() - clock.now().getTime()) / 3600_000 };
    };
    expect(await yearLong('plain', {})).toEqual({ scope: 'profile tokens orgs', hours: 365 * 24 });
    expect(await yearLong('administering', { admin: 'on' })).toEqual({ scope: 'profile tokens admin orgs', hours: 12 });
    // The same cap at the one place every door issues through.
    const direct = await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile admin', ttlSeconds: 30 * 24 * 3600 });
    expect((direct.expiresAt.getTime() - clock.now().getTime()) / 3600_000).toBe(12);
    // A non-administrator's box does not exist, and ticking it anyway changes nothing.
    const judy = await createUser(api);
    const judyWeb = await signInAs(api, judy.email, PASSWORD);
    const judyPage = await judyWeb.send('GET', '/settings/tokens');
    expect(judyPage.text).not.toContain('name="admin"');
    await judyWeb.send('POST', '/settings/tokens', { _csrf: judyWeb.csrfFrom(judyPage.text), label: 'judy', admin: 'on' });
    expect((await accessTokens(api, { userId: judy.id, label: 'judy' }))[0].scope).toBe('profile tokens orgs');
  });
});
