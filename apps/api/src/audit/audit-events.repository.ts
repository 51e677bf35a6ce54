import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import { AuthEvent, type AuthEventType } from './auth-event.entity.js';
import type { Tx } from '../database/tx.js';

export interface NewAuthEvent {
  type: AuthEventType;
  userId: string | null;
  ip: string | null;
  detail: Record<string, unknown>;
  createdAt: Date;
}

/** Every statement on `auth_events` we write alone (a few others insert theirs in the statement of the change they record). */
@Injectable()
export class AuditEventsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Plain SQL, prepared on the pool: it runs on hot paths (every device-login start), where
   * building the statement through TypeORM's repository cost more CPU than the database spent on it.
   */
  async insert(event: NewAuthEvent, tx?: Tx): Promise<void> {
    await this.sql.rows(
      `INSERT INTO auth_events (type, user_id, ip, detail, created_at) VALUES ($1, $2, $3, $4, $5)`,
      [event.type, event.userId, event.ip, JSON.stringify(event.detail), event.createdAt],
      tx,
    );
  }

  /** Many events of one type at once, in one statement: a database that is down costs one timeout, not one per event. */
  async insertMany(type: AuthEventType, events: ReadonlyArray<{ ip: string | null; detail: Record<string, unknown> }>, createdAt: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO auth_events (type, ip, detail, created_at)
       SELECT $3, x.ip, x.detail, $2 FROM jsonb_to_recordset($1::jsonb) AS x(ip text, detail jsonb)`,
      [JSON.stringify(events), createdAt, type],
    );
  }

  /** One person's events of `types`, newest first, for their security log. */
  listForUser(
    userId: string,
    types: readonly AuthEventType[],
    limit: number,
    offset: number,
  ): Promise<Array<{ type: AuthEventType; ip: string | null; detail: Record<string, unknown>; createdAt: Date }>> {
    return this.sql.rows(
      `SELECT type, ip, detail, created_at AS "createdAt" FROM auth_events
        WHERE user_id = $1 AND type = ANY ($2::text[]) ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
      [userId, types, limit, offset],
    );
  }

  /** At most `limit` events older than `before`, oldest first (retention); how many. */
  deleteOlderThan(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM auth_events WHERE id IN (SELECT id FROM auth_events WHERE created_at < $1 ORDER BY id LIMIT $2)`, [before, limit], tx);
  }
}
