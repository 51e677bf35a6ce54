import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAccessTokens1795400000002 implements MigrationInterface {
  name = 'CreateAccessTokens1795400000002';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE access_tokens (
        id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        token_hash      bytea NOT NULL CONSTRAINT access_tokens_token_hash_key UNIQUE,
        user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        label           text,
        origin          text NOT NULL CHECK (origin IN ('device', 'direct', 'admin')),
        device_login_id uuid REFERENCES device_logins (id) ON DELETE SET NULL,
        created_ip      text,
        created_at      timestamptz NOT NULL,
        expires_at      timestamptz NOT NULL,
        last_used_at    timestamptz,
        revoked_at      timestamptz
      )`);
    await db.query(`CREATE INDEX access_tokens_user_id ON access_tokens (user_id, created_at DESC)`);
    await db.query(`CREATE INDEX access_tokens_device_login_id ON access_tokens (device_login_id) WHERE device_login_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE access_tokens`);
  }
}
