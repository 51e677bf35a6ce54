import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A grant is a thing of its own (issue #43, item 1), owned by `grants/`: `grants` is the record of
 * one approval (person, client, scopes, the end of its `admin`, the credential epoch it was approved
 * under, how the approving sign-in proved its person: `amr`, `acr`, `auth_time`, a second factor
 * shown; the approving web session; the organization where there is one; created and revoked).
 * A device login and an authorization code are two ways to obtain one; refresh tokens and access
 * tokens hang off it (`grant_id`, `minted_by_grant_id`), and the grant row is their family's lock.
 *
 * Today's data moves over in this one migration's transaction: every device login that was
 * approved (or has a token) becomes a grant with the same id (so the events that name a login name
 * its grant, and every token's family stays the same), `device_logins.grant_id` points to it; a
 * code grant's stand-in device login (its empty user code) becomes a grant and is deleted; the
 * token columns are renamed and their foreign keys point to `grants`. `device_logins` keeps only
 * the device flow's own state (the codes, polling, the sealed reply, who decided).
 *
 * `organization_id` is written by none yet (the organizations' doors will): it has no cascade, so an
 * organization's teardown must revoke its grants (their tokens, their back-channel logouts) before
 * the row goes, rather than a DELETE silently taking sessions with it.
 */
export class Grants1795400000047 implements MigrationInterface {
  name = 'Grants1795400000047';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE grants (
        id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id        text NOT NULL REFERENCES oauth_clients (id),
        grant_type       text NOT NULL CHECK (grant_type IN ('device_code', 'authorization_code')),
        scope            text NOT NULL DEFAULT '',
        admin_until      timestamptz,
        credential_epoch integer,
        amr              text[],
        acr              text,
        auth_time        timestamptz,
        second_factor    boolean NOT NULL DEFAULT false,
        web_session      text,
        organization_id  uuid REFERENCES organizations (id),
        created_at       timestamptz NOT NULL,
        revoked_at       timestamptz
      )`);
    await db.query(`CREATE INDEX grants_user_id ON grants (user_id)`);
    await db.query(`CREATE INDEX grants_client_id ON grants (client_id)`);

    // Every approved device login and every code grant's stand-in row, with the same id. A login
    // some token hangs off is one too, whatever its status says.
    await db.query(`
      INSERT INTO grants (id, user_id, client_id, grant_type, scope, admin_until, credential_epoch, amr, auth_time, second_factor, web_session, created_at)
      SELECT d.id, d.decided_by_user_id, d.client_id, d.grant_type, d.scope, d.admin_until, d.credential_epoch, d.amr, c.auth_time, d.second_factor, c.web_session,
             COALESCE(d.decided_at, d.created_at)
        FROM device_logins d
        LEFT JOIN LATERAL (SELECT auth_time, web_session FROM authorization_codes WHERE grant_id = d.id ORDER BY used_at LIMIT 1) c ON true
       WHERE d.decided_by_user_id IS NOT NULL
         AND (d.status IN ('approved', 'redeemed') OR d.grant_type = 'authorization_code'
              OR EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.device_login_id = d.id)
              OR EXISTS (SELECT 1 FROM access_tokens t WHERE t.device_login_id = d.id OR t.minted_by_device_login_id = d.id))`);

    await db.query(`ALTER TABLE device_logins ADD COLUMN grant_id uuid REFERENCES grants (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED`);
    await db.query(`UPDATE device_logins d SET grant_id = d.id WHERE d.grant_type = 'device_code' AND EXISTS (SELECT 1 FROM grants g WHERE g.id = d.id)`);
    // The key is checked at commit for an approval (which writes the login before its grant); here, at once, so the table can be altered after.
    await db.query(`SET CONSTRAINTS device_logins_grant_id_fkey IMMEDIATE`);
    await db.query(`CREATE INDEX device_logins_grant_id ON device_logins (grant_id) WHERE grant_id IS NOT NULL`);

    await db.query(`ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_device_login_id_fkey`);
    await db.query(`ALTER TABLE refresh_tokens RENAME COLUMN device_login_id TO grant_id`);
    await db.query(`ALTER TABLE refresh_tokens ADD CONSTRAINT refresh_tokens_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES grants (id) ON DELETE CASCADE`);
    await db.query(`ALTER INDEX refresh_tokens_family RENAME TO refresh_tokens_grant_id`);

    await db.query(`ALTER TABLE access_tokens DROP CONSTRAINT access_tokens_device_login_id_fkey, DROP CONSTRAINT access_tokens_minted_by_device_login_id_fkey`);
    await db.query(`ALTER TABLE access_tokens RENAME COLUMN device_login_id TO grant_id`);
    await db.query(`ALTER TABLE access_tokens RENAME COLUMN minted_by_device_login_id TO minted_by_grant_id`);
    await db.query(`
      ALTER TABLE access_tokens
        ADD CONSTRAINT access_tokens_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES grants (id) ON DELETE SET NULL,
        ADD CONSTRAINT access_tokens_minted_by_grant_id_fkey FOREIGN KEY (minted_by_grant_id) REFERENCES grants (id) ON DELETE CASCADE`);
    await db.query(`ALTER INDEX access_tokens_device_login_id RENAME TO access_tokens_grant_id`);
    await db.query(`ALTER INDEX access_tokens_minted_by_device_login RENAME TO access_tokens_minted_by_grant`);

    await db.query(`ALTER TABLE authorization_codes DROP CONSTRAINT authorization_codes_grant_id_fkey`);
    await db.query(`UPDATE authorization_codes c SET grant_id = NULL WHERE grant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = c.grant_id)`);
    await db.query(`ALTER TABLE authorization_codes ADD CONSTRAINT authorization_codes_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES grants (id) ON DELETE SET NULL`);

    // The code grants' stand-ins go; what the device flow does not need any more moves to the grant.
    await db.query(`DELETE FROM device_logins WHERE grant_type = 'authorization_code'`);
    await db.query(`DROP INDEX device_logins_code_grants`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN grant_type, DROP COLUMN admin_until, DROP COLUMN credential_epoch, DROP COLUMN amr, DROP COLUMN second_factor`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`SET CONSTRAINTS device_logins_grant_id_fkey IMMEDIATE`);
    await db.query(`
      ALTER TABLE device_logins
        ADD COLUMN grant_type text NOT NULL DEFAULT 'device_code' CHECK (grant_type IN ('device_code', 'authorization_code')),
        ADD COLUMN admin_until timestamptz, ADD COLUMN credential_epoch integer, ADD COLUMN amr text[], ADD COLUMN second_factor boolean NOT NULL DEFAULT false`);
    await db.query(`CREATE INDEX device_logins_code_grants ON device_logins (decided_by_user_id, client_id) WHERE grant_type = 'authorization_code'`);
    await db.query(`
      UPDATE device_logins d SET admin_until = g.admin_until, credential_epoch = g.credential_epoch, amr = g.amr, second_factor = g.second_factor
        FROM grants g WHERE g.id = d.grant_id`);
    // A code grant (and a device grant whose login is gone) gets its stand-in device login back, under the grant's id.
    await db.query(`
      INSERT INTO device_logins (id, device_code_hash, user_code, status, decided_by_user_id, decided_at, client_id, scope, created_at, expires_at, redeemed_at, grant_type,
                                 admin_until, credential_epoch, amr, second_factor)
      SELECT g.id, sha256(convert_to(gen_random_uuid()::text, 'UTF8')), '', 'redeemed', g.user_id, g.created_at, g.client_id, g.scope, g.created_at, g.created_at, g.created_at,
             g.grant_type, g.admin_until, g.credential_epoch, g.amr, g.second_factor
        FROM grants g WHERE NOT EXISTS (SELECT 1 FROM device_logins d WHERE d.id = g.id)`);

    await db.query(`ALTER TABLE authorization_codes DROP CONSTRAINT authorization_codes_grant_id_fkey`);
    await db.query(`ALTER TABLE authorization_codes ADD CONSTRAINT authorization_codes_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES device_logins (id) ON DELETE SET NULL`);

    await db.query(`ALTER INDEX access_tokens_minted_by_grant RENAME TO access_tokens_minted_by_device_login`);
    await db.query(`ALTER INDEX access_tokens_grant_id RENAME TO access_tokens_device_login_id`);
    await db.query(`ALTER TABLE access_tokens DROP CONSTRAINT access_tokens_grant_id_fkey, DROP CONSTRAINT access_tokens_minted_by_grant_id_fkey`);
    await db.query(`ALTER TABLE access_tokens RENAME COLUMN minted_by_grant_id TO minted_by_device_login_id`);
    await db.query(`ALTER TABLE access_tokens RENAME COLUMN grant_id TO device_login_id`);
    await db.query(`
      ALTER TABLE access_tokens
        ADD CONSTRAINT access_tokens_device_login_id_fkey FOREIGN KEY (device_login_id) REFERENCES device_logins (id) ON DELETE SET NULL,
        ADD CONSTRAINT access_tokens_minted_by_device_login_id_fkey FOREIGN KEY (minted_by_device_login_id) REFERENCES device_logins (id) ON DELETE CASCADE`);

    await db.query(`ALTER INDEX refresh_tokens_grant_id RENAME TO refresh_tokens_family`);
    await db.query(`ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_grant_id_fkey`);
    await db.query(`ALTER TABLE refresh_tokens RENAME COLUMN grant_id TO device_login_id`);
    await db.query(`ALTER TABLE refresh_tokens ADD CONSTRAINT refresh_tokens_device_login_id_fkey FOREIGN KEY (device_login_id) REFERENCES device_logins (id) ON DELETE CASCADE`);

    await db.query(`DROP INDEX device_logins_grant_id`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN grant_id`);
    await db.query(`DROP TABLE grants`);
  }
}
