import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Workload identity federation (issue #45, item 4; owned by `service-accounts/`):
 * - `service_account_federations`: the external OIDC issuers an organization's admins trust for a
 *   service account, each with the audience its tokens must name and the conditions on their
 *   claims (claim name → exact value or `*` pattern; at least one, checked by the API).
 * - `service_account_subject_tokens`: the `(iss, jti)` of every subject token exchanged, until its
 *   `exp` (with the skew), so none is exchanged twice, whichever replica answers and whichever
 *   service account it is presented for.
 */
export class ServiceAccountFederations1795400000044 implements MigrationInterface {
  name = 'ServiceAccountFederations1795400000044';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE service_account_federations (
        id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        service_account_id  uuid NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
        issuer              text NOT NULL,
        audience            text NOT NULL,
        conditions          jsonb NOT NULL CHECK (jsonb_typeof(conditions) = 'object' AND conditions <> '{}'::jsonb),
        created_by          uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at          timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX service_account_federations_account ON service_account_federations (service_account_id)`);
    await db.query(`
      CREATE TABLE service_account_subject_tokens (
        issuer      text NOT NULL,
        jti         text NOT NULL,
        expires_at  timestamptz NOT NULL,
        PRIMARY KEY (issuer, jti)
      )`);
    await db.query(`CREATE INDEX service_account_subject_tokens_expires_at ON service_account_subject_tokens (expires_at)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE service_account_subject_tokens`);
    await db.query(`DROP TABLE service_account_federations`);
  }
}
