import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Scopes that mean something (issue #24): each client may request the scopes of its
 * `allowed_scopes`, and a device login keeps the scope it was granted, which its tokens carry.
 * Until now a client's `scope` was stored as asked and granted as is: every grant is cut down to
 * what its client is allowed now (the CLI: everything; any other client: `profile`), and a
 * login that asked for nothing gets its client's allowed scopes, as new ones do.
 */
export class Scopes1795400000019 implements MigrationInterface {
  name = 'Scopes1795400000019';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_clients ADD COLUMN allowed_scopes text NOT NULL DEFAULT 'profile'`);
    await db.query(`UPDATE oauth_clients SET allowed_scopes = 'profile tokens admin' WHERE id = 'prospect-cli'`);
    await db.query(
      `UPDATE device_logins d
          SET scope = array_to_string(ARRAY(
                SELECT s FROM unnest(string_to_array(COALESCE(d.scope, c.allowed_scopes), ' ')) AS s
                 WHERE s = ANY (string_to_array(c.allowed_scopes, ' '))), ' ')
         FROM oauth_clients c
        WHERE c.id = d.client_id`,
    );
    await db.query(`ALTER TABLE device_logins ALTER COLUMN scope SET DEFAULT '', ALTER COLUMN scope SET NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ALTER COLUMN scope DROP NOT NULL, ALTER COLUMN scope DROP DEFAULT`);
    await db.query(`ALTER TABLE oauth_clients DROP COLUMN allowed_scopes`);
  }
}
