import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A token never exceeds its minter, and `admin` is short-lived (issue #31, items 3 and 4):
 *
 * - `access_tokens.scope`: the scope the token itself was granted. Verification reads it before
 *   its device login's (a device login's tokens lose `admin` once its admin grant is over, while
 *   the login keeps what was approved). Tokens made before this have none: they keep what they had
 *   (their device login's scope, or the CLI's for one made directly).
 * - `minted_by_token_id` / `minted_by_device_login_id`: the grant that made a token with a bearer
 *   token — a token made on the site or with a token (the first), or a device login's session (the
 *   second; its access tokens come and go every hour, its family is what lives). At most one.
 *   Revoking the minter revokes what it made, recursively (tokens.repository); deleting it (its
 *   account deleted, its client deleted, retention) deletes what it made, which by then has ended too.
 * - `device_logins.admin_until`: when the `admin` scope of an approved login ends
 *   (ADMIN_GRANT_SECONDS after its approval); null for a login that did not ask for `admin`, and for
 *   logins approved before this, whose sessions lose `admin` at their next refresh.
 */
export class TokenMinters1795400000027 implements MigrationInterface {
  name = 'TokenMinters1795400000027';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE access_tokens
        ADD COLUMN scope text,
        ADD COLUMN minted_by_token_id uuid REFERENCES access_tokens (id) ON DELETE CASCADE,
        ADD COLUMN minted_by_device_login_id uuid REFERENCES device_logins (id) ON DELETE CASCADE,
        ADD CONSTRAINT access_tokens_one_minter CHECK (minted_by_token_id IS NULL OR minted_by_device_login_id IS NULL)`);
    // A revocation walks down from a token or a family: each step is one of these (nearly empty) indexes.
    await db.query(`CREATE INDEX access_tokens_minted_by_token ON access_tokens (minted_by_token_id) WHERE minted_by_token_id IS NOT NULL`);
    await db.query(`CREATE INDEX access_tokens_minted_by_device_login ON access_tokens (minted_by_device_login_id) WHERE minted_by_device_login_id IS NOT NULL`);
    await db.query(`ALTER TABLE device_logins ADD COLUMN admin_until timestamptz`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins DROP COLUMN admin_until`);
    await db.query(`DROP INDEX access_tokens_minted_by_device_login`);
    await db.query(`DROP INDEX access_tokens_minted_by_token`);
    await db.query(`ALTER TABLE access_tokens DROP CONSTRAINT access_tokens_one_minter, DROP COLUMN minted_by_device_login_id, DROP COLUMN minted_by_token_id, DROP COLUMN scope`);
  }
}
