import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A grant records how its approval was proven (issue #43): `device_logins.amr` (RFC 8176, the
 * approving session's newest proof, as an authorization code already keeps it) and
 * `device_logins.second_factor` (the approving session had shown a second factor: at its sign-in,
 * a re-confirmation with a code, or a factor set up in it). `authorization_codes.second_factor`
 * carries the same from the consenting session to the code's grant. With REQUIRE_SECOND_FACTOR,
 * a grant approved without one issues nothing more, a refresh included (grants/grant-rules.ts).
 *
 * Grants from before take what can be known now: a code grant's amr from its code where the code
 * is still kept; `second_factor` where the approver has an authenticator app or a passkey today
 * (with REQUIRE_SECOND_FACTOR on, the approval page asked everyone to have one).
 */
export class GrantProof1795400000035 implements MigrationInterface {
  name = 'GrantProof1795400000035';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ADD COLUMN amr text[], ADD COLUMN second_factor boolean NOT NULL DEFAULT false`);
    await db.query(`ALTER TABLE authorization_codes ADD COLUMN second_factor boolean NOT NULL DEFAULT false`);
    await db.query(`UPDATE device_logins d SET amr = c.amr FROM authorization_codes c WHERE c.grant_id = d.id`);
    await db.query(`
      UPDATE device_logins d SET second_factor = true
       WHERE d.status IN ('approved', 'redeemed')
         AND (EXISTS (SELECT 1 FROM totp_factors t WHERE t.user_id = d.decided_by_user_id)
              OR EXISTS (SELECT 1 FROM passkeys p WHERE p.user_id = d.decided_by_user_id))`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE authorization_codes DROP COLUMN second_factor`);
    await db.query(`ALTER TABLE device_logins DROP COLUMN amr, DROP COLUMN second_factor`);
  }
}
