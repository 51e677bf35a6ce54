import { ROUTES } from '@prospect/contract';
import { client } from './support/http.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';
import { TcpProxy } from './support/tcp-proxy.js';

describe('GET /api/health', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let api: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
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
});
