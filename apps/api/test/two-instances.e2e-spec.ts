import { ROUTES } from '@prospect/contract';
import supertest from 'supertest';
import { TokensService } from '../src/tokens/tokens.service.js';
import { FakeClock } from './support/fake-clock.js';
import { createUser, poll, startDeviceLogin } from './support/fixtures.js';
import { get, post, type Target } from './support/http.js';
import { type Replica, startReplica, startTestApp, type TestApp } from './support/test-app.js';

/** Signs up on `target` in a cookie-keeping client and approves `userCode` there, as a person in a browser would. */
async function approveInBrowser(target: Target, userCode: string): Promise<string> {
  const browser = supertest.agent(typeof target === 'string' ? target : target.app.getHttpServer());
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const email = `replica-${Date.now()}@example.com`;
  const form = await browser.get('/signup').expect(200);
  await browser.post('/signup').type('form').send({ _csrf: csrfOf(form.text), name: 'On B', email, password: 'correct horse battery' }).expect(303);
  const page = await browser.get(`/device?user_code=${userCode}`).expect(200);
  await browser.post('/device/approve').type('form').send({ _csrf: csrfOf(page.text), user_code: userCode }).expect(200);
  return email;
}

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
    expect((await poll(b.target, start.deviceCode)).body).toEqual({ status: 'denied' });

    // The replay on b revoked what a issued, for both.
    for (const api of [a, b.target]) expect((await get(api, ROUTES.me, authorized.body.accessToken)).status).toBe(401);
  });

  it('sees a token issued on one as valid on the other, and a logout on one on the other', async () => {
    const user = await createUser(a);
    const { accessToken } = await a.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    expect((await get(b.target, ROUTES.me, accessToken)).body.user.id).toBe(user.id);
    expect((await post(b.target, ROUTES.logout, undefined, accessToken)).status).toBe(204);
    expect((await get(a, ROUTES.me, accessToken)).status).toBe(401);
  });
});
