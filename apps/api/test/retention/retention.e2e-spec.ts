import { ROUTES } from '@prospect/contract';
import pg from 'pg';
import { PURGE_BATCH, RetentionService } from '../../src/retention/retention.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { authorizedPoll, createUser, startDeviceLogin } from '../support/fixtures.js';
import { post } from '../support/http.js';
import { runApiProcess } from '../support/api-process.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const DAY = 24 * 3600;

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

  const ids = async (table: string) => ((await api.dataSource.query(`SELECT id FROM ${table}`)) as Array<{ id: string }>).map((r) => String(r.id));

  it('deletes old tokens, expired device logins without a token, expired sessions and audit events past their retention', async () => {
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
    await api.dataSource.query(`INSERT INTO web_sessions (sid, sess, expire) VALUES ('gone', '{"cookie":{}}', now() - interval '1 hour')`);
    const oldEvents = await ids('auth_events');

    clock.advanceSeconds(91 * DAY);
    const recent = await tokens.issue({ userId: user.id, origin: 'direct' });
    const counts = await api.app.get(RetentionService).purge();

    // expiring, revoked, and both sessions' hour-long access tokens; the revoked session's refresh token.
    expect(counts).toMatchObject({ tokens: 4, refreshTokens: 1, deviceLogins: 2, webSessions: 1 });
    expect((await ids('access_tokens')).sort()).toEqual([live.id, recent.id].sort());
    expect(await ids('refresh_tokens')).toHaveLength(1);
    expect(await ids('device_logins')).toHaveLength(1); // the one whose session still lives
    const events = await ids('auth_events');
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
      await otherReplica.query('BEGIN');
      await otherReplica.query(`SELECT pg_advisory_xact_lock($1)`, [0x70726f73]);
      await expect(purge()).resolves.toBeNull();
      await otherReplica.query('ROLLBACK');
    } finally {
      await otherReplica.end();
    }
    await expect(purge()).resolves.not.toBeNull();
  });

  it('`main.js purge` runs the purge once from a shell, and says what it deleted (needs a Postgres server: a second process)', async () => {
    if (api.database.kind === 'embedded') return;
    const user = await createUser(api);
    await api.dataSource.query(
      `INSERT INTO access_tokens (token_hash, user_id, origin, created_at, expires_at) VALUES (sha256('purge-me'), $1, 'direct', now() - interval '100 days', now() - interval '40 days')`,
      [user.id],
    );
    const first = await runApiProcess({ DATABASE_URL: api.database.url, LOG_LEVEL: 'warn' }, ['purge']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    // Its log (JSON lines, here the warning that there is no administrator yet) goes to stdout too.
    expect(first.stdout).toMatch(/^Purged in \d+ ms: [1-9]\d* access tokens, \d+ refresh tokens, \d+ device logins, \d+ web sessions, \d+ audit events\.$/m);
    expect(await api.dataSource.query(`SELECT 1 FROM access_tokens WHERE token_hash = sha256('purge-me')`)).toHaveLength(0);
    const again = await runApiProcess({ DATABASE_URL: api.database.url, LOG_LEVEL: 'warn' }, ['purge']);
    expect(again.stdout).toMatch(/^Purged in \d+ ms: 0 access tokens, 0 refresh tokens, 0 device logins, 0 web sessions, 0 audit events\.$/m);
  });

  it('deletes what piled up in batches, and tells the replicas only of tokens that were still live', async () => {
    const user = await createUser(api);
    const piled = 2 * PURGE_BATCH + 7;
    // Ended 40 days ago, as a long outage of the purge would leave them (the fake clock is ahead of the database's: older still for the purge).
    await api.dataSource.query(
      `INSERT INTO access_tokens (token_hash, user_id, origin, created_at, expires_at)
       SELECT sha256(convert_to('piled-' || i, 'UTF8')), $1, 'direct', now() - interval '50 days', now() - interval '40 days'
       FROM generate_series(1, $2) AS i`,
      [user.id, piled],
    );
    if (api.database.kind === 'embedded') return expect((await api.app.get(RetentionService).purge())?.tokens).toBe(piled);
    const listener = new pg.Client({ connectionString: api.database.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query('LISTEN prospect_token_events');
      expect((await api.app.get(RetentionService).purge())?.tokens).toBe(piled);
      const live = await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' });
      await api.dataSource.query(`DELETE FROM access_tokens WHERE id = $1`, [live.id]);
      await listener.query('SELECT 1'); // a round trip after the commits: their notifications have arrived
      expect(heard).toEqual([`t:${live.id}`]);
    } finally {
      await listener.end();
    }
  });
});
