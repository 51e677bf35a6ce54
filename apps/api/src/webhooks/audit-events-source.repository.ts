import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';

export interface AuditEventRow {
  id: string;
  type: string;
  userId: string | null;
  userEmail: string | null;
  ip: string | null;
  detail: Record<string, unknown> | null;
  createdAt: Date;
  organizationId: string;
  organizationSlug: string | null;
  organizationName: string | null;
}

/** TEMPORARY (event-source.ts, AuditLogEventSource): an organization's security-log rows by id, until the events branch's stream replaces it. */
@Injectable()
export class AuditEventsSourceRepository {
  constructor(private readonly sql: Sql) {}

  async lastId(organizationId: string): Promise<string | null> {
    const [row] = await this.sql.rows<{ id: string | null }>(`SELECT max(id)::text AS id FROM auth_events WHERE organization_id = $1`, [organizationId]);
    return row?.id ?? null;
  }

  after(organizationId: string, afterId: string, limit: number): Promise<AuditEventRow[]> {
    return this.sql.rows<AuditEventRow>(
      `SELECT e.id::text AS id, e.type, e.user_id AS "userId", u.email AS "userEmail", e.ip, e.detail, e.created_at AS "createdAt",
              e.organization_id AS "organizationId", o.slug AS "organizationSlug", o.name AS "organizationName"
         FROM auth_events e LEFT JOIN users u ON u.id = e.user_id LEFT JOIN organizations o ON o.id = e.organization_id
        WHERE e.organization_id = $1 AND e.id > $2::bigint
        ORDER BY e.id LIMIT $3`,
      [organizationId, afterId, limit],
    );
  }
}
