import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Second factors (issue #23):
 * - `totp_factors`: one authenticator app per person, its key sealed (AES-256-GCM under a server
 *   key kept in `server_secrets`, bound to the user's id), and the last time step accepted, so a
 *   code is accepted once;
 * - `recovery_codes`: ten single-use codes, only their SHA-256 (with the user's id) kept;
 * - `web_sessions.user_id` also names the person of a half-finished sign-in (password right, code
 *   not yet given), so ending a person's sessions (sign out everywhere, a new password, an admin's
 *   action) ends those too.
 */
export class SecondFactors1795400000023 implements MigrationInterface {
  name = 'SecondFactors1795400000023';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE totp_factors (
        user_id     uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        key_sealed  bytea NOT NULL,
        last_step   bigint NOT NULL DEFAULT 0,
        created_at  timestamptz NOT NULL
      )`);
    await db.query(`
      CREATE TABLE recovery_codes (
        id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash   bytea NOT NULL CONSTRAINT recovery_codes_code_hash_key UNIQUE,
        created_at  timestamptz NOT NULL,
        used_at     timestamptz
      )`);
    await db.query(`CREATE INDEX recovery_codes_user ON recovery_codes (user_id) WHERE used_at IS NULL`);
    await this.sessionOwner(db, `COALESCE(sess -> 'passport' ->> 'user', sess -> 'pendingSignIn' ->> 'userId')`);
  }

  /** Recomputes the generated `web_sessions.user_id` from `expression` (dropped and added again, with its index). */
  private async sessionOwner(db: QueryRunner, expression: string): Promise<void> {
    await db.query(`ALTER TABLE web_sessions DROP COLUMN user_id`);
    await db.query(`ALTER TABLE web_sessions ADD COLUMN user_id uuid GENERATED ALWAYS AS ((${expression})::uuid) STORED`);
    await db.query(`CREATE INDEX web_sessions_user_id ON web_sessions (user_id) WHERE user_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await this.sessionOwner(db, `sess -> 'passport' ->> 'user'`);
    await db.query(`DROP TABLE recovery_codes`);
    await db.query(`DROP TABLE totp_factors`);
  }
}
