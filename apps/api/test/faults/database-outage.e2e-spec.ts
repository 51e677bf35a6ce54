import { createHash, randomBytes } from 'node:crypto';
import { ROUTES } from '@prospect/contract';
import pg from 'pg';
import { type ApiProcess, startApiProcess } from '../support/api-process.js';
import { get, post, type JsonResponse } from '../support/http.js';
import { ThrowawayPostgres } from '../support/throwaway-postgres.js';

const DATABASE_TIMEOUT_MS = 1_500;

/** A user and a token straight in the database (the API created the schema). */
async function seedToken(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO users (email, name) VALUES ($1, 'Outage') RETURNING id`,
      [`outage-${randomBytes(4).toString('hex')}@example.com`],
    );
    const token = `prs_${randomBytes(32).toString('base64url')}`;
    await client.query(
      `INSERT INTO access_tokens (token_hash, user_id, origin, created_at, expires_at) VALUES ($1, $2, 'direct', now(), now() + interval '1 day')`,
      [createHash('sha256').update(token).digest(), rows[0]!.id],
    );
    return token;
  } finally {
    await client.end();
  }
}

const timed = async (request: Promise<JsonResponse>) => {
  const started = Date.now();
  const res = await request;
  return { res, ms: Date.now() - started };
};

const wellFormedDeviceCode = () => `prsd_${randomBytes(32).toString('base64url')}`;

/**
 * The database going away or freezing under a running API, on a Postgres cluster of
 * this test's own: answers are 503 with Retry-After, never 500 and never a hang; the
 * log says so once each way; the service recovers by itself when the database returns.
 */
describe('a database that goes away', () => {
  let database: ThrowawayPostgres;
  let api: ApiProcess;
  beforeAll(async () => {
    database = await ThrowawayPostgres.create();
    api = await startApiProcess({ DATABASE_URL: database.url, DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS) });
  });
  afterAll(async () => {
    await api?.stop();
    await database?.destroy();
  });

  it('stopped 5 s: answers 503 with Retry-After, says so once, loses nothing acknowledged, and recovers within 2 s of its return; a revoked token stays refused', async () => {
    const token = await seedToken(database.url);
    const revoked = await seedToken(database.url);
    expect((await get(api.baseUrl, ROUTES.me, token)).status).toBe(200);
    expect((await post(api.baseUrl, ROUTES.logout, undefined, revoked)).status).toBe(204);

    // Writes acknowledged before the outage must all be there after it.
    const acknowledged = await Promise.all(Array.from({ length: 20 }, () => post(api.baseUrl, ROUTES.deviceStart, {})));
    expect(acknowledged.map((r) => r.status)).toEqual(Array(20).fill(200));

    await database.stop();
    const during: JsonResponse[] = [];
    const outageEnds = Date.now() + 5_000;
    while (Date.now() < outageEnds) {
      during.push(
        ...(await Promise.all([
          post(api.baseUrl, ROUTES.deviceStart, {}),
          post(api.baseUrl, ROUTES.devicePoll, { deviceCode: wellFormedDeviceCode() }),
          get(api.baseUrl, ROUTES.me, revoked),
          get(api.baseUrl, ROUTES.health),
        ])),
      );
    }
    for (const res of during) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body).toMatchObject({ statusCode: 503, error: 'service_unavailable' });
    }

    await database.start();
    const back = Date.now();
    let me = await get(api.baseUrl, ROUTES.me, token);
    while (me.status !== 200 && Date.now() - back < 5_000) {
      await new Promise((r) => setTimeout(r, 100));
      me = await get(api.baseUrl, ROUTES.me, token);
    }
    expect(me.status).toBe(200);
    expect(Date.now() - back).toBeLessThanOrEqual(2_000);
    expect((await post(api.baseUrl, ROUTES.deviceStart, {})).status).toBe(200);
    expect((await get(api.baseUrl, ROUTES.me, revoked)).status).toBe(401);
    for (const started of acknowledged) {
      expect((await post(api.baseUrl, ROUTES.devicePoll, { deviceCode: started.body.deviceCode })).body).toEqual({ status: 'pending' });
    }

    await new Promise((r) => setTimeout(r, 1_500)); // the availability probe runs every second
    const log = api.stdout();
    expect(log.match(/database unavailable/g)).toHaveLength(1);
    expect(log.match(/database available again/g)).toHaveLength(1);
    expect(log).not.toMatch(/"level":50/); // no error lines, no stack traces: 503s are not faults of ours
  });

  it('frozen: no request waits longer than DATABASE_TIMEOUT_MS + 1 s, and each is a 503', async () => {
    const token = await seedToken(database.url); // never verified yet, so /me must ask the database
    await database.signalAll('SIGSTOP');
    try {
      const answers = await Promise.all([
        timed(post(api.baseUrl, ROUTES.deviceStart, {})),
        timed(post(api.baseUrl, ROUTES.deviceStart, {})),
        timed(post(api.baseUrl, ROUTES.devicePoll, { deviceCode: wellFormedDeviceCode() })),
        timed(get(api.baseUrl, ROUTES.me, token)),
        timed(get(api.baseUrl, ROUTES.health)),
      ]);
      for (const { res, ms } of answers) {
        expect(res.status).toBe(503);
        expect(ms).toBeLessThanOrEqual(DATABASE_TIMEOUT_MS + 1_000);
      }
    } finally {
      await database.signalAll('SIGCONT');
    }
    let health = await get(api.baseUrl, ROUTES.health);
    for (let i = 0; i < 50 && health.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      health = await get(api.baseUrl, ROUTES.health);
    }
    expect(health.status).toBe(200);
    expect((await get(api.baseUrl, ROUTES.me, token)).status).toBe(200);
  });
});
