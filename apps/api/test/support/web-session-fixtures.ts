import { waitFor } from './eventually.js';
import type { TestApp } from './test-app.js';

/*
 * Web sessions are written and read by connect-pg-simple inside express-session: the app has no
 * reader of the rows, nor a way to move an expiry (kept in real time by the store, not the app's
 * clock). These are SQL, for the tests that look at or age the rows.
 */

/** How many web sessions are stored: all, a person's (`userId`), or (`federated`) the signed-in ones started through an identity-provider link. */
export async function countWebSessions(api: TestApp, filter: { userId?: string; federated?: boolean } = {}): Promise<number> {
  const [{ n }] = await api.dataSource.query(
    `SELECT count(*)::int AS n FROM web_sessions
      WHERE ($1::uuid IS NULL OR user_id = $1) AND (NOT $2 OR (federated_link_id IS NOT NULL AND user_id IS NOT NULL))`,
    [filter.userId ?? null, filter.federated ?? false],
  );
  return n;
}

/** The identity-provider link each of the person's sessions was started through (null for one that was not). */
export async function sessionLinksOf(api: TestApp, userId: string): Promise<Array<string | null>> {
  const rows: Array<{ federated_link_id: string | null }> = await api.dataSource.query(`SELECT federated_link_id FROM web_sessions WHERE user_id = $1`, [userId]);
  return rows.map((row) => row.federated_link_id);
}

/** Seconds until the session stored under `sid` (the SHA-256 the store keys it by) expires. */
export async function webSessionSecondsLeft(api: TestApp, sid: string): Promise<number> {
  const [row] = await api.dataSource.query(`SELECT extract(epoch FROM expire - now()) AS s FROM web_sessions WHERE sid = $1`, [sid]);
  return Number(row.s);
}

/** Moves the session's expiry to `seconds` from now (negative: past), instead of waiting for its idle timeout. */
export async function moveWebSessionExpiry(api: TestApp, sid: string, seconds: number): Promise<void> {
  await api.dataSource.query(`UPDATE web_sessions SET expire = now() + make_interval(secs => $2) WHERE sid = $1`, [sid, seconds]);
}

/**
 * Counts the store's writes of each session's content (a trigger on `web_sessions`, which the app
 * cannot observe): `writesOf` a person's signed-in sessions; `remove` takes the trigger away.
 */
export async function countWebSessionWrites(api: TestApp): Promise<{ writesOf(userId: string): Promise<number>; remove(): Promise<void> }> {
  await api.dataSource.query(`CREATE TABLE session_writes (sid text NOT NULL)`);
  await api.dataSource.query(`CREATE FUNCTION count_session_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO session_writes VALUES (NEW.sid); RETURN NEW; END $$`);
  await api.dataSource.query(`CREATE TRIGGER count_session_write AFTER INSERT OR UPDATE OF sess ON web_sessions FOR EACH ROW EXECUTE FUNCTION count_session_write()`);
  return {
    async writesOf(userId) {
      const [{ n }] = await api.dataSource.query(`SELECT count(*)::int AS n FROM session_writes WHERE sid IN (SELECT sid FROM web_sessions WHERE user_id = $1)`, [userId]);
      return n;
    },
    async remove() {
      await api.dataSource.query(`DROP TRIGGER count_session_write ON web_sessions; DROP FUNCTION count_session_write(); DROP TABLE session_writes`);
    },
  };
}

/**
 * An ending of the person's browser sessions under way (sign out everywhere, a provider disabled):
 * their rows deleted in a transaction left open, as an ending holds them until it commits, so a
 * test can send a request beside it; `commit()` ends it.
 */
export async function sessionsEndingOf(api: TestApp, userId: string): Promise<{ commit(): Promise<void> }> {
  const runner = api.dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  await runner.query(`DELETE FROM web_sessions WHERE user_id = $1`, [userId]);
  return {
    async commit() {
      await runner.commitTransaction();
      await runner.release();
    },
  };
}

/** Waits until one of the app's statements waits for a row lock (Postgres's own view of its backends). */
export function rowLockWaitReached(api: TestApp): Promise<void> {
  return waitFor('a statement waiting for a row lock', async () => {
    const [{ n }] = await api.dataSource.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`);
    return n > 0;
  });
}
