import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The federation a service account's token was exchanged through (workload identity federation,
 * RFC 8693; "a credential ends with the state it was issued for"): deleting the federation ends
 * the tokens it let through, and only those. No foreign key: the tokens are revoked in the
 * deletion's transaction, and the column keeps saying where a revoked token came from until
 * retention purges it. The partial index serves that revocation alone (most tokens have no federation).
 */
export class TokensExchangedThroughFederation1795400000052 implements MigrationInterface {
  name = 'TokensExchangedThroughFederation1795400000052';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE access_tokens ADD COLUMN minted_by_federation_id uuid`);
    await db.query(`CREATE INDEX access_tokens_minted_by_federation ON access_tokens (minted_by_federation_id) WHERE minted_by_federation_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX access_tokens_minted_by_federation`);
    await db.query(`ALTER TABLE access_tokens DROP COLUMN minted_by_federation_id`);
  }
}
