import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Wrong user codes are counted by rate-limiter-flexible now (rate-limits/), not by reading
 * `web.code_failed` audit rows back, so the index that served that read only costs writes.
 */
export class DropCodeFailedIndex1795400000018 implements MigrationInterface {
  name = 'DropCodeFailedIndex1795400000018';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX IF EXISTS auth_events_code_failed`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`CREATE INDEX auth_events_code_failed ON auth_events (created_at) INCLUDE (user_id, ip) WHERE type = 'web.code_failed'`);
  }
}
