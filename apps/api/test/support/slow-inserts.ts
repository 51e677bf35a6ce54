import { waitFor } from './eventually.js';
import type { TestApp } from './test-app.js';

/**
 * Fault injection: every INSERT into `table` sleeps half a second in a trigger, which holds a
 * transaction open at a known point so a test can act beside it. `reached()` waits until a
 * statement sleeps there (Postgres's own view of its backends), `remove()` takes the trigger away.
 */
export async function slowInserts(api: TestApp, table: 'access_tokens' | 'refresh_tokens' | 'grants') {
  const name = `test_slow_${table}_insert`;
  await api.dataSource.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$`);
  await api.dataSource.query(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  const sleeping = async () =>
    (await api.dataSource.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()`))[0].n > 0;
  return {
    reached: () => waitFor(`a statement in the slowed INSERT into ${table}`, sleeping, 5_000),
    async remove() {
      await api.dataSource.query(`DROP TRIGGER ${name} ON ${table}`);
      await api.dataSource.query(`DROP FUNCTION ${name}()`);
    },
  };
}
