import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Sql } from '../database/sql.js';

/** What a mailed link does: set a new password, prove an address, or accept an invitation (set the first password). */
export type AccountTokenPurpose = 'password_reset' | 'email_verification' | 'invitation' | 'email_change';

export interface LinkAccount {
  userId: string;
  email: string;
  name: string;
}

/** The links that set a password, and the event each audits when used. */
const PASSWORD_LINKS = { password_reset: 'password.reset', invitation: 'account.invitation_accept' } as const;

/**
 * Every statement on `account_tokens` (single-use mailed links, only their SHA-256 kept): each
 * change one statement with its audit event.
 */
@Injectable()
export class AccountTokensRepository {
  constructor(private readonly sql: Sql) {}

  /** A reset link for the enabled account with this (normalized) e-mail, if there is one, with its audit event. */
  async insertResetForEmail(email: string, tokenHash: Buffer, now: Date, expiresAt: Date, ip: string | null): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH issued AS (
         INSERT INTO account_tokens (user_id, purpose, token_hash, created_at, expires_at)
         SELECT id, 'password_reset', $2, $3, $4 FROM users WHERE email = $1 AND disabled_at IS NULL
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

  /**
   * A link of `purpose` for this account (in `tx` when given; `newEmail` for an `email_change`);
   * the account, or undefined when there is no such account.
   */
  async insertForUser(
    purpose: AccountTokenPurpose,
    userId: string,
    tokenHash: Buffer,
    now: Date,
    expiresAt: Date,
    tx?: EntityManager,
    newEmail: string | null = null,
  ): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH issued AS (
         INSERT INTO account_tokens (user_id, purpose, token_hash, created_at, expires_at, new_email) SELECT id, $2, $3, $4, $5, $6 FROM users WHERE id = $1
         RETURNING user_id
       )
       SELECT u.id AS "userId", u.email, u.name FROM issued JOIN users u ON u.id = issued.user_id`,
      [userId, purpose, tokenHash, now, expiresAt, newEmail],
      tx,
    );
    return row;
  }

  /**
   * Uses an address-change link: the account's address becomes the new one (verified), its other
   * change links are used up, audited with both addresses' owner's id, in one statement. The
   * account with its old and new address; undefined for a link that is unknown, used or expired.
   * @throws a unique violation (isUniqueViolation) when the new address has an account by now.
   */
  async redeemEmailChange(tokenHash: Buffer, now: Date, ip: string | null): Promise<(LinkAccount & { oldEmail: string }) | undefined> {
    const [row] = await this.sql.rows<LinkAccount & { oldEmail: string }>(
      `WITH redeemed AS (
         UPDATE account_tokens SET used_at = $2
          WHERE token_hash = $1 AND purpose = 'email_change' AND used_at IS NULL AND expires_at > $2
          RETURNING user_id, new_email
       ), before AS (
         SELECT u.id, u.email FROM users u JOIN redeemed r ON r.user_id = u.id
       ), changed AS (
         UPDATE users u SET email = r.new_email, email_verified_at = $2, updated_at = $2 FROM redeemed r WHERE u.id = r.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.purpose = 'email_change' AND t.used_at IS NULL AND t.token_hash <> $1
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT 'account.email_change', id, $3, '{}'::jsonb, $2 FROM changed
       )
       SELECT c.id AS "userId", c.email, c.name, b.email AS "oldEmail" FROM changed c JOIN before b ON b.id = c.id`,
      [tokenHash, now, ip],
    );
    return row;
  }

  /** Whether the link of `purpose` still works (its page shows the form only then). */
  async isUsable(purpose: AccountTokenPurpose, tokenHash: Buffer, now: Date): Promise<boolean> {
    const [row] = await this.sql.rows<{ ok: boolean }>(
      `SELECT true AS ok FROM account_tokens WHERE token_hash = $1 AND purpose = $3 AND used_at IS NULL AND expires_at > $2`,
      [tokenHash, now, purpose],
    );
    return row !== undefined;
  }

  /**
   * Uses a reset or invitation link and sets the password in one statement: of two racing uses
   * one wins; the account's other links of that purpose are used up with it; the address counts
   * as verified (the mail reached its owner); audited. The account, or undefined for a link that
   * is unknown, used or expired.
   */
  async redeemPasswordLink(
    purpose: keyof typeof PASSWORD_LINKS,
    tokenHash: Buffer,
    passwordHash: string,
    now: Date,
    ip: string | null,
  ): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH redeemed AS (
         UPDATE account_tokens SET used_at = $2
          WHERE token_hash = $1 AND purpose = $5 AND used_at IS NULL AND expires_at > $2
          RETURNING user_id
       ), changed AS (
         UPDATE users u SET password_hash = $3, email_verified_at = COALESCE(u.email_verified_at, $2), updated_at = $2
           FROM redeemed WHERE u.id = redeemed.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.purpose = $5 AND t.used_at IS NULL AND t.token_hash <> $1
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT $6, id, $4, '{}'::jsonb, $2 FROM changed
       )
       SELECT id AS "userId", email, name FROM changed`,
      [tokenHash, now, passwordHash, ip, purpose, PASSWORD_LINKS[purpose]],
    );
    return row;
  }

  /**
   * Uses a verification link: the address is verified, the account's other verification links
   * used up, audited, in one statement. The account, or undefined for a link that is unknown,
   * used or expired.
   */
  async redeemVerification(tokenHash: Buffer, now: Date, ip: string | null): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH redeemed AS (
         UPDATE account_tokens SET used_at = $2
          WHERE token_hash = $1 AND purpose = 'email_verification' AND used_at IS NULL AND expires_at > $2
          RETURNING user_id
       ), changed AS (
         UPDATE users u SET email_verified_at = COALESCE(u.email_verified_at, $2) FROM redeemed WHERE u.id = redeemed.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.purpose = 'email_verification' AND t.used_at IS NULL AND t.token_hash <> $1
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT 'email.verify', id, $3, '{}'::jsonb, $2 FROM changed
       )
       SELECT id AS "userId", email, name FROM changed`,
      [tokenHash, now, ip],
    );
    return row;
  }

  /** Links past their lifetime, used or not (the retention job): a used one proves nothing later. */
  deleteExpired(tx: EntityManager, now: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM account_tokens WHERE id IN (SELECT id FROM account_tokens WHERE expires_at < $1 LIMIT $2)`, [now, limit], tx);
  }
}
