import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An anonymous passkey ceremony stores nothing (issue #43, finding 6): the sign-in page's challenge
 * lives sealed in the browser's cookie, not in a session row. What keeps such a challenge single
 * use is recorded on the passkey when it signs someone in:
 * - `passkeys.last_challenge_issued_at`: when the challenge of its latest sign-in from a sealed
 *   ceremony was issued. An assertion over a challenge issued at or before it is refused, so a
 *   replayed (cookie, assertion) pair never signs in twice, even with a passkey that keeps no
 *   signature counter (synced passkeys send zero every time).
 */
export class PasskeyChallengeUse1795400000036 implements MigrationInterface {
  name = 'PasskeyChallengeUse1795400000036';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE passkeys ADD COLUMN last_challenge_issued_at timestamptz`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE passkeys DROP COLUMN last_challenge_issued_at`);
  }
}
