import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which provisioned people the organization's SCIM created (issue #47): `scim_users.account_epoch`
 * is the account's `users.credential_epoch` when the directory made the account (NULL when it
 * linked an account that existed before). Federation asks scim/ about it (ScimProvisionedAccounts):
 * the organization's own provider links such an account at its first sign-in without the mailed
 * proof, while the account is still as the directory made it (the same epoch, no password, no
 * link). Rows of before are NULL: whether the directory made their account was not kept, so they
 * keep the proof.
 */
export class ScimCreatedAccounts1795400000050 implements MigrationInterface {
  name = 'ScimCreatedAccounts1795400000050';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE scim_users ADD COLUMN account_epoch integer`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE scim_users DROP COLUMN account_epoch`);
  }
}
