import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A provider's `acr` counts as a second factor only when it is one of the values its
 * administrator names (issue #43, finding 2), no longer when it contains "mfa" or "2fa".
 *
 * Existing providers get the exact values the code recognised before (OpenID PAPE's multi-factor
 * policies, Okta's 2FA levels, Okta's and Auth0's phishing-resistant ones): what they meant stays,
 * and only the guessing by words ends. An administrator may clear or change them.
 */
export class ProviderMfaAcrValues1795400000033 implements MigrationInterface {
  name = 'ProviderMfaAcrValues1795400000033';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE identity_providers ADD COLUMN mfa_acr_values text[] NOT NULL DEFAULT '{}'`);
    await db.query(
      `UPDATE identity_providers SET mfa_acr_values = $1`,
      [
        [
          'http://schemas.openid.net/pape/policies/2007/06/multi-factor',
          'http://schemas.openid.net/pape/policies/2007/06/multi-factor-physical',
          'urn:okta:loa:2fa:any',
          'urn:okta:loa:2fa:any:ifpossible',
          'phr',
          'phrh',
        ],
      ],
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE identity_providers DROP COLUMN mfa_acr_values`);
  }
}
