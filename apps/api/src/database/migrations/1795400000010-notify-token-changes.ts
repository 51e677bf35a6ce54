import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change that can invalidate a verified token (revocation, a changed
 * expiry, a deleted token, a changed or deleted user) is announced on the
 * `prospect_token_events` channel, so each API instance can evict it from its
 * in-process cache. Triggers catch every path, including manual SQL.
 */
export class NotifyTokenChanges1795400000010 implements MigrationInterface {
  name = 'NotifyTokenChanges1795400000010';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE FUNCTION prospect_notify_token_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('prospect_token_events', 't:' || OLD.id);
        RETURN NULL;
      END $$`);
    await db.query(`
      CREATE TRIGGER access_tokens_notify_change
        AFTER UPDATE OF revoked_at, expires_at, user_id OR DELETE ON access_tokens
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_token_change()`);
    await db.query(`
      CREATE FUNCTION prospect_notify_user_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('prospect_token_events', 'u:' || OLD.id);
        RETURN NULL;
      END $$`);
    await db.query(`
      CREATE TRIGGER users_notify_change
        AFTER UPDATE OF email, name, role OR DELETE ON users
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_user_change()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER users_notify_change ON users`);
    await db.query(`DROP FUNCTION prospect_notify_user_change()`);
    await db.query(`DROP TRIGGER access_tokens_notify_change ON access_tokens`);
    await db.query(`DROP FUNCTION prospect_notify_token_change()`);
  }
}
