import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When a SCIM deactivation disabled the person's account (`scim_users.account_disabled_at`, the
 * account's own `disabled_at` it set). A reactivation enables the account again only while that
 * disable is still the account's: an instance administrator who enabled it and disabled it again
 * since (a disable of their own) is not undone by the directory. Rows disabled before this
 * migration take the account's current disable as the directory's.
 */
export class ScimAccountDisabledAt1795400000049 implements MigrationInterface {
  name = 'ScimAccountDisabledAt1795400000049';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE scim_users ADD COLUMN account_disabled_at timestamptz`);
    await db.query(`UPDATE scim_users s SET account_disabled_at = u.disabled_at FROM users u WHERE u.id = s.user_id AND s.disabled_account`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE scim_users DROP COLUMN account_disabled_at`);
  }
}
