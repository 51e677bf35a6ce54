import { ROUTES } from '@prospect/contract';
import { type ApiProcess, logLinesBetween, logMark, startApiProcess } from '../support/api-process.js';
import { seedToken } from '../support/direct-sql.js';
import { waitFor } from '../support/eventually.js';
import { get, type JsonResponse, post } from '../support/http.js';
import { load } from '../support/load.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ThrowawayPostgres } from '../support/throwaway-postgres.js';

/** The API's default, which the sample's query_wait_timeout and connect_query follow. */
const DATABASE_TIMEOUT_MS = 5_000;

/** `GET /me` in two loops until stopped, each answer with when it came and how long it took. */
function meLoad(baseUrl: string, token: string) {
  return load(2, async () => {
    const started = Date.now();
    const res = await get(baseUrl, ROUTES.me, token);
    return { at: Date.now(), status: res.status, ms: Date.now() - started };
  }, 20);
}

/**
 * A replica behind Debian's PgBouncer running the shipped sample's settings
 * (deploy/pgbouncer/pgbouncer.ini), on a Postgres cluster of this test's own, its LISTEN on the
 * server directly (DATABASE_DIRECT_URL, here through a TCP proxy the test can cut).
 */
describe('behind PgBouncer with the shipped sample settings', () => {
  let database: ThrowawayPostgres;
  let bouncer: PgBouncer;
  let direct: TcpProxy;
  let api: ApiProcess;
  beforeAll(async () => {
    database = await ThrowawayPostgres.create();
    bouncer = await PgBouncer.start(database.url, DATABASE_TIMEOUT_MS);
    const proxied = await TcpProxy.forUrl(database.url);
    direct = proxied.proxy;
    api = await startApiProcess({
      DATABASE_URL: bouncer.url('timed'),
      DATABASE_DIRECT_URL: proxied.url,
      DATABASE_PREPARED_STATEMENTS: 'false',
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
    });
  });
  afterAll(async () => {
    await api?.stop();
    await bouncer?.stop();
    await direct?.cut();
    await database?.destroy();
  });
  afterEach(() => {
    if (api.child.exitCode !== null || api.child.signalCode !== null) {
      throw new Error(`the API exited (${api.child.exitCode ?? api.child.signalCode}):\n${(api.stdout() + api.stderr()).slice(-3000)}`);
    }
  });

  const ready = async () => (await get(api.baseUrl, ROUTES.healthReady)).status === 200;

  it('its LISTEN connection alone lost: serves as usual, and logs the listener lost (not "database unavailable"), then back', async () => {
    const token = await seedToken(database.url, 'Bouncer');
    await waitFor('the replica ready (listener connected)', ready);
    const from = await logMark(api);

    await direct.cut(); // the server's own address unreachable; PgBouncer's path to it is not
    await waitFor('the loss logged', () => logLinesBetween(api, from).some((line) => /revocation listener lost/.test(line.msg)));
    // Served meanwhile, every token verified against the database through PgBouncer; while
    // the listener tries to reconnect (refused) more than once.
    const during: JsonResponse[] = [];
    const until = Date.now() + 1_500;
    while (Date.now() < until) during.push(await get(api.baseUrl, ROUTES.me, token), await post(api.baseUrl, ROUTES.deviceStart, {}));
    expect(during.map((res) => res.status)).toEqual(during.map(() => 200));
    expect(await ready()).toBe(false); // revocations do not arrive: out of a load balancer's rotation

    await direct.start();
    await waitFor('the listener back', ready, 15_000);
    await waitFor('the return logged', () => logLinesBetween(api, from).some((line) => /revocation listener connected again/.test(line.msg)));
    const lines = logLinesBetween(api, from);
    expect(lines.filter((line) => line.level >= 40).map((line) => line.msg)).toEqual([
      expect.stringMatching(/^revocation listener lost its connection \(.+\); the database answers, but the token cache is off/),
    ]);
    expect(lines.filter((line) => /database (unavailable|available again)/.test(line.msg))).toEqual([]);
  });

  it('a Postgres restart: /me answers normally again within a second of Postgres accepting connections (5 s deadline), and the log says the database was away', async () => {
    const token = await seedToken(database.url, 'Bouncer');
    await waitFor('the replica ready', ready);
    expect((await get(api.baseUrl, ROUTES.me, token)).status).toBe(200);
    const from = await logMark(api);
    const load = meLoad(api.baseUrl, token);

    await database.stop();
    const stopped = Date.now();
    // Requests met the stopped server through PgBouncer, whose logins to it failed: that starts server_login_retry.
    // (A query already queued in PgBouncer waits for a server up to query_wait_timeout; new ones are refused at once.)
    await waitFor('requests refused while it is down', () => load.answers.filter((a) => a.at > stopped && a.status === 503).length >= 3, 15_000);
    await database.start(); // pg_ctl -w: accepting connections
    const back = Date.now();
    const firstSuccess = () => load.answers.find((a) => a.at > back && a.status === 200);
    const sentAfter = (at: number) => load.answers.filter((a) => a.at - a.ms > at);
    await waitFor('/me answered again', () => firstSuccess() !== undefined, 5_000).catch(() => undefined);
    const firstAnswered = firstSuccess();
    if (firstAnswered) await waitFor('more requests after it', () => sentAfter(firstAnswered.at).length >= 10);
    const answers = await load.stop();
    const recoveredMs = firstAnswered ? firstAnswered.at - back : Infinity;
    const refused = answers.filter((a) => a.status === 503);
    console.log(
      `behind PgBouncer (sample settings): Postgres down ${back - stopped} ms; /me answered again ${recoveredMs} ms after it accepted connections; ` +
        `${refused.length} answers 503 meanwhile, the slowest in ${Math.max(...refused.map((a) => a.ms))} ms`,
    );

    // Measured well under 2 s; the deadline is generous for a busy machine, and 15 s (the default server_login_retry) is far past it.
    expect(recoveredMs).toBeLessThanOrEqual(5_000);
    // Normal again: every request sent after the first success succeeded, and a write goes through too.
    const after = sentAfter(firstAnswered!.at);
    expect(after.map((a) => a.status)).toEqual(after.map(() => 200));
    expect((await post(api.baseUrl, ROUTES.deviceStart, {})).status).toBe(200);
    // Meanwhile: 503s, never another status, and the log said the database was away (the pool failed, not only the listener).
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 503]));
    await waitFor('the back line', () => api.stdout().slice(from).includes('database available again'));
    const warnings = logLinesBetween(api, from).filter((line) => line.level >= 40).map((line) => line.msg);
    expect(warnings[0]).toMatch(/^database unavailable \(.+\); answering 503 until it is back$/);
    expect(warnings.filter((msg) => /^database unavailable/.test(msg))).toHaveLength(1);
  });
});
