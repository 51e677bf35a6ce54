import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateWebSessions1795400000004 implements MigrationInterface {
  name = 'CreateWebSessions1795400000004';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE web_sessions (
        id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        session_hash bytea NOT NULL CONSTRAINT web_sessions_session_hash_key UNIQUE,
        user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        csrf_token   text NOT NULL,
        created_at   timestamptz NOT NULL,
        expires_at   timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX web_sessions_user_id ON web_sessions (user_id)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE web_sessions`);
  }
}
