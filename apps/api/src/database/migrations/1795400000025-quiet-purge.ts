import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deleting a token that had already ended tells the replicas nothing: their caches refuse an
 * expired token by its own expiry and heard of a revocation when it happened. The retention purge
 * deletes such tokens by the hundred thousand (issue #21's growth run), and sent one notification
 * per row; now only the deletion of a live token notifies (a user deleted with their tokens).
 */
export class QuietPurge1795400000025 implements MigrationInterface {
  name = 'QuietPurge1795400000025';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER access_tokens_notify_change ON access_tokens`);
    await db.query(`
      CREATE TRIGGER access_tokens_notify_change
        AFTER UPDATE OF revoked_at, expires_at, user_id ON access_tokens
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_token_change()`);
    await db.query(`
      CREATE TRIGGER access_tokens_notify_delete
        AFTER DELETE ON access_tokens
        FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND OLD.expires_at > now())
        EXECUTE FUNCTION prospect_notify_token_change()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER access_tokens_notify_delete ON access_tokens`);
    await db.query(`DROP TRIGGER access_tokens_notify_change ON access_tokens`);
    await db.query(`
      CREATE TRIGGER access_tokens_notify_change
        AFTER UPDATE OF revoked_at, expires_at, user_id OR DELETE ON access_tokens
        FOR EACH ROW EXECUTE FUNCTION prospect_notify_token_change()`);
  }
}
