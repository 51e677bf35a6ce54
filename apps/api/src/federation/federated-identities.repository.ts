import type { IdentityProviderProtocol } from './identity-providers.repository.js';
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

/**
 * What a link was made after: the account proven by a full sign-in in this browser, or by the
 * mailed link (which ends everything else), or 'directory': the account is one the provider's
 * organization's SCIM created and nobody has claimed yet (issue #47), linked only while it has no link at all.
 */
export type LinkProof = 'sign-in' | 'mail' | 'directory';

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
 * Every statement on `federated_identities` (the browser sessions started through a link are
 * web-sessions/', ended by the services in the same transaction). A link is found and made by (issuer,
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
   * Before an existing account the person just proved is linked, in `tx` (FederationSignIn.link):
   * the account is locked and must still be as the provider's answer found it (its credential
   * epoch and address, enabled), then the identity (lockIdentity). 'changed' when the account
   * changed meanwhile; 'taken' when that identity is linked to another account, or this account
   * to another identity of the provider (for a mailed proof, this account's own links are in the
   * way of nothing: it replaces them; for the directory's, any link of the account is); else 'free'.
   */
  async lockForLink(
    tx: Tx,
    link: { userId: string; epoch: number; email: string; providerId: string; issuer: string; subject: string },
    proof: LinkProof,
  ): Promise<'free' | 'changed' | 'taken'> {
    const locked = await this.sql.rows(
      `SELECT id FROM users WHERE id = $1 AND credential_epoch = $2 AND email = $3 AND disabled_at IS NULL FOR UPDATE`,
      [link.userId, link.epoch, link.email],
      tx,
    );
    if (!locked.length) return 'changed';
    await this.lockIdentity(tx, link.issuer, link.subject);
    const holders = await this.sql.rows<{ userId: string }>(
      `SELECT user_id AS "userId" FROM federated_identities WHERE (issuer = $1 AND subject = $2) OR (user_id = $4 AND (provider_id = $3 OR $5))`,
      [link.issuer, link.subject, link.providerId, link.userId, proof === 'directory'],
      tx,
    );
    return holders.some((holder) => holder.userId !== link.userId || proof !== 'mail') ? 'taken' : 'free';
  }

  /** Every link of the account, in `tx` (a mailed proof replaces them). */
  async deleteAllOf(tx: Tx, userId: string): Promise<void> {
    await this.sql.rows(`DELETE FROM federated_identities WHERE user_id = $1`, [userId], tx);
  }

  /** The provider's refusal of a link (a leaver), in `tx`: the link marked refused; the link, or undefined when it was refused already. */
  async markRefused(tx: Tx, linkId: string, now: Date): Promise<{ id: string; userId: string; providerId: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; userId: string; providerId: string }>(
      `UPDATE federated_identities SET refused_at = $2, checking_until = NULL WHERE id = $1 AND refused_at IS NULL
       RETURNING id, user_id AS "userId", provider_id AS "providerId"`,
      [linkId, now],
      tx,
    );
    return row;
  }

  /** Removes a link of this person, in `tx` (an admin's unlink); the link with its provider's name, or undefined when there was no such link. */
  async delete(tx: Tx, linkId: string, userId: string): Promise<{ id: string; userId: string; providerId: string; providerName: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; userId: string; providerId: string; providerName: string }>(
      `DELETE FROM federated_identities l USING identity_providers p WHERE l.id = $1 AND l.user_id = $2 AND p.id = l.provider_id
       RETURNING l.id, l.user_id AS "userId", l.provider_id AS "providerId", p.display_name AS "providerName"`,
      [linkId, userId],
      tx,
    );
    return row;
  }

  /** The ids of every link of one provider, in `tx` (it is being disabled or deleted). */
  async idsOfProvider(tx: Tx, providerId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(`SELECT id FROM federated_identities WHERE provider_id = $1 ORDER BY id`, [providerId], tx);
    return rows.map((row) => row.id);
  }

  /**
   * The ids of the links of one provider whose address, or whose account's address, is in `domain`
   * (the provider losing that domain), in `tx`: the links whose sessions WebSessions.endForProviderDomain ends.
   */
  async idsOfProviderForDomain(tx: Tx, providerId: string, domain: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT l.id FROM federated_identities l JOIN users u ON u.id = l.user_id
        WHERE l.provider_id = $1
          AND (lower(substring(l.email FROM '[^@]+$')) = $2 OR lower(substring(u.email FROM '[^@]+$')) = $2)
        ORDER BY l.id`,
      [providerId, domain],
      tx,
    );
    return rows.map((row) => row.id);
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
  providersOf(userId: string): Promise<Array<{ id: string; displayName: string; protocol: IdentityProviderProtocol }>> {
    return this.sql.rows(
      `SELECT p.id, p.display_name AS "displayName", p.protocol FROM federated_identities l JOIN identity_providers p ON p.id = l.provider_id
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
