import { Injectable } from '@nestjs/common';
import type { AuthEventType } from '../audit/auth-event.entity.js';
import { Sql } from '../database/sql.js';
import type { StreamPosition } from './event-id.js';

/** One row of the stream, with its actor's address and its organization as they are now. */
export interface StreamRow {
  id: string;
  xid: string;
  type: AuthEventType;
  userId: string | null;
  userEmail: string | null;
  ip: string | null;
  userAgent: string | null;
  detail: Record<string, unknown>;
  createdAt: Date;
  organizationId: string | null;
  organizationSlug: string | null;
  organizationName: string | null;
}

const COLUMNS = `e.id::text AS id, e.writer_xid::text AS xid, e.type, e.user_id AS "userId", u.email AS "userEmail", e.ip,
       e.user_agent AS "userAgent", e.detail, e.created_at AS "createdAt", e.organization_id AS "organizationId",
       o.slug AS "organizationSlug", o.name AS "organizationName"
  FROM auth_events e LEFT JOIN users u ON u.id = e.user_id LEFT JOIN organizations o ON o.id = e.organization_id`;

/**
 * Only rows whose writing transaction is older than every transaction still running (the xmin of
 * this statement's own snapshot): those writers have all ended, so no row can still appear at or
 * before them, and the page's last position is a cursor nothing will ever be inserted behind.
 * Ordered by (writer_xid, id), the order the cursor walks (docs/events.md, "The cursor").
 */
const SETTLED = `(e.writer_xid, e.id) > ($1::xid8, $2::bigint)
   AND e.writer_xid < pg_snapshot_xmin(pg_current_snapshot())
   AND ($3::text[] IS NULL OR e.type = ANY ($3::text[]))`;

/** The stream's reads of `auth_events` (audit/ writes it), with `users` and `organizations` for the actor's address and the organization's names. */
@Injectable()
export class EventsRepository {
  constructor(private readonly sql: Sql) {}

  /** The instance's events after `after`, settled ones only, in stream order. */
  instancePage(after: StreamPosition, types: readonly AuthEventType[] | null, limit: number): Promise<StreamRow[]> {
    return this.sql.rows(
      `SELECT ${COLUMNS}
        WHERE ${SETTLED}
        ORDER BY e.writer_xid, e.id LIMIT $4`,
      [after.xid.toString(), after.id.toString(), types, limit],
    );
  }

  /** One organization's events after `after`, settled ones only, in stream order. */
  organizationPage(organizationId: string, after: StreamPosition, types: readonly AuthEventType[] | null, limit: number): Promise<StreamRow[]> {
    return this.sql.rows(
      `SELECT ${COLUMNS}
        WHERE e.organization_id = $5 AND ${SETTLED}
        ORDER BY e.writer_xid, e.id LIMIT $4`,
      [after.xid.toString(), after.id.toString(), types, limit, organizationId],
    );
  }

  /**
   * The position of now: before every transaction id not handed out yet (the snapshot's xmax), so
   * after every event committed or being written at this moment, in any organization. The last
   * settled event would not do: an event committed a moment ago may not be settled yet (a
   * transaction anywhere on the server holds the stream back), and would come after it.
   */
  async now(): Promise<StreamPosition> {
    const [row] = await this.sql.rows<{ xid: string }>(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid`, []);
    return { xid: BigInt(row!.xid), id: 0n };
  }
}
