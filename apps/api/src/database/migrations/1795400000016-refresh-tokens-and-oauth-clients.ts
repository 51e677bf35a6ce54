import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue #14: rotating refresh tokens and the OAuth 2.0 clients.
 *
 * - `oauth_clients`: the public clients that may start a device login (RFC 8628), with the
 *   name the approval page shows. `prospect-cli` is built in: the custom device routes act as it.
 * - `device_logins.client_id` and `scope`: which client started it, with what scope.
 * - `refresh_tokens`: one row per refresh token (SHA-256 only). A family is every token
 *   descended from one device login (`device_login_id`); `family_expires_at` is its absolute
 *   cap. A rotated token keeps `rotated_at` and, for a short grace, its successor pair
 *   sealed under its own value (common/sealed.ts), so a racing second refresh gets the same pair.
 */
export class RefreshTokensAndOAuthClients1795400000016 implements MigrationInterface {
  name = 'RefreshTokensAndOAuthClients1795400000016';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE oauth_clients (
        id                 text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9._-]{2,63}$'),
        name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        built_in           boolean NOT NULL DEFAULT false,
        created_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at         timestamptz NOT NULL DEFAULT now()
      )`);
    await db.query(`INSERT INTO oauth_clients (id, name, built_in) VALUES ('prospect-cli', 'Prospect CLI', true)`);
    await db.query(`ALTER TABLE device_logins ADD COLUMN client_id text NOT NULL DEFAULT 'prospect-cli' REFERENCES oauth_clients (id)`);
    await db.query(`ALTER TABLE device_logins ADD COLUMN scope text`);
    await db.query(`
      CREATE TABLE refresh_tokens (
        id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        token_hash        bytea NOT NULL CONSTRAINT refresh_tokens_token_hash_key UNIQUE,
        device_login_id   uuid NOT NULL REFERENCES device_logins (id) ON DELETE CASCADE,
        user_id           uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at        timestamptz NOT NULL,
        expires_at        timestamptz NOT NULL,
        family_expires_at timestamptz NOT NULL,
        rotated_at        timestamptz,
        successor_sealed  bytea,
        revoked_at        timestamptz
      )`);
    await db.query(`CREATE INDEX refresh_tokens_family ON refresh_tokens (device_login_id)`);
    // "Sign out everywhere" and a deleted user find a person's refresh tokens.
    await db.query(`CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id)`);
    // The eraser of sealed successors, every 10 s on every replica, reads only the few it erases.
    await db.query(`CREATE INDEX refresh_tokens_sealed ON refresh_tokens (rotated_at) WHERE successor_sealed IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE refresh_tokens`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN scope`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN client_id`);
    await db.query(`DROP TABLE oauth_clients`);
  }
}
