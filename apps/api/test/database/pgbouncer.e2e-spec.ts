import { ROUTES } from '@prospect/contract';
import pg from 'pg';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { type ApiProcess, runApiProcess, startApiProcess } from '../support/api-process.js';
import { eventually } from '../support/eventually.js';
import { approveInBrowser, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { scaledTimeout } from '../support/process-cleanup.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

// The replicas' DATABASE_TIMEOUT_MS and PgBouncer's wait for a server session: 70 requests at once
// through 3 sessions wait their turn longer on a machine busy with other work (a second suite on the
// same cores answered one of them 503 at a fixed second), so it scales with the load as every wait does.
const TIMEOUT_MS = scaledTimeout(1_000);

/**
 * DATABASE_URL through Debian's PgBouncer 1.18 running the shipped sample's settings
 * (deploy/pgbouncer/pgbouncer.ini) in transaction mode, which keeps no session
 * state between transactions and knows no prepared statements: with DATABASE_DIRECT_URL
 * (LISTEN, migrations) and DATABASE_PREPARED_STATEMENTS=false, two replicas start together on
 * an empty database and serve everything; without them the start says what to set.
 */
describe('behind PgBouncer in transaction mode', () => {
  let database: { url: string; drop(): Promise<void> };
  let bouncer: PgBouncer;
  let a: TestApp;
  let b: ApiProcess;
  const pooled = () => ({ DATABASE_DIRECT_URL: database.url, DATABASE_PREPARED_STATEMENTS: 'false', DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) });

  beforeAll(async () => {
    database = await emptyServerDatabase();
    bouncer = await PgBouncer.start(database.url, TIMEOUT_MS, { poolSize: 3 });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.close();
    await bouncer?.stop();
    await database?.drop();
  });

  it('refuses to start through it without DATABASE_DIRECT_URL, in one line saying what to set', async () => {
    const refused = await runApiProcess({ DATABASE_URL: bouncer.url('timed'), LOG_LEVEL: 'silent' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'prospect-api failed to start: DATABASE_URL leads to a connection pooler (it refused the startup parameter statement_timeout): ' +
        'set DATABASE_DIRECT_URL to the Postgres server itself and DATABASE_PREPARED_STATEMENTS=false (docs/operations.md: PgBouncer)\n',
    );
  });

  it('starts two replicas at once on the empty database, and serves them in parallel through a pool of 3 server sessions', async () => {
    const replica = startApiProcess({ DATABASE_URL: bouncer.url('timed'), LOG_LEVEL: 'warn', ...pooled() });
    const app = startTestApp({ database: { ...database, kind: 'server' }, databaseUrl: bouncer.url('timed'), env: pooled() });
    // Both assigned before either failure is thrown, so afterAll stops what did start.
    await Promise.allSettled([replica.then((p) => (b = p)), app.then((t) => (a = t))]);
    await Promise.all([replica, app]);
    const user = await createUser(a);
    const tokens = await Promise.all(Array.from({ length: 20 }, () => a.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })));
    const answers = await Promise.all([
      ...tokens.flatMap(({ accessToken }) => [get(a, ROUTES.me, accessToken), get(b.baseUrl, ROUTES.me, accessToken)]),
      ...Array.from({ length: 30 }, (_, i) => post(i % 2 ? a : b.baseUrl, ROUTES.deviceStart, { clientName: 'prospect CLI', hostname: 'laptop' })),
    ]);
    expect(answers.map((res) => res.status).filter((status) => status !== 200)).toEqual([]);
    const polls = await Promise.all(answers.slice(40).map((res, i) => poll(i % 2 ? b.baseUrl : a, res.body.deviceCode)));
    expect(polls.map((res) => res.body.status)).toEqual(polls.map(() => 'pending'));
    // Started by two replicas at once, the migrations ran once, under the lock on the server itself.
    expect(b.stdout() + b.stderr()).not.toMatch(/"level":50|already exists/);
    expect(a.logs()).not.toMatch(/"level":50|no server-side time limit/);
  });

  it('carries a device login and a web session across the replicas, and a logout on one reaches the other (LISTEN on the server)', async () => {
    const start = await startDeviceLogin(b.baseUrl);
    await approveInBrowser(a, start.userCode);
    const authorized = await poll(b.baseUrl, start.deviceCode);
    expect(authorized.body.status).toBe('authorized');
    const token = authorized.body.accessToken as string;
    expect((await get(b.baseUrl, ROUTES.me, token)).status).toBe(200); // now in b's cache
    expect((await post(a, ROUTES.logout, undefined, token)).status).toBe(204);
    expect(await eventually(async () => (await get(b.baseUrl, ROUTES.me, token)).status === 401, 2_000)).toBe(true);
  });

  it('keeps the time limit: a statement stuck behind a lock is cancelled by the server (connect_query) and answered 503', async () => {
    const user = await createUser(a);
    const { accessToken } = await a.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      // sql-on-purpose: a transaction that holds a lock (BEGIN)
      await locker.query('BEGIN');
      // sql-on-purpose: LOCK TABLE, so the API's statements wait on it
      await locker.query('LOCK TABLE access_tokens IN ACCESS EXCLUSIVE MODE');
      const stuck = await get(b.baseUrl, ROUTES.me, accessToken);
      expect(stuck.status).toBe(503);
      // Not only the client gave up: no session of the pool still waits on the lock.
      // sql-on-purpose: pg_stat_activity's waits
      const { rows } = await locker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      expect(rows[0].n).toBe(0);
    } finally {
      // sql-on-purpose: the lock released (ROLLBACK)
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await get(b.baseUrl, ROUTES.me, accessToken)).status).toBe(200);
  });

  it('says at start when statements through the pooler have no server-side time limit', async () => {
    const untimed = await startApiProcess({ DATABASE_URL: bouncer.url('untimed'), LOG_LEVEL: 'warn', ...pooled() });
    await untimed.stop();
    expect(untimed.stdout()).toContain(`statements through the pooler have no server-side time limit: run \`ALTER ROLE postgres SET statement_timeout = '${TIMEOUT_MS}ms'\``);
  });
});
