import { Injectable } from '@nestjs/common';
import type { User } from '@prospect/contract';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { DeviceLogin, DeviceLoginStatus } from './device-login.entity.js';
import type { Tx } from '../database/tx.js';

/** A device login as a poll reads it, with whether this poll was within the interval. */
export interface PollRow {
  id: string;
  status: DeviceLoginStatus;
  expires_at: Date;
  redeemed_at: Date | null;
  reply_sealed: Buffer | null;
  client_name: string | null;
  hostname: string | null;
  client_id: string;
  /** Its grant, once approved. */
  grant_id: string | null;
  accepted: boolean;
}

export interface NewDeviceLogin {
  deviceCodeHash: Buffer;
  userCode: string;
  clientName: string | null;
  hostname: string | null;
  requestedIp: string | null;
  createdAt: Date;
  expiresAt: Date;
  userAgent: string | null;
  clientId: string;
  /** What its tokens are granted, space-separated (SCOPES). */
  scope: string;
}

/** A device login found by its user code, with the registered name of its client. */
export type DeviceLoginByUserCode = Pick<
  DeviceLogin,
  'id' | 'userCode' | 'status' | 'clientId' | 'scope' | 'clientName' | 'hostname' | 'requestedIp' | 'userAgent' | 'createdAt' | 'expiresAt' | 'decidedByUserId'
> & { clientDisplayName: string };

/**
 * A decision with its audit event, one constant text per decision (each a prepared statement).
 * The audit INSERT runs whether or not the final SELECT reads it (a data-modifying WITH always does).
 */
const DECIDE = Object.fromEntries(
  (['approved', 'denied'] as const).map((decision) => [
    decision,
    `WITH decided AS (
       UPDATE device_logins
          SET status = $2, decided_by_user_id = $3, decided_at = $4, grant_id = CASE WHEN $2 = 'approved' THEN id END
        WHERE user_code = $1 AND status = 'pending' AND expires_at > $4
        RETURNING id, client_id, scope, CASE WHEN $2 = 'approved' AND 'admin' = ANY (string_to_array(scope, ' ')) THEN $6::timestamptz END AS admin_until
     ), audited AS (
       ${auditInsert({
         type: decision === 'approved' ? 'device.approve' : 'device.deny',
         userId: '$3',
         ip: '$5',
         userAgent: '$7::text',
         detail: "jsonb_build_object('deviceLoginId', decided.id) || CASE WHEN decided.admin_until IS NULL THEN '{}' ELSE jsonb_build_object('adminUntil', decided.admin_until) END",
         createdAt: '$4',
         from: 'decided',
       })}
     )
     SELECT decided.id, decided.client_id AS "clientId", decided.scope, decided.admin_until AS "adminUntil", c.name AS "clientDisplayName"
       FROM decided JOIN oauth_clients c ON c.id = decided.client_id`,
  ]),
) as Record<'approved' | 'denied', string>;

const POLL_COLUMNS = 'id, status, expires_at, redeemed_at, reply_sealed, client_name, hostname, client_id, grant_id';

/**
 * Every statement on `device_logins` and its poll slots (`device_poll_slots`). Start and poll are
 * the hot path of a login: named prepared statements on the pool (Sql), each one round trip with
 * its audit event where it has one.
 */
@Injectable()
export class DeviceLoginsRepository {
  constructor(private readonly sql: Sql) {}

  /** The login and its `device.start` audit event in one statement: both or neither. */
  async insertStarted(login: NewDeviceLogin): Promise<void> {
    await this.sql.rows(
      `WITH login AS (
         INSERT INTO device_logins (device_code_hash, user_code, client_name, hostname, requested_ip, created_at, expires_at, user_agent, client_id, scope)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id
       )
       ${auditInsert({ type: 'device.start', userId: 'NULL', ip: '$5', userAgent: 'left($8::text, 300)', detail: "jsonb_build_object('deviceLoginId', login.id, 'clientName', $3::text, 'clientId', $9::text)", createdAt: '$6', from: 'login' })}`,
      [
        login.deviceCodeHash,
        login.userCode,
        login.clientName,
        login.hostname,
        login.requestedIp,
        login.createdAt,
        login.expiresAt,
        login.userAgent,
        login.clientId,
        login.scope,
      ],
    );
  }

  /**
   * Reads a login of `clientId` by its device code and claims its poll slot in one statement, so
   * the interval holds across instances: `accepted` is false for a poll made after
   * `earliestPrevious`, which leaves the last poll time as it was. Two polls at once take the slot's
   * row one after the other; the second sees the first's time and is not accepted.
   *
   * The slot is a row of `device_poll_slots`, an unlogged table (migration 055, issue #49): the
   * claim writes no WAL and does not wait for a flush, and the login's own row is read, not locked
   * or rewritten. A crash of Postgres or a failover forgets the slots, so each login's next poll is
   * accepted early once; nothing else depends on them.
   */
  async claimPoll(deviceCodeHash: Buffer, clientId: string, earliestPrevious: Date, now: Date): Promise<PollRow | undefined> {
    const [login] = await this.sql.rows<PollRow>(
      `WITH login AS (
         SELECT ${POLL_COLUMNS} FROM device_logins WHERE device_code_hash = $1 AND client_id = $4
       ), claimed AS (
         INSERT INTO device_poll_slots AS s (device_login_id, last_polled_at) SELECT id, $3 FROM login
         ON CONFLICT (device_login_id) DO UPDATE SET last_polled_at = EXCLUDED.last_polled_at WHERE s.last_polled_at <= $2
         RETURNING s.device_login_id
       )
       SELECT login.*, EXISTS (SELECT 1 FROM claimed) AS accepted FROM login`,
      [deviceCodeHash, earliestPrevious, now, clientId],
    );
    return login;
  }

  async findForPoll(id: string): Promise<PollRow | undefined> {
    const [login] = await this.sql.rows<PollRow>(`SELECT ${POLL_COLUMNS}, true AS accepted FROM device_logins WHERE id = $1`, [id]);
    return login;
  }

  /**
   * Locks an approved, unexpired login for its redemption, with its grant, what its first tokens
   * carry and who approved it; undefined when it is not one any more (another poll redeemed it, or
   * it expired or was cancelled meanwhile). The grant's own lock and rules are grants/'s.
   */
  async lockForRedemption(
    tx: Tx,
    id: string,
    now: Date,
  ): Promise<{ grantId: string; scope: string; adminUntil: Date | null; user: User; clientDisplayName: string } | undefined> {
    const [row] = await this.sql.rows<User & { grant_id: string; scope: string; admin_until: Date | null; client_display_name: string }>(
      `SELECT d.grant_id, g.scope, g.admin_until, u.id, u.email, u.name, c.name AS client_display_name
         FROM device_logins d JOIN grants g ON g.id = d.grant_id JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.id = g.client_id
        WHERE d.id = $1 AND d.status = 'approved' AND d.expires_at > $2
          FOR UPDATE OF d`,
      [id, now],
      tx,
    );
    return (
      row && {
        grantId: row.grant_id,
        scope: row.scope,
        adminUntil: row.admin_until,
        user: { id: row.id, email: row.email, name: row.name },
        clientDisplayName: row.client_display_name,
      }
    );
  }

  /** Marks a login locked by lockForRedemption as redeemed (or, its grant refused, as cancelled). */
  async setRedeemedOrCancelled(tx: Tx, id: string, status: 'redeemed' | 'cancelled', now: Date): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET status = $2, redeemed_at = CASE WHEN $2 = 'redeemed' THEN $3::timestamptz END WHERE id = $1`, [id, status, now], tx);
  }

  /** Keeps (or, with null, forgets) the authorized answer, sealed under the device code. */
  async setSealedReply(tx: Tx, id: string, sealed: Buffer | null): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET reply_sealed = $2 WHERE id = $1`, [id, sealed], tx);
  }

  /** Sealed replies of logins redeemed before `redeemedBefore` (idempotent, on every replica). */
  async eraseSealedRepliesRedeemedBefore(redeemedBefore: Date): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET reply_sealed = NULL WHERE reply_sealed IS NOT NULL AND redeemed_at <= $1`, [redeemedBefore]);
  }

  /** The newest login with this user code (codes are reused once logins end), with its client's registered name. */
  async findLatestByUserCode(userCode: string): Promise<DeviceLoginByUserCode | undefined> {
    const [login] = await this.sql.rows<DeviceLoginByUserCode>(
      `SELECT d.id, d.user_code AS "userCode", d.status, d.client_id AS "clientId", d.scope, d.client_name AS "clientName", d.hostname,
              d.requested_ip AS "requestedIp", d.user_agent AS "userAgent", d.created_at AS "createdAt", d.expires_at AS "expiresAt",
              d.decided_by_user_id AS "decidedByUserId", c.name AS "clientDisplayName"
         FROM device_logins d JOIN oauth_clients c ON c.id = d.client_id
        WHERE d.user_code = $1 ORDER BY d.created_at DESC LIMIT 1`,
      [userCode],
    );
    return login;
  }

  /** Cancels a pending or approved login with its audit event, in one statement; nothing for an unknown or ended one. */
  async cancelWithAudit(deviceCodeHash: Buffer, ip: string | null, now: Date): Promise<void> {
    await this.sql.rows(
      `WITH cancelled AS (
         UPDATE device_logins SET status = 'cancelled' WHERE device_code_hash = $1 AND status IN ('pending', 'approved') RETURNING id
       )
       ${auditInsert({ type: 'device.cancel', userId: 'NULL', ip: '$2', userAgent: '$4', detail: "jsonb_build_object('deviceLoginId', cancelled.id)", createdAt: '$3', from: 'cancelled' })}`,
      [deviceCodeHash, ip, now, requestUserAgent()],
    );
  }

  /**
   * Decides a pending, unexpired login for `userId`, with its audit event, in one conditional
   * statement in `tx`: only once. An approval points the login to its grant (the same id; the
   * caller records the grant in `tx`), which has `admin`, if the login asked for it, until
   * `adminUntil`. The login, or undefined when it could not be decided.
   */
  async decideWithAudit(
    tx: Tx,
    userCode: string,
    decision: 'approved' | 'denied',
    userId: string,
    now: Date,
    ip: string | null,
    adminUntil: Date,
    userAgent: string | null = null,
  ): Promise<{ id: string; clientId: string; scope: string; adminUntil: Date | null; clientDisplayName: string } | undefined> {
    const [decided] = await this.sql.rows<{ id: string; clientId: string; scope: string; adminUntil: Date | null; clientDisplayName: string }>(
      DECIDE[decision],
      [userCode, decision, userId, now, ip, adminUntil, userAgent ?? requestUserAgent()],
      tx,
    );
    return decided;
  }

  /**
   * Cancels, in `tx`, every login the person approved that its terminal has not collected yet: an
   * approval is a grant too, and must not give a pair after their "sign out everywhere".
   */
  async cancelUncollectedApprovedBy(tx: Tx, userId: string): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET status = 'cancelled' WHERE decided_by_user_id = $1 AND status = 'approved'`, [userId], tx);
  }

  /** Cancels every login of a client not redeemed yet (its admin disabled it); how many. */
  cancelUnredeemedOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.sql.count(`UPDATE device_logins SET status = 'cancelled' WHERE client_id = $1 AND status IN ('pending', 'approved')`, [clientId], tx);
  }

  /** Every login of a client being deleted (its grants are deleted next, by grants/). */
  deleteAllOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.sql.count(`DELETE FROM device_logins WHERE client_id = $1`, [clientId], tx);
  }

  /**
   * Logins expired before `now` whose grant no token still descends from nor was made with: the
   * login is kept while its grant's tokens are, since the sessions list shows its program and host.
   */
  deleteExpiredWithoutTokens(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM device_logins WHERE id IN (
         SELECT d.id FROM device_logins d WHERE d.expires_at < $1
            AND (d.grant_id IS NULL
                 OR (NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = d.grant_id)
                     AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = d.grant_id)
                     AND NOT EXISTS (SELECT 1 FROM access_tokens m WHERE m.minted_by_grant_id = d.grant_id)))
          LIMIT $2)`,
      [now, limit],
      tx,
    );
  }
}
