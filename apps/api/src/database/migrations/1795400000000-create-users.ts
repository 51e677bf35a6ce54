import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateUsers1795400000000 implements MigrationInterface {
  name = 'CreateUsers1795400000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE users (
        id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        email         text NOT NULL,
        name          text NOT NULL,
        role          text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
        password_hash text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now(),
        -- stored normalized; the check keeps every writer honest
        CONSTRAINT users_email_normalized CHECK (email = lower(btrim(email))),
        CONSTRAINT users_email_key UNIQUE (email)
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE users`);
  }
}
