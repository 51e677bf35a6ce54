import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import { AuthEvent, type AuthEventType } from './auth-event.entity.js';
import type { Tx } from '../database/tx.js';

export interface NewAuthEvent {
  type: AuthEventType;
  userId: string | null;
  ip: string | null;
  userAgent?: string | null;
  detail: Record<string, unknown>;
  createdAt: Date;
  organizationId?: string | null;
}

/**
 * Every statement on `auth_events` (the repositories of other modules that write an event in the
 * statement of the change it records embed audit-insert.sql-fragment.ts, whose text is ours too).
 */
@Injectable()
export class AuditEventsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Plain SQL, prepared on the pool: it runs on hot paths (every device-login start), where
   * building the statement through TypeORM's repository cost more CPU than the database spent on it.
   */
  async insert(event: NewAuthEvent, tx?: Tx): Promise<void> {
    await this.sql.rows(
      `INSERT INTO auth_events (type, user_id, ip, detail, created_at, organization_id, user_agent) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [event.type, event.userId, event.ip, JSON.stringify(event.detail), event.createdAt, event.organizationId ?? null, event.userAgent ?? null],
      tx,
    );
  }

  /** Many events of one type at once, in one statement: a database that is down costs one timeout, not one per event. */
  async insertMany(type: AuthEventType, events: ReadonlyArray<{ ip: string | null; detail: Record<string, unknown>; organizationId?: string | null }>, createdAt: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO auth_events (type, ip, detail, created_at, organization_id)
       SELECT $3, x.ip, x.detail, $2, x."organizationId" FROM jsonb_to_recordset($1::jsonb) AS x(ip text, detail jsonb, "organizationId" uuid)`,
      [JSON.stringify(events), createdAt, type],
    );
  }

  /** Events of one type, one per entry, in one statement, in `tx` when given. */
  async insertEach(type: AuthEventType, events: ReadonlyArray<Omit<NewAuthEvent, 'type'>>, tx?: Tx): Promise<void> {
    await this.sql.rows(
      `INSERT INTO auth_events (type, user_id, ip, user_agent, detail, created_at)
       SELECT $2, x.user_id, x.ip, x.user_agent, x.detail, x.created_at FROM jsonb_to_recordset($1::jsonb) AS x(user_id uuid, ip text, user_agent text, detail jsonb, created_at timestamptz)`,
      [JSON.stringify(events.map((e) => ({ user_id: e.userId, ip: e.ip, user_agent: e.userAgent ?? null, detail: e.detail, created_at: e.createdAt }))), type],
      tx,
    );
  }

  /**
   * Forgets, in `tx`, what the person's events say beyond their type and time (their address and
   * details), before their account is deleted: the events stay, without personal data.
   */
  async forgetDetailsOf(tx: Tx, userId: string): Promise<void> {
    await this.sql.rows(`UPDATE auth_events SET ip = NULL, user_agent = NULL, detail = '{}'::jsonb WHERE user_id = $1`, [userId], tx);
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

  /** An organization's events, newest first, with the actor's address while their account exists. */
  listForOrganization(
    organizationId: string,
    limit: number,
    offset: number,
  ): Promise<Array<{ type: AuthEventType; actorEmail: string | null; ip: string | null; detail: Record<string, unknown>; createdAt: Date }>> {
    return this.sql.rows(
      `SELECT e.type, u.email AS "actorEmail", e.ip, e.detail, e.created_at AS "createdAt"
         FROM auth_events e LEFT JOIN users u ON u.id = e.user_id
        WHERE e.organization_id = $1 ORDER BY e.id DESC LIMIT $2 OFFSET $3`,
      [organizationId, limit, offset],
    );
  }

  /** At most `limit` events older than `before`, oldest first (retention); how many. */
  deleteOlderThan(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM auth_events WHERE id IN (SELECT id FROM auth_events WHERE created_at < $1 ORDER BY id LIMIT $2)`, [before, limit], tx);
  }
}
