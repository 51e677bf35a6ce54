import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateDeviceLogins1795400000001 implements MigrationInterface {
  name = 'CreateDeviceLogins1795400000001';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE device_logins (
        id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        device_code_hash   bytea NOT NULL CONSTRAINT device_logins_device_code_hash_key UNIQUE,
        user_code          text NOT NULL,
        status             text NOT NULL DEFAULT 'pending'
                           CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
        decided_by_user_id uuid REFERENCES users (id) ON DELETE CASCADE,
        decided_at         timestamptz,
        client_name        text,
        hostname           text,
        requested_ip       text,
        created_at         timestamptz NOT NULL,
        expires_at         timestamptz NOT NULL,
        last_polled_at     timestamptz,
        redeemed_at        timestamptz
      )`);
    // A code a person may still type points at exactly one login.
    await db.query(`CREATE UNIQUE INDEX device_logins_pending_user_code ON device_logins (user_code) WHERE status = 'pending'`);
    await db.query(`CREATE INDEX device_logins_user_code ON device_logins (user_code, created_at DESC)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE device_logins`);
  }
}
