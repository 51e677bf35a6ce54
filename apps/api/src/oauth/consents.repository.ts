import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A remembered consent as the tokens page lists it, with what it holds now. */
export interface ConsentRow {
  clientId: string;
  clientName: string;
  scope: string;
  createdAt: Date;
  updatedAt: Date;
  /** Code grants of the person and client with a live refresh or access token. */
  liveGrants: number;
  /** The newest access token of each of their grants, as the tokens page lists a session: it names these "connected app". */
  accessTokenIds: string[];
}

/** Every statement on `oauth_consents`: what a person approved each client for (issue #33). */
@Injectable()
export class ConsentsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * The scope a person approved a client for under the account's credential epoch `epoch`;
   * undefined when they never did, revoked it, or approved it under another state of the account
   * (before a reset, a new address, a disable: whoever held the account then is not its owner now).
   */
  async scopeOf(userId: string, clientId: string, epoch: number): Promise<string | undefined> {
    const [row] = await this.sql.rows<{ scope: string }>(`SELECT scope FROM oauth_consents WHERE user_id = $1 AND client_id = $2 AND credential_epoch = $3`, [userId, clientId, epoch]);
    return row?.scope;
  }

  /**
   * Remembers the approval of `scope` under the account's credential epoch `epoch` (added to what
   * was approved before under the same epoch; replacing what was approved under another) with its
   * `oauth.consent` event, in one statement, in `tx`.
   */
  async remember(tx: Tx, userId: string, clientId: string, scope: string, epoch: number, now: Date, ip: string | null): Promise<void> {
    await this.sql.rows(
      `WITH remembered AS (
         INSERT INTO oauth_consents (user_id, client_id, scope, created_at, updated_at, credential_epoch) VALUES ($1, $2, $3, $4, $4, $6)
         ON CONFLICT (user_id, client_id) DO UPDATE
           SET scope = CASE WHEN oauth_consents.credential_epoch = EXCLUDED.credential_epoch
                            THEN (SELECT string_agg(DISTINCT s, ' ') FROM unnest(string_to_array(oauth_consents.scope, ' ') || string_to_array(EXCLUDED.scope, ' ')) AS s)
                            ELSE EXCLUDED.scope END,
               created_at = CASE WHEN oauth_consents.credential_epoch = EXCLUDED.credential_epoch THEN oauth_consents.created_at ELSE EXCLUDED.created_at END,
               credential_epoch = EXCLUDED.credential_epoch,
               updated_at = EXCLUDED.updated_at
         RETURNING client_id
       )
       ${auditInsert({ type: 'oauth.consent', userId: '$1', ip: '$5', userAgent: '$7', detail: "jsonb_build_object('clientId', client_id, 'scope', $3::text)", createdAt: '$4', from: 'remembered' })}`,
      [userId, clientId, scope, now, ip, epoch, requestUserAgent()],
      tx,
    );
  }

  /** Forgets a consent with its `oauth.consent_revoke` event, in `tx`; false when there was none. */
  async forget(tx: Tx, userId: string, clientId: string, now: Date, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH forgotten AS (
         DELETE FROM oauth_consents WHERE user_id = $1 AND client_id = $2 RETURNING client_id, scope
       )
       ${auditInsert({ type: 'oauth.consent_revoke', userId: '$1', ip: '$3', userAgent: '$5', detail: "jsonb_build_object('clientId', client_id, 'scope', scope)", createdAt: '$4', from: 'forgotten' }, 'id')}`,
      [userId, clientId, ip, now, requestUserAgent()],
      tx,
    );
    return rows.length > 0;
  }

  /** The person's code grants of a client, in `tx`: the families a revoked consent ends. */
  async codeGrantsOf(tx: Tx, userId: string, clientId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT id FROM device_logins WHERE decided_by_user_id = $1 AND client_id = $2 AND grant_type = 'authorization_code' ORDER BY id`,
      [userId, clientId],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /** The person's consents under the account's state now, newest first, with their clients' names and the grants they hold now. */
  listForUser(userId: string, now: Date): Promise<ConsentRow[]> {
    return this.sql.rows<ConsentRow>(
      `SELECT c.client_id AS "clientId", o.name AS "clientName", c.scope, c.created_at AS "createdAt", c.updated_at AS "updatedAt",
              (SELECT count(*)::int FROM device_logins d
                WHERE d.decided_by_user_id = c.user_id AND d.client_id = c.client_id AND d.grant_type = 'authorization_code'
                  AND (EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.device_login_id = d.id AND r.revoked_at IS NULL AND r.expires_at > $2)
                       OR EXISTS (SELECT 1 FROM access_tokens t WHERE t.device_login_id = d.id AND t.revoked_at IS NULL AND t.expires_at > $2))) AS "liveGrants",
              ARRAY(SELECT DISTINCT ON (t.device_login_id) t.id FROM access_tokens t JOIN device_logins d ON d.id = t.device_login_id
                     WHERE d.decided_by_user_id = c.user_id AND d.client_id = c.client_id AND d.grant_type = 'authorization_code'
                     ORDER BY t.device_login_id, t.created_at DESC) AS "accessTokenIds"
         FROM oauth_consents c JOIN oauth_clients o ON o.id = c.client_id JOIN users u ON u.id = c.user_id
        WHERE c.user_id = $1 AND c.credential_epoch = u.credential_epoch
        ORDER BY c.updated_at DESC, c.client_id`,
      [userId, now],
    );
  }
}
