import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `grants.federated_link_id`: the identity-provider link the approving browser session was signed
 * in through (its `web_sessions.federated_link_id` when the grant was recorded), so what ends that
 * session (the provider disabled or deleted, its domains narrowed, the organization's domain
 * removed, the link refused by the provider or unlinked) ends the CLI and OAuth grants it approved
 * too: a credential ends with the state it was issued for. No foreign key: a link goes with its
 * provider, and its grants are revoked, not deleted, before it goes (their ids stay in the events).
 * Grants recorded before this have none (their sessions' links are not known any more).
 */
export class GrantFederatedLink1795400000053 implements MigrationInterface {
  name = 'GrantFederatedLink1795400000053';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE grants ADD COLUMN federated_link_id uuid`);
    await db.query(`CREATE INDEX grants_federated_link_id ON grants (federated_link_id) WHERE federated_link_id IS NOT NULL AND revoked_at IS NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX grants_federated_link_id`);
    await db.query(`ALTER TABLE grants DROP COLUMN federated_link_id`);
  }
}
