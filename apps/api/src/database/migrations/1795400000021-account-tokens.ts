import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Single-use links mailed to a person (issue #22): a password reset now; e-mail verification and
 * invitations later, by `purpose`. Only the SHA-256 of each link's token is kept.
 */
export class AccountTokens1795400000021 implements MigrationInterface {
  name = 'AccountTokens1795400000021';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE account_tokens (
        id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        purpose     text NOT NULL CHECK (purpose IN ('password_reset')),
        token_hash  bytea NOT NULL CONSTRAINT account_tokens_token_hash_key UNIQUE,
        created_at  timestamptz NOT NULL,
        expires_at  timestamptz NOT NULL,
        used_at     timestamptz
      )`);
    await db.query(`CREATE INDEX account_tokens_user ON account_tokens (user_id, purpose) WHERE used_at IS NULL`);
    await db.query(`CREATE INDEX account_tokens_expires ON account_tokens (expires_at)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE account_tokens`);
  }
}
