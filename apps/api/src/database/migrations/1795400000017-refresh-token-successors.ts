import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue #19: a lost refresh answer is never a reuse.
 *
 * - `refresh_tokens.parent_id`: the token a refresh token was rotated from. Unique, so a token
 *   has at most one successor and a family is one chain; a presented rotated token is a reuse
 *   only once its successor was used. Tokens rotated before this migration have no link, and
 *   presenting them again stays a reuse, as it was after the old 10 s grace.
 * - The sealed successor pair now lives until the successor is used (erased in the same
 *   transaction) or the old token expires: its index serves the sweep of expired ones.
 */
export class RefreshTokenSuccessors1795400000017 implements MigrationInterface {
  name = 'RefreshTokenSuccessors1795400000017';

  async up(db: QueryRunner): Promise<void> {
    // ON DELETE SET NULL: retention deletes an expired predecessor without touching its successor.
    await db.query(
      `ALTER TABLE refresh_tokens ADD COLUMN parent_id uuid CONSTRAINT refresh_tokens_parent_id_key UNIQUE REFERENCES refresh_tokens (id) ON DELETE SET NULL`,
    );
    await db.query(`DROP INDEX refresh_tokens_sealed`);
    await db.query(`CREATE INDEX refresh_tokens_sealed ON refresh_tokens (expires_at) WHERE successor_sealed IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX refresh_tokens_sealed`);
    await db.query(`CREATE INDEX refresh_tokens_sealed ON refresh_tokens (rotated_at) WHERE successor_sealed IS NOT NULL`);
    await db.query(`ALTER TABLE refresh_tokens DROP COLUMN parent_id`);
  }
}
