import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The hourly purge of organization invitations ended more than 30 days ago read the whole table
 * (a sequential scan under its LIMIT, every live invitation among the rows it reads). When an
 * invitation ended is the earliest of its acceptance, revocation and expiry (LEAST skips the
 * NULLs; expires_at is never NULL), so one expression index on it serves the purge, which asks
 * `LEAST(accepted_at, revoked_at, expires_at) < $1` (OrganizationInvitationsRepository).
 * A plain CREATE INDEX, as every earlier index: migrations run in a transaction, where
 * CONCURRENTLY is refused, and the table is small next to the ones indexed so before.
 */
export class OrganizationInvitationsEndedIndex1795400000048 implements MigrationInterface {
  name = 'OrganizationInvitationsEndedIndex1795400000048';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE INDEX organization_invitations_ended ON organization_invitations (LEAST(accepted_at, revoked_at, expires_at))`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX organization_invitations_ended`);
  }
}
