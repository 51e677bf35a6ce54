import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export interface JoinRequestRow {
  userId: string;
  email: string;
  name: string;
  requestedAt: Date;
  /** Whether approving it would make them a member now (see `list`). */
  valid: boolean;
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

  /**
   * At most `limit` requests made before `before` that can no longer be approved (`valid` false,
   * as `list` says it), in `tx` (retention); how many. Approved and declined ones are deleted when
   * decided; a valid one waits for its admins however old.
   */
  purgeStaleBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM organization_join_requests WHERE (organization_id, user_id) IN (
         SELECT r.organization_id, r.user_id FROM organization_join_requests r JOIN users u ON u.id = r.user_id
          WHERE r.created_at < $1
            AND NOT (u.email_verified_at IS NOT NULL AND EXISTS (
                  SELECT 1 FROM organization_domains d
                   WHERE d.organization_id = r.organization_id AND d.verified_at IS NOT NULL AND d.join_policy <> 'invite'
                     AND d.domain = lower(substring(u.email FROM '[^@]+$'))))
          LIMIT $2)`,
      [before, limit],
      tx,
    );
  }

  /**
   * The requests waiting, oldest first, each `valid` while the person's address is verified and in
   * a verified domain of the organization that does not take people by invitation only (what
   * approving checks again, under the organization's lock).
   */
  list(organizationId: string): Promise<JoinRequestRow[]> {
    return this.sql.rows(
      `SELECT r.user_id AS "userId", u.email, u.name, r.created_at AS "requestedAt",
              (u.email_verified_at IS NOT NULL AND EXISTS (
                 SELECT 1 FROM organization_domains d
                  WHERE d.organization_id = r.organization_id AND d.verified_at IS NOT NULL AND d.join_policy <> 'invite'
                    AND d.domain = lower(substring(u.email FROM '[^@]+$')))) AS "valid"
         FROM organization_join_requests r JOIN users u ON u.id = r.user_id
        WHERE r.organization_id = $1
        ORDER BY r.created_at, u.email`,
      [organizationId],
    );
  }
}
