import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Web sessions move to express-session's store (connect-pg-simple): its table shape
 * (sid, sess, expire), with the session id hashed before it is stored (see
 * web-sessions/hashed-session-store.ts) and the signed-in user lifted out of the JSON
 * into an indexed column, so all of a person's sessions can be found and ended.
 * Sessions of the old table cannot be carried over (their ids are hashed and they
 * hold no express-session data): everyone signs in again once.
 *
 * `server_secrets` holds the key express-session signs its cookie with, created by
 * the first instance that starts, so every replica signs and checks alike.
 */
export class ExpressWebSessions1795400000011 implements MigrationInterface {
  name = 'ExpressWebSessions1795400000011';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE web_sessions`);
    await db.query(`
      CREATE TABLE web_sessions (
        sid     text PRIMARY KEY,
        sess    json NOT NULL,
        expire  timestamptz NOT NULL,
        user_id uuid GENERATED ALWAYS AS ((sess -> 'passport' ->> 'user')::uuid) STORED
      )`);
    await db.query(`CREATE INDEX web_sessions_expire ON web_sessions (expire)`);
    await db.query(`CREATE INDEX web_sessions_user_id ON web_sessions (user_id) WHERE user_id IS NOT NULL`);
    await db.query(`CREATE TABLE server_secrets (name text PRIMARY KEY, value text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE server_secrets`);
    await db.query(`DROP TABLE web_sessions`);
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
}
