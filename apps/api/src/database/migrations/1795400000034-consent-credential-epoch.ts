import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A remembered OAuth consent is bound to the account state it was given under (issue #43,
 * finding 3): `oauth_consents.credential_epoch` is the account's `users.credential_epoch` at the
 * approval, and a consent counts (`prompt=none`, the consent page skipped, the connected apps
 * listed) only while the account's is the same. A reset that takes the account back from whoever
 * signed up with the address, a new address, a disable: each ends the consents given before.
 * Consents given before this migration take the account's epoch now.
 */
export class ConsentCredentialEpoch1795400000034 implements MigrationInterface {
  name = 'ConsentCredentialEpoch1795400000034';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_consents ADD COLUMN credential_epoch integer`);
    await db.query(`UPDATE oauth_consents c SET credential_epoch = u.credential_epoch FROM users u WHERE u.id = c.user_id`);
    await db.query(`ALTER TABLE oauth_consents ALTER COLUMN credential_epoch SET NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_consents DROP COLUMN credential_epoch`);
  }
}
