import { ROUTES } from '@prospect/contract';
import { TokensService } from '../src/tokens/tokens.service.js';
import { FakeClock } from './support/fake-clock.js';
import { approve, createUser, poll, startDeviceLogin } from './support/fixtures.js';
import { get, post } from './support/http.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** State lives in Postgres: two instances on one database behave as one. */
describe('two API instances on one database', () => {
  const clock = new FakeClock();
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp({ clock });
    b = await startTestApp({ clock, database: a.database });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('starts on one, approves and polls on the other, and verifies on both', async () => {
    const user = await createUser(a);
    const start = await startDeviceLogin(a);
    expect((await poll(b, start.deviceCode)).body).toEqual({ status: 'pending' });

    // The poll interval is enforced in the database, not per process.
    const tooFast = await poll(a, start.deviceCode);
    expect(tooFast.status).toBe(429);
    expect(tooFast.body.error).toBe('slow_down');

    await approve(b, start.userCode, user);
    clock.advanceSeconds(5);
    const authorized = await poll(a, start.deviceCode);
    expect(authorized.body).toMatchObject({ status: 'authorized', user: { id: user.id } });
    expect((await poll(b, start.deviceCode)).body).toEqual({ status: 'denied' });

    // The replay on b revoked what a issued, for both.
    for (const api of [a, b]) expect((await get(api.baseUrl, ROUTES.me, authorized.body.accessToken)).status).toBe(401);
  });

  it('sees a token issued on one as valid on the other, and a logout on one on the other', async () => {
    const user = await createUser(b);
    const { accessToken } = await a.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    expect((await get(b.baseUrl, ROUTES.me, accessToken)).body.user.id).toBe(user.id);
    expect((await post(b.baseUrl, ROUTES.logout, undefined, accessToken)).status).toBe(204);
    expect((await get(a.baseUrl, ROUTES.me, accessToken)).status).toBe(401);
  });
});
