import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Sql } from '../database/sql.js';

export interface ResetAccount {
  userId: string;
  email: string;
  name: string;
}

/** Every statement on `account_tokens` for password resets: each change one statement with its audit event. */
@Injectable()
export class PasswordResetsRepository {
  constructor(private readonly sql: Sql) {}

  /** A reset link for the account with this (normalized) e-mail, if there is one, with its audit event. */
  async insertForEmail(email: string, tokenHash: Buffer, now: Date, expiresAt: Date, ip: string | null): Promise<ResetAccount | undefined> {
    const [row] = await this.sql.rows<ResetAccount>(
      `WITH issued AS (
         INSERT INTO account_tokens (user_id, purpose, token_hash, created_at, expires_at)
         SELECT id, 'password_reset', $2, $3, $4 FROM users WHERE email = $1
         RETURNING user_id
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at)
         SELECT 'password.reset_request', user_id, $5, '{}'::jsonb, $3 FROM issued
       )
       SELECT u.id AS "userId", u.email, u.name FROM issued JOIN users u ON u.id = issued.user_id`,
      [email, tokenHash, now, expiresAt, ip],
    );
    return row;
  }

  /** Whether the link can still set a password (the page shows its form only then). */
  async isUsable(tokenHash: Buffer, now: Date): Promise<boolean> {
    const [row] = await this.sql.rows<{ ok: boolean }>(
      `SELECT true AS ok FROM account_tokens WHERE token_hash = $1 AND purpose = 'password_reset' AND used_at IS NULL AND expires_at > $2`,
      [tokenHash, now],
    );
    return row !== undefined;
  }

  /**
   * Uses the link and sets the password in one statement: of two racing uses one wins; the
   * account's other reset links are used up with it; audited. The account, or undefined for a
   * link that is unknown, used or expired.
   */
  async redeem(tokenHash: Buffer, passwordHash: string, now: Date, ip: string | null): Promise<ResetAccount | undefined> {
    const [row] = await this.sql.rows<ResetAccount>(
      `WITH redeemed AS (
         UPDATE account_tokens SET used_at = $2
          WHERE token_hash = $1 AND purpose = 'password_reset' AND used_at IS NULL AND expires_at > $2
          RETURNING user_id
       ), changed AS (
         UPDATE users u SET password_hash = $3, updated_at = $2 FROM redeemed WHERE u.id = redeemed.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.purpose = 'password_reset' AND t.used_at IS NULL AND t.token_hash <> $1
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT 'password.reset', id, $4, '{}'::jsonb, $2 FROM changed
       )
       SELECT id AS "userId", email, name FROM changed`,
      [tokenHash, now, passwordHash, ip],
    );
    return row;
  }

  /** Links past their lifetime, used or not (the retention job): a used one proves nothing later. */
  deleteExpired(tx: EntityManager, now: Date): Promise<number> {
    return this.sql.count(`DELETE FROM account_tokens WHERE expires_at < $1`, [now], tx);
  }
}
