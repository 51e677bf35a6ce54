import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Service accounts (issue #45; owned by `service-accounts/`, the `users` columns by `users/`).
 *
 * A service account is a row of `users` of kind `service_account`, so that every token, its
 * revocation, the verified-token cache and /me stay keyed by one user id. The CHECKs make the
 * database itself refuse what a service account may never be: it has no address (so no sign-in by
 * address, no reset, no invitation, no link by address can reach it), no password, and is never an
 * administrator of the service. A person keeps an address as before.
 *
 * - `service_accounts`: its organization, name, scopes, when it was disabled, who made it; its id
 *   is its users row's id; `client_id` is what it names itself with at the token endpoint.
 * - `service_account_secrets`: client secrets, only their SHA-256, with an optional expiry and the
 *   last use (time and address); several at once, for rotation.
 * - `service_account_keys`: public JWKs for private_key_jwt (RFC 7523), by `kid`.
 * - `service_account_assertions`: the `jti` of every client assertion accepted, until its `exp`, so
 *   none is accepted twice.
 */
export class ServiceAccounts1795400000042 implements MigrationInterface {
  name = 'ServiceAccounts1795400000042';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'service_account'))`);
    await db.query(`ALTER TABLE users ALTER COLUMN email DROP NOT NULL`);
    await db.query(`
      ALTER TABLE users ADD CONSTRAINT users_kind_rules CHECK (
        (kind = 'person' AND email IS NOT NULL)
        OR (kind = 'service_account' AND email IS NULL AND password_hash IS NULL AND role = 'user')
      )`);
    await db.query(`ALTER TABLE access_tokens DROP CONSTRAINT IF EXISTS access_tokens_origin_check`);
    await db.query(`ALTER TABLE access_tokens ADD CONSTRAINT access_tokens_origin_check CHECK (origin IN ('device', 'direct', 'admin', 'service_account'))`);
    await db.query(`
      CREATE TABLE service_accounts (
        id               uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        client_id        text NOT NULL UNIQUE,
        name             text NOT NULL,
        scopes           text NOT NULL,
        disabled_at      timestamptz,
        created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at       timestamptz NOT NULL,
        updated_at       timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX service_accounts_organization_id ON service_accounts (organization_id)`);
    await db.query(`
      CREATE TABLE service_account_secrets (
        id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        service_account_id  uuid NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
        secret_hash         bytea NOT NULL UNIQUE,
        created_at          timestamptz NOT NULL,
        expires_at          timestamptz,
        last_used_at        timestamptz,
        last_used_ip        text
      )`);
    await db.query(`CREATE INDEX service_account_secrets_account ON service_account_secrets (service_account_id)`);
    await db.query(`
      CREATE TABLE service_account_keys (
        id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        service_account_id  uuid NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
        kid                 text NOT NULL,
        jwk                 jsonb NOT NULL,
        created_at          timestamptz NOT NULL,
        last_used_at        timestamptz,
        last_used_ip        text,
        UNIQUE (service_account_id, kid)
      )`);
    await db.query(`
      CREATE TABLE service_account_assertions (
        service_account_id  uuid NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
        jti                 text NOT NULL,
        expires_at          timestamptz NOT NULL,
        PRIMARY KEY (service_account_id, jti)
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE service_account_assertions`);
    await db.query(`DROP TABLE service_account_keys`);
    await db.query(`DROP TABLE service_account_secrets`);
    await db.query(`DROP TABLE service_accounts`);
    await db.query(`DELETE FROM users WHERE kind = 'service_account'`);
    await db.query(`ALTER TABLE access_tokens DROP CONSTRAINT access_tokens_origin_check`);
    await db.query(`ALTER TABLE access_tokens ADD CONSTRAINT access_tokens_origin_check CHECK (origin IN ('device', 'direct', 'admin'))`);
    await db.query(`ALTER TABLE users DROP CONSTRAINT users_kind_rules`);
    await db.query(`ALTER TABLE users ALTER COLUMN email SET NOT NULL`);
    await db.query(`ALTER TABLE users DROP COLUMN kind`);
  }
}
