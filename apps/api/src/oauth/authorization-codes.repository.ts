import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** An authorization code as its exchange reads it, locked. */
export interface CodeRow {
  id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string;
  nonce: string | null;
  auth_time: Date;
  amr: string[];
  second_factor: boolean;
  credential_epoch: number;
  web_session: string;
  expires_at: Date;
  used_at: Date | null;
  grant_id: string | null;
}

export interface NewAuthorizationCode {
  codeHash: Buffer;
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  nonce: string | null;
  authTime: Date;
  amr: string[];
  /** The consenting session had shown a second factor (its grant keeps it: grants/grant-rules.ts). */
  secondFactor: boolean;
  credentialEpoch: number;
  /** The approving browser session's key, as `web_sessions.sid` holds it. */
  webSession: string;
  createdAt: Date;
  expiresAt: Date;
}

/** The person of a code as its exchange reads them. */
export interface AccountForExchange {
  email: string;
  name: string;
  emailVerified: boolean;
  disabled: boolean;
  credentialEpoch: number;
  /** The browser session that approved the code has not signed out (or been ended). */
  sessionLive: boolean;
}

/** How many codes one issuance deletes at most, of those expired a day ago (the purge rides on the writes, bounded). */
const PURGE_BATCH = 100;

/**
 * Every statement on `authorization_codes`, and the root of a code grant's token family: a
 * `device_logins` row (`grant_type = 'authorization_code'`, already redeemed), the table every
 * family rule reads (refresh rotation, revocation, a client's disable, "sign out everywhere").
 * The device-login module owns that table; this one statement writes it for the other door.
 */
@Injectable()
export class AuthorizationCodesRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Stores a code, and deletes (a bounded batch of) codes expired before `purgeBefore`: what a
   * replay would still have revoked was revoked, and the audit log keeps the rest.
   */
  async insert(code: NewAuthorizationCode, purgeBefore: Date, tx?: Tx): Promise<void> {
    await this.sql.rows(
      `WITH purged AS (
         DELETE FROM authorization_codes WHERE id IN (SELECT id FROM authorization_codes WHERE expires_at < $13 LIMIT ${PURGE_BATCH})
       )
       INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, nonce, auth_time, amr, credential_epoch, created_at, expires_at, web_session, second_factor)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15)`,
      [
        code.codeHash,
        code.clientId,
        code.userId,
        code.redirectUri,
        code.codeChallenge,
        code.scope,
        code.nonce,
        code.authTime,
        code.amr,
        code.credentialEpoch,
        code.createdAt,
        code.expiresAt,
        purgeBefore,
        code.webSession,
        code.secondFactor,
      ],
      tx,
    );
  }

  /** The code with this hash, locked for the rest of `tx` (of two exchanges of one code, the second waits and sees it used). */
  async lockByHash(tx: Tx, hash: Buffer): Promise<CodeRow | undefined> {
    const [row] = await this.sql.rows<CodeRow>(
      `SELECT id, client_id, user_id, redirect_uri, code_challenge, scope, nonce, auth_time, amr, second_factor, credential_epoch, web_session, expires_at, used_at, grant_id
         FROM authorization_codes WHERE code_hash = $1 FOR UPDATE`,
      [hash],
      tx,
    );
    return row;
  }

  /**
   * The exchange, in `tx`, after the family its tokens descend from was made (device-login/'s
   * DeviceLoginService.insertCodeGrantFamily: what every family rule reads): the code used, with
   * the `oauth.code_exchange` event, in one statement.
   */
  async redeem(tx: Tx, code: { id: string; clientId: string; userId: string; scope: string }, familyId: string, now: Date, ip: string | null): Promise<void> {
    await this.sql.rows(
      `WITH used AS (
         UPDATE authorization_codes SET used_at = $5, grant_id = $2::uuid WHERE id = $1 RETURNING id
       )
       ${auditInsert({ type: 'oauth.code_exchange', userId: '$3', ip: '$7', userAgent: '$8', detail: "jsonb_build_object('clientId', $4::text, 'grantId', $2::text, 'scope', $6::text)", createdAt: '$5' })}`,
      [code.id, familyId, code.userId, code.clientId, now, code.scope, ip, requestUserAgent()],
      tx,
    );
  }

  /**
   * The person a code was issued to, share-locked for the rest of `tx` (an admin's disable, an
   * address or password change, which update the row, wait for the exchange or come first), with
   * what the ID token says of them, and whether the browser session that approved it is still there.
   */
  async lockAccount(tx: Tx, userId: string, webSession: string): Promise<AccountForExchange | undefined> {
    const [row] = await this.sql.rows<AccountForExchange>(
      `SELECT email, name, email_verified_at IS NOT NULL AS "emailVerified", disabled_at IS NOT NULL AS disabled, credential_epoch AS "credentialEpoch",
              EXISTS (SELECT 1 FROM web_sessions WHERE sid = $2 AND user_id = $1) AS "sessionLive"
         FROM users WHERE id = $1 FOR SHARE`,
      [userId, webSession],
      tx,
    );
    return row;
  }

  /** A used code came back: recorded (`oauth.code_replay`), in `tx`, with how many tokens it revoked. */
  async recordReplay(tx: Tx, code: { id: string; userId: string; clientId: string; grantId: string | null }, revokedTokens: number, now: Date, ip: string | null): Promise<void> {
    await this.sql.rows(
      auditInsert({ type: 'oauth.code_replay', userId: '$1', ip: '$2', userAgent: '$7', detail: "jsonb_build_object('clientId', $3::text, 'grantId', $4::text, 'revokedTokens', $5::int)", createdAt: '$6' }),
      [code.userId, ip, code.clientId, code.grantId, revokedTokens, now, requestUserAgent()],
      tx,
    );
  }

  /** Uses up every code not used yet of a client (for one person, or everyone): they can no longer be exchanged. How many. */
  burnUnused(tx: Tx, clientId: string, userId: string | null, now: Date): Promise<number> {
    return this.sql.count(
      `UPDATE authorization_codes SET used_at = $3
        WHERE client_id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND used_at IS NULL`,
      [clientId, userId, now],
      tx,
    );
  }
}
