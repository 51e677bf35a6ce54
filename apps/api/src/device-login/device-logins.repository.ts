import { Injectable } from '@nestjs/common';
import type { User } from '@prospect/contract';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { GrantProof, GrantState } from '../grants/grant-rules.js';
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
  scope: string;
  /** When its grant's `admin` ends (set at approval, for a login that asked for `admin`). */
  admin_until: Date | null;
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
          SET status = $2, decided_by_user_id = $3, decided_at = $4,
              admin_until = CASE WHEN $2 = 'approved' AND 'admin' = ANY (string_to_array(scope, ' ')) THEN $6::timestamptz END,
              credential_epoch = CASE WHEN $2 = 'approved' THEN $7::integer END,
              amr = CASE WHEN $2 = 'approved' THEN $8::text[] END,
              second_factor = ($2 = 'approved' AND $9::boolean)
        WHERE user_code = $1 AND status = 'pending' AND expires_at > $4
        RETURNING id, client_id, admin_until
     ), audited AS (
       ${auditInsert({
         type: decision === 'approved' ? 'device.approve' : 'device.deny',
         userId: '$3',
         ip: '$5',
         userAgent: '$10::text',
         detail: "jsonb_build_object('deviceLoginId', decided.id) || CASE WHEN decided.admin_until IS NULL THEN '{}' ELSE jsonb_build_object('adminUntil', decided.admin_until) END",
         createdAt: '$4',
         from: 'decided',
       })}
     )
     SELECT decided.id, decided.client_id AS "clientId", c.name AS "clientDisplayName"
       FROM decided JOIN oauth_clients c ON c.id = decided.client_id`,
  ]),
) as Record<'approved' | 'denied', string>;

const POLL_COLUMNS = 'id, status, expires_at, redeemed_at, reply_sealed, client_name, hostname, client_id, scope, admin_until';

/**
 * Every statement on `device_logins`. Start and poll are the hot path of a login: named prepared
 * statements on the pool (Sql), each one round trip with its audit event where it has one.
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
   * Reads a login of `clientId` by its device code and claims the poll slot in one UPDATE (the
   * row locked), so the interval holds across instances: `accepted` is false for a poll made
   * after `earliestPrevious`, which leaves the last poll time as it was.
   *
   * Its commit does not wait for the WAL to reach the disk (`synchronous_commit = off` for this
   * statement's own transaction, set inside it so it stays one round trip, issue #35): all it
   * writes is the last poll time, which a crash may lose harmlessly (the next poll is then
   * accepted a few seconds early). Other sessions see the commit at once, as with a flushed one,
   * so `slow_down` holds across replicas exactly as before; every other write keeps its flush.
   */
  async claimPoll(deviceCodeHash: Buffer, clientId: string, earliestPrevious: Date, now: Date): Promise<PollRow | undefined> {
    const [login] = await this.sql.rows<PollRow>(
      `WITH target AS (
         SELECT id, last_polled_at FROM device_logins WHERE device_code_hash = $1 AND client_id = $4 FOR UPDATE
       ), no_flush AS (
         SELECT set_config('synchronous_commit', 'off', true)
       )
       UPDATE device_logins d
          SET last_polled_at = CASE WHEN t.last_polled_at IS NULL OR t.last_polled_at <= $2 THEN $3 ELSE d.last_polled_at END
         FROM target t, no_flush
        WHERE d.id = t.id
       RETURNING d.id, d.status, d.expires_at, d.redeemed_at, d.reply_sealed, d.client_name, d.hostname, d.client_id, d.scope, d.admin_until,
                 (t.last_polled_at IS NULL OR t.last_polled_at <= $2) AS accepted`,
      [deviceCodeHash, earliestPrevious, now, clientId],
    );
    return login;
  }

  async findForPoll(id: string): Promise<PollRow | undefined> {
    const [login] = await this.sql.rows<PollRow>(`SELECT ${POLL_COLUMNS}, true AS accepted FROM device_logins WHERE id = $1`, [id]);
    return login;
  }

  /**
   * Locks an approved, unexpired login for its redemption, with what its grant's first tokens
   * depend on (grants/grant-rules.ts) and who approved it; undefined when it is not one any more
   * (another poll redeemed it, or it expired or was cancelled meanwhile).
   */
  async lockForRedemption(tx: Tx, id: string, now: Date): Promise<{ grant: GrantState; user: User; clientDisplayName: string } | undefined> {
    const [row] = await this.sql.rows<
      User & { client_display_name: string; disabled: boolean; account_epoch: number; grant_epoch: number | null; client_disabled: boolean; second_factor: boolean }
    >(
      `SELECT u.id, u.email, u.name, c.name AS client_display_name, u.disabled_at IS NOT NULL AS disabled, u.credential_epoch AS account_epoch,
              d.credential_epoch AS grant_epoch, c.disabled_at IS NOT NULL AS client_disabled, d.second_factor
         FROM device_logins d JOIN users u ON u.id = d.decided_by_user_id JOIN oauth_clients c ON c.id = d.client_id
        WHERE d.id = $1 AND d.status = 'approved' AND d.expires_at > $2
          FOR UPDATE OF d`,
      [id, now],
      tx,
    );
    return (
      row && {
        grant: {
          account: { disabled: row.disabled, credentialEpoch: row.account_epoch },
          approvedUnderEpoch: row.grant_epoch,
          clientDisabled: row.client_disabled,
          secondFactor: row.second_factor,
        },
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
   * statement: only once. An approved login that asked for `admin` has it until `adminUntil`, and
   * records the account's credential epoch the approving session was signed in under.
   * The login's id, or undefined when it could not be decided.
   */
  async decideWithAudit(
    userCode: string,
    decision: 'approved' | 'denied',
    userId: string,
    now: Date,
    ip: string | null,
    adminUntil: Date,
    proof: GrantProof,
    userAgent: string | null = null,
  ): Promise<{ id: string; clientId: string; clientDisplayName: string } | undefined> {
    const [decided] = await this.sql.rows<{ id: string; clientId: string; clientDisplayName: string }>(DECIDE[decision], [
      userCode,
      decision,
      userId,
      now,
      ip,
      adminUntil,
      proof.credentialEpoch,
      proof.amr,
      proof.secondFactor,
      userAgent ?? requestUserAgent(),
    ]);
    return decided;
  }

  /**
   * Cancels, in `tx`, every login the person approved that its terminal has not collected yet: an
   * approval is a grant too, and must not give a pair after their "sign out everywhere".
   */
  async cancelUncollectedApprovedBy(tx: Tx, userId: string): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET status = 'cancelled' WHERE decided_by_user_id = $1 AND status = 'approved'`, [userId], tx);
  }

  /**
   * The family of an authorization code's tokens, in `tx`: a redeemed login of the client, decided
   * by the person (what every family rule reads). Its id.
   * @param familyKeyHash stands in the family row's device code hash: a random value nobody holds.
   */
  async insertCodeGrantFamily(
    tx: Tx,
    grant: { userId: string; clientId: string; scope: string; ip: string | null } & GrantProof,
    familyKeyHash: Buffer,
    now: Date,
  ): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO device_logins (device_code_hash, user_code, status, decided_by_user_id, decided_at, client_id, scope, requested_ip, created_at, expires_at, redeemed_at, grant_type,
                                  credential_epoch, amr, second_factor)
       VALUES ($1, '', 'redeemed', $2, $3, $4, $5, $6, $3, $3, $3, 'authorization_code', $7, $8, $9)
       RETURNING id`,
      [familyKeyHash, grant.userId, now, grant.clientId, grant.scope, grant.ip, grant.credentialEpoch, grant.amr, grant.secondFactor],
      tx,
    );
    return row!.id;
  }

  /** Cancels every login of a client not redeemed yet (its admin disabled it); how many. */
  cancelUnredeemedOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.sql.count(`UPDATE device_logins SET status = 'cancelled' WHERE client_id = $1 AND status IN ('pending', 'approved')`, [clientId], tx);
  }

  /**
   * The logins of a client that still have a live token, or a live token made with one of theirs:
   * the families to revoke when it is disabled. (A token made with a token made with theirs ends
   * no later than that one, and is revoked with it.)
   */
  async familiesWithLiveTokens(tx: Tx, clientId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT d.id FROM device_logins d
        WHERE d.client_id = $1
          AND (EXISTS (SELECT 1 FROM access_tokens t WHERE t.device_login_id = d.id AND t.revoked_at IS NULL)
               OR EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.device_login_id = d.id AND r.revoked_at IS NULL)
               OR EXISTS (SELECT 1 FROM access_tokens m WHERE m.minted_by_device_login_id = d.id AND m.revoked_at IS NULL))`,
      [clientId],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Every login of a client (its refresh tokens go with them; its access tokens, revoked, stay
   * unlinked; the tokens made with them, revoked, go with them).
   */
  deleteAllOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.sql.count(`DELETE FROM device_logins WHERE client_id = $1`, [clientId], tx);
  }

  /**
   * Logins expired before `now` that no token still descends from nor was made with: a login is its
   * tokens' family, kept while any of them is (deleting it would delete the tokens made with it).
   */
  deleteExpiredWithoutTokens(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM device_logins WHERE id IN (
         SELECT d.id FROM device_logins d WHERE d.expires_at < $1
            AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.device_login_id = d.id)
            AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.device_login_id = d.id)
            AND NOT EXISTS (SELECT 1 FROM access_tokens m WHERE m.minted_by_device_login_id = d.id)
          LIMIT $2)`,
      [now, limit],
      tx,
    );
  }
}
