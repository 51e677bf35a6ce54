import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Organizations (issue #44), all owned by `organizations/`:
 * - `organizations`: a name and a unique URL slug.
 * - `organization_members`: one role per person and organization (`member` < `admin` < `owner`);
 *   the last owner is kept by the service under the organization row's lock.
 * - `organization_invitations`: by address with a role, the link's SHA-256 only, single use,
 *   expiring, revocable; `inviter_epoch` binds it to the inviter's credential state.
 * - `organization_domains`: a domain an organization claims, with the token of its TXT record; a
 *   domain is verified by at most one organization (the partial unique index), however many claim it.
 * - `auth_events.organization_id`: the organization an event belongs to, for its own security log
 *   (no foreign key: the log outlives a deleted organization).
 * - `identity_providers.organization_id`: a provider an organization registered for its verified
 *   domains; the instance's existing providers stay instance-wide (NULL): they were configured by
 *   the instance's administrators for domains no organization has proven, so no organization may
 *   be handed them by a migration.
 * - `prospect-cli` may be granted `orgs`, which `prospect auth:login` asks for by default.
 */
export class Organizations1795400000038 implements MigrationInterface {
  name = 'Organizations1795400000038';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE organizations (
        id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        slug        text NOT NULL CONSTRAINT organizations_slug_key UNIQUE,
        name        text NOT NULL,
        created_at  timestamptz NOT NULL
      )`);
    await db.query(`
      CREATE TABLE organization_members (
        organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        role             text NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
        created_at       timestamptz NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`);
    await db.query(`CREATE INDEX organization_members_user_id ON organization_members (user_id)`);
    await db.query(`
      CREATE TABLE organization_invitations (
        id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        email              text NOT NULL,
        role               text NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
        token_hash         bytea NOT NULL CONSTRAINT organization_invitations_token_hash_key UNIQUE,
        invited_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
        inviter_epoch      integer NOT NULL,
        created_at         timestamptz NOT NULL,
        expires_at         timestamptz NOT NULL,
        accepted_at        timestamptz,
        revoked_at         timestamptz
      )`);
    await db.query(`CREATE INDEX organization_invitations_organization_id ON organization_invitations (organization_id)`);
    await db.query(`
      CREATE TABLE organization_domains (
        organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        domain              text NOT NULL,
        verification_token  text NOT NULL,
        verified_at         timestamptz,
        join_policy         text NOT NULL DEFAULT 'invite' CHECK (join_policy IN ('invite', 'request', 'auto')),
        enforce_sso         boolean NOT NULL DEFAULT false,
        created_at          timestamptz NOT NULL,
        PRIMARY KEY (organization_id, domain)
      )`);
    await db.query(`CREATE UNIQUE INDEX organization_domains_verified_domain ON organization_domains (domain) WHERE verified_at IS NOT NULL`);
    await db.query(`ALTER TABLE auth_events ADD COLUMN organization_id uuid`);
    await db.query(`CREATE INDEX auth_events_organization_id ON auth_events (organization_id, id) WHERE organization_id IS NOT NULL`);
    await db.query(`ALTER TABLE identity_providers ADD COLUMN organization_id uuid REFERENCES organizations (id) ON DELETE CASCADE`);
    await db.query(`UPDATE oauth_clients SET allowed_scopes = allowed_scopes || ' orgs' WHERE id = 'prospect-cli' AND NOT ('orgs' = ANY (string_to_array(allowed_scopes, ' ')))`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`UPDATE oauth_clients SET allowed_scopes = array_to_string(array_remove(string_to_array(allowed_scopes, ' '), 'orgs'), ' ') WHERE id = 'prospect-cli'`);
    await db.query(`ALTER TABLE identity_providers DROP COLUMN organization_id`);
    await db.query(`ALTER TABLE auth_events DROP COLUMN organization_id`);
    await db.query(`DROP TABLE organization_domains`);
    await db.query(`DROP TABLE organization_invitations`);
    await db.query(`DROP TABLE organization_members`);
    await db.query(`DROP TABLE organizations`);
  }
}
