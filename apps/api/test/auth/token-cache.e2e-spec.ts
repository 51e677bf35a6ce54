import { ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { VerifiedTokenCache } from '../../src/auth/verified-token-cache.js';
import { eventually } from '../support/eventually.js';
import { FakeClock } from '../support/fake-clock.js';
import { authorizedPoll, createUser } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { type Replica, startReplica, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The verified-token cache must never make /me accept a revoked or expired
 * token: revocation is seen at once on the instance that made it and within
 * the NOTIFY delay on the others. On a Postgres server the cache is on; on the
 * embedded database (one process, no NOTIFY) it is off and every /me reads.
 */
describe('verified-token cache and revocation', () => {
  const clock = new FakeClock(Date.now());
  let a: TestApp;
  let b: Replica;
  let onServer: boolean;
  beforeAll(async () => {
    a = await startTestApp({ clock });
    b = await startReplica(a, clock);
    onServer = a.database.kind === 'server';
    await eventually(() => a.app.get(VerifiedTokenCache).enabled === onServer);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const token = async (app: TestApp, ttlSeconds?: number) => {
    const user = await createUser(app);
    return (await app.app.get(TokensService).issue({ userId: user.id, origin: 'direct', ttlSeconds })).accessToken;
  };
  const me = (app: TestApp | Replica, t: string) => get('target' in app ? app.target : app, ROUTES.me, t);

  it('is on exactly when the database can announce revocations', () => {
    expect(a.app.get(VerifiedTokenCache).enabled).toBe(onServer);
  });

  it('serves a cached token and still sees a logout on the same instance at once', async () => {
    const t = await token(a);
    expect((await me(a, t)).status).toBe(200);
    expect(a.app.get(VerifiedTokenCache).size).toBe(onServer ? 1 : 0);
    expect((await post(a, ROUTES.logout, undefined, t)).status).toBe(204);
    const res = await me(a, t);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('token revoked');
  });

  it('refuses an expired token at once even when it is cached', async () => {
    const t = await token(a, 120);
    expect((await me(a, t)).status).toBe(200);
    clock.advanceSeconds(120);
    const res = await me(a, t);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('token expired');
  });

  it('sees a logout on another instance within the notification delay', async () => {
    const t = await token(a);
    expect((await me(a, t)).status).toBe(200);
    expect((await me(b, t)).status).toBe(200);
    expect((await post(b.target, ROUTES.logout, undefined, t)).status).toBe(204);
    expect(await eventually(async () => (await me(a, t)).status === 401, 2_000)).toBe(true);
  });

  it('sees a refresh token reused on another instance: every cached token of the family is refused there too', async () => {
    const user = await createUser(a);
    const first = (await authorizedPoll(a, user)).body;
    const second = (await post(a, ROUTES.refresh, { refreshToken: first.refreshToken })).body;
    expect((await me(b, first.accessToken)).status).toBe(200);
    expect((await me(b, second.accessToken)).status).toBe(200);
    // The successor used, the old token again is a reuse.
    expect((await post(a, ROUTES.refresh, { refreshToken: second.refreshToken })).status).toBe(200);
    expect((await post(a, ROUTES.refresh, { refreshToken: first.refreshToken })).status).toBe(401);
    expect(await eventually(async () => (await me(b, first.accessToken)).status === 401 && (await me(b, second.accessToken)).status === 401, 2_000)).toBe(true);
  });

  it('sees a revocation made by hand in SQL (the trigger announces it)', async () => {
    const t = await token(a);
    expect((await me(a, t)).status).toBe(200);
    // sql-on-purpose: a revocation past the app, which only the table's trigger announces
    await a.dataSource.query(`UPDATE access_tokens SET revoked_at = now() WHERE revoked_at IS NULL`);
    expect(await eventually(async () => (await me(a, t)).status === 401, 2_000)).toBe(true);
  });

  it('flushes and bypasses the cache while its listener is down, and recovers', async () => {
    const t = await token(a);
    expect((await me(a, t)).status).toBe(200);
    expect((await me(b, t)).status).toBe(200); // cached on the other replica too
    const cache = a.app.get(VerifiedTokenCache);
    if (onServer) {
      // Kill both instances' listeners: a revocation now sends a notice nobody hears.
      // sql-on-purpose: the listeners' connections terminated (pg_terminate_backend)
      await a.dataSource.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'prospect-revocation-listener'`);
      expect(await eventually(() => !cache.enabled)).toBe(true);
    }
    expect(cache.size).toBe(0);
    // sql-on-purpose: a revocation past the app, which only the table's trigger would announce
    await a.dataSource.query(`UPDATE access_tokens SET revoked_at = now() WHERE revoked_at IS NULL`);
    expect((await me(a, t)).status).toBe(401);
    // The other replica's listener died too, unannounced: it must not answer from its cache either.
    expect(await eventually(async () => (await me(b, t)).status === 401, 500)).toBe(true);
    // The listener reconnects by itself and the cache comes back.
    expect(await eventually(() => cache.enabled === onServer, 5_000)).toBe(true);
  });
});
