import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A device login the terminal gave up on (Ctrl-C, a timeout) can no longer be approved. */
export class DeviceLoginCancelled1795400000015 implements MigrationInterface {
  name = 'DeviceLoginCancelled1795400000015';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins DROP CONSTRAINT device_logins_status_check`);
    await db.query(`ALTER TABLE device_logins ADD CONSTRAINT device_logins_status_check CHECK (status IN ('pending', 'approved', 'denied', 'redeemed', 'cancelled'))`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`UPDATE device_logins SET status = 'denied' WHERE status = 'cancelled'`);
    await db.query(`ALTER TABLE device_logins DROP CONSTRAINT device_logins_status_check`);
    await db.query(`ALTER TABLE device_logins ADD CONSTRAINT device_logins_status_check CHECK (status IN ('pending', 'approved', 'denied', 'redeemed'))`);
  }
}
