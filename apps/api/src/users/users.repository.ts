import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { User } from './user.entity.js';
import type { Tx } from '../database/tx.js';

export interface NewUser {
  /** Already normalized (users.service.ts normalizeEmail). */
  email: string;
  name: string;
  passwordHash: string | null;
  role: User['role'];
  /** Set for an address already proven (the operator's PROSPECT_ADMIN_EMAIL). */
  emailVerifiedAt?: Date | null;
}

/** A user's columns as the User entity names them, the password hash left out (it is selected only where it is checked). */
const USER_COLUMNS = `id, email, name, role, disabled_at AS "disabledAt", email_verified_at AS "emailVerifiedAt", credential_epoch AS "credentialEpoch",
  last_sign_in_at AS "lastSignInAt", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Every statement on `users` (Sql); some may run in a caller's transaction. */
@Injectable()
export class UsersRepository {
  constructor(private readonly sql: Sql) {}

  /** In `tx` when given (a sign-in through a provider reads under its lock). */
  async findById(id: string, tx?: Tx): Promise<User | null> {
    const [user] = await this.sql.rows<User>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1 AND kind = 'person'`, [id], tx);
    return user ?? null;
  }

  async findByEmail(email: string, tx?: Tx): Promise<User | null> {
    const [user] = await this.sql.rows<User>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email], tx);
    return user ?? null;
  }

  /**
   * The account of a browser session started through an identity provider, with whether that link
   * still lets it in: not refused by its provider (a leaver) and the provider not disabled (issue
   * #34). One statement, in place of findById, for such sessions only.
   */
  async findWithLiveLink(id: string, linkId: string): Promise<{ user: User; linkLive: boolean } | null> {
    const [row] = await this.sql.rows<User & { linkLive: boolean }>(
      `SELECT ${USER_COLUMNS},
              EXISTS (SELECT 1 FROM federated_identities l JOIN identity_providers p ON p.id = l.provider_id
                       WHERE l.id = $2 AND l.user_id = users.id AND l.refused_at IS NULL AND p.disabled_at IS NULL) AS "linkLive"
         FROM users WHERE users.id = $1 AND users.kind = 'person'`,
      [id, linkId],
    );
    if (!row) return null;
    const { linkLive, ...user } = row;
    return { user, linkLive };
  }

  /** With its password hash, which no other read selects. */
  async findWithPasswordHash(email: string): Promise<User | null> {
    const [user] = await this.sql.rows<User>(`SELECT ${USER_COLUMNS}, password_hash AS "passwordHash" FROM users WHERE email = $1`, [email]);
    return user ?? null;
  }

  /** Whether the account has a password; false for no such account. */
  async hasPassword(id: string): Promise<boolean> {
    const [row] = await this.sql.rows<{ has: boolean }>(`SELECT password_hash IS NOT NULL AS has FROM users WHERE id = $1`, [id]);
    return row?.has ?? false;
  }

  /** The new user; throws a unique violation (isUniqueViolation) when the e-mail is taken. */
  async insert(user: NewUser, tx?: Tx): Promise<User> {
    const [row] = await this.sql.rows<User>(
      `INSERT INTO users (email, name, password_hash, role, email_verified_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${USER_COLUMNS}`,
      [user.email, user.name, user.passwordHash, user.role, user.emailVerifiedAt ?? null],
      tx,
    );
    return row!;
  }

  /**
   * Makes the operator's PROSPECT_ADMIN_* account, idempotent when several instances start at
   * once: creates it (an admin with the operator's password), or finds it an admin already. An
   * account with that address that is not an admin is 'taken': the caller promotes it only if it
   * has the operator's password, since whoever signed up with the address first must not become
   * the administrator with their own password (issue #31).
   */
  async ensureAdmin(user: Omit<NewUser, 'role'>): Promise<'created' | 'unchanged' | 'taken'> {
    const [row] = await this.sql.rows<{ outcome: 'created' | 'unchanged' | 'taken' }>(
      `WITH created AS (
         INSERT INTO users (email, name, password_hash, role, email_verified_at) VALUES ($1, $2, $3, 'admin', now())
         ON CONFLICT (email) DO NOTHING
         RETURNING id
       )
       SELECT 'created' AS outcome FROM created
       UNION ALL
       SELECT CASE WHEN role = 'admin' THEN 'unchanged' ELSE 'taken' END FROM users WHERE email = $1 AND NOT EXISTS (SELECT 1 FROM created)`,
      [user.email, user.name, user.passwordHash],
    );
    return row?.outcome ?? 'unchanged';
  }

  /** Makes the account with this address an admin (the operator's, found by its password); false when it was one already or is gone. */
  async promote(email: string): Promise<boolean> {
    return (await this.sql.count(`UPDATE users SET role = 'admin', updated_at = now() WHERE email = $1 AND role <> 'admin'`, [email])) > 0;
  }

  /** A new hash of the same password (made with newer parameters): no new credential epoch. */
  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.sql.rows(`UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`, [id, passwordHash]);
  }

  /** A new name or password with its audit event, in one statement; false when there is no such user. */
  async changeWithAudit(
    id: string,
    change: { name: string } | { passwordHash: string },
    event: 'account.rename' | 'password.change',
    now: Date,
    ip: string | null,
  ): Promise<boolean> {
    // A new password is a new credential epoch: every other session and every mailed link ends.
    const set = 'name' in change ? 'name = $2' : 'password_hash = $2, credential_epoch = credential_epoch + 1';
    const value = 'name' in change ? change.name : change.passwordHash;
    const rows = await this.sql.rows(
      `WITH changed AS (UPDATE users SET ${set}, updated_at = $3 WHERE id = $1 RETURNING id)
       ${auditInsert({ type: event, userId: 'id', ip: '$4', userAgent: '$5', detail: "'{}'::jsonb", createdAt: '$3', from: 'changed' }, 'id')}`,
      [id, value, now, ip, requestUserAgent()],
    );
    return rows.length > 0;
  }

  /**
   * Deletes an account in `tx` (its caller has locked the admins and forgotten its events' details:
   * UsersService.deleteAccount). Its tokens, refresh tokens, sessions and links go with it (foreign
   * keys); one `account.delete` event without personal data is added. False for no such account.
   */
  async deleteWithEvent(tx: Tx, id: string, now: Date): Promise<boolean> {
    const deleted = await this.sql.rows(
      `WITH gone AS (DELETE FROM users WHERE id = $1 AND kind = 'person' RETURNING id)
       ${auditInsert({ type: 'account.delete', userId: 'NULL', ip: 'NULL', detail: "'{}'::jsonb", createdAt: '$2', from: 'gone' }, 'id')}`,
      [id, now],
      tx,
    );
    return deleted.length > 0;
  }

  /** A mailed address-change link was used, in `tx`: the new address, verified, and a new credential epoch. The account as it is now. */
  async setEmailFromLink(tx: Tx, id: string, newEmail: string, now: Date): Promise<LinkedAccount | undefined> {
    const [row] = await this.sql.rows<LinkedAccount>(
      `UPDATE users SET email = $2, email_verified_at = $3, credential_epoch = credential_epoch + 1, updated_at = $3 WHERE id = $1 RETURNING id, email, name`,
      [id, newEmail, now],
      tx,
    );
    return row;
  }

  /** A mailed reset or invitation link was used, in `tx`: the new password, the address verified, a new credential epoch. The account, and that epoch. */
  async setPasswordFromLink(tx: Tx, id: string, passwordHash: string, now: Date): Promise<(LinkedAccount & { credentialEpoch: number }) | undefined> {
    const [row] = await this.sql.rows<LinkedAccount & { credentialEpoch: number }>(
      `UPDATE users SET password_hash = $2, email_verified_at = COALESCE(email_verified_at, $3), credential_epoch = credential_epoch + 1, updated_at = $3
        WHERE id = $1 RETURNING id, email, name, credential_epoch AS "credentialEpoch"`,
      [id, passwordHash, now],
      tx,
    );
    return row;
  }

  /** A mailed verification link was used, in `tx`: the address counts as verified (from `now`, unless it was already). The account. */
  async markEmailVerified(tx: Tx, id: string, now: Date): Promise<LinkedAccount | undefined> {
    const [row] = await this.sql.rows<LinkedAccount>(`UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2) WHERE id = $1 RETURNING id, email, name`, [id, now], tx);
    return row;
  }

  /**
   * An identity-provider link proven for this account, in `tx` (its row locked by the caller): the
   * address counts as verified; with `endPassword` (the proof was a link mailed to the address)
   * the password ends too and the credential epoch moves on.
   */
  async recordProvenLink(tx: Tx, id: string, now: Date, endPassword: boolean): Promise<void> {
    await this.sql.rows(
      endPassword
        ? `UPDATE users SET password_hash = NULL, email_verified_at = COALESCE(email_verified_at, $2), credential_epoch = credential_epoch + 1, updated_at = $2 WHERE id = $1`
        : `UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), updated_at = $2 WHERE id = $1`,
      [id, now],
      tx,
    );
  }

  /**
   * One page of people for the admin list, newest first, with what the list shows: whether they
   * are invited still (no password yet, and no identity-provider link: an account made by a
   * provider has none either) and how many CLI sessions are live
   * (a device session counts once however often it was refreshed; a long-lived token counts alone).
   * `search` matches name or e-mail, case-insensitively; `id` picks one person.
   */
  async listForAdmin(search: string, limit: number, offset: number, now: Date, id?: string): Promise<{ rows: AdminUserRow[]; total: number }> {
    const pattern = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.sql.rows<AdminUserRow & { total: number }>(
      `SELECT u.id, u.email, u.name, u.role, u.disabled_at AS "disabledAt", u.email_verified_at AS "emailVerifiedAt",
              u.password_hash IS NULL AND NOT EXISTS (SELECT 1 FROM federated_identities l WHERE l.user_id = u.id) AS invited,
              u.created_at AS "createdAt", u.last_sign_in_at AS "lastSignInAt",
              EXISTS (SELECT 1 FROM totp_factors f WHERE f.user_id = u.id) AS "secondFactor",
              (SELECT count(DISTINCT COALESCE(t.grant_id, t.id))::int FROM access_tokens t
                 WHERE t.user_id = u.id AND t.revoked_at IS NULL AND t.expires_at > $4)
              + (SELECT count(DISTINCT r.grant_id)::int FROM refresh_tokens r
                 WHERE r.user_id = u.id AND r.revoked_at IS NULL AND r.expires_at > $4
                   AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = r.grant_id AND t.revoked_at IS NULL AND t.expires_at > $4)
                ) AS "activeCliSessions",
              count(*) OVER ()::int AS total
         FROM users u
        WHERE u.kind = 'person' AND ($1 = '%%' OR u.email ILIKE $1 OR u.name ILIKE $1) AND ($5::uuid IS NULL OR u.id = $5)
        ORDER BY u.created_at DESC, u.id
        LIMIT $2 OFFSET $3`,
      [pattern, limit, offset, now, id ?? null],
    );
    return { rows, total: rows[0]?.total ?? (offset > 0 ? await this.countMatching(pattern) : 0) };
  }

  private async countMatching(pattern: string): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM users u WHERE u.kind = 'person' AND ($1 = '%%' OR u.email ILIKE $1 OR u.name ILIKE $1)`, [pattern]);
    return row!.n;
  }

  /**
   * Locks the person's row against what share-locks it (an authorization code's exchange checks the
   * account under FOR SHARE) until `tx` ends; tokens' inserts (FOR KEY SHARE) are not held up.
   */
  async lockAgainstSharers(tx: Tx, id: string): Promise<void> {
    await this.sql.rows(`SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE`, [id], tx);
  }

  /** Locks every enabled administrator's row in `tx` (so "not the last admin" holds until commit); their ids. */
  async lockAdmins(tx: Tx): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(`SELECT id FROM users WHERE role = 'admin' AND disabled_at IS NULL ORDER BY id FOR UPDATE`, [], tx);
    return rows.map((row) => row.id);
  }

  /**
   * Disables or enables, in `tx`, with its audit event naming the acting admin; false when nothing
   * changed (unknown, or already so). Either is a new credential epoch: no link or session from
   * before a disable works after the enable.
   */
  async setDisabled(tx: Tx, id: string, disabled: boolean, now: Date, adminId: string | null, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH changed AS (
         UPDATE users SET disabled_at = $2, credential_epoch = credential_epoch + 1, updated_at = $3
          WHERE id = $1 AND kind = 'person' AND (disabled_at IS NULL) = ($2::timestamptz IS NOT NULL) RETURNING id
       )
       ${auditInsert({ type: disabled ? 'admin.user_disable' : 'admin.user_enable', userId: '$4', ip: '$5', userAgent: '$6', detail: "jsonb_build_object('accountId', id)", createdAt: '$3', from: 'changed' }, 'id')}`,
      [id, disabled ? now : null, now, adminId, ip, requestUserAgent()],
      tx,
    );
    return rows.length > 0;
  }

  /** Makes an admin or a user, in `tx`, audited with the acting admin; false when nothing changed. */
  async setRole(tx: Tx, id: string, role: User['role'], now: Date, adminId: string, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH changed AS (UPDATE users SET role = $2, updated_at = $3 WHERE id = $1 AND kind = 'person' AND role <> $2 RETURNING id)
       ${auditInsert({ type: 'admin.user_role', userId: '$4', ip: '$5', userAgent: '$6', detail: "jsonb_build_object('accountId', id, 'role', $2::text)", createdAt: '$3', from: 'changed' }, 'id')}`,
      [id, role, now, adminId, ip, requestUserAgent()],
      tx,
    );
    return rows.length > 0;
  }

  /**
   * A service account's row (issue #45), in `tx`: no address, no password, never an admin (the
   * table's CHECK holds it too). Its id.
   */
  async insertServiceAccount(tx: Tx, name: string, now: Date): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO users (email, name, password_hash, role, kind, created_at, updated_at) VALUES (NULL, $1, NULL, 'user', 'service_account', $2, $2) RETURNING id`,
      [name, now],
      tx,
    );
    return row!.id;
  }

  /** A service account's new name, in `tx` (the users trigger tells the token caches). */
  async renameServiceAccount(tx: Tx, id: string, name: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE users SET name = $2, updated_at = $3 WHERE id = $1 AND kind = 'service_account'`, [id, name, now], tx);
  }

  /** Deletes service accounts' rows in `tx`: their tokens go with them (foreign keys, and the triggers tell the caches). How many. */
  deleteServiceAccounts(tx: Tx, ids: readonly string[]): Promise<number> {
    return this.sql.count(`DELETE FROM users WHERE id = ANY($1::uuid[]) AND kind = 'service_account'`, [ids], tx);
  }

  /** When someone signs in with a password: for the admin list. */
  async recordSignIn(id: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE users SET last_sign_in_at = $2 WHERE id = $1`, [id, now]);
  }
}

/** An account as a mailed link's use leaves it. */
export interface LinkedAccount {
  id: string;
  email: string;
  name: string;
}

/** A row of the admin list (listForAdmin). */
export interface AdminUserRow {
  id: string;
  email: string;
  name: string;
  role: User['role'];
  disabledAt: Date | null;
  emailVerifiedAt: Date | null;
  invited: boolean;
  secondFactor: boolean;
  createdAt: Date;
  lastSignInAt: Date | null;
  activeCliSessions: number;
}
