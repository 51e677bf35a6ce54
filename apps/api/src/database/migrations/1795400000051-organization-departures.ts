import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When each person last left each organization (issue #47, "a credential ends with the state it was
 * issued for"): removed by an admin, left, or removed by the organization's directory (SCIM). A token
 * whose grant was approved at or before that instant does not act for the organization again, even
 * when the person is a member again (OrganizationsRepository's `actsFor` rule). One row per pair,
 * moved forward to the latest departure; it goes with the organization or the account.
 */
export class OrganizationDepartures1795400000051 implements MigrationInterface {
  name = 'OrganizationDepartures1795400000051';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE organization_departures (
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id         uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        left_at         timestamptz NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE organization_departures`);
  }
}
