import { randomBytes } from 'node:crypto';
import { ROUTES } from '@prospect/contract';
import pg from 'pg';
import { type ApiProcess, logLinesBetween, logMark, startApiProcess } from '../support/api-process.js';
import { seedToken } from '../support/direct-sql.js';
import { waitFor } from '../support/eventually.js';
import { get, post, type JsonResponse } from '../support/http.js';
import { load } from '../support/load.js';
import { ThrowawayPostgres } from '../support/throwaway-postgres.js';

const DATABASE_TIMEOUT_MS = 1_500;

const timed = async (request: Promise<JsonResponse>) => {
  const started = Date.now();
  const res = await request;
  return { res, ms: Date.now() - started };
};

const wellFormedDeviceCode = () => `prsd_${randomBytes(32).toString('base64url')}`;
const wellFormedRefreshToken = () => `prsr_${randomBytes(32).toString('base64url')}`;

/**
 * Issuance load (POST /api/cli/auth/token, one transaction each) on `parallel` connections
 * until `stop` is called; resolves with every answer.
 */
function issuanceLoad(baseUrl: string, token: string, parallel = 6) {
  return load(parallel, () => post(baseUrl, ROUTES.issueToken, { label: 'load' }, token));
}

/** Every answer is a success or a 503 with Retry-After and the one error body: never a 500. */
function expectSuccessOr503(answers: JsonResponse[], success: number) {
  for (const res of answers) {
    if (res.status === success) continue;
    expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { statusCode: 503, error: 'service_unavailable', message: expect.any(String) } });
    expect(res.headers.get('retry-after')).toBe('5');
  }
}

/** The revocation listener's LISTEN is in place (its last statement that, or a heartbeat after it), so the API trusts its verified-token cache again. */
async function listenerUp(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // sql-on-purpose: pg_stat_activity shows what the listener's connection last ran
    const { rows } = await client.query(
      `SELECT 1 FROM pg_stat_activity WHERE application_name = 'prospect-revocation-listener' AND (query LIKE 'LISTEN%' OR query = 'SELECT 1')`,
    );
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

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
  // A test that fails because the API process died says why (this suite once lost its API under full-suite load).
  afterEach(() => {
    if (api.child.exitCode !== null || api.child.signalCode !== null) {
      throw new Error(`the API exited (${api.child.exitCode ?? api.child.signalCode}):\n${(api.stdout() + api.stderr()).slice(-3000)}`);
    }
  });

  it('stopped 5 s: answers 503 with Retry-After, says so once, loses nothing acknowledged, and recovers within 2 s of its return; a revoked token stays refused', async () => {
    const token = await seedToken(database.url, 'Outage');
    const revoked = await seedToken(database.url, 'Outage');
    expect((await get(api.baseUrl, ROUTES.me, token)).status).toBe(200);
    expect((await post(api.baseUrl, ROUTES.logout, undefined, revoked)).status).toBe(204);

    // Writes acknowledged before the outage must all be there after it.
    const acknowledged = await Promise.all(Array.from({ length: 20 }, () => post(api.baseUrl, ROUTES.deviceStart, {})));
    expect(acknowledged.map((r) => r.status)).toEqual(Array(20).fill(200));

    const outageLogged = await logMark(api);
    // Transactions in flight when the server stops fast: their connections drop mid-transaction.
    const issuance = issuanceLoad(api.baseUrl, token);
    await waitFor('issuance under way', () => issuance.answers.length >= 10);
    await database.stop();
    expectSuccessOr503(await issuance.stop(), 201);
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

    // Once down and once back, whoever noticed: requests, the revocation listener (which
    // reconnects several times meanwhile), background writes.
    await waitFor('the listener to reconnect', () => listenerUp(database.url));
    await waitFor('the back line', () => api.stdout().includes('database available again'));
    const lines = logLinesBetween(api, outageLogged, await logMark(api));
    expect(lines.filter((line) => line.level >= 40).map((line) => line.msg)).toEqual([expect.stringMatching(/^database unavailable/)]);
    expect(lines.filter((line) => /database available again/.test(line.msg))).toHaveLength(1);
    expect(api.stdout()).not.toMatch(/"level":50/); // no error lines, no stack traces: 503s are not faults of ours
  });

  it('connections killed under issuance load (pg_terminate_backend): every answer a 201 or a 503 with Retry-After, no error logged', async () => {
    const token = await seedToken(database.url, 'Outage');
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    const issuance = issuanceLoad(api.baseUrl, token);
    try {
      for (let round = 0; round < 6; round++) {
        const seen = issuance.answers.length;
        await waitFor('answers between kills', () => issuance.answers.length >= seen + 5);
        // sql-on-purpose: every connection of the API killed (pg_terminate_backend)
        await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`);
      }
    } finally {
      await admin.end();
    }
    const answers = await issuance.stop();
    expectSuccessOr503(answers, 201);
    expect(answers.filter((res) => res.status === 503).length).toBeGreaterThan(0);
    expect(answers.filter((res) => res.status === 201).length).toBeGreaterThan(0);
    expect(api.stdout()).not.toMatch(/"level":50/);
  });

  it('frozen: no request waits longer than DATABASE_TIMEOUT_MS + 1 s, transactional or not, and each is a 503', async () => {
    const token = await seedToken(database.url, 'Outage'); // never verified yet, so /me must ask the database
    // A verified token is cached while the listener is up, so POST /token reaches its transaction.
    const issuer = await seedToken(database.url, 'Outage');
    await waitFor('the listener to be up', () => listenerUp(database.url));
    expect((await get(api.baseUrl, ROUTES.me, issuer)).status).toBe(200);
    // Open connections in the pool, as a running service has: the requests below use them rather than connecting.
    const warm = await Promise.all(Array.from({ length: 8 }, () => post(api.baseUrl, ROUTES.issueToken, {}, issuer)));
    expect(warm.map((res) => res.status)).toEqual(Array(8).fill(201));
    await database.signalAll('SIGSTOP');
    try {
      const answers = await Promise.all([
        timed(post(api.baseUrl, ROUTES.deviceStart, {})),
        timed(post(api.baseUrl, ROUTES.deviceStart, {})),
        timed(post(api.baseUrl, ROUTES.devicePoll, { deviceCode: wellFormedDeviceCode() })),
        timed(get(api.baseUrl, ROUTES.me, token)),
        timed(get(api.baseUrl, ROUTES.health)),
        timed(post(api.baseUrl, ROUTES.issueToken, {}, issuer)),
        timed(post(api.baseUrl, ROUTES.issueToken, {}, issuer)),
        timed(post(api.baseUrl, ROUTES.refresh, { refreshToken: wellFormedRefreshToken() })),
      ]);
      // The bound is DATABASE_TIMEOUT_MS + 1 s (they answer at + 0.5 s), with 250 ms for a busy test machine;
      // a ROLLBACK queued behind the stuck statement would double it.
      for (const { res, ms } of answers) {
        expect({ status: res.status, withinBound: ms <= DATABASE_TIMEOUT_MS + 1_250, ms }).toEqual({ status: 503, withinBound: true, ms: expect.any(Number) });
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
