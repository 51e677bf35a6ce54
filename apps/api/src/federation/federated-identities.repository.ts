import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A link between a Prospect account and a provider's (issuer, subject). */
export interface FederatedIdentityRow {
  id: string;
  userId: string;
  providerId: string;
  issuer: string;
  subject: string;
  email: string | null;
  /** base64url of the sealed refresh token (relying-party.ts), or null. */
  refreshTokenSealed: string | null;
  createdAt: Date;
  lastVerifiedAt: Date;
  refusedAt: Date | null;
}

const COLUMNS = `l.id, l.user_id AS "userId", l.provider_id AS "providerId", l.issuer, l.subject, l.email,
  l.refresh_token_sealed AS "refreshTokenSealed", l.created_at AS "createdAt", l.last_verified_at AS "lastVerifiedAt", l.refused_at AS "refusedAt"`;

/** The sealed refresh token as relying-party.ts hands it around (base64url), from its bytes. */
const toBase64Url = (row: Omit<FederatedIdentityRow, 'refreshTokenSealed'> & { refreshTokenSealed: Buffer | null }): FederatedIdentityRow => ({
  ...row,
  refreshTokenSealed: row.refreshTokenSealed === null ? null : row.refreshTokenSealed.toString('base64url'),
});
type StoredRow = Omit<FederatedIdentityRow, 'refreshTokenSealed'> & { refreshTokenSealed: Buffer | null };
const sealedBytes = (sealed: string | null | undefined) => (sealed ? Buffer.from(sealed, 'base64url') : null);

/** What a link was made after: the account proven by a full sign-in in this browser, or by the mailed link (which ends everything else). */
export type LinkProof = 'sign-in' | 'mail';

/** A link as the admin's pages show it. */
export interface LinkForAdmin {
  id: string;
  userId: string;
  providerId: string;
  providerName: string;
  subject: string;
  createdAt: Date;
  lastVerifiedAt: Date;
  refusedAt: Date | null;
}

/**
 * Every statement on `federated_identities`, and the ones that end the browser sessions started
 * through a link (`web_sessions.federated_link_id`). A link is found and made by (issuer,
 * subject) only (unique), never by an address.
 */
@Injectable()
export class FederatedIdentitiesRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Serializes, until `tx` ends, every transaction about this (issuer, subject): two first
   * sign-ins at once make one account (the second finds the first's link).
   */
  async lockIdentity(tx: Tx, issuer: string, subject: string): Promise<void> {
    await this.sql.rows(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`federation\n${issuer}\n${subject}`], tx);
  }

  /**
   * The provider said yes to (issuer, subject) again: the link's last verification is now, a
   * refusal from before is lifted, its address and (when given) refresh token are the new ones.
   * The link, or undefined when there is none.
   */
  async verified(tx: Tx, issuer: string, subject: string, email: string | null, refreshTokenSealed: string | undefined, now: Date): Promise<FederatedIdentityRow | undefined> {
    const [row] = await this.sql.rows<StoredRow>(
      `UPDATE federated_identities l SET last_verified_at = $4, refused_at = NULL, email = COALESCE($3, l.email),
              refresh_token_sealed = COALESCE($5, l.refresh_token_sealed)
        WHERE l.issuer = $1 AND l.subject = $2
        RETURNING ${COLUMNS}`,
      [issuer, subject, email, now, sealedBytes(refreshTokenSealed)],
      tx,
    );
    return row && toBase64Url(row);
  }

  /** A new link (the caller holds lockIdentity); its id. @throws a unique violation when (issuer, subject) or (provider, user) is linked already. */
  async insert(
    tx: Tx,
    link: { userId: string; providerId: string; issuer: string; subject: string; email: string; refreshTokenSealed?: string },
    now: Date,
  ): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO federated_identities (user_id, provider_id, issuer, subject, email, refresh_token_sealed, created_at, last_verified_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`,
      [link.userId, link.providerId, link.issuer, link.subject, link.email, sealedBytes(link.refreshTokenSealed), now],
      tx,
    );
    return row!.id;
  }

  /**
   * Links an existing account the person just proved, in one locked transaction (`tx`): the
   * account is locked and must still be as the provider's answer found it (its credential epoch
   * and address, enabled). Proven by the mailed link (`proof` 'mail'), whoever created the account
   * may not be this person, so what was set up before ends here too, as a reset that proves an
   * address does: its password, second factors and passkeys, other links, mailed links and
   * browser sessions, and the epoch moves on (the caller revokes its tokens). Either way the
   * address counts as verified, and the link is audited.
   * @returns the link's id; 'changed' when the account changed meanwhile; 'taken' when that
   *   identity is linked to another account, or this account to another identity of the provider.
   */
  async linkProven(
    tx: Tx,
    link: { userId: string; epoch: number; email: string; providerId: string; providerName: string; issuer: string; subject: string; refreshTokenSealed?: string },
    proof: LinkProof,
    now: Date,
    ip: string | null,
  ): Promise<string | 'changed' | 'taken'> {
    const locked = await this.sql.rows(
      `SELECT id FROM users WHERE id = $1 AND credential_epoch = $2 AND email = $3 AND disabled_at IS NULL FOR UPDATE`,
      [link.userId, link.epoch, link.email],
      tx,
    );
    if (!locked.length) return 'changed';
    await this.lockIdentity(tx, link.issuer, link.subject);
    // The mailed proof replaces this account's own links; anything else in the way stays, and refuses.
    const holders = await this.sql.rows<{ userId: string }>(
      `SELECT user_id AS "userId" FROM federated_identities WHERE (issuer = $1 AND subject = $2) OR (provider_id = $3 AND user_id = $4)`,
      [link.issuer, link.subject, link.providerId, link.userId],
      tx,
    );
    if (holders.some((holder) => holder.userId !== link.userId || proof === 'sign-in')) return 'taken';
    if (proof === 'mail') {
      await this.sql.rows(
        `WITH gone_links AS (DELETE FROM federated_identities WHERE user_id = $1),
              account AS (UPDATE users SET password_hash = NULL, email_verified_at = COALESCE(email_verified_at, $2), credential_epoch = credential_epoch + 1, updated_at = $2 WHERE id = $1),
              links AS (UPDATE account_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL),
              totp AS (DELETE FROM totp_factors WHERE user_id = $1),
              codes AS (DELETE FROM recovery_codes WHERE user_id = $1),
              keys AS (DELETE FROM passkeys WHERE user_id = $1)
         DELETE FROM web_sessions WHERE user_id = $1`,
        [link.userId, now],
        tx,
      );
    } else {
      await this.sql.rows(`UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), updated_at = $2 WHERE id = $1`, [link.userId, now], tx);
    }
    const id = await this.insert(tx, link, now);
    await this.sql.rows(
      `INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       VALUES ('federation.link', $1, $2, jsonb_build_object('providerId', $3::text, 'label', $4::text, 'linkId', $5::text, 'proof', $6::text), $7)`,
      [link.userId, ip, link.providerId, link.providerName, id, proof === 'mail' ? 'a link mailed to the address: every earlier session, second factor, passkey and password ended' : 'a sign-in to the account', now],
      tx,
    );
    return id;
  }

  /** The provider's refusal of a link (a leaver): the link is marked refused and its browser sessions end, audited, in one statement; how many sessions ended, or null when it was refused already. */
  async refuse(linkId: string, providerName: string, reason: string, now: Date): Promise<number | null> {
    const [row] = await this.sql.rows<{ sessions: number }>(
      `WITH refused AS (
         UPDATE federated_identities SET refused_at = $2, checking_until = NULL WHERE id = $1 AND refused_at IS NULL RETURNING id, user_id, provider_id
       ), ended AS (
         DELETE FROM web_sessions s USING refused WHERE s.federated_link_id = refused.id RETURNING s.sid
       ), audited AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at)
         SELECT 'federation.refused_by_provider', user_id, NULL,
                jsonb_build_object('providerId', provider_id, 'label', $3::text, 'linkId', id, 'reason', $4::text, 'sessions', (SELECT count(*) FROM ended)), $2
           FROM refused
       )
       SELECT (SELECT count(*)::int FROM ended) AS sessions FROM refused`,
      [linkId, now, providerName, reason],
    );
    return row ? row.sessions : null;
  }

  /** Ends every browser session started through a link of this provider (in `tx`); how many. */
  endSessionsOfProvider(tx: Tx, providerId: string): Promise<number> {
    return this.sql.count(`DELETE FROM web_sessions WHERE federated_link_id IN (SELECT id FROM federated_identities WHERE provider_id = $1)`, [providerId], tx);
  }

  /** Removes a link of this person (an admin's unlink): its browser sessions end, audited with the admin, in one statement; false when there was no such link. */
  async unlink(linkId: string, userId: string, adminId: string, ip: string | null, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH gone AS (
         DELETE FROM federated_identities l USING identity_providers p WHERE l.id = $1 AND l.user_id = $2 AND p.id = l.provider_id
         RETURNING l.id, l.user_id, l.provider_id, p.display_name
       ), ended AS (
         DELETE FROM web_sessions s USING gone WHERE s.federated_link_id = gone.id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'federation.unlink', user_id, $4, jsonb_build_object('providerId', provider_id, 'label', display_name, 'linkId', id, 'by', $3::text), $5 FROM gone
       RETURNING id`,
      [linkId, userId, adminId, ip, now],
    );
    return rows.length > 0;
  }

  /** The links of these people with their providers' names, for the admin's pages. */
  forAdmin(userIds: string[]): Promise<LinkForAdmin[]> {
    if (!userIds.length) return Promise.resolve([]);
    return this.sql.rows(
      `SELECT l.id, l.user_id AS "userId", l.provider_id AS "providerId", p.display_name AS "providerName", l.subject,
              l.created_at AS "createdAt", l.last_verified_at AS "lastVerifiedAt", l.refused_at AS "refusedAt"
         FROM federated_identities l JOIN identity_providers p ON p.id = l.provider_id
        WHERE l.user_id = ANY ($1::uuid[]) ORDER BY l.created_at`,
      [userIds],
    );
  }

  /** This person's link to this provider, if any. */
  async ofUserAndProvider(userId: string, providerId: string): Promise<FederatedIdentityRow | undefined> {
    const [row] = await this.sql.rows<StoredRow>(`SELECT ${COLUMNS} FROM federated_identities l WHERE l.user_id = $1 AND l.provider_id = $2`, [userId, providerId]);
    return row && toBase64Url(row);
  }

  /** Whether the account has a password (one made by federation has none until its owner sets one). */
  async accountHasPassword(userId: string): Promise<boolean> {
    const [row] = await this.sql.rows<{ has: boolean }>(`SELECT password_hash IS NOT NULL AS has FROM users WHERE id = $1`, [userId]);
    return row?.has ?? false;
  }

  /** The enabled providers this person is linked to (and not refused by), for sudo mode. */
  providersOf(userId: string): Promise<Array<{ id: string; displayName: string }>> {
    return this.sql.rows(
      `SELECT p.id, p.display_name AS "displayName" FROM federated_identities l JOIN identity_providers p ON p.id = l.provider_id
        WHERE l.user_id = $1 AND l.refused_at IS NULL AND p.disabled_at IS NULL ORDER BY l.created_at`,
      [userId],
    );
  }

  /**
   * Claims up to `limit` links due for a check with their provider (last verified before
   * `dueBefore`, with a refresh token, not refused, provider enabled, with a browser session still
   * open), each for this replica until `claimUntil`: replicas check different links, and a check
   * that died is taken up again after that.
   */
  async claimDue(now: Date, dueBefore: Date, claimUntil: Date, limit: number): Promise<FederatedIdentityRow[]> {
    const rows = await this.sql.rows<StoredRow>(
      `UPDATE federated_identities l SET checking_until = $3
        WHERE l.id IN (
          SELECT d.id FROM federated_identities d JOIN identity_providers p ON p.id = d.provider_id
           WHERE d.refresh_token_sealed IS NOT NULL AND d.refused_at IS NULL AND p.disabled_at IS NULL
             AND d.last_verified_at < $2 AND (d.checking_until IS NULL OR d.checking_until < $1)
             AND EXISTS (SELECT 1 FROM web_sessions s WHERE s.federated_link_id = d.id AND s.expire > $1)
           ORDER BY d.last_verified_at
           LIMIT $4
           FOR UPDATE OF d SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [now, dueBefore, claimUntil, limit],
    );
    return rows.map(toBase64Url);
  }

  /** The provider said yes at a check: verified now, with its rotated refresh token. */
  async checkPassed(linkId: string, refreshTokenSealed: string, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE federated_identities SET last_verified_at = $3, refresh_token_sealed = $2, checking_until = NULL WHERE id = $1 AND refused_at IS NULL`,
      [linkId, sealedBytes(refreshTokenSealed), now],
    );
  }
}
