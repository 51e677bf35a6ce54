import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SCIM 2.0 provisioning per organization (issue #47; owned by `scim/`).
 *
 * - `scim_settings`: one row per organization that changed a setting (`deactivate_disables_account`:
 *   a deactivation disables the account too, for a person whose only organization it is).
 * - `scim_tokens`: the bearer tokens an organization's directory sends, only their SHA-256, with who
 *   made them (a token works while its maker is an admin or owner of the organization) and the last use.
 * - `scim_users`: the people the directory provisioned: the SCIM resource id (`id`), the account
 *   it is (`user_id`), `userName`, `externalId`, names, `active`, and whether a deactivation
 *   disabled the account (so a reactivation enables it again, and only then).
 * - `scim_groups` and `scim_group_members`: the directory's groups and their provisioned members.
 * - `scim_group_roles`: the admin's mapping of a group's displayName to a role (`member`, `admin`).
 * - `scim_requests`: the provisioning log, the last requests of each organization's directory.
 */
export class Scim1795400000046 implements MigrationInterface {
  name = 'Scim1795400000046';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE scim_settings (
        organization_id             uuid PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
        deactivate_disables_account boolean NOT NULL DEFAULT false,
        updated_at                  timestamptz NOT NULL
      )`);
    await db.query(`
      CREATE TABLE scim_tokens (
        id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        token_hash         bytea NOT NULL UNIQUE,
        label              text NOT NULL,
        created_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at         timestamptz NOT NULL,
        last_used_at       timestamptz
      )`);
    await db.query(`CREATE INDEX scim_tokens_organization ON scim_tokens (organization_id)`);
    await db.query(`
      CREATE TABLE scim_users (
        id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        user_name           text NOT NULL,
        external_id         text,
        given_name          text,
        family_name         text,
        display_name        text,
        active              boolean NOT NULL,
        disabled_account    boolean NOT NULL DEFAULT false,
        created_at          timestamptz NOT NULL,
        updated_at          timestamptz NOT NULL,
        UNIQUE (organization_id, user_id)
      )`);
    await db.query(`CREATE UNIQUE INDEX scim_users_user_name ON scim_users (organization_id, lower(user_name))`);
    await db.query(`CREATE UNIQUE INDEX scim_users_external_id ON scim_users (organization_id, external_id) WHERE external_id IS NOT NULL`);
    await db.query(`CREATE INDEX scim_users_user ON scim_users (user_id)`);
    await db.query(`
      CREATE TABLE scim_groups (
        id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        display_name    text NOT NULL,
        external_id     text,
        created_at      timestamptz NOT NULL,
        updated_at      timestamptz NOT NULL
      )`);
    await db.query(`CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (organization_id, lower(display_name))`);
    await db.query(`
      CREATE TABLE scim_group_members (
        group_id     uuid NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
        scim_user_id uuid NOT NULL REFERENCES scim_users (id) ON DELETE CASCADE,
        PRIMARY KEY (group_id, scim_user_id)
      )`);
    await db.query(`CREATE INDEX scim_group_members_user ON scim_group_members (scim_user_id)`);
    await db.query(`
      CREATE TABLE scim_group_roles (
        organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        display_name    text NOT NULL,
        role            text NOT NULL CHECK (role IN ('member', 'admin')),
        PRIMARY KEY (organization_id, display_name)
      )`);
    await db.query(`
      CREATE TABLE scim_requests (
        id              bigserial PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        at              timestamptz NOT NULL,
        method          text NOT NULL,
        resource        text NOT NULL,
        status          integer NOT NULL,
        outcome         text NOT NULL
      )`);
    await db.query(`CREATE INDEX scim_requests_organization ON scim_requests (organization_id, id DESC)`);
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['scim_requests', 'scim_group_roles', 'scim_group_members', 'scim_groups', 'scim_users', 'scim_tokens', 'scim_settings']) {
      await db.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
