import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SAML 2.0 sign-in per organization (issue #47, item 1; all owned by `federation/`):
 * - `identity_providers.protocol`: 'openid' (every provider before) or 'saml'. An organization's
 *   SAML connection is an identity provider like its OpenID ones: its links are
 *   `federated_identities` rows by (issuer = the IdP's entityID, subject = the NameID), and
 *   disabling, deleting, enforcing and the browser sessions it started work as for OpenID. The
 *   OpenID-only columns of a SAML row hold empty values.
 * - `saml_connections`: what only SAML has, one per organization: the IdP's single sign-on URL
 *   (HTTP-Redirect), its signing certificates, the metadata XML it came from, and whether an
 *   unsolicited (IdP-initiated) response is accepted.
 * - `saml_assertion_uses`: every assertion accepted, by (issuer, ID), until its NotOnOrAfter (the
 *   replay cache, shared by the replicas; purged by retention/).
 */
export class SamlConnections1795400000045 implements MigrationInterface {
  name = 'SamlConnections1795400000045';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE identity_providers ADD COLUMN protocol text NOT NULL DEFAULT 'openid' CHECK (protocol IN ('openid', 'saml'))`);
    await db.query(`
      CREATE TABLE saml_connections (
        provider_id          text PRIMARY KEY REFERENCES identity_providers (id) ON DELETE CASCADE,
        organization_id      uuid NOT NULL CONSTRAINT saml_connections_organization_key UNIQUE REFERENCES organizations (id) ON DELETE CASCADE,
        sso_url              text NOT NULL CHECK (length(sso_url) <= 2000),
        certificates         text[] NOT NULL,
        idp_metadata_xml     text NOT NULL,
        allow_idp_initiated  boolean NOT NULL DEFAULT false
      )`);
    await db.query(`
      CREATE TABLE saml_assertion_uses (
        issuer        text NOT NULL,
        assertion_id  text NOT NULL,
        used_at       timestamptz NOT NULL,
        expires_at    timestamptz NOT NULL,
        PRIMARY KEY (issuer, assertion_id)
      )`);
    await db.query(`CREATE INDEX saml_assertion_uses_expires_at ON saml_assertion_uses (expires_at)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE saml_assertion_uses`);
    await db.query(`DROP TABLE saml_connections`);
    await db.query(`DELETE FROM identity_providers WHERE protocol = 'saml'`);
    await db.query(`ALTER TABLE identity_providers DROP COLUMN protocol`);
  }
}
