import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * rate-limiter-flexible's Postgres table (its own shape: key, points, expire in ms),
 * so the limits' counters are shared by every replica; and an index for the wrong-code
 * check on the approval page, which counts recent failures by person and by address.
 */
export class RateLimits1795400000013 implements MigrationInterface {
  name = 'RateLimits1795400000013';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE rate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`);
    await db.query(`CREATE INDEX rate_limits_expire ON rate_limits (expire)`);
    await db.query(`CREATE INDEX auth_events_code_failed ON auth_events (created_at) INCLUDE (user_id, ip) WHERE type = 'web.code_failed'`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX auth_events_code_failed`);
    await db.query(`DROP TABLE rate_limits`);
  }
}
