import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** What a mailed link does: set a new password, prove an address, or accept an invitation (set the first password). */
export type AccountTokenPurpose = 'password_reset' | 'email_verification' | 'invitation' | 'email_change';

export interface LinkAccount {
  userId: string;
  email: string;
  name: string;
}

/** A link just used (AccountTokensRepository.use). */
export interface UsedLink {
  userId: string;
  /** An address-change link's new address. */
  newEmail: string | null;
  /** The account's address when the link was used. */
  email: string;
  /** The address had never been proven before. */
  unproven: boolean;
}

/**
 * When a link of `t` still works for its account `u` (issue #31): unused, unexpired, the account
 * enabled and in the state the link was issued under (same credential epoch: no new password,
 * address or disable since), and mailed to the account's address (an address change's link goes
 * to the new address, and its epoch binds it to the old one). `$2` is now.
 */
const USABLE = `t.used_at IS NULL AND t.expires_at > $2 AND u.disabled_at IS NULL AND t.epoch = u.credential_epoch
  AND (t.purpose = 'email_change' OR t.sent_to = u.email)`;

/**
 * Every statement on `account_tokens` (single-use mailed links, only their SHA-256 kept); a link's
 * use is a unit of work of several of them (LinkRedemptions). A link records the account's credential epoch and
 * the address it was mailed to (USABLE).
 */
@Injectable()
export class AccountTokensRepository {
  constructor(private readonly sql: Sql) {}

  /** A reset link for the enabled account with this (normalized) e-mail, if there is one, with its audit event (in `tx` when given). */
  async insertResetForEmail(email: string, tokenHash: Buffer, now: Date, expiresAt: Date, ip: string | null, tx?: Tx): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH issued AS (
         INSERT INTO account_tokens (user_id, purpose, token_hash, created_at, expires_at, epoch, sent_to)
         SELECT id, 'password_reset', $2, $3, $4, credential_epoch, email FROM users WHERE email = $1 AND disabled_at IS NULL
         RETURNING user_id
       ), audited AS (
         ${auditInsert({ type: 'password.reset_request', userId: 'user_id', ip: '$5', userAgent: '$6', detail: "'{}'::jsonb", createdAt: '$3', from: 'issued' })}
       )
       SELECT u.id AS "userId", u.email, u.name FROM issued JOIN users u ON u.id = issued.user_id`,
      [email, tokenHash, now, expiresAt, ip, requestUserAgent()],
      tx,
    );
    return row;
  }

  /**
   * A link of `purpose` for this account (in `tx` when given; `newEmail` for an `email_change`),
   * bound to the account's state now; the account, or undefined when there is no such account.
   */
  async insertForUser(
    purpose: AccountTokenPurpose,
    userId: string,
    tokenHash: Buffer,
    now: Date,
    expiresAt: Date,
    tx?: Tx,
    newEmail: string | null = null,
  ): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH issued AS (
         INSERT INTO account_tokens (user_id, purpose, token_hash, created_at, expires_at, new_email, epoch, sent_to)
         SELECT id, $2, $3, $4, $5, $6, credential_epoch, COALESCE($6, email) FROM users WHERE id = $1
         RETURNING user_id
       )
       SELECT u.id AS "userId", u.email, u.name FROM issued JOIN users u ON u.id = issued.user_id`,
      [userId, purpose, tokenHash, now, expiresAt, newEmail],
      tx,
    );
    return row;
  }

  /**
   * Uses a link of `purpose` that still works (USABLE), in `tx`: of two racing uses one wins. Its
   * account's id, the new address of an address-change link, the address now, and whether the
   * address was never proven before (the pre-hijacking defence: LinkRedemptions); undefined for a
   * link that no longer works. The rest of the redemption follows in the same `tx`.
   */
  async use(tx: Tx, purpose: AccountTokenPurpose, tokenHash: Buffer, now: Date): Promise<UsedLink | undefined> {
    const [row] = await this.sql.rows<UsedLink>(
      `UPDATE account_tokens t SET used_at = $2 FROM users u
        WHERE t.token_hash = $1 AND t.purpose = $3 AND u.id = t.user_id AND ${USABLE}
        RETURNING t.user_id AS "userId", t.new_email AS "newEmail", u.email AS "email", u.email_verified_at IS NULL AS unproven`,
      [tokenHash, now, purpose],
      tx,
    );
    return row;
  }

  /** Uses up, in `tx`, every other unused link of the account (a new credential epoch ended them: a used link proves nothing later). */
  async useUpOthers(tx: Tx, userId: string, usedHash: Buffer, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE account_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL AND token_hash <> $3`, [userId, now, usedHash], tx);
  }

  /** Uses up, in `tx`, the account's other unused verification links (its address is verified now). */
  async useUpOtherVerifications(tx: Tx, userId: string, usedHash: Buffer, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE account_tokens SET used_at = $2 WHERE user_id = $1 AND purpose = 'email_verification' AND used_at IS NULL AND token_hash <> $3`,
      [userId, now, usedHash],
      tx,
    );
  }

  /**
   * Ends, in `tx`, everything the account had set up beyond its password, in one statement: every
   * unused link is used up, its TOTP key, recovery codes and passkeys deleted (an identity
   * provider's link proven by a mail to the address: federation/'s linkProven).
   */
  async endLinksAndFactors(tx: Tx, userId: string, now: Date): Promise<void> {
    await this.sql.rows(
      `WITH links AS (UPDATE account_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL),
            totp AS (DELETE FROM totp_factors WHERE user_id = $1),
            codes AS (DELETE FROM recovery_codes WHERE user_id = $1)
       DELETE FROM passkeys WHERE user_id = $1`,
      [userId, now],
      tx,
    );
  }

  /** Deletes, in `tx`, the account's TOTP key, recovery codes and passkeys, in one statement (a reset that proves an unproven address). */
  async deleteFactors(tx: Tx, userId: string): Promise<void> {
    await this.sql.rows(
      `WITH totp AS (DELETE FROM totp_factors WHERE user_id = $1), codes AS (DELETE FROM recovery_codes WHERE user_id = $1)
       DELETE FROM passkeys WHERE user_id = $1`,
      [userId],
      tx,
    );
  }

  /** The account a link of `purpose` is for, while it still works (USABLE); its page shows the form only then. */
  async findUsable(purpose: AccountTokenPurpose, tokenHash: Buffer, now: Date): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `SELECT u.id AS "userId", u.email, u.name FROM account_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1 AND t.purpose = $3 AND ${USABLE}`,
      [tokenHash, now, purpose],
    );
    return row;
  }

  /** The account (with its address now) and the new address of an address-change link that still works. */
  async findUsableEmailChange(tokenHash: Buffer, now: Date): Promise<{ userId: string; email: string; newEmail: string } | undefined> {
    const [row] = await this.sql.rows<{ userId: string; email: string; newEmail: string }>(
      `SELECT u.id AS "userId", u.email, t.new_email AS "newEmail" FROM account_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1 AND t.purpose = 'email_change' AND ${USABLE}`,
      [tokenHash, now],
    );
    return row;
  }

  /** Links past their lifetime, used or not (the retention job): a used one proves nothing later. */
  deleteExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM account_tokens WHERE id IN (SELECT id FROM account_tokens WHERE expires_at < $1 LIMIT $2)`, [now, limit], tx);
  }
}
