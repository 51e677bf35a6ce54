import { IssuedTokenResponseSchema, MeResponseSchema, ROUTES } from '@prospect/contract';
import supertest from 'supertest';
import { RefusedTokens } from '../../src/auth/refused-tokens.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { everyAccount } from '../support/account-fixtures.js';
import { authEvents, createUser, deviceLoginToken } from '../support/fixtures.js';
import { hasServerSecret } from '../support/grant-fixtures.js';
import { errorBody, get, post, request } from '../support/http.js';
import { eventually } from '../support/eventually.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';
import { signUp, webClient } from '../support/web-client.js';

describe('CLI tokens', () => {
  const clock = new FakeClock();
  let api: TestApp;
  let admin: Awaited<ReturnType<typeof createUser>>;
  let adminToken: string;
  let adminTokenId: string;
  beforeAll(async () => {
    api = await startTestApp({ clock, env: { ACCESS_TOKEN_MAX_TTL_SECONDS: String(90 * 24 * 3600) } });
    admin = await createUser(api, { role: 'admin' });
    ({ accessToken: adminToken, id: adminTokenId } = await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct' }));
  });
  afterAll(() => api.close());

  const issueDirect = async (userId: string, ttlSeconds?: number) =>
    (await api.app.get(TokensService).issue({ userId, origin: 'direct', ttlSeconds })).accessToken;

  describe('GET /api/cli/auth/me', () => {
    it('returns the user and the expiry of a valid token (the top-level variant)', async () => {
      const user = await createUser(api, { name: 'Ada Lovelace' });
      const token = await issueDirect(user.id, 3600);
      const res = await get(api, ROUTES.me, token);
      expect(res.status).toBe(200);
      expect(MeResponseSchema.parse(res.body)).toEqual({
        user: { id: user.id, email: user.email, name: 'Ada Lovelace' },
        expiresAt: new Date(clock.now().getTime() + 3600_000).toISOString(),
        // A token made without a stored scope has the CLI's, `orgs` among them (issue #44).
        organizations: [],
      });
      expect(Object.keys(res.body.user).sort()).toEqual(['email', 'id', 'name']);
    });

    it('without a token: 401 with a bare Bearer challenge', async () => {
      const res = await get(api, ROUTES.me);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="prospect"');
      expect(res.body).toEqual(errorBody(401, 'unauthorized'));
    });

    it('tells an expired token from a revoked one and from an unknown one (RFC 6750 §3)', async () => {
      const user = await createUser(api);
      const expiring = await issueDirect(user.id, 60);
      const revoked = await issueDirect(user.id);
      await post(api, ROUTES.logout, undefined, revoked);
      clock.advanceSeconds(60);

      for (const [token, description, hint] of [
        [expiring, 'token expired', /expired/],
        [revoked, 'token revoked', /revoked/],
        [`prs_${'x'.repeat(43)}`, 'token unknown', /not valid/],
      ] as const) {
        const res = await get(api, ROUTES.me, token);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe(`Bearer realm="prospect", error="invalid_token", error_description="${description}"`);
        expect(res.body).toEqual(errorBody(401, 'invalid_token'));
        expect(res.body.message).toMatch(hint);
      }
    });

    it('records use at most once a minute, so verifying stays a read', async () => {
      const user = await createUser(api);
      const token = await issueDirect(user.id);
      const lastUsed = async () => (await accessTokens(api, { userId: user.id }))[0]?.last_used_at?.toISOString() ?? null;
      // The touch is not awaited by the request: wait for it to land.
      const lastUsedBecomes = (expected: string) => eventually(async () => (await lastUsed()) === expected);
      await get(api, ROUTES.me, token);
      expect(await lastUsedBecomes(clock.now().toISOString())).toBe(true);
      const first = await lastUsed();
      clock.advanceSeconds(30);
      await get(api, ROUTES.me, token);
      expect(await lastUsed()).toBe(first);
      clock.advanceSeconds(31);
      await get(api, ROUTES.me, token);
      expect(await lastUsedBecomes(clock.now().toISOString())).toBe(true);
    });
  });

  describe('POST /api/cli/auth/token', () => {
    it('issues a token for the caller, verified by /me, with label and lifetime', async () => {
      const user = await createUser(api);
      const res = await post(api, ROUTES.issueToken, { label: 'ci runner', expiresInSeconds: 600 }, await issueDirect(user.id));
      expect(res.status).toBe(201);
      const body = IssuedTokenResponseSchema.parse(res.body);
      expect(body.user).toEqual({ id: user.id, email: user.email, name: user.name });
      expect(body.expiresAt).toBe(new Date(clock.now().getTime() + 600_000).toISOString());
      expect((await get(api, ROUTES.me, body.accessToken)).body.user.id).toBe(user.id);
      const labelled = (await accessTokens(api, { userId: user.id })).filter((token) => token.label !== null);
      expect(labelled.map(({ label, origin }) => ({ label, origin }))).toEqual([{ label: 'ci runner', origin: 'direct' }]);
    });

    it('refuses a lifetime above ACCESS_TOKEN_MAX_TTL_SECONDS, naming the maximum, and grants the maximum itself', async () => {
      const user = await createUser(api);
      const res = await post(api, ROUTES.issueToken, { expiresInSeconds: 365 * 24 * 3600 }, await issueDirect(user.id));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'invalid_request', message: 'expiresInSeconds must be at most 7776000 (90 days) on this server.' });
      // Made with a token that lives as long: a token never outlives the one it is made with.
      const max = await post(api, ROUTES.issueToken, { expiresInSeconds: 90 * 24 * 3600 }, await issueDirect(user.id, 90 * 24 * 3600));
      expect(max.body.expiresAt).toBe(new Date(clock.now().getTime() + 90 * 24 * 3600_000).toISOString());
    });

    it('lets an admin issue for any user by e-mail (any letter case)', async () => {
      const user = await createUser(api);
      const res = await post(api, ROUTES.issueToken, { userEmail: user.email.toUpperCase(), label: 'tooling' }, adminToken);
      expect(res.status).toBe(201);
      expect(res.body.user.id).toBe(user.id);
      const [row] = await accessTokens(api, { userId: user.id });
      expect(row).toMatchObject({ origin: 'admin', label: `tooling (issued by ${admin.email})` });
      const [event] = (await authEvents(api, { type: 'token.issue', detail: { tokenId: row.id } })).map(({ user_id, detail }) => ({ user_id, detail }));
      expect(event).toEqual({ user_id: user.id, detail: { tokenId: row.id, origin: 'admin', issuedBy: admin.id, mintedByTokenId: adminTokenId } });
    });

    it('refuses a non-admin asking for someone else (403) and an unknown user (404)', async () => {
      const user = await createUser(api);
      const forbidden = await post(api, ROUTES.issueToken, { userEmail: admin.email }, await issueDirect(user.id));
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual(errorBody(403, 'forbidden'));
      const self = await post(api, ROUTES.issueToken, { userEmail: user.email }, await issueDirect(user.id));
      expect(self.status).toBe(201);
      const unknown = await post(api, ROUTES.issueToken, { userEmail: 'nobody@example.com' }, adminToken);
      expect(unknown.status).toBe(404);
    });

    it('refuses a caller without credentials (401)', async () => {
      const res = await post(api, ROUTES.issueToken, {});
      expect(res.status).toBe(401);
      expect(res.body).toEqual(errorBody(401, 'unauthorized'));
    });
  });

  describe('refused tokens', () => {
    it('are counted without a write per request, and recorded as one event per address and reason', async () => {
      const refused = api.app.get(RefusedTokens);
      await refused.flush(); // what earlier tests left counted
      const lastId = async () => Math.max(0, ...(await authEvents(api, {})).map((e) => e.id));
      const before = await lastId();
      for (let i = 0; i < 20; i++) expect((await get(api, ROUTES.me, `prs_${'x'.repeat(43)}`)).status).toBe(401);
      expect(await lastId()).toBe(before);
      await refused.flush();
      const rows = (await authEvents(api, {})).filter((e) => e.id > before).map(({ ip, detail }) => ({ ip, detail }));
      expect(rows).toEqual([{ ip: '127.0.0.1', detail: { reason: 'unknown', count: 20 } }]);
    });
  });

  describe('POST /api/cli/auth/logout', () => {
    it('revokes the presented token (204); /me then says revoked, and a second logout is 401', async () => {
      const user = await createUser(api);
      const token = await issueDirect(user.id);
      const res = await request(api, 'POST', ROUTES.logout, { token });
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expect((await get(api, ROUTES.me, token)).headers.get('www-authenticate')).toContain('token revoked');
      expect((await post(api, ROUTES.logout, undefined, token)).status).toBe(401);
    });
  });

  describe('one person, one identity (seed §1, invariant 1)', () => {
    it('gives the same user id through device login, an issued token and an e-mail in another case', async () => {
      const user = await createUser(api, { email: 'Grace.Hopper@Example.com' });
      expect(user.email).toBe('grace.hopper@example.com');
      const viaDevice = await deviceLoginToken(api, user);
      const viaToken = (await post(api, ROUTES.issueToken, { userEmail: 'GRACE.HOPPER@example.com' }, adminToken)).body.accessToken;
      const ids = await Promise.all([viaDevice, viaToken].map(async (t) => (await get(api, ROUTES.me, t)).body.user.id));
      expect(ids).toEqual([user.id, user.id]);
      await expect(createUser(api, { email: 'grace.HOPPER@example.com ' })).rejects.toMatchObject({ status: 409 });
    });
  });

});

describe('the first administrator, without PROSPECT_ADMIN_*', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api.close());

  const setupCodeInLog = () => [...api.logs().matchAll(/signup\?setup_code=(prss_[A-Za-z0-9_-]+)/g)].at(-1)?.[1];

  /** The sign-up form opened with `setupCode` (it keeps the code), filled in and sent; the answer and the browser. */
  async function signUpWith(setupCode: string, email: string) {
    const web = webClient(api);
    const page = `/signup?setup_code=${setupCode}`;
    expect((await web.send('GET', page)).text).toContain(`name="setup_code" value="${setupCode}"`);
    const res = await signUp(web, { name: 'First', email, password: 'correct horse battery', setup_code: setupCode }, page);
    return { ...res, web };
  }

  const roleOf = async (email: string) => (await api.app.get(UsersService).findByEmail(email))?.role;

  it('is not whoever signs up first: the first account of an empty database is a user', async () => {
    expect((await createUser(api)).role).toBe('user');
  });

  it('is the sign-up with the setup code printed at start, once; of two racing sign-ups only one', async () => {
    const code = setupCodeInLog();
    expect(code).toBeDefined();
    expect((await signUpWith(`${code}x`, 'wrong@example.com')).status).toBe(400);
    const [a, b] = await Promise.all([signUpWith(code!, 'first@example.com'), signUpWith(code!, 'second@example.com')]);
    expect([a.status, b.status].sort()).toEqual([303, 400]);
    // The winner's next page says what the code made them, once.
    const winner = a.status === 303 ? a : b;
    const welcome = await winner.web.agent.get(winner.location!).redirects(2);
    expect(welcome.text).toContain('<p class="success" role="status">Your account is ready, and you are the administrator of this Prospect');
    expect((await winner.web.agent.get('/settings/tokens')).text).not.toContain('you are the administrator');
    const roles = [await roleOf('first@example.com'), await roleOf('second@example.com')].filter(Boolean);
    expect(roles).toEqual(['admin']);
    const again = await signUpWith(code!, 'third@example.com');
    expect(again.status).toBe(400);
    expect(again.text).toContain('That setup code is not valid');
    expect(await hasServerSecret(api, 'admin-setup-code')).toBe(false);
  });
});

describe('admin bootstrap (PROSPECT_ADMIN_EMAIL / PROSPECT_ADMIN_PASSWORD)', () => {
  it('creates the admin on first start, and makes the account with the operator password admin again on the next', async () => {
    const env = { PROSPECT_ADMIN_EMAIL: 'Root@Example.com', PROSPECT_ADMIN_PASSWORD: 'a long passphrase' };
    const first = await startTestApp({ env });
    try {
      const users = first.app.get(UsersService);
      const created = await users.findByEmail('root@example.com');
      expect(created).toMatchObject({ role: 'admin' });
      expect(await users.authenticate('root@example.com', 'a long passphrase')).toMatchObject({ id: created!.id });
      // The account loses its role meanwhile (as another administrator could take it from it).
      await first.app.get(UnitOfWork).run((tx) => users.setRole(tx, created!.id, 'user', new Date(), created!.id, null));

      const second = await startTestApp({ env, database: first.database });
      try {
        const again = await second.app.get(UsersService).findByEmail('root@example.com');
        expect(again).toMatchObject({ id: created!.id, role: 'admin' });
        expect(await everyAccount(second)).toHaveLength(1);
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
    }
  });
});
