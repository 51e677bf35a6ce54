import { AuthorizedResponseSchema, ROUTES } from '@prospect/contract';
import { DeviceLoginService, REPLY_WINDOW_SECONDS } from '../../src/device-login/device-login.service.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { approve, authEvents, authorizedPoll, createUser, poll, registerClient, startDeviceLogin } from '../support/fixtures.js';
import { errorBody, get, post, request } from '../support/http.js';
import { slowInserts } from '../support/slow-inserts.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { unrevokedFamilyTokens } from '../support/token-fixtures.js';

const HOUR = 3600;
const DAY = 24 * HOUR;

describe('refresh tokens with rotation (issue #14)', () => {
  const clock = new FakeClock();
  let api: TestApp;
  let database: Awaited<ReturnType<typeof emptyServerDatabase>>;
  beforeAll(async () => {
    // A Postgres server even where the suite runs on the embedded database: the tests under
    // concurrency hold a transaction open beside others (slowInserts), which one backend cannot.
    database = await emptyServerDatabase();
    api = await startTestApp({ clock, database: { ...database, kind: 'server' } });
  });
  afterAll(async () => {
    await api.close();
    await database.drop();
  });

  const refresh = (refreshToken: unknown) => post(api, ROUTES.refresh, { refreshToken });
  /** A signed-in CLI: an authorized device login's pair. */
  const signIn = async () => {
    const user = await createUser(api);
    const { body } = await authorizedPoll(api, user);
    return { user, accessToken: body.accessToken as string, refreshToken: body.refreshToken as string };
  };
  const events = (type: string, deviceLoginId?: string) => authEvents(api, { type, detail: deviceLoginId ? { deviceLoginId } : {} });
  const familyOf = async (accessToken: string) => (await api.app.get(TokensService).describe(accessToken))!.grantId!;

  it('a device login answers an access token of an hour and a refresh token (prsr_, 256 bits)', async () => {
    const { accessToken, refreshToken } = await signIn();
    expect(accessToken).toMatch(/^prs_[A-Za-z0-9_-]{43}$/);
    expect(refreshToken).toMatch(/^prsr_[A-Za-z0-9_-]{43}$/);
    const me = await get(api, ROUTES.me, accessToken);
    expect(me.body.expiresAt).toBe(new Date(clock.now().getTime() + HOUR * 1000).toISOString());
    // sql-on-purpose: only the hash is stored
    const stored = await api.dataSource.query(`SELECT encode(token_hash, 'hex') AS hash FROM refresh_tokens`);
    expect(JSON.stringify(stored)).not.toContain(refreshToken);
  });

  it('POST /refresh answers a new access token and a new refresh token, shaped like an authorized poll', async () => {
    const { user, accessToken, refreshToken } = await signIn();
    clock.advanceSeconds(HOUR + 1);
    expect((await get(api, ROUTES.me, accessToken)).status).toBe(401); // the hour is over

    const res = await refresh(refreshToken);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = AuthorizedResponseSchema.parse(res.body);
    expect(body).toEqual({
      status: 'authorized',
      accessToken: expect.stringMatching(/^prs_/),
      refreshToken: expect.stringMatching(/^prsr_/),
      expiresAt: new Date(clock.now().getTime() + HOUR * 1000).toISOString(),
      user: { id: user.id, email: user.email, name: user.name },
    });
    expect(body.accessToken).not.toBe(accessToken);
    expect(body.refreshToken).not.toBe(refreshToken);
    expect((await get(api, ROUTES.me, body.accessToken)).body.user.id).toBe(user.id);
    // The successor refreshes in turn.
    expect((await refresh(body.refreshToken)).status).toBe(200);
    expect(await events('token.refresh', await familyOf(body.accessToken))).toHaveLength(2);
  });

  it('a rotated refresh token presented again once the family moved on is a reuse: the whole family is revoked, audited, 401 invalid_grant', async () => {
    const { accessToken, refreshToken } = await signIn();
    const family = await familyOf(accessToken);
    const second = (await refresh(refreshToken)).body;
    const third = (await refresh(second.refreshToken)).body;
    expect((await get(api, ROUTES.me, third.accessToken)).status).toBe(200); // cached where the cache is on

    // Two generations back (its successor was used): a copy is in someone else's hands.
    const reuse = await refresh(refreshToken);
    expect(reuse.status).toBe(401);
    expect(reuse.body).toEqual(errorBody(401, 'invalid_grant'));
    expect(reuse.body.message).toMatch(/already used.*revoked/);

    // Every token descended from the device login is dead, at once (cache included).
    for (const token of [accessToken, second.accessToken, third.accessToken]) {
      expect((await get(api, ROUTES.me, token)).headers.get('www-authenticate')).toMatch(/token revoked/);
    }
    expect((await refresh(third.refreshToken)).body.message).toMatch(/revoked/);
    expect(await events('token.reuse', family)).toHaveLength(1);
    const [revoked] = await events('token.revoke_family', family);
    expect(revoked.detail).toMatchObject({ reason: 'refresh token reused', accessTokens: 3, refreshTokens: 3 });
  });

  it('two refreshes of the same token racing (two terminals) both end logged in, with the same pair', async () => {
    const { refreshToken } = await signIn();
    const [a, b] = await Promise.all([refresh(refreshToken), refresh(refreshToken)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body).toEqual(a.body);
    expect((await get(api, ROUTES.me, a.body.accessToken)).status).toBe(200);
    expect((await refresh(a.body.refreshToken)).status).toBe(200);
  });

  it('a sealed successor pair is kept only while it can answer: erased when the successor is used, or when the replay window ends', async () => {
    // sql-on-purpose: whether the sealed successor is still stored (a sealed column)
    const sealedOf = async (refreshToken: string) =>
      (await api.dataSource.query(`SELECT successor_sealed IS NOT NULL AS sealed FROM refresh_tokens WHERE token_hash = sha256($1::bytea)`, [refreshToken]))[0].sealed;
    const { refreshToken } = await signIn();
    const second = (await refresh(refreshToken)).body;
    expect(await sealedOf(refreshToken)).toBe(true);
    clock.advanceSeconds(DAY);
    // The successor used: its predecessor's sealed copy goes in the same transaction.
    const third = (await refresh(second.refreshToken)).body;
    expect(await sealedOf(refreshToken)).toBe(false);
    expect(await sealedOf(second.refreshToken)).toBe(true);

    // Never used, the successor's sealed copy lives as long as it may answer (REFRESH_REPLAY_SECONDS, 60), and no longer.
    const eraser = api.app.get(RetentionService);
    clock.advanceSeconds(59);
    await eraser.eraseSealedAnswers();
    expect(await sealedOf(second.refreshToken)).toBe(true);
    clock.advanceSeconds(1);
    await eraser.eraseSealedAnswers();
    expect(await sealedOf(second.refreshToken)).toBe(false);
    expect((await refresh(third.refreshToken)).status).toBe(200);
  });

  it('a revocation beside a rotation in flight revokes the pair being written too (the family is locked)', async () => {
    const { accessToken, refreshToken } = await signIn();
    const family = await familyOf(accessToken);
    // Widen the window: the rotation's INSERT of the new refresh token takes half a second.
    const slowed = await slowInserts(api, 'refresh_tokens');
    try {
      const rotation = refresh(refreshToken);
      await slowed.reached(); // the rotation holds the family's lock, writing
      await api.app.get(TokensService).revokeFamily(family, 'test');
      const rotated = await rotation;
      expect(await unrevokedFamilyTokens(api, family)).toEqual([]);
      if (rotated.status === 200) expect((await get(api, ROUTES.me, rotated.body.accessToken)).status).toBe(401);
    } finally {
      await slowed.remove();
    }
  });

  it('sign out everywhere ends sessions whose access token already expired, and audits each', async () => {
    const { user, refreshToken } = await signIn();
    const direct = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;
    clock.advanceSeconds(HOUR + 1); // only the refresh token of the session is still alive
    expect(await api.app.get(TokensService).revokeAllForUser(user.id)).toBe(2);
    expect((await refresh(refreshToken)).status).toBe(401);
    expect((await get(api, ROUTES.me, direct)).status).toBe(401);
    const ended = (await events('token.revoke_family')).filter((e) => e.detail.reason === 'signed out everywhere');
    expect(ended.length).toBeGreaterThanOrEqual(1);
  });

  it('logout (POST /logout with the access token) revokes the family: the refresh token stops working', async () => {
    const { accessToken, refreshToken } = await signIn();
    expect((await post(api, ROUTES.logout, undefined, accessToken)).status).toBe(204);
    const res = await refresh(refreshToken);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/revoked/);
  });

  it('revoking a device session (the tokens page) revokes the family, whichever of its access tokens is named', async () => {
    const { user, accessToken, refreshToken } = await signIn();
    const next = (await refresh(refreshToken)).body;
    await api.app.get(TokensService).revokeForUser(user.id, (await api.app.get(TokensService).describe(accessToken))!.id);
    expect((await get(api, ROUTES.me, next.accessToken)).status).toBe(401);
    expect((await refresh(next.refreshToken)).status).toBe(401);
    // One entry on the tokens page for the session, however often it was refreshed.
    const listed = (await api.app.get(TokensService).listForUser(user.id)).filter((t) => t.origin === 'device');
    expect(listed).toHaveLength(1);
  });

  it('a replayed device code (after the reply window) revokes the family, refresh tokens included', async () => {
    const user = await createUser(api);
    const start = await startDeviceLogin(api);
    await approve(api, start.userCode, user);
    const first = (await poll(api, start.deviceCode)).body;
    const refreshed = (await refresh(first.refreshToken)).body;
    clock.advanceSeconds(REPLY_WINDOW_SECONDS + 1);
    expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'denied' });
    expect((await refresh(refreshed.refreshToken)).status).toBe(401);
    expect((await get(api, ROUTES.me, refreshed.accessToken)).status).toBe(401);
  });

  it('a retried poll within the reply window answers the same refresh token too', async () => {
    const user = await createUser(api);
    const start = await startDeviceLogin(api);
    await approve(api, start.userCode, user);
    const first = (await poll(api, start.deviceCode)).body;
    clock.advanceSeconds(5);
    expect((await poll(api, start.deviceCode)).body).toEqual(first);
  });

  it('tokens created directly stay long-lived and come without a refresh token', async () => {
    const { accessToken } = await signIn();
    const res = await post(api, ROUTES.issueToken, {}, accessToken);
    expect(res.status).toBe(201);
    expect(res.body.refreshToken).toBeUndefined();
    expect(res.body.expiresAt).toBe(new Date(clock.now().getTime() + 30 * DAY * 1000).toISOString());
  });

  it('refuses garbage with a clear 4xx, never a 500', async () => {
    const unknown = await refresh(`prsr_${'x'.repeat(43)}`);
    expect(unknown.body).toEqual(errorBody(401, 'invalid_grant'));
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer realm="prospect"');
    expect((await refresh('not a token')).status).toBe(401);
    const cases: Array<[unknown, number, RegExp]> = [
      [undefined, 400, /Missing field: refreshToken/],
      [42, 400, /refreshToken must be a string/],
      ['', 400, /refreshToken/],
    ];
    for (const [value, status, message] of cases) {
      const res = await post(api, ROUTES.refresh, value === undefined ? {} : { refreshToken: value });
      expect(res.status).toBe(status);
      expect(res.body.message).toMatch(message);
    }
    expect((await post(api, ROUTES.refresh, { refreshToken: 'x', extra: 1 })).body.message).toMatch(/Unknown field: extra/);
    expect((await request(api, 'POST', ROUTES.refresh, { body: 'refreshToken=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status).toBe(415);
  });

  it('the custom route refreshes only tokens of the prospect-cli client', async () => {
    await registerClient(api, { id: 'other-tool', name: 'Other tool' });
    const user = await createUser(api);
    const start = await api.app.get(DeviceLoginService).start({}, null, null, { id: 'other-tool', scope: 'profile' });
    await approve(api, start.userCode, user);
    const outcome = await api.app.get(DeviceLoginService).pollGrant(start.deviceCode, 'other-tool', null);
    expect(outcome.kind).toBe('authorized');
    const res = await refresh(outcome.kind === 'authorized' ? outcome.reply.refreshToken : '');
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/another client/);
    // …and the contract's poll route does not redeem another client's device code.
    expect((await poll(api, start.deviceCode)).status).toBe(400);
  });
});

// Its own app, after the first has closed: passport keeps one process-wide registry of strategies.
describe('refresh token lifetimes', () => {
  const clock = new FakeClock();
  let short: TestApp;
  beforeAll(async () => {
    short = await startTestApp({ clock, env: { REFRESH_TOKEN_TTL_SECONDS: '100', REFRESH_TOKEN_MAX_LIFETIME_SECONDS: '250', ACCESS_TOKEN_TTL_SECONDS: '60' } });
  });
  afterAll(() => short.close());

  it('slides: a refresh token unused for REFRESH_TOKEN_TTL_SECONDS expires, and no family outlives the absolute cap', async () => {
    const user = await createUser(short);
    const { body } = await authorizedPoll(short, user);
    let current = body.refreshToken as string;
    const rotate = async () => {
      const res = await post(short, ROUTES.refresh, { refreshToken: current });
      if (res.status === 200) current = res.body.refreshToken;
      return res;
    };
    clock.advanceSeconds(90);
    expect((await rotate()).status).toBe(200); // 90 s: within the 100 s
    clock.advanceSeconds(90);
    expect((await rotate()).status).toBe(200); // 180 s: the window slid
    clock.advanceSeconds(40);
    const capped = await rotate(); // 220 s: the access token stops at the cap, not 60 s later
    expect(capped.status).toBe(200);
    expect(capped.body.expiresAt).toBe(new Date(clock.now().getTime() + 30_000).toISOString());
    clock.advanceSeconds(35);
    const over = await rotate(); // 255 s: past the 250 s cap
    expect(over.status).toBe(401);
    expect(over.body.message).toMatch(/expired/);

    const idle = (await authorizedPoll(short, user)).body.refreshToken;
    clock.advanceSeconds(101);
    expect((await post(short, ROUTES.refresh, { refreshToken: idle })).body.message).toMatch(/expired/);
  });
});
