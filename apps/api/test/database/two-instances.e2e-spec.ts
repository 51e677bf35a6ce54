import { ROUTES } from '@prospect/contract';
import { REPLY_WINDOW_SECONDS } from '../../src/device-login/device-login.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { approveInBrowser, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { type Replica, startReplica, startTestApp, type TestApp } from '../support/test-app.js';

/** State lives in Postgres: two instances on one database behave as one. */
describe('two API instances on one database', () => {
  const clock = new FakeClock(Date.now());
  let a: TestApp;
  let b: Replica;
  beforeAll(async () => {
    a = await startTestApp({ clock });
    b = await startReplica(a, clock);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('starts on one, approves and polls on the other, and verifies on both', async () => {
    const start = await startDeviceLogin(a);
    expect((await poll(b.target, start.deviceCode)).body).toEqual({ status: 'pending' });

    // The poll interval is enforced in the database, not per process.
    const tooFast = await poll(a, start.deviceCode);
    expect(tooFast.status).toBe(429);
    expect(tooFast.body.error).toBe('slow_down');

    const email = await approveInBrowser(b.target, start.userCode);
    clock.advanceSeconds(5);
    const authorized = await poll(a, start.deviceCode);
    expect(authorized.body).toMatchObject({ status: 'authorized', user: { email } });
    // A retry on the other instance (the answer from a was lost) gets the same token…
    expect((await poll(b.target, start.deviceCode)).body).toEqual(authorized.body);
    // …and a poll after the reply window is a replay, which revokes it.
    clock.advanceSeconds(REPLY_WINDOW_SECONDS);
    expect((await poll(a, start.deviceCode)).body).toEqual({ status: 'denied' });

    // The replay on a revoked what a issued, for both.
    for (const api of [a, b.target]) expect((await get(api, ROUTES.me, authorized.body.accessToken)).status).toBe(401);
  });

  it('answers one of 40 polls of a pending login sent at once to two instances: the interval is one slot for all', async () => {
    // Two instances on one clock (a's is moved by the other cases): a second replica beside b.
    const c = await startReplica(a, clock);
    try {
      const start = await startDeviceLogin(a);
      const burst = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => poll(i % 2 ? c.target : b.target, start.deviceCode)));
      const answers = await burst(40);
      expect(answers.filter((r) => r.status === 200).map((r) => r.body)).toEqual([{ status: 'pending' }]);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(39);
    } finally {
      await c.close();
    }
  });

  it('sees a token issued on one as valid on the other, and a logout on one on the other', async () => {
    const user = await createUser(a);
    const { accessToken } = await a.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    expect((await get(b.target, ROUTES.me, accessToken)).body.user.id).toBe(user.id);
    expect((await post(b.target, ROUTES.logout, undefined, accessToken)).status).toBe(204);
    expect((await get(a, ROUTES.me, accessToken)).status).toBe(401);
  });
});
