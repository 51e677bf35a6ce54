import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** One endpoint, secrets still sealed. */
export interface WebhookRow {
  id: string;
  organizationId: string;
  url: string;
  types: string[];
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: Date | null;
  cursor: string;
  disabledAt: Date | null;
  disabledReason: string | null;
  createdAt: Date;
}

const COLUMNS = `id, organization_id AS "organizationId", url, types, secret_sealed AS "secretSealed", previous_secret_sealed AS "previousSecretSealed",
  previous_secret_until AS "previousSecretUntil", cursor, disabled_at AS "disabledAt", disabled_reason AS "disabledReason", created_at AS "createdAt"`;

/** Every statement on `webhooks`: an organization's endpoints, their secrets and their cursors. */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * A new endpoint, unless the organization has `max` already (counted in the same statement);
   * undefined then. The id is the caller's: the secret is sealed to it.
   */
  async insert(
    input: { id: string; organizationId: string; url: string; types: string[]; secretSealed: Buffer; cursor: string; createdBy: string; now: Date; max: number },
    tx?: Tx,
  ): Promise<WebhookRow | undefined> {
    const [row] = await this.sql.rows<WebhookRow>(
      `INSERT INTO webhooks (id, organization_id, url, types, secret_sealed, cursor, created_by_user_id, created_at, updated_at)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $8
        WHERE (SELECT count(*) FROM webhooks WHERE organization_id = $2) < $9
       RETURNING ${COLUMNS}`,
      [input.id, input.organizationId, input.url, input.types, input.secretSealed, input.cursor, input.createdBy, input.now, input.max],
      tx,
    );
    return row;
  }

  list(organizationId: string): Promise<WebhookRow[]> {
    return this.sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE organization_id = $1 ORDER BY created_at, id`, [organizationId]);
  }

  async find(organizationId: string, id: string, tx?: Tx): Promise<WebhookRow | undefined> {
    const [row] = await this.sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE organization_id = $1 AND id = $2`, [organizationId, id], tx);
    return row;
  }

  async byId(id: string): Promise<WebhookRow | undefined> {
    const [row] = await this.sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id]);
    return row;
  }

  /**
   * A new URL and types (null: unchanged), and disabled or enabled (null: unchanged; enabling
   * moves the cursor to `headCursor`: what happened while it was off is not sent).
   */
  async update(
    organizationId: string,
    id: string,
    change: { url: string | null; types: string[] | null; disabled: boolean | null; reason: string; headCursor: string | null; now: Date },
    tx?: Tx,
  ): Promise<WebhookRow | undefined> {
    const [row] = await this.sql.rows<WebhookRow>(
      `UPDATE webhooks SET url = COALESCE($3, url), types = COALESCE($4, types),
              disabled_at = CASE WHEN $5::boolean IS NULL THEN disabled_at WHEN $5 THEN COALESCE(disabled_at, $8) ELSE NULL END,
              disabled_reason = CASE WHEN $5::boolean IS NULL THEN disabled_reason WHEN $5 THEN COALESCE(disabled_reason, $6) ELSE NULL END,
              cursor = CASE WHEN $5::boolean IS FALSE AND disabled_at IS NOT NULL THEN COALESCE($7, cursor) ELSE cursor END,
              updated_at = $8
        WHERE organization_id = $1 AND id = $2
        RETURNING ${COLUMNS}`,
      [organizationId, id, change.url, change.types, change.disabled, change.reason, change.headCursor, change.now],
      tx,
    );
    return row;
  }

  /** The secret before this one keeps signing until `until`. */
  async rotate(organizationId: string, id: string, secretSealed: Buffer, until: Date, now: Date, tx?: Tx): Promise<WebhookRow | undefined> {
    const [row] = await this.sql.rows<WebhookRow>(
      `UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = $4, secret_sealed = $3, updated_at = $5
        WHERE organization_id = $1 AND id = $2
        RETURNING ${COLUMNS}`,
      [organizationId, id, secretSealed, until, now],
      tx,
    );
    return row;
  }

  /** Deletes the endpoint (its deliveries go with it); its URL, or undefined for none. */
  async delete(organizationId: string, id: string, tx?: Tx): Promise<string | undefined> {
    const [row] = await this.sql.rows<{ url: string }>(`DELETE FROM webhooks WHERE organization_id = $1 AND id = $2 RETURNING url`, [organizationId, id], tx);
    return row?.url;
  }

  /** Enabled endpoints, for the dispatcher to visit. */
  async enabledIds(): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(`SELECT id FROM webhooks WHERE disabled_at IS NULL ORDER BY id`, []);
    return rows.map((r) => r.id);
  }

  /** The endpoint locked for this dispatch (another replica dispatching it: undefined, skipped). */
  async lockForDispatch(tx: Tx, id: string): Promise<Pick<WebhookRow, 'id' | 'organizationId' | 'types' | 'cursor'> | undefined> {
    const [row] = await this.sql.rows<Pick<WebhookRow, 'id' | 'organizationId' | 'types' | 'cursor'>>(
      `SELECT id, organization_id AS "organizationId", types, cursor FROM webhooks WHERE id = $1 AND disabled_at IS NULL FOR UPDATE SKIP LOCKED`,
      [id],
      tx,
    );
    return row;
  }

  async moveCursor(tx: Tx, id: string, cursor: string): Promise<void> {
    await this.sql.rows(`UPDATE webhooks SET cursor = $2 WHERE id = $1`, [id, cursor], tx);
  }

  /** Disabled after failing for days (not if an admin disabled it already); whether it was enabled until now. */
  async disableFailing(tx: Tx, id: string, reason: string, now: Date): Promise<boolean> {
    return (await this.sql.count(`UPDATE webhooks SET disabled_at = $3, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND disabled_at IS NULL`, [id, reason, now], tx)) > 0;
  }
}
