import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Passkeys (WebAuthn credentials, issue #23): a person may register several, each with a name;
 * only the public key is kept, with the signature counter last seen.
 */
export class Passkeys1795400000024 implements MigrationInterface {
  name = 'Passkeys1795400000024';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE passkeys (
        id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        credential_id  text NOT NULL CONSTRAINT passkeys_credential_id_key UNIQUE,
        public_key     bytea NOT NULL,
        counter        bigint NOT NULL,
        transports     text[] NOT NULL DEFAULT '{}',
        name           text NOT NULL,
        created_at     timestamptz NOT NULL,
        last_used_at   timestamptz
      )`);
    await db.query(`CREATE INDEX passkeys_user ON passkeys (user_id)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE passkeys`);
  }
}
