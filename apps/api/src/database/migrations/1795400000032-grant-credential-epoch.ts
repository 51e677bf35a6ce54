import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A grant remembers the account state it was approved under (issue #43): `device_logins` (the row
 * every token family hangs off, whichever door made it) gains `credential_epoch`, the account's
 * `users.credential_epoch` when the person approved it (a device login) or signed in for it (an
 * authorization code). Every token the grant issues later, a refresh included, is refused once the
 * account's epoch moved on, whether or not the revocation that goes with the change ran.
 *
 * Grants decided before this migration take the account's epoch now: the changes before it
 * revoked what they had to, so only live grants of the current state are left to carry on.
 * Pending and denied logins keep NULL, which no epoch equals.
 */
export class GrantCredentialEpoch1795400000032 implements MigrationInterface {
  name = 'GrantCredentialEpoch1795400000032';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins ADD COLUMN credential_epoch integer`);
    await db.query(`
      UPDATE device_logins d SET credential_epoch = u.credential_epoch
        FROM users u
       WHERE u.id = d.decided_by_user_id AND d.status IN ('approved', 'redeemed')`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE device_logins DROP COLUMN credential_epoch`);
  }
}
