import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A pending device login's last answered poll moves out of `device_logins` into an UNLOGGED table
 * of its own (issue #49: a pending poll that writes as little as the interval rule needs). The
 * rule still holds across replicas, since every replica claims the same row; but the claim writes
 * no WAL, takes no lock on the login's row and leaves no dead version of it. What an unlogged
 * table costs is what the poll time was already allowed to lose (`synchronous_commit = off`, issue
 * #35): after a crash of Postgres, or on a standby promoted in a failover, the table is empty, so
 * each login's next poll is answered early once. Its rows go with their login (the key cascades).
 */
export class DevicePollSlots1795400000055 implements MigrationInterface {
  name = 'DevicePollSlots1795400000055';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE UNLOGGED TABLE device_poll_slots (
        device_login_id uuid PRIMARY KEY REFERENCES device_logins (id) ON DELETE CASCADE,
        last_polled_at  timestamptz NOT NULL
      )`);
    await db.query(`INSERT INTO device_poll_slots (device_login_id, last_polled_at) SELECT id, last_polled_at FROM device_logins WHERE last_polled_at IS NOT NULL`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN last_polled_at`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ADD COLUMN last_polled_at timestamptz`);
    await db.query(`UPDATE device_logins d SET last_polled_at = s.last_polled_at FROM device_poll_slots s WHERE s.device_login_id = d.id`);
    await db.query(`DROP TABLE device_poll_slots`);
  }
}
