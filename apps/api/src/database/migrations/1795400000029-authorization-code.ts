import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The browser extension's door (issue #33): the authorization code flow with PKCE, and OpenID
 * Connect on the same identity.
 *
 * - `oauth_clients.type`: `public` (PKCE only, the default: every client so far) or
 *   `confidential` (a server with a secret, of which only the SHA-256 is kept in `secret_hash`);
 *   `redirect_uris`: where the code flow may send people back (none: no code flow, as before);
 *   `allowed_origins`: the browser origins that may call the token, revocation and userinfo
 *   endpoints for it (CORS).
 * - `authorization_codes`: one row per code (SHA-256 only), bound to its client, redirect URI,
 *   PKCE challenge, nonce, person, the account state it was issued under (`credential_epoch`) and
 *   the browser session that approved it (`web_session`, that session's key as `web_sessions.sid`
 *   holds it: signing out, everywhere or there, ends a code not exchanged yet), single use;
 *   `grant_id` is the family its exchange made, revoked if the code comes back.
 * - `oauth_consents`: what a person approved a client for, so the next sign-in asks nothing;
 *   revoking it on the tokens page ends the grants with it.
 * - `device_logins.grant_type`: a device login row is the root of a grant's token family (its
 *   refresh tokens, their rotation, reuse and revocation, `TokensService.revokeFamily`); a code
 *   exchange makes one too, already redeemed, so both doors share every rule and every control.
 * The ID tokens' signing keys live sealed in `server_secrets`, which needs nothing new.
 */
export class AuthorizationCode1795400000029 implements MigrationInterface {
  name = 'AuthorizationCode1795400000029';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE oauth_clients
        ADD COLUMN type text NOT NULL DEFAULT 'public' CHECK (type IN ('public', 'confidential')),
        ADD COLUMN secret_hash bytea,
        ADD COLUMN redirect_uris text[] NOT NULL DEFAULT '{}',
        ADD COLUMN allowed_origins text[] NOT NULL DEFAULT '{}',
        ADD CONSTRAINT oauth_clients_secret_of_confidential CHECK ((type = 'confidential') = (secret_hash IS NOT NULL))`);
    await db.query(
      `ALTER TABLE device_logins ADD COLUMN grant_type text NOT NULL DEFAULT 'device_code' CHECK (grant_type IN ('device_code', 'authorization_code'))`,
    );
    // The connected apps of a person (the tokens page) and the grants a consent's revocation ends.
    await db.query(`CREATE INDEX device_logins_code_grants ON device_logins (decided_by_user_id, client_id) WHERE grant_type = 'authorization_code'`);
    await db.query(`
      CREATE TABLE authorization_codes (
        id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        code_hash        bytea NOT NULL CONSTRAINT authorization_codes_code_hash_key UNIQUE,
        client_id        text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        redirect_uri     text NOT NULL,
        code_challenge   text NOT NULL,
        scope            text NOT NULL,
        nonce            text,
        auth_time        timestamptz NOT NULL,
        amr              text[] NOT NULL DEFAULT '{}',
        credential_epoch integer NOT NULL,
        web_session      text NOT NULL,
        created_at       timestamptz NOT NULL,
        expires_at       timestamptz NOT NULL,
        used_at          timestamptz,
        grant_id         uuid REFERENCES device_logins (id) ON DELETE SET NULL
      )`);
    // Codes not used yet of a person and client: a revoked consent and a disabled client burn them.
    await db.query(`CREATE INDEX authorization_codes_unused ON authorization_codes (client_id, user_id) WHERE used_at IS NULL`);
    // The purge of old codes (a day after they expired) reads only those.
    await db.query(`CREATE INDEX authorization_codes_expires_at ON authorization_codes (expires_at)`);
    await db.query(`
      CREATE TABLE oauth_consents (
        user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id  text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        scope      text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, client_id)
      )`);
    await db.query(`CREATE INDEX oauth_consents_client ON oauth_consents (client_id)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE oauth_consents`);
    await db.query(`DROP TABLE authorization_codes`);
    // Without the column a code grant's family would read as a device login: its tokens go too.
    await db.query(`DELETE FROM device_logins WHERE grant_type = 'authorization_code'`);
    await db.query(`DROP INDEX device_logins_code_grants`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN grant_type`);
    await db.query(`
      ALTER TABLE oauth_clients
        DROP CONSTRAINT oauth_clients_secret_of_confidential,
        DROP COLUMN allowed_origins,
        DROP COLUMN redirect_uris,
        DROP COLUMN secret_hash,
        DROP COLUMN type`);
  }
}
