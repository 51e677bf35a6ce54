import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export interface JoinRequestRow {
  userId: string;
  email: string;
  name: string;
  requestedAt: Date;
}

/** Every statement on `organization_join_requests`: people asking to join through a verified domain whose policy is `request`. */
@Injectable()
export class OrganizationJoinRequestsRepository {
  constructor(private readonly sql: Sql) {}

  /** Records the request; false when they had asked already. */
  async insert(tx: Tx, organizationId: string, userId: string, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO organization_join_requests (organization_id, user_id, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (organization_id, user_id) DO NOTHING RETURNING 1`,
      [organizationId, userId, now],
      tx,
    );
    return rows.length > 0;
  }

  /** Ends the request (approved, declined, or no longer needed); false when there was none. */
  async remove(tx: Tx, organizationId: string, userId: string): Promise<boolean> {
    return (await this.sql.count(`DELETE FROM organization_join_requests WHERE organization_id = $1 AND user_id = $2`, [organizationId, userId], tx)) > 0;
  }

  /** The requests waiting, oldest first. */
  list(organizationId: string): Promise<JoinRequestRow[]> {
    return this.sql.rows(
      `SELECT r.user_id AS "userId", u.email, u.name, r.created_at AS "requestedAt"
         FROM organization_join_requests r JOIN users u ON u.id = r.user_id
        WHERE r.organization_id = $1
        ORDER BY r.created_at, u.email`,
      [organizationId],
    );
  }
}
