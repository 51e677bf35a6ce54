import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAuthEvents1795400000003 implements MigrationInterface {
  name = 'CreateAuthEvents1795400000003';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE auth_events (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        type       text NOT NULL,
        user_id    uuid REFERENCES users (id) ON DELETE SET NULL,
        ip         text,
        detail     jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX auth_events_user_id ON auth_events (user_id, created_at DESC)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE auth_events`);
  }
}
