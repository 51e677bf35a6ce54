import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

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
 * When a link of `t` still works for its account `u` (issue #31): unused, unexpired, the account
 * enabled and in the state the link was issued under (same credential epoch: no new password,
 * address or disable since), and mailed to the account's address (an address change's link goes
 * to the new address, and its epoch binds it to the old one). `$2` is now.
 */
const USABLE = `t.used_at IS NULL AND t.expires_at > $2 AND u.disabled_at IS NULL AND t.epoch = u.credential_epoch
  AND (t.purpose = 'email_change' OR t.sent_to = u.email)`;

/**
 * Every statement on `account_tokens` (single-use mailed links, only their SHA-256 kept): each
 * change one statement with its audit event. A link records the account's credential epoch and
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
         INSERT INTO auth_events (type, user_id, ip, detail, created_at)
         SELECT 'password.reset_request', user_id, $5, '{}'::jsonb, $3 FROM issued
       )
       SELECT u.id AS "userId", u.email, u.name FROM issued JOIN users u ON u.id = issued.user_id`,
      [email, tokenHash, now, expiresAt, ip],
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
   * Uses an address-change link: the account's address becomes the new one (verified), the
   * account's credential epoch moves on (every other link, and every session but the ones its
   * caller renews, ends), audited, in one statement. The account with its old and new address;
   * undefined for a link that no longer works (USABLE).
   * @throws a unique violation (isUniqueViolation) when the new address has an account by now.
   */
  async redeemEmailChange(tokenHash: Buffer, now: Date, ip: string | null): Promise<(LinkAccount & { oldEmail: string }) | undefined> {
    const [row] = await this.sql.rows<LinkAccount & { oldEmail: string }>(
      `WITH redeemed AS (
         UPDATE account_tokens t SET used_at = $2 FROM users u
          WHERE t.token_hash = $1 AND t.purpose = 'email_change' AND u.id = t.user_id AND ${USABLE}
          RETURNING t.user_id, t.new_email, u.email AS old_email
       ), changed AS (
         UPDATE users u SET email = r.new_email, email_verified_at = $2, credential_epoch = u.credential_epoch + 1, updated_at = $2
           FROM redeemed r WHERE u.id = r.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.used_at IS NULL AND t.token_hash <> $1
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT 'account.email_change', id, $3, '{}'::jsonb, $2 FROM changed
       )
       SELECT c.id AS "userId", c.email, c.name, r.old_email AS "oldEmail" FROM changed c JOIN redeemed r ON r.user_id = c.id`,
      [tokenHash, now, ip],
    );
    return row;
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

  /**
   * Uses a reset or invitation link and sets the password in one statement: of two racing uses
   * one wins. A new password is a new credential epoch: every other link of every kind is used
   * up and every web session ends (they record the epoch). The address counts as verified (the
   * mail reached its owner). When it was not verified before, whoever created the account never
   * proved the address, so whatever they set up ends here too (the pre-hijacking defence):
   * second factors and passkeys are deleted in the same statement (`ownershipProven`; the caller
   * revokes the tokens). Audited. The account, or undefined for a link that no longer works.
   */
  async redeemPasswordLink(
    purpose: keyof typeof PASSWORD_LINKS,
    tokenHash: Buffer,
    passwordHash: string,
    now: Date,
    ip: string | null,
  ): Promise<(LinkAccount & { ownershipProven: boolean }) | undefined> {
    const [row] = await this.sql.rows<LinkAccount & { ownershipProven: boolean }>(
      `WITH redeemed AS (
         UPDATE account_tokens t SET used_at = $2 FROM users u
          WHERE t.token_hash = $1 AND t.purpose = $5 AND u.id = t.user_id AND ${USABLE}
          RETURNING t.user_id, u.email_verified_at IS NULL AS unproven
       ), changed AS (
         UPDATE users u SET password_hash = $3, email_verified_at = COALESCE(u.email_verified_at, $2),
                            credential_epoch = u.credential_epoch + 1, updated_at = $2
           FROM redeemed WHERE u.id = redeemed.user_id
         RETURNING u.id, u.email, u.name
       ), others AS (
         UPDATE account_tokens t SET used_at = $2 FROM redeemed
          WHERE t.user_id = redeemed.user_id AND t.used_at IS NULL AND t.token_hash <> $1
       ), cleared_totp AS (
         DELETE FROM totp_factors f USING redeemed WHERE redeemed.unproven AND f.user_id = redeemed.user_id
       ), cleared_codes AS (
         DELETE FROM recovery_codes c USING redeemed WHERE redeemed.unproven AND c.user_id = redeemed.user_id
       ), cleared_passkeys AS (
         DELETE FROM passkeys p USING redeemed WHERE redeemed.unproven AND p.user_id = redeemed.user_id
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT $6, id, $4, '{}'::jsonb, $2 FROM changed
       ), proven AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at)
         SELECT 'account.ownership_proven', user_id, $4, '{}'::jsonb, $2 FROM redeemed WHERE unproven AND $5 = 'password_reset'
       )
       SELECT c.id AS "userId", c.email, c.name, r.unproven AND $5 = 'password_reset' AS "ownershipProven" FROM changed c JOIN redeemed r ON r.user_id = c.id`,
      [tokenHash, now, passwordHash, ip, purpose, PASSWORD_LINKS[purpose]],
    );
    return row;
  }

  /**
   * Uses a verification link: the address it was mailed to, still the account's, is verified,
   * the account's other verification links used up, audited, in one statement. The account, or
   * undefined for a link that no longer works (USABLE).
   */
  async redeemVerification(tokenHash: Buffer, now: Date, ip: string | null): Promise<LinkAccount | undefined> {
    const [row] = await this.sql.rows<LinkAccount>(
      `WITH redeemed AS (
         UPDATE account_tokens t SET used_at = $2 FROM users u
          WHERE t.token_hash = $1 AND t.purpose = 'email_verification' AND u.id = t.user_id AND ${USABLE}
          RETURNING t.user_id
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
  deleteExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM account_tokens WHERE id IN (SELECT id FROM account_tokens WHERE expires_at < $1 LIMIT $2)`, [now, limit], tx);
  }
}
