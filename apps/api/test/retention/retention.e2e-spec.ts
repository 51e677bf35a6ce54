import { ROUTES } from '@prospect/contract';
import pg from 'pg';
import { PURGE_BATCH, RetentionService } from '../../src/retention/retention.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { grants } from '../support/grant-fixtures.js';
import { authEvents, authorizedPoll, createUser, startDeviceLogin } from '../support/fixtures.js';
import { post } from '../support/http.js';
import { runApiProcess } from '../support/api-process.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens, pileUpEndedAccessTokens, refreshTokens } from '../support/token-fixtures.js';
import { signInAs } from '../support/web-client.js';

const DAY = 24 * 3600;
const PASSWORD = 'correct horse battery';

/** What nothing needs any more is deleted, by one replica at a time; on the injected clock. */
describe('retention', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => {
    // Device-login sessions live a year here, so one outlives the 91 days below (its hour-long
    // access token does not: it is purged, the session's device login is kept for its refresh token).
    api = await startTestApp({ clock, env: { REFRESH_TOKEN_TTL_SECONDS: String(365 * DAY), REFRESH_TOKEN_MAX_LIFETIME_SECONDS: String(365 * DAY) } });
  });
  afterAll(() => api.close());

  it('deletes old tokens, expired device logins and grants without a token, expired sessions and audit events past their retention', async () => {
    const user = await createUser(api);
    const tokens = api.app.get(TokensService);
    const expiring = await tokens.issue({ userId: user.id, origin: 'direct', ttlSeconds: DAY });
    const revoked = await tokens.issue({ userId: user.id, origin: 'direct', ttlSeconds: 365 * DAY });
    await tokens.revokeForUser(user.id, revoked.id);
    const live = await tokens.issue({ userId: user.id, origin: 'direct', ttlSeconds: 365 * DAY });
    await startDeviceLogin(api); // never approved: expires in 10 minutes
    await authorizedPoll(api, user); // its device login expires, its session (refresh token) lives on
    const loggedOut = (await authorizedPoll(api, user)).body; // a session revoked at once: all of it goes
    await post(api, ROUTES.logout, undefined, loggedOut.accessToken);
    await signInAs(api, user.email, PASSWORD); // a browser session, idle for a week at most (WEB_SESSION_IDLE_SECONDS)
    const oldEvents = (await authEvents(api, {})).map((event) => event.id);

    clock.advanceSeconds(91 * DAY);
    const recent = await tokens.issue({ userId: user.id, origin: 'direct' });
    const counts = await api.app.get(RetentionService).purge();

    // expiring, revoked, and both sessions' hour-long access tokens; the revoked session's refresh token.
    expect(counts).toMatchObject({ tokens: 4, refreshTokens: 1, deviceLogins: 2, webSessions: 1 });
    expect((await accessTokens(api)).map((token) => token.id).sort()).toEqual([live.id, recent.id].sort());
    expect(await refreshTokens(api)).toHaveLength(1);
    expect(await deviceLogins(api)).toHaveLength(1); // the one whose session still lives
    // …and of the grants, the living session's: the logged-out one's went with its last token and its login.
    const [kept] = await deviceLogins(api);
    expect((await grants(api)).map((grant) => grant.id)).toEqual([kept!.grant_id]);
    const events = (await authEvents(api, {})).map((event) => event.id);
    for (const id of oldEvents) expect(events).not.toContain(id);
    expect(events.length).toBeGreaterThan(0); // the recent issue's event stays
    expect(expiring.id).not.toBe(live.id);
  });

  it('runs on one replica at a time: a purge that finds the lock taken skips its round', async () => {
    const purge = () => api.app.get(RetentionService).purge();
    // The embedded database has no second replica (its data directory is locked to one
    // process) and serializes transactions across its connections: nothing to contend with.
    if (api.database.kind === 'embedded') return expect(purge()).resolves.not.toBeNull();
    const otherReplica = new pg.Client({ connectionString: api.database.url });
    await otherReplica.connect();
    try {
      // sql-on-purpose: another replica's transaction, holding the purge lock (BEGIN)
      await otherReplica.query('BEGIN');
      // sql-on-purpose: the purge's advisory lock, taken as another replica takes it
      await otherReplica.query(`SELECT pg_advisory_xact_lock($1)`, [0x70726f73]);
      await expect(purge()).resolves.toBeNull();
      // sql-on-purpose: the advisory lock released (ROLLBACK)
      await otherReplica.query('ROLLBACK');
    } finally {
      await otherReplica.end();
    }
    await expect(purge()).resolves.not.toBeNull();
  });

  it('`main.js purge` runs the purge once from a shell, and says what it deleted (needs a Postgres server: a second process)', async () => {
    if (api.database.kind === 'embedded') return;
    const user = await createUser(api);
    await pileUpEndedAccessTokens(api, user.id, 1);
    const first = await runApiProcess({ DATABASE_URL: api.database.url, LOG_LEVEL: 'warn' }, ['purge']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    // Its log (JSON lines, here the warning that there is no administrator yet) goes to stdout too.
    expect(first.stdout).toMatch(/^Purged in \d+ ms: [1-9]\d* access tokens, \d+ refresh tokens, \d+ device logins, \d+ web sessions, \d+ audit events\.$/m);
    expect(await accessTokens(api, { userId: user.id })).toHaveLength(0);
    const again = await runApiProcess({ DATABASE_URL: api.database.url, LOG_LEVEL: 'warn' }, ['purge']);
    expect(again.stdout).toMatch(/^Purged in \d+ ms: 0 access tokens, 0 refresh tokens, 0 device logins, 0 web sessions, 0 audit events\.$/m);
  });

  it('deletes what piled up in batches, and tells the replicas only of tokens that were still live', async () => {
    const user = await createUser(api);
    const piled = 2 * PURGE_BATCH + 7;
    // The fake clock is ahead of the database's: older still for the purge.
    await pileUpEndedAccessTokens(api, user.id, piled);
    if (api.database.kind === 'embedded') return expect((await api.app.get(RetentionService).purge())?.tokens).toBe(piled);
    const listener = new pg.Client({ connectionString: api.database.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      // sql-on-purpose: LISTEN, as a replica hears of revoked tokens
      await listener.query('LISTEN prospect_token_events');
      expect((await api.app.get(RetentionService).purge())?.tokens).toBe(piled);
      const live = await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
      // sql-on-purpose: a live token deleted past the app, which only the table's trigger announces
      await api.dataSource.query(`DELETE FROM access_tokens WHERE id = $1`, [live.id]);
      // sql-on-purpose: a round trip on the listening connection after the commits: their notifications have arrived
      await listener.query('SELECT 1');
      expect(heard).toEqual([`t:${live.id}`]);
    } finally {
      await listener.end();
    }
  });
});
