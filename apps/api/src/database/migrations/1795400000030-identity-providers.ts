import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sign-in through a team's own OpenID provider (issue #34):
 * - `identity_providers`: what an admin configures: the issuer (one provider per issuer), its
 *   discovered metadata, the client id and the client secret sealed under a server key (never
 *   shown again), the scopes, the mail domains it may sign in, `enforce` (those domains sign in
 *   only through it) and `allow_sign_up`.
 * - `federated_identities`: the links, one per (issuer, subject), never made from an address alone;
 *   the provider's refresh token sealed, when it gives one, for the leaver check; when the provider
 *   last said yes (`last_verified_at`), and when it said no (`refused_at`).
 * - `web_sessions.federated_link_id`: the link a browser session was started through, lifted out of
 *   the session's JSON (as `user_id` is), so disabling a provider or a refusal ends its sessions in
 *   one statement.
 */
export class IdentityProviders1795400000030 implements MigrationInterface {
  name = 'IdentityProviders1795400000030';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE identity_providers (
        id                          text PRIMARY KEY,
        display_name                text NOT NULL,
        issuer                      text NOT NULL CONSTRAINT identity_providers_issuer_key UNIQUE,
        client_id                   text NOT NULL,
        client_secret_sealed        bytea NOT NULL,
        token_endpoint_auth_method  text NOT NULL CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post')),
        scopes                      text NOT NULL,
        email_domains               text[] NOT NULL,
        enforce                     boolean NOT NULL DEFAULT false,
        allow_sign_up               boolean NOT NULL DEFAULT false,
        metadata                    jsonb NOT NULL,
        discovered_at               timestamptz NOT NULL,
        disabled_at                 timestamptz,
        created_by_user_id          uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at                  timestamptz NOT NULL,
        updated_at                  timestamptz NOT NULL
      )`);
    await db.query(`
      CREATE TABLE federated_identities (
        id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id               uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        provider_id           text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
        issuer                text NOT NULL,
        subject               text NOT NULL,
        email                 text,
        refresh_token_sealed  bytea,
        created_at            timestamptz NOT NULL,
        last_verified_at      timestamptz NOT NULL,
        refused_at            timestamptz,
        checking_until        timestamptz,
        CONSTRAINT federated_identities_issuer_subject_key UNIQUE (issuer, subject),
        CONSTRAINT federated_identities_provider_user_key UNIQUE (provider_id, user_id)
      )`);
    await db.query(`CREATE INDEX federated_identities_user_id ON federated_identities (user_id)`);
    await db.query(`ALTER TABLE web_sessions ADD COLUMN federated_link_id uuid GENERATED ALWAYS AS ((sess ->> 'federatedLinkId')::uuid) STORED`);
    await db.query(`CREATE INDEX web_sessions_federated_link_id ON web_sessions (federated_link_id) WHERE federated_link_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX web_sessions_federated_link_id`);
    await db.query(`ALTER TABLE web_sessions DROP COLUMN federated_link_id`);
    await db.query(`DROP TABLE federated_identities`);
    await db.query(`DROP TABLE identity_providers`);
  }
}
