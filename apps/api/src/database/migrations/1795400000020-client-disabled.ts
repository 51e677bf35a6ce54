import type { MigrationInterface, QueryRunner } from 'typeorm';

/** An admin can disable an OAuth client (issue #24): it starts no device login while `disabled_at` is set. */
export class ClientDisabled1795400000020 implements MigrationInterface {
  name = 'ClientDisabled1795400000020';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_clients ADD COLUMN disabled_at timestamptz`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_clients DROP COLUMN disabled_at`);
  }
}
