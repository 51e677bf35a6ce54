import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The program that started a device login (its User-Agent), shown on the approval and tokens pages. */
export class DeviceLoginUserAgent1795400000014 implements MigrationInterface {
  name = 'DeviceLoginUserAgent1795400000014';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ADD COLUMN user_agent text`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins DROP COLUMN user_agent`);
  }
}
