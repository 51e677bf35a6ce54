import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When what a token acts with was approved (issue #47's departure rule), kept on the token when it
 * is made instead of joined on every verification (issue #43's A/B: four joins on `/me`'s cache
 * misses). Everything it is computed from never changes once written (a grant's approval, the
 * minting token's own issue time), so storing it loses nothing. NULL means the token's own
 * creation: a token of nothing older, and rows written by hand, need no value.
 */
export class AccessTokenIssuedAt1795400000054 implements MigrationInterface {
  name = 'AccessTokenIssuedAt1795400000054';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE access_tokens ADD COLUMN issued_at timestamptz`);
    // What the verification read computed until now: its grant's approval, else the grant that
    // minted it, else the minting token's grant, else the minting token's creation.
    await db.query(
      `UPDATE access_tokens t
          SET issued_at = COALESCE(tg.created_at, mg.created_at, mtg.created_at, mt.created_at)
         FROM access_tokens t0
         LEFT JOIN grants tg ON tg.id = t0.grant_id
         LEFT JOIN grants mg ON mg.id = t0.minted_by_grant_id
         LEFT JOIN access_tokens mt ON mt.id = t0.minted_by_token_id
         LEFT JOIN grants mtg ON mtg.id = mt.grant_id
        WHERE t.id = t0.id AND (t0.grant_id IS NOT NULL OR t0.minted_by_grant_id IS NOT NULL OR t0.minted_by_token_id IS NOT NULL)`,
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE access_tokens DROP COLUMN issued_at`);
  }
}
