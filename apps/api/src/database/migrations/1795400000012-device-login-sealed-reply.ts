import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The answer of a redeemed device login, sealed with a key only its device code gives
 * (common/sealed.ts), so a poll retried after a lost answer gets the same
 * token for a short window; erased when the window ends.
 */
export class DeviceLoginSealedReply1795400000012 implements MigrationInterface {
  name = 'DeviceLoginSealedReply1795400000012';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ADD COLUMN reply_sealed bytea`);
    await db.query(`CREATE INDEX device_logins_reply_sealed ON device_logins (redeemed_at) WHERE reply_sealed IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX device_logins_reply_sealed`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN reply_sealed`);
  }
}
