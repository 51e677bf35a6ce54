import { readFileSync } from 'node:fs';
import { ROUTES } from '@prospect/contract';
import { ShutdownState } from '../../src/health/shutdown-state.js';
import { client } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { TcpProxy } from '../support/tcp-proxy.js';

describe('GET /api/health', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let api: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase({ migrated: true });
    const proxied = await TcpProxy.forUrl(database.url);
    proxy = proxied.proxy;
    api = await startTestApp({ database, databaseUrl: proxied.url });
  });
  afterAll(async () => {
    await api?.close();
    await proxy?.cut();
    await database?.drop();
  });

  const health = () => client(api).get(ROUTES.health);

  it('is 200 while the database is reachable, 503 while it is not, and 200 again when it returns', async () => {
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' } } });

    await proxy.cut();
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body).toEqual({
      statusCode: 503,
      error: 'service_unavailable',
      message: expect.stringContaining('database'),
    });

    await proxy.start();
    // The pool replaces its dead connections on the next checkout: no restart needed.
    let again = await health();
    for (let i = 0; i < 10 && again.status !== 200; i++) again = await health();
    expect(again.status).toBe(200);
  });

  it('live is 200 without touching the database; ready is 200 with each part up, and a 503 naming what is down', async () => {
    // The test before cut the database: the listener may still be on its way back.
    const ready = await readyWithin(20_000);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'ok',
      info: { serving: { status: 'up' }, database: { status: 'up' }, migrations: { status: 'up' }, revocationListener: { status: 'up' } },
    });

    await proxy.cut();
    const live = await client(api).get(ROUTES.healthLive);
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ status: 'ok', version: JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version });
    const notReady = await client(api).get(ROUTES.healthReady);
    expect(notReady.status).toBe(503);
    expect(notReady.headers['retry-after']).toBeDefined();
    expect(notReady.body).toEqual({ statusCode: 503, error: 'service_unavailable', message: expect.stringMatching(/^Not ready: .*database.* down\.$/) });

    await proxy.start();
    // The pool comes back on the next checkout, the listener after its backoff (at most 10 s).
    expect((await readyWithin(20_000)).status).toBe(200);
  });

  it('ready is 503 from the moment the instance is shutting down, while it goes on serving', async () => {
    expect((await readyWithin(20_000)).status).toBe(200);
    api.app.get(ShutdownState).stopping = true;
    try {
      const notReady = await client(api).get(ROUTES.healthReady);
      expect(notReady.status).toBe(503);
      expect(notReady.body.message).toBe('Not ready: serving down.');
      expect((await health()).status).toBe(200);
    } finally {
      api.app.get(ShutdownState).stopping = false;
    }
  });

  /** Asks until ready or `ms` have passed: a bound on a condition, not a wait on a timer. */
  async function readyWithin(ms: number) {
    const deadline = Date.now() + ms;
    let res = await client(api).get(ROUTES.healthReady);
    while (res.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await client(api).get(ROUTES.healthReady);
    }
    return res;
  }
});
