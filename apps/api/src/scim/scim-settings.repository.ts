import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export interface ScimRequestRow {
  at: Date;
  method: string;
  resource: string;
  status: number;
  outcome: string;
}

/** How many of an organization's SCIM requests the provisioning log keeps. */
export const SCIM_LOG_KEPT = 200;

/** Every statement on `scim_settings` and `scim_requests` (the provisioning log). */
@Injectable()
export class ScimSettingsRepository {
  constructor(private readonly sql: Sql) {}

  async deactivateDisablesAccount(organizationId: string, tx?: Tx): Promise<boolean> {
    const [row] = await this.sql.rows<{ on: boolean }>(`SELECT deactivate_disables_account AS on FROM scim_settings WHERE organization_id = $1`, [organizationId], tx);
    return row?.on ?? false;
  }

  async setDeactivateDisablesAccount(tx: Tx, organizationId: string, on: boolean, now: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO scim_settings (organization_id, deactivate_disables_account, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (organization_id) DO UPDATE SET deactivate_disables_account = EXCLUDED.deactivate_disables_account, updated_at = EXCLUDED.updated_at`,
      [organizationId, on, now],
      tx,
    );
  }

  /**
   * Records one request of the directory and forgets the organization's requests older than its
   * last SCIM_LOG_KEPT, in one statement.
   */
  async logRequest(organizationId: string, entry: ScimRequestRow): Promise<void> {
    await this.sql.rows(
      `WITH added AS (
         INSERT INTO scim_requests (organization_id, at, method, resource, status, outcome) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
       )
       DELETE FROM scim_requests WHERE organization_id = $1 AND id <= (
         SELECT id FROM scim_requests WHERE organization_id = $1 ORDER BY id DESC OFFSET ${SCIM_LOG_KEPT - 1} LIMIT 1)`,
      [organizationId, entry.at, entry.method, entry.resource, entry.status, entry.outcome],
    );
  }

  /** The organization's last requests, newest first. */
  requests(organizationId: string, limit: number): Promise<ScimRequestRow[]> {
    return this.sql.rows(
      `SELECT at, method, resource, status, outcome FROM scim_requests WHERE organization_id = $1 ORDER BY id DESC LIMIT $2`,
      [organizationId, limit],
    );
  }
}
