import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The security log as a stream (issue #46, docs/events.md):
 * - `auth_events.writer_xid`: the 64-bit id of the transaction that wrote the row
 *   (`pg_current_xact_id()`, filled in by the default, so every INSERT, the embedded
 *   audit-insert.sql-fragment.ts ones included, records it without naming it). The stream is
 *   ordered by (writer_xid, id) and shows only rows whose writer is older than every transaction
 *   still running, so a cursor never passes an event that commits later. Rows written before
 *   this migration get 0: they come first, in id order, and all their writers have ended.
 *   Added with a constant default first, so the table is not rewritten; the volatile default
 *   is set afterwards and applies to new rows only.
 * - `auth_events.user_agent`: the caller's User-Agent where the request was at hand (clipped).
 * - indexes for the instance's stream and an organization's.
 */
export class EventStream1795400000041 implements MigrationInterface {
  name = 'EventStream1795400000041';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE auth_events ADD COLUMN writer_xid xid8 NOT NULL DEFAULT '0'`);
    await db.query(`ALTER TABLE auth_events ALTER COLUMN writer_xid SET DEFAULT pg_current_xact_id()`);
    await db.query(`ALTER TABLE auth_events ADD COLUMN user_agent text`);
    await db.query(`CREATE INDEX auth_events_stream ON auth_events (writer_xid, id)`);
    await db.query(`CREATE INDEX auth_events_organization_stream ON auth_events (organization_id, writer_xid, id) WHERE organization_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX auth_events_organization_stream`);
    await db.query(`DROP INDEX auth_events_stream`);
    await db.query(`ALTER TABLE auth_events DROP COLUMN user_agent`);
    await db.query(`ALTER TABLE auth_events DROP COLUMN writer_xid`);
  }
}
