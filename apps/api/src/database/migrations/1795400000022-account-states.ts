import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What administering people and verifying addresses need (issue #22):
 * - `users.disabled_at`: an admin disabled the account (its tokens and sessions end with it);
 * - `users.email_verified_at`: the owner followed a mailed link (accounts that exist before this
 *   migration count as verified: nobody could verify them before);
 * - `users.last_sign_in_at`: for the admin list;
 * - `account_tokens` for e-mail verification, invitations and changes of address too (`new_email`:
 *   the address a change link confirms).
 * The users trigger also announces a change of `disabled_at`, so every replica's token cache
 * forgets a disabled person's tokens.
 */
export class AccountStates1795400000022 implements MigrationInterface {
  name = 'AccountStates1795400000022';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE users ADD COLUMN disabled_at timestamptz, ADD COLUMN email_verified_at timestamptz, ADD COLUMN last_sign_in_at timestamptz`);
    await db.query(`UPDATE users SET email_verified_at = created_at`);
    await db.query(`ALTER TABLE account_tokens DROP CONSTRAINT account_tokens_purpose_check`);
    await db.query(`ALTER TABLE account_tokens ADD CONSTRAINT account_tokens_purpose_check CHECK (purpose IN ('password_reset', 'email_verification', 'invitation', 'email_change'))`);
    await db.query(`ALTER TABLE account_tokens ADD COLUMN new_email text, ADD CONSTRAINT account_tokens_new_email_check CHECK ((purpose = 'email_change') = (new_email IS NOT NULL))`);
    await db.query(`DROP TRIGGER users_notify_change ON users`);
    await db.query(`
      CREATE TRIGGER users_notify_change
        AFTER UPDATE OF email, name, role, disabled_at OR DELETE ON users
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_user_change()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER users_notify_change ON users`);
    await db.query(`
      CREATE TRIGGER users_notify_change
        AFTER UPDATE OF email, name, role OR DELETE ON users
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_user_change()`);
    await db.query(`DELETE FROM account_tokens WHERE purpose <> 'password_reset'`);
    await db.query(`ALTER TABLE account_tokens DROP COLUMN new_email`);
    await db.query(`ALTER TABLE account_tokens DROP CONSTRAINT account_tokens_purpose_check`);
    await db.query(`ALTER TABLE account_tokens ADD CONSTRAINT account_tokens_purpose_check CHECK (purpose IN ('password_reset'))`);
    await db.query(`ALTER TABLE users DROP COLUMN disabled_at, DROP COLUMN email_verified_at, DROP COLUMN last_sign_in_at`);
  }
}
