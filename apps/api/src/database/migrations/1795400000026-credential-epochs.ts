import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A credential ends with the account state it was issued for (issue #31):
 * - `users.credential_epoch` counts the changes of who controls the account: a new password (by
 *   any path), a new address, a disable, an address proven by someone other than its creator.
 *   Every web session and every mailed link records the epoch it was issued under and stops
 *   working when the account's epoch moves on.
 * - `account_tokens.epoch`: that epoch, for each link; `sent_to`: the address the link was mailed
 *   to (for an address change, the new one), so a verification proves only that address.
 * Links and sessions that exist now were issued under epoch 0, which every account starts at:
 * they keep working until the account's next change.
 */
export class CredentialEpochs1795400000026 implements MigrationInterface {
  name = 'CredentialEpochs1795400000026';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE users ADD COLUMN credential_epoch integer NOT NULL DEFAULT 0`);
    await db.query(`ALTER TABLE account_tokens ADD COLUMN epoch integer NOT NULL DEFAULT 0, ADD COLUMN sent_to text`);
    await db.query(`UPDATE account_tokens t SET sent_to = COALESCE(t.new_email, u.email) FROM users u WHERE u.id = t.user_id`);
    await db.query(`ALTER TABLE account_tokens ALTER COLUMN sent_to SET NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE account_tokens DROP COLUMN epoch, DROP COLUMN sent_to`);
    await db.query(`ALTER TABLE users DROP COLUMN credential_epoch`);
  }
}
