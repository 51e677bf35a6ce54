import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `organization_join_requests` (issue #44, verified domains; owned by `organizations/`): a person
 * with a verified address in a domain an organization verified, whose `join_policy` is `request`,
 * asked to join; an admin approves (the person becomes a member and the row goes) or declines (the
 * row goes). One request per person and organization; it ends with either of them.
 */
export class OrganizationJoinRequests1795400000040 implements MigrationInterface {
  name = 'OrganizationJoinRequests1795400000040';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE organization_join_requests (
        organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at       timestamptz NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`);
    await db.query(`CREATE INDEX organization_join_requests_user_id ON organization_join_requests (user_id)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE organization_join_requests`);
  }
}
